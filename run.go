package bichat

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// ringSize is how many recent items a live run keeps for its watchers. A
// watcher that falls further behind catches up from the run log, which
// holds every event older than the last batch (runLogBatch < ringSize).
const ringSize = 256

// startsPending counts the runs of this process that were asked for (a
// Send is preparing them) and have not published their first event yet.
// While it is above zero, runs that are streaming yield the processor
// every startYieldEvery events, so that under load the new runs' first
// events come before the rest of the runs already under way: with 1,000
// runs started at once on two cores, the last first event otherwise
// waits for most runs to finish. The count is process-wide, as the
// processor is. Yielding costs a little CPU, and only while runs start.
var startsPending atomic.Int64

// startYieldEvery is how often (in events) a streaming run yields while
// runs are starting.
const startYieldEvery = 2

// pendingStart is one run counted in startsPending.
type pendingStart struct{ done atomic.Bool }

// beginStart counts a run in startsPending until end is called.
func beginStart() *pendingStart {
	startsPending.Add(1)
	return &pendingStart{}
}

// end stops counting the run; calls after the first, and on nil, do
// nothing.
func (p *pendingStart) end() {
	if p != nil && p.done.CompareAndSwap(false, true) {
		startsPending.Add(-1)
	}
}

// ErrClosed is returned by Send, Resume, Approve and Deny after Close.
var ErrClosed = errors.New("bichat: service is closed")

// runStop is the cause a run's context is cancelled with: it says which
// code and message the failed message gets.
type runStop struct {
	code, message string
}

func (e *runStop) Error() string { return "bichat: run stopped: " + e.code }

var (
	// stopCancelled: Service.Cancel, or a consumer of a CancelOnStop
	// stream that stopped reading.
	stopCancelled = &runStop{"cancelled", "The answer was cancelled before it was complete."}
	// stopShutdown: Service.Close.
	stopShutdown = &runStop{"shutdown", "The server shut down before the answer was complete. Please ask again."}
	// stopLeaseLost: the run's lease was taken over (a reaper failed the
	// message); nothing of the run is written any more.
	stopLeaseLost = &runStop{"lease_expired", leaseExpiredMessage}
)

// ringItem is one element of the end of a live run's stream.
type ringItem struct {
	ev  agents.Event
	err error
	// watchOnly marks a terminal event the starter's stream does not get
	// (it gets the error instead, as Send always did).
	watchOnly bool
}

// liveRun is a run executing in this process: its cancel function and a
// broadcaster of its stream (a ring of recent events, the final items and
// the watchers to wake).
type liveRun struct {
	id, messageID, sessionID, tenantID string
	ctx                                context.Context
	cancel                             context.CancelCauseFunc
	stopLife                           func() bool

	mu sync.Mutex
	// The stream is events 0..nev-1 then tail: event i is at
	// buf[i%ringSize] for nev-len(buf) <= i < nev.
	buf  []agents.Event
	nev  int64
	tail []ringItem // the final items (terminal event, errors)
	done bool       // tail is set: the stream is complete
	subs map[*watcher]struct{}
	// finished is closed after the run's outcome and terminal event are
	// recorded and published.
	finished chan struct{}
}

// watcher is one reader of a live run.
type watcher struct {
	sig     chan struct{}
	pos     int64 // next item index
	lastSeq int64 // last event seq delivered
	starter bool  // the stream of the call that started the run
	// pace, for a starter that owns its run (CancelOnStop), acknowledges
	// each event: the run waits for it, so it is never ahead of its loop.
	pace chan struct{}
}

