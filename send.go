package bichat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
)

// Send asks a question in a session and streams the run's events. It
// validates the input (text of 1 to 10,000 characters), persists the user
// message and an assistant placeholder atomically, claims the placeholder
// (with a lease, see Limits.RunLease), starts the run and streams its
// events. The last event is RunFinished (message complete), Interrupted
// (message awaiting input) or RunFailed (message failed, followed by the
// error); the outcome is persisted, and the event is in the run log,
// before it is yielded.
//
// Interrupted events come without their Checkpoint (the service stores it;
// answer with Resume, Approve or Deny and the message id).
//
// The run belongs to the service, not to the loop: it runs on a goroutine
// of the service with a context detached from ctx (it keeps ctx's values,
// is bounded by Limits.RunTimeout and ends with Close). Breaking out of
// the loop, or cancelling ctx, only stops watching (a cancelled ctx ends
// the stream with an error matching ctx's): the run goes on, is recorded
// and completes, and Watch follows it again from any seq. To stop the run
// itself call Cancel, or pass CancelOnStop to get the old behaviour of a
// loop that owns its run.
//
// A session produces one answer at a time: while a run is in progress (in
// this process, or in another one holding an unexpired lease), Send and
// Resume yield an error matching domain.ErrConflict. A generating message
// whose lease expired belongs to a dead process: Send fails it (code
// "lease_expired") and proceeds.
//
// Invalid input, a missing permission or an unknown session yield only an
// error; a session p cannot see (missing, another user's or another
// tenant's) yields the same error matching domain.ErrNotFound in every
// case. After Close, Send yields ErrClosed. No tool call starts after the
// run's context is cancelled.
func (s *Service) Send(ctx context.Context, p domain.Principal, sessionID, text string, opts ...SendOption) iter.Seq2[agents.Event, error] {
	return func(yield func(agents.Event, error) bool) {
		yield = s.scrubYield(yield)
		starting := beginStart()
		defer starting.end()
		o := sendOpts(opts)
		if o.state != nil {
			ctx = context.WithValue(ctx, stateKey{}, o.state)
		}
		if len(o.hints) > 0 {
			ctx = context.WithValue(ctx, hintsKey{}, o.hints)
		}
		attrs, release, err := s.admitWriter(ctx, p)
		if err != nil {
			yield(nil, err)
			return
		}
		st, user, history, err := s.prepareSend(ctx, p, sessionID, text)
		if err != nil {
			release()
			yield(nil, err)
			return
		}
		asst := st.asst
		r := s.newRunner(ctx, p, st.sess, asst, newRunRecord(), st.live, st.leased)
		r.releaseQuota = release
		r.starting = starting
		in := agents.Input{
			RunID:     asst.RunID,
			TenantID:  p.TenantID,
			UserID:    p.UserID,
			SessionID: st.sess.ID,
			MessageID: asst.ID,
			History:   history,
			Message:   agents.Message{Role: domain.RoleUser, Parts: user.Parts},

			Attributes: attrs,
		}
		model := st.sess.Model
		r.start(ctx, o.cancelOnStop, yield, func(rctx context.Context) iter.Seq2[agents.Event, error] {
			exec, err := s.executorFor(model)
			if err != nil {
				return func(yield func(agents.Event, error) bool) { yield(nil, err) }
			}
			return exec.Run(rctx, in)
		})
	}
}

// CancelOnStop makes the stream own its run, as before runs outlived their
// callers: when the loop breaks or ctx is cancelled, the run is cancelled
// (the message fails with code "cancelled" and the run log ends with that
// RunFailed). After a break the call returns once that is recorded; after
// ctx is cancelled the loop still receives the RunFailed and the error.
// Use it for callers that cannot watch again, such as a CLI; a web host
// usually wants the default (a dropped connection does not lose the
// answer) and Service.Cancel for a stop button.
func CancelOnStop() SendOption {
	return func(o *sendOptions) { o.cancelOnStop = true }
}

