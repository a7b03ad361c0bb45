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
// message and an assistant placeholder atomically, claims the placeholder,
// runs the agent and persists the outcome before yielding the last event:
// RunFinished (message complete), Interrupted (message awaiting input) or
// RunFailed (message failed, followed by the error).
//
// Interrupted events come without their Checkpoint (the service stores it;
// answer with Resume, Approve or Deny and the message id).
//
// A session produces one answer at a time: while a run is in progress (in
// this process, or in another one within Limits.StaleAfter), Send and
// Resume yield an error matching domain.ErrConflict.
//
// Invalid input, a missing permission or an unknown session yield only an
// error; a session p cannot see (missing, another user's or another
// tenant's) yields the same error matching domain.ErrNotFound in every
// case. Breaking out of the loop, or cancelling ctx, stops the run, marks
// the message failed with code "cancelled" and ends the run log with a
// RunFailed event of that code: a message never stays generating, and
// Replay always shows that the run is over. No tool call starts after the
// run's context is cancelled.
func (s *Service) Send(ctx context.Context, p domain.Principal, sessionID, text string, opts ...SendOption) iter.Seq2[agents.Event, error] {
	return func(yield func(agents.Event, error) bool) {
		var o sendOptions
		for _, opt := range opts {
			if opt != nil {
				opt(&o)
			}
		}
		sess, user, asst, history, err := s.prepareSend(ctx, p, sessionID, text)
		if err != nil {
			yield(nil, err)
			return
		}
		defer s.release(sess.ID)
		exec, err := s.executorFor(sess.Model)
		if err != nil {
			s.failMessage(ctx, p, asst, "invalid", err.Error(), nil)
			yield(nil, err)
			return
		}
		if o.state != nil {
			ctx = context.WithValue(ctx, stateKey{}, o.state)
		}
		in := agents.Input{
			RunID:     asst.RunID,
			TenantID:  p.TenantID,
			UserID:    p.UserID,
			SessionID: sess.ID,
			MessageID: asst.ID,
			History:   history,
			Message:   agents.Message{Role: domain.RoleUser, Parts: user.Parts},
		}
		s.drive(ctx, p, sess, asst, newRunRecord(), func(rctx context.Context) iter.Seq2[agents.Event, error] {
			return exec.Run(rctx, in)
		}, yield)
	}
}

func (s *Service) prepareSend(ctx context.Context, p domain.Principal, sessionID, text string) (
	*domain.Session, *domain.Message, *domain.Message, []agents.Message, error) {
	if err := authorize(p, domain.PermWrite); err != nil {
		return nil, nil, nil, nil, err
	}
	t, err := checkText("text", text, domain.MaxMessageLen)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	sess, err := s.ownedSession(ctx, p, sessionID)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if !s.acquire(sess.ID) {
		return nil, nil, nil, nil, errBusy(sess.ID)
	}
	ok := false
	defer func() {
		if !ok {
			s.release(sess.ID)
		}
	}()
	prior, err := s.repos.Messages.ListMessages(ctx, p.TenantID, sess.ID, domain.MessageListOptions{Limit: s.cfg.Limits.HistoryMessages})
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("bichat: load history: %w", err)
	}
	now := s.cfg.Now().UTC()
	for i := range prior {
		m := &prior[i]
		switch m.Status {
		case domain.StatusGenerating:
			if now.Sub(m.UpdatedAt) < s.cfg.Limits.StaleAfter {
				return nil, nil, nil, nil, errBusy(sess.ID)
			}
		case domain.StatusAwaitingInput:
			// A new question supersedes a pending one: the old run ends.
			if err := s.supersede(ctx, p, m); err != nil {
				return nil, nil, nil, nil, err
			}
		}
	}
	history := historyFromMessages(prior)
	user := &domain.Message{ID: domain.NewID(), TenantID: p.TenantID, SessionID: sess.ID, Role: domain.RoleUser,
		Parts: []domain.Part{domain.TextPart(t)}, Status: domain.StatusComplete, CreatedAt: now, UpdatedAt: now}
	asst := &domain.Message{ID: domain.NewID(), TenantID: p.TenantID, SessionID: sess.ID, Role: domain.RoleAssistant,
		Parts: []domain.Part{}, Status: domain.StatusGenerating, CreatedAt: now, UpdatedAt: now,
		Metadata: domain.MessageMetadata{Model: s.modelName(sess.Model)}}
	if err := s.repos.Messages.CreateMessages(ctx, user, asst); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("bichat: save question: %w", err)
	}
	s.publishSave(ctx, p, user)
	runID := domain.NewID()
	if err := s.repos.Messages.Claim(ctx, p.TenantID, asst.ID, runID); err != nil {
		s.failMessage(ctx, p, asst, "internal", "The answer could not be started.", nil)
		return nil, nil, nil, nil, fmt.Errorf("bichat: claim answer: %w", err)
	}
	asst.RunID = runID
	sess.UpdatedAt = now
	if sess.Title == DefaultTitle && len(history) == 0 {
		sess.Title = titleFrom(t)
	}
	if err := s.repos.Sessions.UpdateSession(ctx, sess); err != nil {
		s.cfg.Logger.WarnContext(ctx, "bichat: session update failed", "session_id", sess.ID, "error", err)
	}
	ok = true
	return sess, user, asst, history, nil
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
	s.bus.Publish(ctx, &hooks.MessageSave{Meta: meta, Role: m.Role, Status: m.Status, Usage: m.Metadata.Usage})
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
	m.Metadata.Error = &domain.MessageError{Code: code, Message: msg, Time: now}
	m.UpdatedAt = now
	if err := s.repos.Messages.UpdateMessage(pctx, m); err != nil {
		s.cfg.Logger.ErrorContext(ctx, "bichat: could not mark message failed; RecoverStale will", "message_id", m.ID, "error", err)
		return
	}
	s.publishSave(ctx, p, m)
}