// newLive registers a run of this process before it is claimed, so
// Cancel and Watch find it from the moment its message names it.
func (s *Service) newLive(ctx context.Context, asst *domain.Message, runID string) (*liveRun, error) {
	base := context.WithoutCancel(ctx)
	tctx, cancelT := context.WithTimeout(base, s.cfg.Limits.RunTimeout)
	rctx, cancel := context.WithCancelCause(tctx)
	r := &liveRun{id: runID, messageID: asst.ID, sessionID: asst.SessionID, tenantID: asst.TenantID,
		ctx: rctx, subs: map[*watcher]struct{}{}, finished: make(chan struct{})}
	r.cancel = func(cause error) {
		cancel(cause)
		cancelT()
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.closed {
		r.cancel(ErrClosed)
		return nil, ErrClosed
	}
	s.runsDone.Add(1)
	s.runs[runID] = r
	s.byMsg[asst.ID] = r
	r.stopLife = context.AfterFunc(s.life, func() { r.cancel(stopShutdown) })
	return r, nil
}

// checkOpen returns ErrClosed after Close.
func (s *Service) checkOpen() error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// unregister removes r from the runs of this process.
func (s *Service) unregister(r *liveRun) {
	r.stopLife()
	s.runMu.Lock()
	if s.runs[r.id] == r {
		delete(s.runs, r.id)
	}
	if s.byMsg[r.messageID] == r {
		delete(s.byMsg, r.messageID)
	}
	s.runMu.Unlock()
}

// finishedGrace is how long a run of this process that finished stays in
// memory (its ring of recent events and its terminal event) so that a
// watcher arriving just after the end, the usual case of a client that
// sends a question and then opens its stream, is served without decoding
// the run log again. finishedKeep bounds how many are kept (each holds at
// most ringSize events): beyond it the oldest is dropped first. It covers
// a burst of 1,000 questions answered at once, whose streams come while
// hundreds of other runs finish (with 256, about half of them read the
// log in BenchmarkHandlerConcurrent1000).
const (
	finishedGrace = 10 * time.Second
	finishedKeep  = 1024
)

// recentRuns are the runs of this process that finished in the last
// finishedGrace, oldest first; guarded by Service.runMu.
type recentRuns struct {
	byMsg map[string]*liveRun
	order []keptRun // oldest first; may hold entries byMsg no longer names
	timer *time.Timer
}

// keptRun is one finished run and when it stops being served from memory.
type keptRun struct {
	r     *liveRun
	until time.Time
}

// keepFinished keeps r, which finished with its terminal event in its
// stream and in its log, for watchers that come within finishedGrace.
// Nothing is kept after Close.
func (s *Service) keepFinished(r *liveRun) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.closed {
		return
	}
	k := &s.recent
	now := s.cfg.Now()
	s.pruneRecent(now)
	if k.byMsg == nil {
		k.byMsg = map[string]*liveRun{}
	}
	for len(k.order) >= finishedKeep {
		s.dropOldest()
	}
	k.byMsg[r.messageID] = r
	k.order = append(k.order, keptRun{r: r, until: now.Add(finishedGrace)})
	if k.timer == nil {
		k.timer = time.AfterFunc(finishedGrace, s.expireRecent)
	}
}

// dropOldest forgets the oldest kept run; the caller holds runMu.
func (s *Service) dropOldest() {
	k := &s.recent
	old := k.order[0]
	k.order[0] = keptRun{}
	k.order = k.order[1:]
	if k.byMsg[old.r.messageID] == old.r {
		delete(k.byMsg, old.r.messageID)
	}
}

// pruneRecent forgets the kept runs whose grace ended before now; the
// caller holds runMu.
func (s *Service) pruneRecent(now time.Time) {
	k := &s.recent
	for len(k.order) > 0 && !now.Before(k.order[0].until) {
		s.dropOldest()
	}
	if len(k.order) == 0 {
		k.order = nil // release the backing array
	}
}

// expireRecent releases the memory of the kept runs whose grace is over,
// while no watcher comes to prune them; it runs on a timer as long as
// runs are kept.
func (s *Service) expireRecent() {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	k := &s.recent
	s.pruneRecent(s.cfg.Now())
	if len(k.order) == 0 {
		k.timer = nil
		return
	}
	next := min(max(k.order[0].until.Sub(s.cfg.Now()), time.Second), finishedGrace)
	k.timer = time.AfterFunc(next, s.expireRecent)
}

