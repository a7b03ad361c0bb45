package bichat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
)

// Interrupt describes what an awaiting message waits for, so a host can
// show the question or the confirmation dialog again after a reload.
type Interrupt struct {
	MessageID    string                      `json:"message_id"`
	Kind         domain.CheckpointKind       `json:"kind"`
	Questions    []agents.Question           `json:"questions,omitempty"`
	Confirmation *agents.ConfirmationRequest `json:"confirmation,omitempty"`
}

// PendingInterrupt returns what a message awaiting input waits for. A
// message in any other state yields an error matching domain.ErrConflict;
// one whose interrupt expired (Limits.InterruptTTL) yields ErrExpired.
func (s *Service) PendingInterrupt(ctx context.Context, p domain.Principal, messageID string) (*Interrupt, error) {
	if err := authorize(p, domain.PermRead); err != nil {
		return nil, err
	}
	msg, _, err := s.ownedMessage(ctx, p, messageID)
	if err != nil {
		return nil, err
	}
	cp, err := s.loadCheckpoint(ctx, p, msg)
	if err != nil {
		return nil, err
	}
	return &Interrupt{MessageID: msg.ID, Kind: cp.Kind, Questions: cp.Questions, Confirmation: cp.Confirmation}, nil
}

// ErrExpired is matched by the error of Resume, Approve, Deny and
// PendingInterrupt for an interrupt that waited longer than
// Limits.InterruptTTL (or than its confirmation token's validity). Resume,
// Approve and Deny then fail the message with code "expired"; the user has
// to ask again. The error also matches domain.ErrConflict.
var ErrExpired = errors.New("the question expired")

func (s *Service) loadCheckpoint(ctx context.Context, p domain.Principal, msg *domain.Message) (*agents.Checkpoint, error) {
	cp, _, err := s.loadCheckpointRow(ctx, p, msg)
	return cp, err
}

// loadCheckpointRow loads and decodes the checkpoint of a message awaiting
// input; an expired one yields ErrExpired along with the stored row.
func (s *Service) loadCheckpointRow(ctx context.Context, p domain.Principal, msg *domain.Message) (*agents.Checkpoint, *domain.Checkpoint, error) {
	if msg.Status != domain.StatusAwaitingInput {
		return nil, nil, fmt.Errorf("bichat: message %s is %s, not awaiting input: %w", msg.ID, msg.Status, domain.ErrConflict)
	}
	dcp, err := s.repos.Checkpoints.GetCheckpoint(ctx, p.TenantID, msg.ID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, nil, fmt.Errorf("bichat: message %s has no pending checkpoint: %w", msg.ID, domain.ErrConflict)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("bichat: load checkpoint: %w", err)
	}
	if !dcp.ExpiresAt.IsZero() && !s.cfg.Now().Before(dcp.ExpiresAt) {
		return nil, dcp, fmt.Errorf("bichat: message %s: the %s expired at %s and can no longer be answered; ask again: %w: %w",
			msg.ID, dcp.Kind, dcp.ExpiresAt.UTC().Format(time.RFC3339), ErrExpired, domain.ErrConflict)
	}
	var cp agents.Checkpoint
	if err := json.Unmarshal(dcp.Data, &cp); err != nil {
		return nil, dcp, fmt.Errorf("bichat: decode checkpoint of message %s: %w", msg.ID, err)
	}
	return &cp, dcp, nil
}

// expiredMessage is what a message whose interrupt expired says.
func expiredMessage(kind domain.CheckpointKind) string {
	if kind == domain.CheckpointConfirmation {
		return "The confirmation request expired before it was answered. Please ask again."
	}
	return "The question expired before it was answered. Please ask again."
}

// expire fails a message whose interrupt expired, after taking its
// checkpoint (take is false when the caller already took it).
func (s *Service) expire(ctx context.Context, p domain.Principal, msg *domain.Message, kind domain.CheckpointKind, take bool) {
	if take {
		if _, err := s.repos.Checkpoints.TakeCheckpoint(ctx, msg.TenantID, msg.ID); err != nil {
			// Taken by a concurrent answer or reaper: it decides.
			return
		}
	}
	s.failMessage(ctx, p, msg, "expired", expiredMessage(kind), nil)
}

// Resume answers the questions a message waits for and continues its run,
// streaming events like Send. Answers that do not fit the questions yield
// only an error matching domain.ErrInvalid (with the fields named) and the
// message keeps waiting, so the user can answer again.
//
// The resumed run is a new run of the same message (Message.RunID names
// it, its events are numbered from 1); like Send's, it belongs to the
// service and goes on when the loop stops, unless opts has CancelOnStop.
// An interrupt older than Limits.InterruptTTL yields ErrExpired and fails
// the message.
func (s *Service) Resume(ctx context.Context, p domain.Principal, messageID string, answers agents.Answers, opts ...SendOption) iter.Seq2[agents.Event, error] {
	return func(yield func(agents.Event, error) bool) {
		s.continueRun(ctx, p, messageID, domain.CheckpointQuestion, opts, yield,
			func(exec *agents.Executor, cp *agents.Checkpoint) error { return exec.ValidateAnswers(cp, answers) },
			func(rctx context.Context, exec *agents.Executor, cp *agents.Checkpoint, ro []agents.ResumeOption) iter.Seq2[agents.Event, error] {
				return exec.Resume(rctx, cp, answers, ro...)
			})
	}
}