// runRecord accumulates what a run's tool calls produced.
type runRecord struct {
	// args holds each call's arguments by call id, from its ToolCallStarted
	// event or, for the call a resumed run resolves, from the checkpoint.
	args      map[string]json.RawMessage
	calls     []domain.ToolCallRecord
	datasets  []string
	citations []domain.Citation
}

func newRunRecord() *runRecord { return &runRecord{args: map[string]json.RawMessage{}} }

// drive runs start with a context bounded by RunTimeout, persists the run
// log and the outcome, and forwards events to the consumer. The outcome is
// persisted before the last event is yielded.
//
// The run log always ends with a terminal event (RunFinished, Interrupted
// or RunFailed), so Replay tells a reconnecting client that the run is
// over: when the run ends without one reaching the log (the consumer broke
// out of the loop, the executor stopped with a bare error, or the outcome
// could not be saved), drive appends a RunFailed with the code and message
// the answer was failed with.
func (s *Service) drive(ctx context.Context, p domain.Principal, sess *domain.Session, asst *domain.Message, rec *runRecord,
	start func(context.Context) iter.Seq2[agents.Event, error], yield func(agents.Event, error) bool) {
	var (
		finished bool  // the message's outcome is recorded
		terminal bool  // a terminal root event is in the run log
		lastSeq  int64 // seq of the last event logged
		code     = "cancelled"
		message  = "The request was cancelled before the answer was complete."
	)
	fail := func(c, m string) {
		finished = true
		code, message = c, m
		s.failMessage(ctx, p, asst, c, m, nil)
	}
	defer func() {
		if !finished {
			s.failMessage(ctx, p, asst, code, message, nil)
		}
		if !terminal {
			s.logEvent(ctx, p, asst, &agents.RunFailed{EventHeader: agents.EventHeader{RunID: asst.RunID,
				SessionID: asst.SessionID, MessageID: asst.ID, Seq: lastSeq + 1, Time: s.cfg.Now()},
				Code: code, Message: message})
		}
	}()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Limits.RunTimeout)
	defer cancel()
	for ev, err := range start(rctx) {
		if err != nil {
			if !finished {
				fail(errorCode(err), userMessage(err))
			}
			yield(nil, err)
			return
		}
		root := ev.Header().ParentRunID == ""
		switch e := ev.(type) {
		case *agents.ToolCallStarted:
			rec.args[e.CallID] = e.Arguments
		case *agents.ToolCallFinished:
			s.recordTool(ctx, p, asst, rec, e)
		case *agents.RunFinished:
			if root {
				finished = true
				if err := s.complete(ctx, p, sess, asst, rec, e); err != nil {
					fail("internal", "The answer could not be saved.")
					yield(nil, err)
					return
				}
				terminal = true
			}
		case *agents.Interrupted:
			if root {
				finished = true
				if err := s.interrupt(ctx, p, asst, rec, e); err != nil {
					fail("internal", "The question for the user could not be saved.")
					yield(nil, err)
					return
				}
				terminal = true
				// The checkpoint is stored; hosts resume by message id.
				// Keep it (history, transcript) out of the log and the
				// stream.
				c := *e
				c.Checkpoint = nil
				ev = &c
			}
		case *agents.RunFailed:
			if root {
				finished, terminal = true, true
				code, message = e.Code, e.Message
				s.applyRecord(asst, rec)
				s.failMessage(ctx, p, asst, e.Code, e.Message, partsFromTranscript(e.Messages, ""))
			}
		}
		s.logEvent(ctx, p, asst, ev)
		lastSeq = ev.Header().Seq
		if !yield(ev, nil) {
			return
		}
	}
}

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

