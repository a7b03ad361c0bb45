package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Handler handles published events. Handle runs in the publisher's goroutine
// (wrap slow handlers in an [Async]); it must not retain e after returning,
// and must be safe for concurrent use.
type Handler interface {
	Handle(ctx context.Context, e Event) error
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, e Event) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, e Event) error { return f(ctx, e) }

// HandlerError reports a handler that returned an error or panicked.
type HandlerError struct {
	// Kind is the event's kind.
	Kind Kind
	// Err is the error returned, or a description of the panic.
	Err error
	// Panic is the recovered value when the handler panicked.
	Panic any
	// Stack is the stack of a panicking handler.
	Stack []byte
}

// Error says which kind's handler failed and how.
func (e *HandlerError) Error() string {
	if e.Panic != nil {
		return fmt.Sprintf("hooks: handler for %s panicked: %v", e.Kind, e.Panic)
	}
	return fmt.Sprintf("hooks: handler for %s: %v", e.Kind, e.Err)
}

// Unwrap returns Err.
func (e *HandlerError) Unwrap() error { return e.Err }

// Options configure a Bus.
type Options struct {
	// OnError receives every handler error and panic, and the rate-limited
	// reports of events dropped by Async handlers subscribed with
	// SubscribeAsync (a *DropError, matching ErrDropped). It must be safe
	// for concurrent use. Nil logs them with slog.Default at error level.
	OnError func(*HandlerError)
	// Redact, when set, is applied to the free text of every event before
	// any handler sees it (events implementing Scrubber: all of bichat's
	// own events). Use redact.Redactor.Func(). Publish replaces the
	// scrubbed fields of the event it is given (it never writes into
	// their byte slices), once per event.
	Redact func(string) string
}

// Bus dispatches events to subscribed handlers. Publishing takes no lock:
// subscriptions are copy-on-write. A nil *Bus is valid and drops everything,
// so components can publish unconditionally.
type Bus struct {
	onError func(*HandlerError)
	redact  func(string) string

	mu      sync.Mutex // serialises Subscribe, unsubscribe and Close
	subs    atomic.Pointer[table]
	nextID  uint64
	closers []*Async
	closed  atomic.Bool
	dropped atomic.Uint64 // published after Close
	// asyncDropped counts the drops of the Async handlers subscribed to
	// the bus (they add to it themselves).
	asyncDropped atomic.Uint64
}

type entry struct {
	id uint64
	h  Handler
}

// table is an immutable snapshot of the subscriptions. byKind holds, for
// every kind with a kind-specific subscription, that kind's handlers merged
// with the catch-all handlers in subscription order; other kinds use all.
type table struct {
	byKind map[Kind][]entry
	all    []entry
}

// New returns an empty bus.
func New(opts Options) *Bus {
	b := &Bus{onError: opts.OnError, redact: opts.Redact}
	if b.onError == nil {
		b.onError = func(he *HandlerError) {
			slog.Error("bichat event handler failed", "kind", string(he.Kind), "error", he.Error())
		}
	}
	b.subs.Store(&table{byKind: map[Kind][]entry{}})
	return b
}

// ErrClosed is returned by Subscribe on a closed bus.
var ErrClosed = errors.New("hooks: bus closed")

// Subscribe registers h for events of the given kinds, or for every event
// when no kind is given. It returns a function that removes the
// subscription; calling it more than once is harmless.
func (b *Bus) Subscribe(h Handler, kinds ...Kind) (unsubscribe func(), err error) {
	if b == nil {
		return nil, errors.New("hooks: Subscribe on nil *Bus")
	}
	if h == nil {
		return nil, errors.New("hooks: Subscribe with nil handler")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		return nil, ErrClosed
	}
	id := b.addLocked(h, kinds)
	var once sync.Once
	return func() { once.Do(func() { b.remove(id) }) }, nil
}

// addLocked adds a subscription; b.mu must be held.
func (b *Bus) addLocked(h Handler, kinds []Kind) uint64 {
	b.nextID++
	id := b.nextID
	e := entry{id, h}
	if a, ok := h.(*Async); ok {
		a.attach(&b.asyncDropped)
	}
	old := b.subs.Load()
	nt := &table{byKind: make(map[Kind][]entry, len(old.byKind)+len(kinds)), all: old.all}
	if len(kinds) == 0 {
		// A catch-all joins every list; ids grow, so appending keeps
		// subscription order.
		nt.all = append(append([]entry(nil), old.all...), e)
		for k, v := range old.byKind {
			nt.byKind[k] = append(append([]entry(nil), v...), e)
		}
	} else {
		for k, v := range old.byKind {
			nt.byKind[k] = v
		}
		for _, k := range kinds {
			list, ok := nt.byKind[k]
			if !ok {
				list = old.all
			}
			if len(list) > 0 && list[len(list)-1].id == id {
				continue // the same kind given twice
			}
			nt.byKind[k] = append(append([]entry(nil), list...), e)
		}
	}
	b.subs.Store(nt)
	return id
}

func (b *Bus) remove(id uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.subs.Load()
	if a, ok := handlerOf(old, id).(*Async); ok {
		// Drops counted so far stay counted: Dropped never decreases.
		a.detach(&b.asyncDropped)
	}
	nt := &table{byKind: make(map[Kind][]entry, len(old.byKind)), all: without(old.all, id)}
	for k, v := range old.byKind {
		w := without(v, id)
		// Keep the merged list only while a kind-specific handler is in it.
		if len(w) > len(nt.all) {
			nt.byKind[k] = w
		}
	}
	b.subs.Store(nt)
}