// dropRecent forgets every kept run (Close); the caller holds runMu.
func (s *Service) dropRecent() {
	k := &s.recent
	if k.timer != nil {
		k.timer.Stop()
	}
	*k = recentRuns{}
}

// finishedByMessage returns the run of this process that generated
// messageID and finished within finishedGrace, or nil.
func (s *Service) finishedByMessage(messageID string) *liveRun {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	s.pruneRecent(s.cfg.Now())
	return s.recent.byMsg[messageID]
}

// abandon drops a run that never started.
func (s *Service) abandon(r *liveRun) {
	s.unregister(r)
	r.cancel(nil)
	s.runsDone.Done()
}

// liveByMessage returns the run of this process generating messageID.
func (s *Service) liveByMessage(messageID string) *liveRun {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	return s.byMsg[messageID]
}

// publish adds ev to the ring and wakes the watchers.
func (r *liveRun) publish(ev agents.Event) {
	r.mu.Lock()
	if r.buf == nil {
		r.buf = make([]agents.Event, 0, ringSize)
	}
	if len(r.buf) < ringSize {
		r.buf = append(r.buf, ev)
	} else {
		r.buf[r.nev%ringSize] = ev
	}
	r.nev++
	r.wake()
	r.mu.Unlock()
}

// publishEnd ends the stream with the items of tail and wakes the
// watchers.
func (r *liveRun) publishEnd(tail []ringItem) {
	r.mu.Lock()
	r.tail = tail
	r.done = true
	r.wake()
	r.mu.Unlock()
	close(r.finished)
}

// wake signals every watcher; the caller holds r.mu.
func (r *liveRun) wake() {
	for w := range r.subs {
		select {
		case w.sig <- struct{}{}:
		default:
		}
	}
}

// length is the number of items of the stream so far; the caller holds
// r.mu.
func (r *liveRun) length() int64 { return r.nev + int64(len(r.tail)) }

// item returns item i of the stream, which must still be in the ring or
// the tail; the caller holds r.mu.
func (r *liveRun) item(i int64) ringItem {
	if i >= r.nev {
		return r.tail[i-r.nev]
	}
	return ringItem{ev: r.buf[i%ringSize]}
}

func (r *liveRun) subscribe(afterSeq int64, starter bool) *watcher {
	w := &watcher{sig: make(chan struct{}, 1), lastSeq: afterSeq, starter: starter}
	r.mu.Lock()
	r.subs[w] = struct{}{}
	r.mu.Unlock()
	return w
}

func (r *liveRun) unsubscribe(w *watcher) {
	r.mu.Lock()
	delete(r.subs, w)
	r.mu.Unlock()
}

// followResult says why follow returned.
type followResult int

const (
	followEnded   followResult = iota // the stream ended (terminal event or run over)
	followStopped                     // the consumer stopped reading
	followCtxDone                     // ctx ended first
)

// follow yields the items of a live run to one watcher until the run's
// stream ends (the starter) or its terminal event (other watchers), the
// consumer stops or ctx ends. A watcher that fell out of the ring reads
// the missing events from the run log; events are deduplicated by seq,
// so the stream has neither a gap nor a duplicate.
func (s *Service) follow(ctx context.Context, r *liveRun, w *watcher, yield func(agents.Event, error) bool) followResult {
	// Items are taken under the lock a few at a time (no buffer grows
	// with the backlog) and yielded after it is released.
	var batch [followBatch]ringItem
	for {
		r.mu.Lock()
		if oldest := r.nev - int64(len(r.buf)); w.pos < oldest {
			if r.item(oldest).ev.Header().Seq <= w.lastSeq+1 {
				// What fell out of the ring is all at or before
				// w.lastSeq: the ring has the rest, without a gap.
				w.pos = oldest
				r.mu.Unlock()
				continue
			}
			r.mu.Unlock()
			if res, ok := s.catchUp(ctx, r, w, yield); !ok {
				return res
			}
			r.mu.Lock()
			w.pos = max(w.pos, r.nev-int64(len(r.buf)))
			r.mu.Unlock()
			continue
		}
		end := r.length()
		k := 0
		for ; w.pos < end && k < len(batch); k++ {
			batch[k] = r.item(w.pos)
			w.pos++
		}
		caughtUp := w.pos == end
		done := r.done && caughtUp
		r.mu.Unlock()
		for i := range k {
			it := batch[i]
			batch[i] = ringItem{}
			switch {
			case it.err != nil:
				if w.starter && !yield(nil, it.err) {
					return followStopped
				}
			case it.watchOnly && w.starter:
			default:
				h := it.ev.Header()
				if h.Seq <= w.lastSeq {
					continue
				}
				if !yield(it.ev, nil) {
					return followStopped
				}
				w.lastSeq = h.Seq
				if !w.starter && isTerminal(it.ev) {
					return followEnded
				}
				if w.pace != nil {
					select {
					case w.pace <- struct{}{}:
					case <-r.finished:
					}
				}
			}
		}
		if done {
			return followEnded
		}
		if !caughtUp {
			continue
		}
		select {
		case <-w.sig:
		case <-ctx.Done():
			return followCtxDone
		}
	}
}

