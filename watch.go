package bichat

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// Watch streams the run of an assistant message: first the events of its
// run log with Seq greater than afterSeq, then the live run as it goes,
// without a gap or a duplicate (seqs are consecutive), until the terminal
// event: RunFinished, RunFailed, or Interrupted for a run that waits for
// the user. A run that is already over is replayed up to its terminal
// event; a cancelled run ends with RunFailed code "cancelled".
//
// Watch follows the run the message names (Message.RunID) when Watch is
// called: after Resume, Approve or Deny the message has a new run, whose
// events are numbered from 1 again, so watch again (afterSeq 0) to follow
// it. A message that has no run (it failed before one was claimed) yields
// one RunFailed with the message's error.
//
// A run of this process is followed through memory (a ring of its recent
// events; a watcher that falls behind catches up from the log, so a slow
// watcher never slows the run). A run of this process that finished
// with its terminal event stays in memory for 10 seconds (the 1,024 most
// recent), so a watcher that comes just after the end, such as a client
// that opens its stream once the answer is ready, is served without
// reading the log again; Close drops them. A run of another process
// sharing the store is followed by reading the log, woken by the store's
// notifications when domain.Repositories.RunEvents implements
// domain.RunEventNotifier, and polling every 250 ms otherwise (every
// second with notifications, in case one is lost).
//
// Breaking out of the loop stops watching only. Events read from the log
// carry payloads as generic JSON values (see Replay); events of a live run
// of this process are shared by its watchers: do not modify them. Errors
// are about watching (unknown message, store unavailable, ctx ended), not
// about the run, whose failure is its RunFailed event. A message p cannot
// see yields the same domain.ErrNotFound as a missing one.
func (s *Service) Watch(ctx context.Context, p domain.Principal, messageID string, afterSeq int64) iter.Seq2[agents.Event, error] {
	return func(yield func(agents.Event, error) bool) {
		yield = s.scrubYield(yield)
		if err := authorize(p, domain.PermRead); err != nil {
			yield(nil, err)
			return
		}
		if afterSeq < 0 {
			yield(nil, domain.Invalid("after_seq", "must not be negative"))
			return
		}
		msg, _, err := s.ownedMessage(ctx, p, messageID)
		if err != nil {
			yield(nil, err)
			return
		}
		s.watch(ctx, msg, afterSeq, yield)
	}
}

func (s *Service) watch(ctx context.Context, msg *domain.Message, afterSeq int64, yield func(agents.Event, error) bool) {
	for msg.RunID == "" {
		if msg.Status != domain.StatusGenerating {
			// Failed before a run was claimed: nothing was logged.
			if afterSeq < 1 {
				yield(messageTerminal(msg, nil, agents.EventHeader{SessionID: msg.SessionID, MessageID: msg.ID,
					Seq: 1, Time: msg.UpdatedAt}), nil)
			}
			return
		}
		// About to be claimed.
		select {
		case <-ctx.Done():
			yield(nil, fmt.Errorf("bichat: watch message %s: %w", msg.ID, ctx.Err()))
			return
		case <-time.After(pollInterval):
		}
		m, err := s.repos.Messages.GetMessage(ctx, msg.TenantID, msg.ID)
		if err != nil {
			yield(nil, lookupErr("watch message", "message", err))
			return
		}
		msg = m
	}
	r := s.liveByMessage(msg.ID)
	if r == nil || r.id != msg.RunID {
		// A run of this process that just finished is replayed from
		// memory: its ring and terminal event, or the log for what fell
		// out of the ring (follow catches up).
		r = s.finishedByMessage(msg.ID)
	}
	if r != nil && r.id == msg.RunID {
		w := r.subscribe(afterSeq, false)
		defer r.unsubscribe(w)
		if s.follow(ctx, r, w, yield) == followCtxDone {
			yield(nil, fmt.Errorf("bichat: watch run %s: %w", r.id, ctx.Err()))
		}
		return
	}
	s.tail(ctx, msg, afterSeq, yield)
}