func (s *Service) logEvent(ctx context.Context, p domain.Principal, asst *domain.Message, ev agents.Event) {
	data, err := agents.MarshalEvent(ev)
	if err != nil {
		if f, ok := ev.(*agents.ToolCallFinished); ok {
			c := *f
			c.Payload = map[string]string{"error": "payload could not be encoded as JSON"}
			data, err = agents.MarshalEvent(&c)
		}
		if err != nil {
			s.cfg.Logger.ErrorContext(ctx, "bichat: run log: encode event", "run_id", asst.RunID, "type", ev.Type(), "error", err)
			return
		}
	}
	h := ev.Header()
	pctx, cancel := persistCtx(ctx)
	defer cancel()
	re := domain.RunEvent{TenantID: p.TenantID, RunID: asst.RunID, SessionID: asst.SessionID, MessageID: asst.ID,
		Seq: h.Seq, Type: string(ev.Type()), Time: h.Time, Data: data}
	if err := s.repos.RunEvents.AppendRunEvents(pctx, re); err != nil {
		s.cfg.Logger.ErrorContext(ctx, "bichat: run log: append event", "run_id", asst.RunID, "seq", h.Seq, "error", err)
	}
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
	for _, d := range rec.datasets {
		if !slices.Contains(md.DatasetsUsed, d) {
			md.DatasetsUsed = append(md.DatasetsUsed, d)
		}
	}
	m.Citations = append(m.Citations, rec.citations...)
	rec.calls, rec.datasets, rec.citations = nil, nil, nil
}

func (s *Service) complete(ctx context.Context, p domain.Principal, sess *domain.Session, asst *domain.Message,
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
	if err := s.repos.Messages.UpdateMessage(pctx, asst); err != nil {
		return fmt.Errorf("bichat: save answer: %w", err)
	}
	s.publishSave(ctx, p, asst)
	return nil
}

func (s *Service) interrupt(ctx context.Context, p domain.Principal, asst *domain.Message, rec *runRecord, e *agents.Interrupted) error {
	pctx, cancel := persistCtx(ctx)
	defer cancel()
	data, err := json.Marshal(e.Checkpoint)
	if err != nil {
		return fmt.Errorf("bichat: encode checkpoint: %w", err)
	}
	now := s.cfg.Now().UTC()
	cp := &domain.Checkpoint{ID: e.Checkpoint.ID, TenantID: p.TenantID, SessionID: asst.SessionID, MessageID: asst.ID,
		OwnerID: p.UserID, RunID: asst.RunID, Kind: e.Kind, Data: data, CreatedAt: now}
	if e.Confirmation != nil {
		cp.ExpiresAt = e.Confirmation.ExpiresAt
	}
	if err := s.repos.Checkpoints.SaveCheckpoint(pctx, cp); err != nil {
		return fmt.Errorf("bichat: save checkpoint: %w", err)
	}
	s.applyRecord(asst, rec)
	asst.Parts = partsFromTranscript(e.Checkpoint.Messages, e.Checkpoint.Pending.CallID)
	asst.Status = domain.StatusAwaitingInput
	asst.Metadata.Usage = e.Checkpoint.Usage
	asst.Metadata.StopReason = "interrupted"
	asst.UpdatedAt = now
	if err := s.repos.Messages.UpdateMessage(pctx, asst); err != nil {
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
