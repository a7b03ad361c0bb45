package bichat

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// runner executes one run on a goroutine of the service: it drives the
// executor with the run's own context (detached from the caller's),
// renews the lease, writes the run log in batches, records the outcome and
// publishes every event to the run's watchers.
type runner struct {
	s      *Service
	p      domain.Principal
	sess   *domain.Session
	asst   *domain.Message
	rec    *runRecord
	live   *liveRun
	log    *runLog
	ctx    context.Context // for writes: the caller's values, never cancelled
	leased bool

	finished bool // the message's outcome is recorded (or given up)
	released bool // the session is released in this process
	terminal bool // a terminal event is in the log
	lost     atomic.Bool
	lastPub  int64 // seq of the last event published
	// tail holds the final items (terminal event, errors), published
	// after the run released its session.
	tail []ringItem

	hbStop, hbDone chan struct{}
	// pace is the starter's acknowledgements when it owns the run
	// (CancelOnStop): the run publishes its next event only after the loop
	// took the last one.
	pace chan struct{}
	// starting counts the run in startsPending until it publishes its
	// first event (nil when the caller did not count it).
	starting  *pendingStart
	published bool // the run published an event

	// spend is what the run's model calls cost (budgets, message cost).
	spend *runSpend
	// releaseQuota frees the run's concurrent-run slot (nil without a
	// quota limiter).
	releaseQuota func()
}

func (s *Service) newRunner(ctx context.Context, p domain.Principal, sess *domain.Session, asst *domain.Message,
	rec *runRecord, live *liveRun, leased bool) *runner {
	return &runner{s: s, p: p, sess: sess, asst: asst, rec: rec, live: live, log: s.newRunLog(ctx, asst),
		ctx: context.WithoutCancel(ctx), leased: leased, spend: &runSpend{prior: asst.Metadata.CostUSD}}
}

// run drives the executor to the end; the caller watches through r.live.
func (r *runner) run(start func(context.Context) iter.Seq2[agents.Event, error]) {
	defer r.finish()
	if r.leased {
		r.hbStop, r.hbDone = make(chan struct{}), make(chan struct{})
		go r.heartbeat()
	}
	s, p, asst, rec := r.s, r.p, r.asst, r.rec
loop:
	for ev, err := range start(context.WithValue(r.live.ctx, runSpendKey{}, r.spend)) {
		if r.lost.Load() || r.log.taken.Load() {
			r.lost.Store(true)
			break
		}
		if err != nil {
			if !r.finished {
				code, msg := errorCode(err), userMessage(err)
				if st := r.stopCause(); st != nil {
					code, msg = st.code, st.message
				}
				r.failWith(code, msg, true)
			}
			r.tail = append(r.tail, ringItem{err: err})
			break
		}
		root := ev.Header().ParentRunID == ""
		if st := r.stopCause(); st != nil {
			// The service stopped the run (Cancel, Close): what the
			// executor still yields is not wanted, except its RunFailed
			// with the transcript so far. An outcome that raced with the
			// stop is dropped and finish fails the message as stopped.
			if _, failed := ev.(*agents.RunFailed); !failed || !root {
				if isTerminal(ev) {
					break loop
				}
				continue
			}
		}
		switch e := ev.(type) {
		case *agents.UsageReported:
			r.recordCost(e)
		case *agents.ToolCallStarted:
			rec.args[e.CallID] = e.Arguments
		case *agents.ToolCallFinished:
			s.recordTool(r.ctx, p, asst, rec, e)
		case *agents.RunFinished:
			if !root {
				break
			}
			if !r.settle() {
				break loop
			}
			r.finished = true
			if err := s.complete(r.ctx, p, asst, r.leased, rec, e); err != nil {
				if r.outcomeLost(err) {
					break loop
				}
				r.failWith("internal", "The answer could not be saved.", true)
				r.tail = append(r.tail, ringItem{err: err})
				break loop
			}
			r.end(ev, false)
			continue
		case *agents.Interrupted:
			if !root {
				break
			}
			if !r.settle() {
				break loop
			}
			r.finished = true
			if err := s.interrupt(r.ctx, p, asst, r.leased, rec, e); err != nil {
				if r.outcomeLost(err) {
					break loop
				}
				r.failWith("internal", "The question for the user could not be saved.", true)
				r.tail = append(r.tail, ringItem{err: err})
				break loop
			}
			// The checkpoint is stored; hosts resume by message id. Keep
			// it (history, transcript) out of the log and the stream.
			c := *e
			c.Checkpoint = nil
			r.end(&c, false)
			continue
		case *agents.RunFailed:
			if !root {
				break
			}
			if st := r.stopCause(); st != nil {
				// Events after the stop were dropped: number it after
				// the last one logged, so the log has no gap.
				e.Code, e.Message = st.code, st.message
				e.Seq = r.log.last() + 1
			}
			if !r.settle() {
				break loop
			}
			r.finished = true
			s.applyRecord(asst, rec)
			if err := s.failRun(r.ctx, p, asst, r.leased, e.Code, e.Message, partsFromTranscript(e.Messages, "")); r.outcomeLost(err) {
				break loop
			}
			r.end(ev, false)
			continue
		}
		r.log.add(ev)
		r.lastPub = ev.Header().Seq
		r.live.publish(ev)
		if !r.published {
			// Let the starter's loop have the first event now rather than
			// after this run's next time slice: under load, the first
			// event is what a user waits for.
			r.published = true
			r.starting.end()
			runtime.Gosched()
		} else if r.lastPub%startYieldEvery == 0 && startsPending.Load() > 0 {
			// Runs of this process are waiting for their first event:
			// give them the processor (see startsPending).
			runtime.Gosched()
		}
		if r.pace != nil {
			select {
			case <-r.pace:
			case <-r.live.ctx.Done():
			}
		}
	}
}