// tail follows the log of a run that is not in this process.
func (s *Service) tail(ctx context.Context, msg *domain.Message, last int64, yield func(agents.Event, error) bool) {
	runID := msg.RunID
	var signal <-chan struct{}
	interval := pollInterval
	if n, ok := s.repos.RunEvents.(domain.RunEventNotifier); ok {
		sig, stop, err := n.SubscribeRunEvents(ctx, msg.TenantID, runID)
		if err == nil {
			defer stop()
			signal, interval = sig, notifiedPollInterval
		} else if ctx.Err() == nil {
			s.cfg.Logger.WarnContext(ctx, "bichat: watch: subscribe to run events; polling", "run_id", runID, "error", err)
		}
	}
	var tick *time.Ticker
	var over time.Time // when the message was first seen no longer generating under this run
	const page = 256
	for {
		recs, err := s.repos.RunEvents.ListRunEvents(ctx, msg.TenantID, runID, last, page)
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			yield(nil, fmt.Errorf("bichat: watch run %s: read run log: %w", runID, err))
			return
		}
		for _, rec := range recs {
			ev, err := agents.UnmarshalEvent(rec.Data)
			if err != nil {
				yield(nil, fmt.Errorf("bichat: watch run %s seq %d: %w", runID, rec.Seq, err))
				return
			}
			if !yield(ev, nil) {
				return
			}
			last = rec.Seq
			if isTerminal(ev) {
				return
			}
		}
		if len(recs) == page {
			continue
		}
		// No terminal event yet. The run may have moved to this process's
		// memory only if it is ours and still live: then the log is
		// complete up to its last batch, and follow fills the rest.
		if r := s.liveByMessage(msg.ID); r != nil && r.id == runID {
			w := r.subscribe(last, false)
			res := s.follow(ctx, r, w, yield)
			r.unsubscribe(w)
			if res == followCtxDone {
				yield(nil, fmt.Errorf("bichat: watch run %s: %w", runID, ctx.Err()))
			}
			return
		}
		if tick == nil {
			// First time without a terminal event: look at the message
			// at once (afterSeq may be past the end of a finished run).
			tick = time.NewTicker(interval)
			defer tick.Stop()
		} else {
			select {
			case <-ctx.Done():
				yield(nil, fmt.Errorf("bichat: watch run %s: %w", runID, ctx.Err()))
				return
			case <-signal:
				continue
			case <-tick.C:
			}
		}
		// A run whose message is no longer generating under it is over;
		// its process normally writes the terminal event right after the
		// message, so wait a little before writing one from the message
		// (the process died between the two writes).
		m, err := s.repos.Messages.GetMessage(ctx, msg.TenantID, msg.ID)
		if err != nil {
			if errors.Is(err, domain.ErrNotFound) {
				yield(nil, notFound("message"))
				return
			}
			continue
		}
		if m.Status == domain.StatusGenerating && m.RunID == runID {
			over = time.Time{}
			continue
		}
		end, terminal, err := s.logEnd(ctx, m.TenantID, runID)
		if err == nil && terminal && end.Seq <= last {
			return // the watcher is past the terminal event
		}
		if over.IsZero() {
			over = time.Now()
			continue
		}
		if time.Since(over) < terminalGrace {
			continue
		}
		cp, _ := s.pendingCheckpoint(ctx, m)
		if err := s.appendTerminal(ctx, m, runID, func(h agents.EventHeader) agents.Event {
			return messageTerminal(m, cp, h)
		}); err != nil {
			s.cfg.Logger.WarnContext(ctx, "bichat: watch: end the log of a finished run", "run_id", runID, "error", err)
		}
	}
}

// pendingCheckpoint decodes the checkpoint of a message awaiting input.
func (s *Service) pendingCheckpoint(ctx context.Context, m *domain.Message) (*agents.Checkpoint, error) {
	if m.Status != domain.StatusAwaitingInput {
		return nil, nil
	}
	cp, _, err := s.loadCheckpointRow(ctx, domain.Principal{TenantID: m.TenantID}, m)
	return cp, err
}

// messageTerminal is the terminal event that matches how m ended, for a
// run whose own terminal event was never written.
func messageTerminal(m *domain.Message, cp *agents.Checkpoint, h agents.EventHeader) agents.Event {
	switch m.Status {
	case domain.StatusComplete:
		return &agents.RunFinished{EventHeader: h, Text: m.Text(), Reason: agents.FinishReason(m.Metadata.StopReason),
			Note: m.Metadata.Note, Usage: m.Metadata.Usage}
	case domain.StatusAwaitingInput:
		in := &agents.Interrupted{EventHeader: h}
		if cp != nil {
			in.Kind, in.Questions, in.Confirmation = cp.Kind, cp.Questions, cp.Confirmation
		}
		return in
	case domain.StatusFailed:
		if e := m.Metadata.Error; e != nil {
			return &agents.RunFailed{EventHeader: h, Code: e.Code, Message: e.Message}
		}
	}
	return &agents.RunFailed{EventHeader: h, Code: "interrupted",
		Message: "The answer was interrupted before it was complete. Please ask again."}
}

