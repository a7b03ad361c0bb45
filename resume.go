package bichat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"unicode/utf8"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
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
// message in any other state yields an error matching domain.ErrConflict.
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

func (s *Service) loadCheckpoint(ctx context.Context, p domain.Principal, msg *domain.Message) (*agents.Checkpoint, error) {
	if msg.Status != domain.StatusAwaitingInput {
		return nil, fmt.Errorf("bichat: message %s is %s, not awaiting input: %w", msg.ID, msg.Status, domain.ErrConflict)
	}
	dcp, err := s.repos.Checkpoints.GetCheckpoint(ctx, p.TenantID, msg.ID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, fmt.Errorf("bichat: message %s has no pending checkpoint: %w", msg.ID, domain.ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("bichat: load checkpoint: %w", err)
	}
	var cp agents.Checkpoint
	if err := json.Unmarshal(dcp.Data, &cp); err != nil {
		return nil, fmt.Errorf("bichat: decode checkpoint of message %s: %w", msg.ID, err)
	}
	return &cp, nil
}

// Resume answers the questions a message waits for and continues its run,
// streaming events like Send. Answers that do not fit the questions yield
// only an error matching domain.ErrInvalid (with the fields named) and the
// message keeps waiting, so the user can answer again.
func (s *Service) Resume(ctx context.Context, p domain.Principal, messageID string, answers agents.Answers) iter.Seq2[agents.Event, error] {
	return func(yield func(agents.Event, error) bool) {
		s.continueRun(ctx, p, messageID, domain.CheckpointQuestion, yield,
			func(exec *agents.Executor, cp *agents.Checkpoint) error { return exec.ValidateAnswers(cp, answers) },
			func(rctx context.Context, exec *agents.Executor, cp *agents.Checkpoint, runID string) iter.Seq2[agents.Event, error] {
				return exec.Resume(rctx, cp, answers, agents.WithRunID(runID))
			})
	}
}

// Approve runs the write or destructive tool call a message waits for and
// continues the run. token is the ConfirmationRequest's token; it must have
// been issued to p for exactly this call and not have expired or been used.
// A refused token yields only an error matching agents.ErrTokenRefused and
// nothing runs.
func (s *Service) Approve(ctx context.Context, p domain.Principal, messageID, token string) iter.Seq2[agents.Event, error] {
	return s.decide(ctx, p, messageID, token, "", true)
}

// Deny refuses the tool call a message waits for; the agent is told the
// user declined (with reason, if given) and continues. The token is checked
// as for Approve.
func (s *Service) Deny(ctx context.Context, p domain.Principal, messageID, token, reason string) iter.Seq2[agents.Event, error] {
	return s.decide(ctx, p, messageID, token, reason, false)
}

// maxReasonLen bounds a denial reason, in characters.
const maxReasonLen = 2000

func (s *Service) decide(ctx context.Context, p domain.Principal, messageID, token, reason string, approve bool) iter.Seq2[agents.Event, error] {
	return func(yield func(agents.Event, error) bool) {
		d := agents.Decision{Token: token, TenantID: p.TenantID, UserID: p.UserID, Reason: strings.TrimSpace(reason)}
		s.continueRun(ctx, p, messageID, domain.CheckpointConfirmation, yield,
			func(exec *agents.Executor, cp *agents.Checkpoint) error {
				if !utf8.ValidString(reason) || utf8.RuneCountInString(reason) > maxReasonLen {
					return domain.Invalid("reason", fmt.Sprintf("must be valid UTF-8 of at most %d characters", maxReasonLen))
				}
				return exec.VerifyDecision(cp, d)
			},
			func(rctx context.Context, exec *agents.Executor, cp *agents.Checkpoint, runID string) iter.Seq2[agents.Event, error] {
				if approve {
					return exec.Approve(rctx, cp, d, agents.WithRunID(runID))
				}
				return exec.Deny(rctx, cp, d, agents.WithRunID(runID))
			})
	}
}

// continueRun checks the caller and the answer against the checkpoint
// without consuming it, then takes the checkpoint atomically (so two
// concurrent answers cannot both resume), claims the message and runs.
func (s *Service) continueRun(ctx context.Context, p domain.Principal, messageID string, kind domain.CheckpointKind,
	yield func(agents.Event, error) bool, check func(*agents.Executor, *agents.Checkpoint) error,
	start func(context.Context, *agents.Executor, *agents.Checkpoint, string) iter.Seq2[agents.Event, error]) {
	if err := authorize(p, domain.PermWrite); err != nil {
		yield(nil, err)
		return
	}
	msg, sess, err := s.ownedMessage(ctx, p, messageID)
	if err != nil {
		yield(nil, err)
		return
	}
	if !s.acquire(sess.ID) {
		yield(nil, errBusy(sess.ID))
		return
	}
	defer s.release(sess.ID)
	cp, err := s.loadCheckpoint(ctx, p, msg)
	if err != nil {
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
	runID := domain.NewID()
	msg.Status = domain.StatusGenerating
	msg.RunID = ""
	msg.UpdatedAt = s.cfg.Now().UTC()
	if err := s.repos.Messages.UpdateMessage(ctx, msg); err != nil {
		yield(nil, fmt.Errorf("bichat: reopen message: %w", err))
		return
	}
	if err := s.repos.Messages.Claim(ctx, p.TenantID, msg.ID, runID); err != nil {
		s.failMessage(ctx, p, msg, "internal", "The answer could not be resumed.", nil)
		yield(nil, fmt.Errorf("bichat: claim message: %w", err))
		return
	}
	msg.RunID = runID
	// The resumed run finishes the pending call without starting it again
	// (except on Approve), so its arguments come from the checkpoint.
	rec := newRunRecord()
	rec.args[cp.Pending.CallID] = cp.Pending.Arguments
	s.drive(ctx, p, sess, msg, rec, func(rctx context.Context) iter.Seq2[agents.Event, error] {
		return start(rctx, exec, cp, runID)
	}, yield)
}

// Replay returns the events of a run with Seq greater than afterSeq, for a
// client that lost its stream. Payloads come back as generic JSON values.
// The log of a run that is over ends with its terminal event (RunFinished,
// Interrupted or RunFailed; a run stopped because its consumer went away
// ends with RunFailed "cancelled"). Replay reads the log only: it does not
// re-attach to a run, and it finds only runs logged in the service's store
// (see the package documentation for what survives a restart).
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
// a process that crashed. Call it when the host starts and periodically.
func (s *Service) RecoverStale(ctx context.Context) (int, error) {
	now := s.cfg.Now().UTC()
	n, err := s.repos.Messages.FailStale(ctx, now.Add(-s.cfg.Limits.StaleAfter), domain.MessageError{
		Code: "interrupted", Message: "The answer was interrupted before it was complete. Please ask again.", Time: now})
	if err != nil {
		return n, fmt.Errorf("bichat: recover stale messages: %w", err)
	}
	return n, nil
}