func sendOpts(opts []SendOption) sendOptions {
	var o sendOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// started is a claimed answer with its run registered in this process.
type started struct {
	sess   *domain.Session
	asst   *domain.Message
	live   *liveRun
	leased bool
}

func (s *Service) prepareSend(ctx context.Context, p domain.Principal, sessionID, text string) (
	*started, *domain.Message, []agents.Message, error) {
	if err := authorize(p, domain.PermWrite); err != nil {
		return nil, nil, nil, err
	}
	t, err := checkText("text", text, domain.MaxMessageLen)
	if err != nil {
		return nil, nil, nil, err
	}
	// A secret pasted into a question is neither stored nor sent on.
	t = s.scrub(t)
	sess, err := s.ownedSession(ctx, p, sessionID)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, nil, nil, err
	}
	if !s.acquire(sess.ID) {
		return nil, nil, nil, errBusy(sess.ID)
	}
	ok := false
	defer func() {
		if !ok {
			s.release(sess.ID)
		}
	}()
	prior, err := s.priorMessages(ctx, p, sess.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	now := s.cfg.Now().UTC()
	history := historyFromMessages(prior)
	user := &domain.Message{ID: domain.NewID(), TenantID: p.TenantID, SessionID: sess.ID, Role: domain.RoleUser,
		Parts: []domain.Part{domain.TextPart(t)}, Status: domain.StatusComplete, CreatedAt: now, UpdatedAt: now}
	asst := &domain.Message{ID: domain.NewID(), TenantID: p.TenantID, SessionID: sess.ID, Role: domain.RoleAssistant,
		Parts: []domain.Part{}, Status: domain.StatusGenerating, CreatedAt: now, UpdatedAt: now,
		Metadata: domain.MessageMetadata{Model: s.modelName(sess.Model)}}
	if err := s.repos.Messages.CreateMessages(ctx, user, asst); err != nil {
		return nil, nil, nil, fmt.Errorf("bichat: save question: %w", err)
	}
	s.publishSave(ctx, p, user)
	st, err := s.claim(ctx, p, sess, asst, "The answer could not be started.")
	if err != nil {
		return nil, nil, nil, err
	}
	sess.UpdatedAt = now
	if sess.Title == DefaultTitle && len(history) == 0 {
		sess.Title = titleFrom(t)
	}
	if err := s.repos.Sessions.UpdateSession(ctx, sess); err != nil {
		s.cfg.Logger.WarnContext(ctx, "bichat: session update failed", "session_id", sess.ID, "error", err)
	}
	ok = true
	return st, user, history, nil
}

// priorMessages loads the session's recent messages for a new question
// and clears the way for it: a run in progress makes the session busy; a
// generating message whose lease expired (or, without a lease, older than
// StaleAfter) belongs to a dead process and is failed; a message awaiting
// input is superseded.
func (s *Service) priorMessages(ctx context.Context, p domain.Principal, sessionID string) ([]domain.Message, error) {
	reaped := false
	for {
		prior, err := s.repos.Messages.ListMessages(ctx, p.TenantID, sessionID, domain.MessageListOptions{Limit: s.cfg.Limits.HistoryMessages})
		if err != nil {
			return nil, fmt.Errorf("bichat: load history: %w", err)
		}
		now := s.cfg.Now().UTC()
		retry := false
		for i := range prior {
			m := &prior[i]
			switch m.Status {
			case domain.StatusGenerating:
				switch {
				case s.repos.Runs != nil && !m.LeaseUntil.IsZero():
					if m.LeaseUntil.After(now) || reaped {
						return nil, errBusy(sessionID)
					}
					// Its process died: fail it as the reaper would, then
					// look again.
					if _, err := s.reapExpired(ctx, now); err != nil {
						return nil, err
					}
					reaped, retry = true, true
				case now.Sub(m.UpdatedAt) < s.cfg.Limits.StaleAfter:
					return nil, errBusy(sessionID)
				}
			case domain.StatusAwaitingInput:
				// A new question supersedes a pending one: the old run ends.
				if err := s.supersede(ctx, p, m); err != nil {
					return nil, err
				}
			}
		}
		if !retry {
			return prior, nil
		}
	}
}

// claim registers the run of asst in this process and claims the message
// for it, with a lease when the store supports leases. On failure the
// message is failed with failMsg.
func (s *Service) claim(ctx context.Context, p domain.Principal, sess *domain.Session, asst *domain.Message, failMsg string) (*started, error) {
	runID := domain.NewID()
	live, err := s.newLive(ctx, asst, runID)
	if err != nil {
		s.failMessage(ctx, p, asst, "shutdown", "The server is shutting down. Please ask again.", nil)
		return nil, err
	}
	leased := s.repos.Runs != nil
	if leased {
		err = s.repos.Runs.ClaimRun(ctx, p.TenantID, asst.ID, runID, s.cfg.Now().Add(s.cfg.Limits.RunLease))
	} else {
		err = s.repos.Messages.Claim(ctx, p.TenantID, asst.ID, runID)
	}
	if err != nil {
		s.abandon(live)
		if errors.Is(err, domain.ErrConflict) {
			// Claimed first by someone else (Cancel claims a message no
			// run has claimed yet and fails it): its outcome stands.
			return nil, fmt.Errorf("bichat: claim answer %s: it was claimed (or cancelled) before its run started: %w", asst.ID, err)
		}
		s.failMessage(ctx, p, asst, "internal", failMsg, nil)
		return nil, fmt.Errorf("bichat: claim answer: %w", err)
	}
	asst.RunID = runID
	return &started{sess: sess, asst: asst, live: live, leased: leased}, nil
}

// titleFrom makes a session title from the first question: its first line,
// at most 60 characters.
func titleFrom(q string) string {
	line, _, _ := strings.Cut(q, "\n")
	t, _ := clip(strings.TrimSpace(line), 60)
	if t == "" {
		return DefaultTitle
	}
	return t
}

// clip cuts s to at most max characters, the last of which is "…" when it
// cut, and reports whether it cut.
func clip(s string, max int) (string, bool) {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s, false
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…", true
		}
		n++
	}
	return s, false
}