// followBatch is how many items follow takes from a live run at a time.
const followBatch = 32

// catchUp yields the run-log events after w.lastSeq, for a watcher that
// fell out of the ring; ok is false when the watcher is done.
func (s *Service) catchUp(ctx context.Context, r *liveRun, w *watcher, yield func(agents.Event, error) bool) (followResult, bool) {
	recs, err := s.repos.RunEvents.ListRunEvents(ctx, r.tenantID, r.id, w.lastSeq, 0)
	if err != nil {
		if ctx.Err() != nil {
			return followCtxDone, false
		}
		if !yield(nil, fmt.Errorf("bichat: watch run %s: read run log: %w", r.id, err)) {
			return followStopped, false
		}
		return followEnded, false
	}
	for _, rec := range recs {
		ev, err := agents.UnmarshalEvent(rec.Data)
		if err != nil {
			yield(nil, fmt.Errorf("bichat: watch run %s seq %d: %w", r.id, rec.Seq, err))
			return followEnded, false
		}
		if !yield(ev, nil) {
			return followStopped, false
		}
		w.lastSeq = rec.Seq
		if !w.starter && isTerminal(ev) {
			return followEnded, false
		}
	}
	return followEnded, true
}

// isTerminal reports whether ev ends a run: RunFinished, RunFailed or
// Interrupted of the top-level agent.
func isTerminal(ev agents.Event) bool {
	switch ev.(type) {
	case *agents.RunFinished, *agents.RunFailed, *agents.Interrupted:
		return ev.Header().ParentRunID == ""
	}
	return false
}

// Close stops the service: Send, Resume, Approve and Deny yield ErrClosed
// from then on, every run of this process is cancelled (its message is
// failed with code "shutdown" and its run log ends with that RunFailed
// event) and Close waits for them to record their outcome, until ctx
// ends. Watchers of those runs get the terminal event. Close may be called
// more than once; RunReaper loops return.
func (s *Service) Close(ctx context.Context) error {
	s.runMu.Lock()
	s.closed = true
	s.dropRecent()
	s.runMu.Unlock()
	s.endLife(ErrClosed)
	done := make(chan struct{})
	go func() {
		s.runsDone.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("bichat: close: runs still recording: %w", ctx.Err())
	}
}

// waitFinished waits until r recorded its outcome, or ctx ends.
func waitFinished(ctx context.Context, r *liveRun) error {
	select {
	case <-r.finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pollInterval is how often a watcher of a run in another process reads
// the log when the store cannot notify it; with notifications it polls at
// notifiedPollInterval, in case a notification is lost.
const (
	pollInterval         = 250 * time.Millisecond
	notifiedPollInterval = time.Second
	// terminalGrace is how long a watcher waits for the terminal event of
	// a run whose message is no longer generating before it records one
	// from the message (the process died between the two writes).
	terminalGrace = 2 * time.Second
)