// stopCause is why the run's context was cancelled by the service (Cancel,
// Close, a lost lease), or nil.
func (r *runner) stopCause() *runStop {
	if r.live.ctx.Err() == nil {
		return nil // the common case, checked for every event: no allocation
	}
	var st *runStop
	if errors.As(context.Cause(r.live.ctx), &st) {
		return st
	}
	return nil
}

// settle writes the queued run-log events and, with a lease, checks that
// the run still owns its message; false means the run lost it (a reaper
// failed the message) and must not write anything more.
func (r *runner) settle() bool {
	if err := r.log.flush(); errors.Is(err, domain.ErrConflict) {
		r.lost.Store(true)
		return false
	}
	if !r.leased {
		return true
	}
	ctx, cancel := context.WithTimeout(r.ctx, persistTimeout)
	defer cancel()
	_, err := r.s.repos.Runs.RenewLease(ctx, r.asst.TenantID, r.asst.ID, r.asst.RunID, r.s.cfg.Now().Add(r.s.cfg.Limits.RunLease))
	if errors.Is(err, domain.ErrConflict) || errors.Is(err, domain.ErrNotFound) {
		r.lost.Store(true)
		return false
	}
	// The outcome is written next (with FinishRun, which refuses it if a
	// reaper failed the message after this renewal); a renewal after it
	// would find the message finished and take that for a lost lease.
	r.stopHeartbeat()
	return !r.lost.Load()
}

// outcomeLost reports whether err, from saving the run's outcome, says
// the run no longer owns its message (FinishRun's ErrConflict: a reaper
// failed it, or it was finished elsewhere). The run is then lost: it
// writes nothing more, and finish gives its watchers the terminal event
// the other writer logged instead of a second one.
func (r *runner) outcomeLost(err error) bool {
	if r.leased && errors.Is(err, domain.ErrConflict) {
		r.lost.Store(true)
		return true
	}
	return false
}

// releaseSession frees the run's session in this process, once: a run
// that released it early must not free it under the next run.
func (r *runner) releaseSession() {
	if !r.released {
		r.released = true
		r.s.release(r.sess.ID)
	}
}

func (r *runner) stopHeartbeat() {
	if r.hbStop != nil {
		close(r.hbStop)
		<-r.hbDone
		r.hbStop = nil
	}
}

// failWith fails the message with code and message and ends the log with
// a RunFailed saying so; watchOnly keeps that event out of the starter's
// stream, which gets the error instead.
func (r *runner) failWith(code, message string, watchOnly bool) {
	r.finished = true
	if !r.settle() {
		return
	}
	if err := r.s.failRun(r.ctx, r.p, r.asst, r.leased, code, message, nil); r.outcomeLost(err) {
		return
	}
	r.end(&agents.RunFailed{EventHeader: agents.EventHeader{RunID: r.asst.RunID, SessionID: r.asst.SessionID,
		MessageID: r.asst.ID, Seq: r.log.last() + 1, Time: r.s.cfg.Now()}, Code: code, Message: message}, watchOnly)
}

// end writes the terminal event ev (it is in the log before anyone sees
// it) and queues it for publication.
func (r *runner) end(ev agents.Event, watchOnly bool) {
	// The outcome is recorded: free the session before the terminal event
	// reaches the log, where watchers on other replicas see it, so that a
	// client can ask the next question on this replica as soon as it has
	// the event from any replica.
	r.releaseSession()
	r.log.add(ev)
	if err := r.log.flush(); errors.Is(err, domain.ErrConflict) {
		r.lost.Store(true)
		return
	}
	r.terminal = true
	r.lastPub = ev.Header().Seq
	r.tail = append(r.tail, ringItem{ev: ev, watchOnly: watchOnly})
}

// finish records what is still missing, frees the session and ends the
// stream: the session is released before watchers see the terminal
// event, so a caller can ask the next question as soon as it has it.
func (r *runner) finish() {
	r.stopHeartbeat()
	switch {
	case r.lost.Load():
		r.finishLost()
	case !r.finished:
		code, msg := "internal", "The answer ended without an outcome."
		if st := r.stopCause(); st != nil {
			code, msg = st.code, st.message
		}
		r.failWith(code, msg, false)
		if r.lost.Load() {
			r.finishLost()
		}
	}
	r.log.close()
	r.releaseSession()
	if r.releaseQuota != nil {
		r.releaseQuota()
	}
	if r.terminal && !r.lost.Load() {
		// Its stream ends with the terminal event of its log: watchers
		// that come just after the end are served from memory (kept
		// before it leaves the live runs, so none reads the log in
		// between). A lost run is not kept: its log ends with another
		// process's event.
		r.s.keepFinished(r.live)
	}
	r.s.unregister(r.live)
	r.live.publishEnd(r.tail)
	r.live.cancel(nil)
	r.s.runsDone.Done()
}