func (s *Service) supersede(ctx context.Context, p domain.Principal, m *domain.Message) error {
	if err := s.repos.Checkpoints.DeleteCheckpoint(ctx, p.TenantID, m.ID); err != nil && !errors.Is(err, domain.ErrNotFound) {
		return fmt.Errorf("bichat: drop pending checkpoint: %w", err)
	}
	s.failMessage(ctx, p, m, "superseded", "A new question was asked before this one was answered.", nil)
	return nil
}

func (s *Service) publishSave(ctx context.Context, p domain.Principal, m *domain.Message) {
	if s.bus == nil {
		return
	}
	meta := s.meta(p, m.SessionID)
	meta.MessageID = m.ID
	meta.RunID = m.RunID
	e := &hooks.MessageSave{Meta: meta, Role: m.Role, Status: m.Status, Usage: m.Metadata.Usage, CostUSD: m.Metadata.CostUSD}
	if m.Role == domain.RoleUser || m.Status == domain.StatusComplete {
		e.Text = m.Text()
	}
	if m.Metadata.Error != nil {
		e.ErrorCode = m.Metadata.Error.Code
	}
	s.bus.Publish(ctx, e)
}

// persistCtx detaches final writes from a cancelled request so a run's
// outcome is always recorded.
func persistCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}

// failMessage marks m failed; parts, when non-nil, replace its content.
func (s *Service) failMessage(ctx context.Context, p domain.Principal, m *domain.Message, code, msg string, parts []domain.Part) {
	pctx, cancel := persistCtx(ctx)
	defer cancel()
	now := s.cfg.Now().UTC()
	m.Status = domain.StatusFailed
	if parts != nil {
		m.Parts = parts
	}
	m.Metadata.Error = &domain.MessageError{Code: code, Message: s.scrub(msg), Time: now}
	m.UpdatedAt = now
	if err := s.repos.Messages.UpdateMessage(pctx, m); err != nil {
		s.cfg.Logger.ErrorContext(ctx, "bichat: could not mark message failed; RecoverStale will", "message_id", m.ID, "error", err)
		return
	}
	s.publishSave(ctx, p, m)
}

// saveOutcome writes the outcome m of its run (complete, failed or
// awaiting input). A leased run writes it with RunRepository.FinishRun,
// which refuses, with an error matching domain.ErrConflict, when the run
// no longer owns the message (a reaper failed it after its lease
// expired): the reaper's failure stays and ends the run. Without a lease
// the message is updated unconditionally.
func (s *Service) saveOutcome(ctx context.Context, m *domain.Message, leased bool) error {
	if leased {
		return s.repos.Runs.FinishRun(ctx, m, m.RunID)
	}
	return s.repos.Messages.UpdateMessage(ctx, m)
}