// Cancel stops the run generating an assistant message, whichever process
// runs it. The message is failed with code "cancelled" and the run log
// ends with a RunFailed of that code, which every watcher of the run gets
// (a watcher that starts later too). Stopping a stream never cancels; only
// Cancel (or CancelOnStop) does.
//
// A run of this process is cancelled at once and Cancel returns when its
// outcome is recorded (or ctx ends). A run of another process sharing the
// store gets a cancel request (domain.RunRepository.RequestCancel), which
// its process sees on its next lease renewal, within a third of
// Limits.RunLease; Cancel returns once the request is stored. A message
// that no run has claimed yet (its run is about to start in another
// process) is claimed by Cancel itself and failed at once, so the run
// that was about to start finds it taken and does not start (a cancel
// request stored on an unclaimed message would not reach it: claiming a
// message clears the request). Without
// Config.Store.Runs only runs of this process can be cancelled; others
// yield an error matching errors.ErrUnsupported.
//
// A message that is not generating (its run finished, failed, or waits
// for the user) yields an error matching domain.ErrConflict, as does a run
// that finished before the cancel reached it. Cancel needs the write
// permission; a message p cannot see yields the same domain.ErrNotFound as
// a missing one.
func (s *Service) Cancel(ctx context.Context, p domain.Principal, messageID string) error {
	if err := authorize(p, domain.PermWrite); err != nil {
		return err
	}
	msg, _, err := s.ownedMessage(ctx, p, messageID)
	if err != nil {
		return err
	}
	if msg.Status != domain.StatusGenerating {
		return runOver(msg)
	}
	if r := s.liveByMessage(msg.ID); r != nil {
		r.cancel(stopCancelled)
		if err := waitFinished(ctx, r); err != nil {
			return fmt.Errorf("bichat: cancel message %s: the run is stopping: %w", msg.ID, err)
		}
		m, err := s.repos.Messages.GetMessage(ctx, p.TenantID, msg.ID)
		if err != nil {
			return lookupErr("cancel message", "message", err)
		}
		if m.Status != domain.StatusFailed || m.Metadata.Error == nil || m.Metadata.Error.Code != stopCancelled.code {
			return runOver(m)
		}
		return nil
	}
	if s.repos.Runs == nil {
		return fmt.Errorf("bichat: cancel message %s: its run is not in this process and Config.Store.Runs is nil, so no cancel request can reach it: %w",
			msg.ID, errors.ErrUnsupported)
	}
	if msg.RunID == "" {
		done, err := s.cancelUnclaimed(ctx, p, msg)
		if done || err != nil {
			return err
		}
	}
	if err := s.repos.Runs.RequestCancel(ctx, p.TenantID, msg.ID); err != nil {
		if errors.Is(err, domain.ErrConflict) {
			if m, gerr := s.repos.Messages.GetMessage(ctx, p.TenantID, msg.ID); gerr == nil {
				return runOver(m)
			}
		}
		return lookupErr("cancel message", "message", err)
	}
	return nil
}

// cancelUnclaimed cancels a generating message no run has claimed: it
// claims the message for a run of its own and records that run as
// cancelled (message failed, log ended with RunFailed "cancelled"). done
// is false when a run claimed the message first: the caller then sends
// that run a cancel request.
func (s *Service) cancelUnclaimed(ctx context.Context, p domain.Principal, msg *domain.Message) (done bool, err error) {
	runID := domain.NewID()
	err = s.repos.Runs.ClaimRun(ctx, p.TenantID, msg.ID, runID, s.cfg.Now().Add(s.cfg.Limits.RunLease))
	if errors.Is(err, domain.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return true, lookupErr("cancel message", "message", err)
	}
	msg.RunID = runID
	if err := s.failRun(ctx, p, msg, true, stopCancelled.code, stopCancelled.message, nil); err != nil {
		// Only a reaper could have taken a lease this fresh; whatever
		// happened, the message no longer waits for a run.
		if m, gerr := s.repos.Messages.GetMessage(ctx, p.TenantID, msg.ID); gerr == nil && errors.Is(err, domain.ErrConflict) {
			return true, runOver(m)
		}
		return true, fmt.Errorf("bichat: cancel message %s: %w", msg.ID, err)
	}
	if err := s.appendTerminal(ctx, msg, runID, func(h agents.EventHeader) agents.Event {
		return &agents.RunFailed{EventHeader: h, Code: stopCancelled.code, Message: stopCancelled.message}
	}); err != nil {
		s.cfg.Logger.ErrorContext(ctx, "bichat: end the log of a run cancelled before it started", "run_id", runID, "error", err)
	}
	return true, nil
}

// runOver is Cancel's error for a message whose run is not in progress.
func runOver(m *domain.Message) error {
	return fmt.Errorf("bichat: cancel message %s: its run is over (the message is %s), nothing to cancel: %w",
		m.ID, m.Status, domain.ErrConflict)
}
