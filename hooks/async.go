package hooks

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Overflow is what an Async handler does when its queue is full.
type Overflow int

const (
	// Block makes the publisher wait for room in the queue (or for its
	// context to end, which counts the event as dropped).
	Block Overflow = iota
	// DropNewest discards the event that does not fit and counts it in
	// Dropped; the publisher never waits.
	DropNewest
)

// AsyncOptions configure an Async handler.
type AsyncOptions struct {
	// QueueSize bounds the number of waiting events; 0 means 1024.
	QueueSize int
	// Overflow chooses between blocking and dropping when the queue is
	// full. The zero value is Block.
	Overflow Overflow
	// Workers is the number of goroutines calling the wrapped handler; 0
	// means 1, which keeps events in publication order.
	Workers int
	// OnError receives errors and panics of the wrapped handler, and the
	// reports of events dropped because the queue was full (a
	// *HandlerError wrapping a *DropError, matching ErrDropped). Nil logs
	// them with slog.Default.
	OnError func(*HandlerError)
	// DropReportInterval rate-limits the drop reports: at most one per
	// interval, carrying the number of events dropped since the previous
	// report (0 means DefaultDropReportInterval). Whatever is still
	// unreported when the handler closes is reported by Close.
	DropReportInterval time.Duration
}

// DefaultDropReportInterval is the default AsyncOptions.DropReportInterval.
const DefaultDropReportInterval = time.Second

// ErrDropped matches (errors.Is) the *DropError an Async handler reports
// through OnError when its queue was full and it dropped events.
var ErrDropped = errors.New("hooks: events dropped")

// DropError reports events an Async handler dropped because its queue was
// full (DropNewest). It reaches OnError inside a *HandlerError whose Kind
// is the kind of the first event dropped since the previous report.
type DropError struct {
	// Dropped counts the events dropped since the previous report.
	Dropped uint64
	// Total counts every event the handler has dropped so far, for any
	// reason (Async.Dropped at the time of the report).
	Total uint64
	// QueueSize is the handler's queue capacity.
	QueueSize int
	// Time is when the report was made. Reports are at least
	// AsyncOptions.DropReportInterval apart by this time (the last, made
	// by Close, may come sooner); when OnError runs may differ a little.
	Time time.Time
}

// Error says how many events were lost and what to change.
func (e *DropError) Error() string {
	return fmt.Sprintf("hooks: async handler queue full (%d slots): dropped %d events since the last report, %d in total; "+
		"raise AsyncOptions.QueueSize or Workers, or use the Block overflow policy", e.QueueSize, e.Dropped, e.Total)
}

// Is reports whether target is ErrDropped.
func (e *DropError) Is(target error) bool { return target == ErrDropped }

// Async runs a Handler on its own goroutines behind a bounded queue. The
// context passed to the wrapped handler keeps the publisher's values but is
// never cancelled. Close drains the queue.
//
// Dropped events are never silent: every drop is counted in Dropped (and
// in Bus.Dropped of each bus the handler is subscribed to), and drops
// caused by a full queue are reported through OnError as a *DropError, at
// most once per DropReportInterval.
type Async struct {
	h       Handler
	opts    AsyncOptions
	queue   chan job
	mu      sync.RWMutex
	closed  bool
	wg      sync.WaitGroup
	dropped atomic.Uint64
	handled atomic.Uint64

	// sinks are the drop counters of the buses a is subscribed to.
	sinkMu   sync.Mutex
	sinkRefs map[*atomic.Uint64]int
	sinks    atomic.Pointer[[]*atomic.Uint64]

	rep dropReporter
}

// dropReporter rate-limits the reports of overflow drops. The publisher
// only adds to pending and, when no report is scheduled, schedules one; the
// report itself runs on a timer goroutine, never in the publisher.
type dropReporter struct {
	pending   atomic.Uint64 // overflow drops not yet reported
	scheduled atomic.Bool   // a report timer is pending
	mu        sync.Mutex    // guards the fields below
	timer     *time.Timer
	kind      Kind      // kind of the first drop of the window
	last      time.Time // time of the last report
	closed    bool
	wg        sync.WaitGroup // running report timers
}

type job struct {
	ctx context.Context
	e   Event
}

// NewAsync starts the workers of an Async handler wrapping h.
func NewAsync(h Handler, opts AsyncOptions) *Async {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 1024
	}
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.OnError == nil {
		opts.OnError = New(Options{}).onError
	}
	if opts.DropReportInterval <= 0 {
		opts.DropReportInterval = DefaultDropReportInterval
	}
	a := &Async{h: h, opts: opts, queue: make(chan job, opts.QueueSize)}
	a.wg.Add(opts.Workers)
	for range opts.Workers {
		go a.work()
	}
	return a
}

