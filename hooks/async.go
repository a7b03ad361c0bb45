package hooks

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
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
	// OnError receives errors and panics of the wrapped handler. Nil logs
	// them with slog.Default.
	OnError func(*HandlerError)
}

// Async runs a Handler on its own goroutines behind a bounded queue. The
// context passed to the wrapped handler keeps the publisher's values but is
// never cancelled. Close drains the queue.
type Async struct {
	h       Handler
	opts    AsyncOptions
	queue   chan job
	mu      sync.RWMutex
	closed  bool
	wg      sync.WaitGroup
	dropped atomic.Uint64
	handled atomic.Uint64
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
		a.dropped.Add(1)
		return nil
	}
	j := job{ctx: context.WithoutCancel(ctx), e: e}
	if a.opts.Overflow == DropNewest {
		select {
		case a.queue <- j:
		default:
			a.dropped.Add(1)
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
		a.dropped.Add(1)
		return fmt.Errorf("hooks: async queue full and context done: %w", ctx.Err())
	}
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
// publisher's context ended while blocked, or the handler was closed.
func (a *Async) Dropped() uint64 { return a.dropped.Load() }

// Handled counts events the wrapped handler has processed.
func (a *Async) Handled() uint64 { return a.handled.Load() }

// Pending returns the number of queued events.
func (a *Async) Pending() int { return len(a.queue) }

// Close stops accepting events, waits until every queued event has been
// handled and the workers have exited. It is safe to call more than once.
func (a *Async) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		a.wg.Wait()
		return nil
	}
	a.closed = true
	close(a.queue)
	a.mu.Unlock()
	a.wg.Wait()
	return nil
}