// handlerOf returns the handler of subscription id in t, or nil.
func handlerOf(t *table, id uint64) Handler {
	for _, e := range t.all {
		if e.id == id {
			return e.h
		}
	}
	for _, list := range t.byKind {
		for _, e := range list {
			if e.id == id {
				return e.h
			}
		}
	}
	return nil
}

func without(es []entry, id uint64) []entry {
	out := make([]entry, 0, len(es))
	for _, e := range es {
		if e.id != id {
			out = append(out, e)
		}
	}
	return out
}

// SubscribeAsync wraps h in an [Async] handler with opts and subscribes it.
// The bus's error handler receives the async handler's errors unless
// opts.OnError is set, and Close drains its queue.
func (b *Bus) SubscribeAsync(h Handler, opts AsyncOptions, kinds ...Kind) (*Async, error) {
	if b == nil {
		return nil, errors.New("hooks: SubscribeAsync on nil *Bus")
	}
	if h == nil {
		return nil, errors.New("hooks: SubscribeAsync with nil handler")
	}
	if opts.OnError == nil {
		opts.OnError = b.onError
	}
	a := NewAsync(h, opts)
	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		a.Close()
		return nil, ErrClosed
	}
	b.addLocked(a, kinds)
	b.closers = append(b.closers, a)
	b.mu.Unlock()
	return a, nil
}

// Publish delivers e to every handler subscribed to its kind and to every
// catch-all handler, in subscription order, in the calling goroutine.
// Handler errors and panics go to the error handler; Publish itself never
// fails. After Close, events are counted in Dropped and not delivered.
func (b *Bus) Publish(ctx context.Context, e Event) {
	if b == nil || e == nil {
		return
	}
	if b.closed.Load() {
		b.dropped.Add(1)
		return
	}
	t := b.subs.Load()
	list, ok := t.byKind[e.Kind()]
	if !ok {
		list = t.all
	}
	if b.redact != nil && len(list) > 0 {
		if sc, ok := e.(Scrubber); ok {
			sc.Scrub(b.redact)
		}
	}
	for _, s := range list {
		b.call(ctx, s.h, e)
	}
}

func (b *Bus) call(ctx context.Context, h Handler, e Event) {
	defer func() {
		if r := recover(); r != nil {
			b.onError(&HandlerError{Kind: e.Kind(), Err: panicError(r), Panic: r, Stack: debug.Stack()})
		}
	}()
	if err := h.Handle(ctx, e); err != nil {
		b.onError(&HandlerError{Kind: e.Kind(), Err: err})
	}
}

// Dropped counts events that did not reach a handler: events published
// after Close, and events dropped by the [Async] handlers subscribed to
// the bus (with SubscribeAsync, or Subscribe with an *Async) while they
// were subscribed: queue full under DropNewest, publisher's context ended
// under Block, or the handler already closed. The count only grows (an
// unsubscribed handler's drops stay counted): export it as a counter
// metric. Queue-full drops are also reported through the error handler,
// rate-limited (see AsyncOptions.DropReportInterval).
func (b *Bus) Dropped() uint64 {
	if b == nil {
		return 0
	}
	return b.dropped.Load() + b.asyncDropped.Load()
}

// Close stops delivery and drains every async handler subscribed with
// SubscribeAsync, waiting until their queues are empty. It is safe to call
// more than once.
func (b *Bus) Close() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	if b.closed.Swap(true) {
		b.mu.Unlock()
		return nil
	}
	closers := b.closers
	b.closers = nil
	// The subscriptions end: later drops of the Async handlers (called
	// directly) are no longer the bus's.
	t := b.subs.Load()
	seen := map[uint64]bool{}
	detach := func(es []entry) {
		for _, e := range es {
			if a, ok := e.h.(*Async); ok && !seen[e.id] {
				seen[e.id] = true
				a.detach(&b.asyncDropped)
			}
		}
	}
	detach(t.all)
	for _, list := range t.byKind {
		detach(list)
	}
	b.mu.Unlock()
	for _, a := range closers {
		a.Close()
	}
	return nil
}

// Listen subscribes fn to every event of Go type E, e.g.
//
//	hooks.Listen(bus, func(ctx context.Context, e *hooks.ToolError) error { ... })
//
// For a concrete event type, E's Kind method is called on its zero value
// (a nil pointer), so it must not read fields; bichat's events satisfy
// this. For an interface type E, fn receives every event implementing it.
func Listen[E Event](b *Bus, fn func(context.Context, E) error) (unsubscribe func(), err error) {
	h := HandlerFunc(func(ctx context.Context, e Event) error {
		if te, ok := e.(E); ok {
			return fn(ctx, te)
		}
		return nil
	})
	var zero E
	if any(zero) == nil {
		// E is an interface type: every event is a candidate.
		return b.Subscribe(h)
	}
	return b.Subscribe(h, zero.Kind())
}

// panicError describes a recovered panic, wrapping it when it is an error.
func panicError(r any) error {
	if err, ok := r.(error); ok {
		return fmt.Errorf("panic: %w", err)
	}
	return fmt.Errorf("panic: %v", r)
}