// Handle enqueues e. With DropNewest it never blocks; with Block it waits for
// room or for ctx to end. After Close, events are dropped and counted.
func (a *Async) Handle(ctx context.Context, e Event) error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		a.countDrop()
		return nil
	}
	j := job{ctx: context.WithoutCancel(ctx), e: e}
	if a.opts.Overflow == DropNewest {
		select {
		case a.queue <- j:
		default:
			a.countDrop()
			a.overflowed(e.Kind())
		}
		return nil
	}
	select {
	case a.queue <- j: // room: never drop, whatever the context says
		return nil
	default:
	}
	select {
	case a.queue <- j:
		return nil
	case <-ctx.Done():
		// Counted here; reported by the returned error (the bus hands it
		// to its error handler).
		a.countDrop()
		return fmt.Errorf("hooks: async queue full and context done: %w", ctx.Err())
	}
}

// countDrop counts one dropped event here and on every bus a is
// subscribed to.
func (a *Async) countDrop() {
	a.dropped.Add(1)
	if s := a.sinks.Load(); s != nil {
		for _, c := range *s {
			c.Add(1)
		}
	}
}

// attach makes drops count on a bus's counter too; detach undoes it. A bus
// that subscribes a several times counts each drop once.
func (a *Async) attach(c *atomic.Uint64) { a.editSinks(c, +1) }

func (a *Async) detach(c *atomic.Uint64) { a.editSinks(c, -1) }

func (a *Async) editSinks(c *atomic.Uint64, delta int) {
	a.sinkMu.Lock()
	defer a.sinkMu.Unlock()
	if a.sinkRefs == nil {
		a.sinkRefs = map[*atomic.Uint64]int{}
	}
	a.sinkRefs[c] += delta
	if a.sinkRefs[c] <= 0 {
		delete(a.sinkRefs, c)
	}
	list := make([]*atomic.Uint64, 0, len(a.sinkRefs))
	for k := range a.sinkRefs {
		list = append(list, k)
	}
	a.sinks.Store(&list)
}

// overflowed notes a drop caused by a full queue and makes sure a report
// is scheduled: right away when the last report is older than the
// interval, otherwise when the interval has passed.
func (a *Async) overflowed(kind Kind) {
	r := &a.rep
	r.pending.Add(1)
	if r.scheduled.Load() || !r.scheduled.CompareAndSwap(false, true) {
		return // a report is already scheduled; it will include this drop
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.scheduled.Store(false)
		return
	}
	delay := max(time.Until(r.last.Add(a.opts.DropReportInterval)), 0)
	r.kind = kind
	r.wg.Add(1)
	r.timer = time.AfterFunc(delay, func() {
		defer r.wg.Done()
		r.mu.Lock()
		r.timer = nil
		// Clear the flag before taking the count: a drop after this
		// point schedules the next report.
		r.scheduled.Store(false)
		n := r.pending.Swap(0)
		kind := r.kind
		if n > 0 {
			r.last = time.Now()
		}
		at := r.last
		r.mu.Unlock()
		a.reportDrops(kind, n, at)
	})
}

func (a *Async) reportDrops(kind Kind, n uint64, at time.Time) {
	if n == 0 {
		return
	}
	a.opts.OnError(&HandlerError{Kind: kind, Err: &DropError{Dropped: n, Total: a.dropped.Load(), QueueSize: a.opts.QueueSize, Time: at}})
}

// flushDrops reports what is still pending, stops the timer and waits for
// a report in progress; after it no report is made.
func (a *Async) flushDrops() {
	r := &a.rep
	r.mu.Lock()
	r.closed = true
	if r.timer != nil && r.timer.Stop() {
		r.wg.Done() // the timer's function will not run
	}
	r.timer = nil
	n := r.pending.Swap(0)
	kind := r.kind
	r.mu.Unlock()
	a.reportDrops(kind, n, time.Now())
	r.wg.Wait()
}

func (a *Async) work() {
	defer a.wg.Done()
	for j := range a.queue {
		a.run(j)
		a.handled.Add(1)
	}
}

func (a *Async) run(j job) {
	defer func() {
		if r := recover(); r != nil {
			a.opts.OnError(&HandlerError{Kind: j.e.Kind(), Err: panicError(r), Panic: r, Stack: debug.Stack()})
		}
	}()
	if err := a.h.Handle(j.ctx, j.e); err != nil {
		a.opts.OnError(&HandlerError{Kind: j.e.Kind(), Err: err})
	}
}

// Dropped counts events discarded because the queue was full, the
// publisher's context ended while blocked, or the handler was closed. It
// only grows: export it as a counter metric.
func (a *Async) Dropped() uint64 { return a.dropped.Load() }

// Handled counts events the wrapped handler has processed.
func (a *Async) Handled() uint64 { return a.handled.Load() }

// Pending returns the number of queued events.
func (a *Async) Pending() int { return len(a.queue) }

// Close stops accepting events, waits until every queued event has been
// handled and the workers have exited, and reports the drops not reported
// yet. It is safe to call more than once.
func (a *Async) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		a.wg.Wait()
		a.rep.wg.Wait()
		return nil
	}
	a.closed = true
	close(a.queue)
	a.mu.Unlock()
	a.wg.Wait()
	a.flushDrops()
	return nil
}