// finishLost ends the stream of a run whose message another process
// failed (its lease expired): watchers get what that process wrote to the
// log, which ends with its RunFailed.
func (r *runner) finishLost() {
	ctx, cancel := context.WithTimeout(r.ctx, persistTimeout)
	defer cancel()
	msg := leaseExpiredMessage
	code := "lease_expired"
	if m, err := r.s.repos.Messages.GetMessage(ctx, r.asst.TenantID, r.asst.ID); err == nil && m.Metadata.Error != nil {
		code, msg = m.Metadata.Error.Code, m.Metadata.Error.Message
	}
	if err := r.s.appendTerminal(ctx, r.asst, r.asst.RunID, func(h agents.EventHeader) agents.Event {
		return &agents.RunFailed{EventHeader: h, Code: code, Message: msg}
	}); err != nil {
		r.s.cfg.Logger.ErrorContext(ctx, "bichat: end the log of a run that lost its lease", "run_id", r.asst.RunID, "error", err)
	}
	// Watchers of this process saw the events published so far, some of
	// which the log may lack (the batch that conflicted): they get the
	// log's terminal event numbered after the last one they saw.
	r.tail = r.tail[:0]
	last, terminal, err := r.s.logEnd(ctx, r.asst.TenantID, r.asst.RunID)
	if err != nil || !terminal {
		r.s.cfg.Logger.ErrorContext(ctx, "bichat: read the end of a run that lost its lease", "run_id", r.asst.RunID, "error", err)
		last.Data = nil
	}
	var ev agents.Event = &agents.RunFailed{Code: code, Message: msg}
	if last.Data != nil {
		if e, err := agents.UnmarshalEvent(last.Data); err == nil {
			ev = e
		}
	}
	h := ev.Header()
	h.RunID, h.SessionID, h.MessageID = r.asst.RunID, r.asst.SessionID, r.asst.ID
	h.Seq = max(h.Seq, r.lastPub+1)
	if h.Time.IsZero() {
		h.Time = r.s.cfg.Now()
	}
	r.tail = append(r.tail, ringItem{ev: ev})
	r.tail = append(r.tail, ringItem{err: fmt.Errorf("bichat: run %s stopped: its lease expired and another process failed its message: %w",
		r.asst.RunID, domain.ErrConflict)})
}

// heartbeat renews the run's lease every third of Limits.RunLease. A
// cancel request stops the run with code "cancelled"; a renewal refused
// with ErrConflict (the lease expired and a reaper failed the message, or
// the message was finished elsewhere) stops it without writing anything.
func (r *runner) heartbeat() {
	defer close(r.hbDone)
	lease := r.s.cfg.Limits.RunLease
	t := time.NewTicker(lease / 3)
	defer t.Stop()
	for {
		select {
		case <-r.hbStop:
			return
		case <-t.C:
		}
		if r.s.noHeartbeat.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(r.ctx, lease/3)
		cancelRequested, err := r.s.repos.Runs.RenewLease(ctx, r.asst.TenantID, r.asst.ID, r.asst.RunID, r.s.cfg.Now().Add(lease))
		cancel()
		switch {
		case errors.Is(err, domain.ErrConflict) || errors.Is(err, domain.ErrNotFound):
			r.lost.Store(true)
			r.live.cancel(stopLeaseLost)
			return
		case err != nil:
			r.s.cfg.Logger.WarnContext(r.ctx, "bichat: renew run lease", "run_id", r.asst.RunID, "error", err)
		case cancelRequested:
			r.live.cancel(stopCancelled)
		}
	}
}

// start launches the run on a goroutine of the service and streams it to
// yield, the caller's loop. When the caller stops reading or ctx ends,
// the run goes on unless cancelOnStop.
func (r *runner) start(ctx context.Context, cancelOnStop bool, yield func(agents.Event, error) bool,
	start func(context.Context) iter.Seq2[agents.Event, error]) {
	w := r.live.subscribe(0, true)
	defer r.live.unsubscribe(w)
	if cancelOnStop {
		r.pace = make(chan struct{}, 1)
		w.pace = r.pace
	}
	go r.run(start)
	switch r.s.follow(ctx, r.live, w, yield) {
	case followStopped:
		if cancelOnStop {
			r.live.cancel(stopCancelled)
			<-r.live.finished
		}
	case followCtxDone:
		if cancelOnStop {
			r.live.cancel(stopCancelled)
			r.s.follow(context.Background(), r.live, w, yield)
			return
		}
		yield(nil, fmt.Errorf("bichat: stopped watching run %s; it goes on and Watch follows it again: %w", r.live.id, ctx.Err()))
	}
}

const leaseExpiredMessage = "The answer stopped because the server generating it stopped responding. Please ask again."