// failRun marks the message of a run failed, as failMessage does, through
// saveOutcome. It returns the save error, which matches
// domain.ErrConflict when the run lost the message; any other error is
// logged (RecoverStale or the reaper fail the message later).
func (s *Service) failRun(ctx context.Context, p domain.Principal, m *domain.Message, leased bool, code, msg string, parts []domain.Part) error {
	pctx, cancel := persistCtx(ctx)
	defer cancel()
	now := s.cfg.Now().UTC()
	m.Status = domain.StatusFailed
	if parts != nil {
		m.Parts = parts
	}
	m.Metadata.Error = &domain.MessageError{Code: code, Message: s.scrub(msg), Time: now}
	m.UpdatedAt = now
	if err := s.saveOutcome(pctx, m, leased); err != nil {
		if !errors.Is(err, domain.ErrConflict) {
			s.cfg.Logger.ErrorContext(ctx, "bichat: could not mark message failed; the reaper will", "message_id", m.ID, "error", err)
		}
		return err
	}
	s.publishSave(ctx, p, m)
	return nil
}

// runRecord accumulates what a run's tool calls produced.
type runRecord struct {
	// args holds each call's arguments by call id, from its ToolCallStarted
	// event or, for the call a resumed run resolves, from the checkpoint.
	args      map[string]json.RawMessage
	calls     []domain.ToolCallRecord
	datasets  []string
	citations []domain.Citation
	// cost is what the run's model calls cost since the last applyRecord.
	cost float64
}

func newRunRecord() *runRecord { return &runRecord{args: map[string]json.RawMessage{}} }

func errorCode(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, domain.ErrInvalid):
		return "invalid"
	}
	return "internal"
}

func userMessage(err error) string {
	switch errorCode(err) {
	case "cancelled":
		return "The request was cancelled."
	case "timeout":
		return "The request took too long and was stopped."
	case "invalid":
		return err.Error()
	}
	return "An internal error stopped the answer."
}

// recordTool saves a call's artifacts (stamping their ids into the event
// before the host sees it) and keeps its trace for the message metadata.
func (s *Service) recordTool(ctx context.Context, p domain.Principal, asst *domain.Message, rec *runRecord, e *agents.ToolCallFinished) {
	limit := s.cfg.Limits.ToolRecordChars
	args, cutA := clip(string(rec.args[e.CallID]), limit)
	res, cutR := clip(e.Summary, limit)
	r := domain.ToolCallRecord{ID: e.CallID, Name: e.Name, Arguments: args, Truncated: cutA || cutR,
		DurationMS: e.Duration.Milliseconds()}
	if e.Error != "" {
		r.Error = res
	} else {
		r.Result = res
	}
	if e.Header().ParentRunID != "" {
		r.Name = e.Header().Agent + "/" + e.Name
	}
	pctx, cancel := persistCtx(ctx)
	defer cancel()
	now := s.cfg.Now().UTC()
	// The slice may be the tool's own (a constant it returns every time):
	// stamp a copy.
	e.Artifacts = slices.Clone(e.Artifacts)
	for i := range e.Artifacts {
		a := &e.Artifacts[i]
		if a.ID == "" {
			a.ID = domain.NewID()
		}
		a.TenantID, a.SessionID, a.MessageID = p.TenantID, asst.SessionID, asst.ID
		if a.CreatedAt.IsZero() {
			a.CreatedAt = now
		}
		if err := s.repos.Artifacts.SaveArtifact(pctx, a); err != nil {
			s.cfg.Logger.ErrorContext(ctx, "bichat: save artifact", "artifact_id", a.ID, "error", err)
			continue
		}
		if s.bus != nil {
			meta := s.meta(p, asst.SessionID)
			meta.MessageID, meta.RunID = asst.ID, e.Header().RunID
			s.bus.Publish(pctx, &hooks.ArtifactSave{Meta: meta, CallID: e.CallID, Tool: e.Name, ArtifactID: a.ID,
				Name: a.Name, MediaType: a.MediaType, SHA256: a.SHA256, Size: a.Size})
		}
		r.ArtifactIDs = append(r.ArtifactIDs, a.ID)
	}
	rec.calls = append(rec.calls, r)
	for _, d := range e.Datasets {
		if !slices.Contains(rec.datasets, d) {
			rec.datasets = append(rec.datasets, d)
		}
	}
	rec.citations = append(rec.citations, e.Citations...)
}