// Approve runs the write or destructive tool call a message waits for and
// continues the run. token is the ConfirmationRequest's token; it must have
// been issued to p for exactly this call and not have expired or been used.
// A refused token yields only an error matching agents.ErrTokenRefused and
// nothing runs. The run continues as with Resume (opts, ErrExpired).
func (s *Service) Approve(ctx context.Context, p domain.Principal, messageID, token string, opts ...SendOption) iter.Seq2[agents.Event, error] {
	return s.decide(ctx, p, messageID, token, "", true, opts)
}

// Deny refuses the tool call a message waits for; the agent is told the
// user declined (with reason, if given) and continues. The token is checked
// as for Approve, and the run continues as with Resume.
func (s *Service) Deny(ctx context.Context, p domain.Principal, messageID, token, reason string, opts ...SendOption) iter.Seq2[agents.Event, error] {
	return s.decide(ctx, p, messageID, token, reason, false, opts)
}

// maxReasonLen bounds a denial reason, in characters.
const maxReasonLen = 2000

func (s *Service) decide(ctx context.Context, p domain.Principal, messageID, token, reason string, approve bool, opts []SendOption) iter.Seq2[agents.Event, error] {
	return func(yield func(agents.Event, error) bool) {
		d := agents.Decision{Token: token, TenantID: p.TenantID, UserID: p.UserID, Reason: strings.TrimSpace(reason)}
		s.continueRun(ctx, p, messageID, domain.CheckpointConfirmation, opts, yield,
			func(exec *agents.Executor, cp *agents.Checkpoint) error {
				if !utf8.ValidString(reason) || utf8.RuneCountInString(reason) > maxReasonLen {
					return domain.Invalid("reason", fmt.Sprintf("must be valid UTF-8 of at most %d characters", maxReasonLen))
				}
				return exec.VerifyDecision(cp, d)
			},
			func(rctx context.Context, exec *agents.Executor, cp *agents.Checkpoint, ro []agents.ResumeOption) iter.Seq2[agents.Event, error] {
				s.publishDecision(rctx, p, cp, approve, d.Reason)
				if approve {
					return exec.Approve(rctx, cp, d, ro...)
				}
				return exec.Deny(rctx, cp, d, ro...)
			})
	}
}

// continueRun checks the caller and the answer against the checkpoint
// without consuming it, then takes the checkpoint atomically (so two
// concurrent answers cannot both resume), claims the message and starts
// the run.
func (s *Service) continueRun(ctx context.Context, p domain.Principal, messageID string, kind domain.CheckpointKind,
	opts []SendOption, yield func(agents.Event, error) bool, check func(*agents.Executor, *agents.Checkpoint) error,
	start func(context.Context, *agents.Executor, *agents.Checkpoint, []agents.ResumeOption) iter.Seq2[agents.Event, error]) {
	yield = s.scrubYield(yield)
	o := sendOpts(opts)
	if o.state != nil {
		ctx = context.WithValue(ctx, stateKey{}, o.state)
	}
	if len(o.hints) > 0 {
		ctx = context.WithValue(ctx, hintsKey{}, o.hints)
	}
	attrs, releaseQuota, err := s.admitWriter(ctx, p)
	if err != nil {
		yield(nil, err)
		return
	}
	running := false
	defer func() {
		if !running {
			releaseQuota()
		}
	}()
	msg, sess, err := s.ownedMessage(ctx, p, messageID)
	if err != nil {
		yield(nil, err)
		return
	}
	if err := s.checkOpen(); err != nil {
		yield(nil, err)
		return
	}
	if !s.acquire(sess.ID) {
		yield(nil, errBusy(sess.ID))
		return
	}
	ok := false
	defer func() {
		if !ok {
			s.release(sess.ID)
		}
	}()
	cp, dcp, err := s.loadCheckpointRow(ctx, p, msg)
	if err != nil {
		if errors.Is(err, ErrExpired) && dcp.Kind == kind {
			s.expire(ctx, p, msg, dcp.Kind, true)
		}
		yield(nil, err)
		return
	}
	if cp.Kind != kind {
		yield(nil, fmt.Errorf("bichat: message %s waits for a %s, not a %s: %w", msg.ID, cp.Kind, kind, domain.ErrConflict))
		return
	}
	exec, err := s.executorFor(sess.Model)
	if err != nil {
		yield(nil, err)
		return
	}
	if err := check(exec, cp); err != nil {
		yield(nil, err)
		return
	}
	if _, err := s.repos.Checkpoints.TakeCheckpoint(ctx, p.TenantID, msg.ID); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			err = fmt.Errorf("bichat: message %s was already resumed: %w", msg.ID, domain.ErrConflict)
		}
		yield(nil, err)
		return
	}
	msg.Status = domain.StatusGenerating
	msg.RunID = ""
	msg.UpdatedAt = s.cfg.Now().UTC()
	if err := s.repos.Messages.UpdateMessage(ctx, msg); err != nil {
		yield(nil, fmt.Errorf("bichat: reopen message: %w", err))
		return
	}
	st, err := s.claim(ctx, p, sess, msg, "The answer could not be resumed.")
	if err != nil {
		yield(nil, err)
		return
	}
	ok = true
	// The resumed run finishes the pending call without starting it again
	// (except on Approve), so its arguments come from the checkpoint.
	rec := newRunRecord()
	rec.args[cp.Pending.CallID] = cp.Pending.Arguments
	runID := msg.RunID
	r := s.newRunner(ctx, p, sess, msg, rec, st.live, st.leased)
	r.releaseQuota, running = releaseQuota, true
	r.start(ctx, o.cancelOnStop, yield, func(rctx context.Context) iter.Seq2[agents.Event, error] {
		return start(rctx, exec, cp, []agents.ResumeOption{agents.WithRunID(runID), agents.WithAttributes(attrs)})
	})
}

// Replay returns the events of a run with Seq greater than afterSeq, for a
// client that lost its stream. Payloads come back as generic JSON values.
// The log of a run that is over ends with its terminal event (RunFinished,
// Interrupted or RunFailed; a cancelled run ends with RunFailed
// "cancelled"). Replay reads the log only: the log of a live run lags it
// by at most one batch (see the package documentation), so to follow a
// run use Watch, which reads the log and then the live run. Replay finds
// only runs logged in the service's store.
//
// A run that p cannot see (another owner's, another tenant's, or one with
// no logged event) yields the same error, matching domain.ErrNotFound with
// the same text, so a run id's existence is not revealed; a run with no
// events after afterSeq yields an empty slice.
func (s *Service) Replay(ctx context.Context, p domain.Principal, runID string, afterSeq int64) ([]agents.Event, error) {
	if err := authorize(p, domain.PermRead); err != nil {
		return nil, err
	}
	if err := checkID("run_id", runID); err != nil {
		return nil, err
	}
	if afterSeq < 0 {
		return nil, domain.Invalid("after_seq", "must not be negative")
	}
	// Ownership is checked on the run's first event, which exists whatever
	// afterSeq is.
	head, err := s.repos.RunEvents.ListRunEvents(ctx, p.TenantID, runID, 0, 1)
	if err != nil {
		return nil, lookupErr("replay", "run", err)
	}
	if len(head) == 0 {
		return nil, notFound("run")
	}
	if _, err := s.ownedSession(ctx, p, head[0].SessionID); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			err = notFound("run")
		}
		return nil, err
	}
	recs, err := s.repos.RunEvents.ListRunEvents(ctx, p.TenantID, runID, afterSeq, 0)
	if err != nil {
		return nil, lookupErr("replay", "run", err)
	}
	out := make([]agents.Event, 0, len(recs))
	for _, r := range recs {
		ev, err := agents.UnmarshalEvent(r.Data)
		if err != nil {
			return nil, fmt.Errorf("bichat: replay run %s seq %d: %w", runID, r.Seq, err)
		}
		out = append(out, ev)
	}
	return out, nil
}

// RecoverStale marks messages that have been generating for longer than
// Limits.StaleAfter as failed with code "interrupted" and returns how many
// it changed. Runs end within Limits.RunTimeout, so such messages belong to
// a process that crashed. With leases (Store.Runs set) the reaper finds
// dead runs much sooner (RunReaper, which also calls RecoverStale); without
// them, call RecoverStale when the host starts and periodically.
func (s *Service) RecoverStale(ctx context.Context) (int, error) {
	now := s.cfg.Now().UTC()
	n, err := s.repos.Messages.FailStale(ctx, now.Add(-s.cfg.Limits.StaleAfter), domain.MessageError{
		Code: "interrupted", Message: "The answer was interrupted before it was complete. Please ask again.", Time: now})
	if err != nil {
		return n, fmt.Errorf("bichat: recover stale messages: %w", err)
	}
	return n, nil
}

// publishDecision reports the user's decision on a confirmation (a
// hooks.Decision with policy "confirmation"), for the audit chain.
func (s *Service) publishDecision(ctx context.Context, p domain.Principal, cp *agents.Checkpoint, approve bool, reason string) {
	if s.bus == nil {
		return
	}
	meta := s.meta(p, cp.SessionID)
	meta.MessageID = cp.MessageID
	outcome := hooks.DecisionDenied
	if approve {
		outcome = hooks.DecisionApproved
	}
	s.bus.Publish(ctx, &hooks.Decision{Meta: meta, Policy: "confirmation", Outcome: outcome,
		Tool: cp.Pending.Tool, CallID: cp.Pending.CallID, Reason: reason})
}