// applyRecord merges a run's record into the message metadata (a resumed
// run adds to what the interrupted run recorded).
func (s *Service) applyRecord(m *domain.Message, rec *runRecord) {
	md := &m.Metadata
	md.ToolCalls = append(md.ToolCalls, rec.calls...)
	md.CostUSD += rec.cost
	rec.cost = 0
	for _, d := range rec.datasets {
		if !slices.Contains(md.DatasetsUsed, d) {
			md.DatasetsUsed = append(md.DatasetsUsed, d)
		}
	}
	m.Citations = append(m.Citations, rec.citations...)
	rec.calls, rec.datasets, rec.citations = nil, nil, nil
}

// cost books a model call's price into the record (the message's
// metadata gets it with applyRecord).
func (rec *runRecord) addCost(usd float64) { rec.cost += usd }

// complete records the answer of a finished run (see saveOutcome).
func (s *Service) complete(ctx context.Context, p domain.Principal, asst *domain.Message, leased bool,
	rec *runRecord, e *agents.RunFinished) error {
	pctx, cancel := persistCtx(ctx)
	defer cancel()
	s.applyRecord(asst, rec)
	asst.Parts = partsFromTranscript(e.Messages, "")
	asst.Status = domain.StatusComplete
	asst.Metadata.Usage = e.Usage
	asst.Metadata.StopReason = string(e.Reason)
	asst.Metadata.Note = e.Note
	asst.Metadata.Error = nil
	asst.UpdatedAt = s.cfg.Now().UTC()
	if err := s.saveOutcome(pctx, asst, leased); err != nil {
		return fmt.Errorf("bichat: save answer: %w", err)
	}
	s.publishSave(ctx, p, asst)
	return nil
}

// interrupt stores the checkpoint of an interrupted run and records its
// message as awaiting input (see saveOutcome). When the run lost the
// message the checkpoint is deleted again: nobody can answer it.
func (s *Service) interrupt(ctx context.Context, p domain.Principal, asst *domain.Message, leased bool, rec *runRecord, e *agents.Interrupted) error {
	pctx, cancel := persistCtx(ctx)
	defer cancel()
	data, err := json.Marshal(e.Checkpoint)
	if err != nil {
		return fmt.Errorf("bichat: encode checkpoint: %w", err)
	}
	now := s.cfg.Now().UTC()
	cp := &domain.Checkpoint{ID: e.Checkpoint.ID, TenantID: p.TenantID, SessionID: asst.SessionID, MessageID: asst.ID,
		OwnerID: p.UserID, RunID: asst.RunID, Kind: e.Kind, Data: data, CreatedAt: now}
	// The interrupt expires after InterruptTTL. (A confirmation token has
	// its own, usually shorter, validity: Approve and Deny refuse an
	// expired token and the message keeps waiting until this expiry.)
	cp.ExpiresAt = now.Add(s.cfg.Limits.InterruptTTL)
	if err := s.repos.Checkpoints.SaveCheckpoint(pctx, cp); err != nil {
		return fmt.Errorf("bichat: save checkpoint: %w", err)
	}
	s.applyRecord(asst, rec)
	asst.Parts = partsFromTranscript(s.scrubMessages(e.Checkpoint.Messages), e.Checkpoint.Pending.CallID)
	asst.Status = domain.StatusAwaitingInput
	asst.Metadata.Usage = e.Checkpoint.Usage
	asst.Metadata.StopReason = "interrupted"
	asst.UpdatedAt = now
	if err := s.saveOutcome(pctx, asst, leased); err != nil {
		if errors.Is(err, domain.ErrConflict) {
			if derr := s.repos.Checkpoints.DeleteCheckpoint(pctx, p.TenantID, asst.ID); derr != nil && !errors.Is(derr, domain.ErrNotFound) {
				s.cfg.Logger.ErrorContext(ctx, "bichat: drop the checkpoint of a run that lost its message", "message_id", asst.ID, "error", derr)
			}
		}
		return fmt.Errorf("bichat: save interrupted answer: %w", err)
	}
	s.publishSave(ctx, p, asst)
	return nil
}

// modelName is the name recorded on answers of a session using model.
func (s *Service) modelName(model string) string {
	if model == "" {
		return s.model.Name
	}
	return model
}
