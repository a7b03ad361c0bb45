package hooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockedEvidence is how long a test waits to see that an operation which
// must block has not returned. It only ever supports a negative observation;
// positive paths are synchronised with channels.
const blockedEvidence = 30 * time.Millisecond

// hangTimeout bounds waits that must succeed, so a regression fails instead
// of hanging the test binary.
const hangTimeout = 10 * time.Second

// gated is a handler that announces each event on started, then waits for a
// token (or the closing) of gate before recording it.
type gated struct {
	started chan Event
	gate    chan struct{}
	err     func(Event) error

	mu   sync.Mutex
	done []Event
}

func newGated(capacity int) *gated {
	return &gated{started: make(chan Event, capacity), gate: make(chan struct{})}
}

func (g *gated) Handle(_ context.Context, e Event) error {
	g.started <- e
	<-g.gate
	g.mu.Lock()
	g.done = append(g.done, e)
	g.mu.Unlock()
	if g.err != nil {
		return g.err(e)
	}
	return nil
}

func (g *gated) handled() []Event {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.done)
}

// release lets exactly one waiting Handle call finish.
func (g *gated) release(t *testing.T) {
	t.Helper()
	select {
	case g.gate <- struct{}{}:
	case <-time.After(hangTimeout):
		t.Fatal("no handler call waiting at the gate")
	}
}

func (g *gated) waitStarted(t *testing.T) Event {
	t.Helper()
	select {
	case e := <-g.started:
		return e
	case <-time.After(hangTimeout):
		t.Fatal("handler not called")
		return nil
	}
}

func ev(i int) *seqEvent { return &seqEvent{Seq: uint64(i)} }

func seqs(es []Event) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.(*seqEvent).Seq
	}
	return out
}

func wantSeqs(from, to int) []uint64 {
	var out []uint64
	for i := from; i <= to; i++ {
		out = append(out, uint64(i))
	}
	return out
}

func mustHandle(t *testing.T, a *Async, ctx context.Context, e Event) {
	t.Helper()
	if err := a.Handle(ctx, e); err != nil {
		t.Fatalf("Handle: %v", err)
	}
}

// waitOrFail waits for ch and fails the test after hangTimeout.
func waitOrFail[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangTimeout):
		t.Fatalf("%s did not happen within %v", what, hangTimeout)
		var zero T
		return zero
	}
}

// assertBlocked checks that ch does not deliver for a short while.
func assertBlocked[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s returned, want it blocked", what)
	case <-time.After(blockedEvidence):
	}
}

func TestNewAsyncDefaults(t *testing.T) {
	t.Parallel()
	a := NewAsync(HandlerFunc(func(context.Context, Event) error { return nil }), AsyncOptions{})
	defer a.Close()
	if got := cap(a.queue); got != 1024 {
		t.Errorf("default QueueSize = %d, want 1024", got)
	}
	if a.opts.Workers != 1 || a.opts.Overflow != Block || a.opts.OnError == nil {
		t.Errorf("defaults = %+v, want 1 worker, Block and a non-nil OnError", a.opts)
	}
	if a.Pending() != 0 || a.Dropped() != 0 || a.Handled() != 0 {
		t.Errorf("fresh Async: Pending %d Dropped %d Handled %d", a.Pending(), a.Dropped(), a.Handled())
	}
}

func TestAsyncBlockWaitsForRoom(t *testing.T) {
	t.Parallel()
	g := newGated(8)
	a := NewAsync(g, AsyncOptions{QueueSize: 2, Overflow: Block, OnError: failOnError(t)})
	ctx := t.Context()

	mustHandle(t, a, ctx, ev(1))
	if got := g.waitStarted(t).(*seqEvent).Seq; got != 1 {
		t.Fatalf("first event handled is %v", got)
	}
	// The worker is busy with 1; 2 and 3 fill the queue.
	mustHandle(t, a, ctx, ev(2))
	mustHandle(t, a, ctx, ev(3))
	if p := a.Pending(); p != 2 {
		t.Fatalf("Pending() = %d, want 2", p)
	}

	done := make(chan error, 1)
	go func() { done <- a.Handle(ctx, ev(4)) }()
	assertBlocked(t, done, "Handle on a full queue")

	g.release(t) // 1 finishes; the worker takes 2, which makes room for 4
	if err := waitOrFail(t, done, "Handle after room was made"); err != nil {
		t.Fatalf("blocked Handle returned %v", err)
	}

	close(g.gate)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := seqs(g.handled()), wantSeqs(1, 4); !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v", got, want)
	}
	if h, d := a.Handled(), a.Dropped(); h != 4 || d != 0 {
		t.Errorf("Handled %d Dropped %d, want 4 and 0", h, d)
	}
}

func TestAsyncBlockContextCancelled(t *testing.T) {
	t.Parallel()
	g := newGated(8)
	a := NewAsync(g, AsyncOptions{QueueSize: 2, Overflow: Block, OnError: failOnError(t)})

	mustHandle(t, a, t.Context(), ev(1))
	g.waitStarted(t)
	mustHandle(t, a, t.Context(), ev(2))
	mustHandle(t, a, t.Context(), ev(3))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Handle(ctx, ev(4)) }()
	assertBlocked(t, done, "Handle on a full queue")

	cancel()
	err := waitOrFail(t, done, "Handle returning after its context was cancelled")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Handle error = %v, want one wrapping context.Canceled", err)
	}
	if d := a.Dropped(); d != 1 {
		t.Errorf("Dropped() = %d, want 1", d)
	}

	close(g.gate)
	a.Close()
	if got, want := seqs(g.handled()), wantSeqs(1, 3); !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v (4 was dropped)", got, want)
	}
	if h := a.Handled(); h != 3 {
		t.Errorf("Handled() = %d, want 3", h)
	}
}

func TestAsyncBlockDeadlineExceeded(t *testing.T) {
	t.Parallel()
	g := newGated(8)
	a := NewAsync(g, AsyncOptions{QueueSize: 1, OnError: failOnError(t)})
	defer a.Close()
	defer close(g.gate)

	mustHandle(t, a, t.Context(), ev(1))
	g.waitStarted(t)
	mustHandle(t, a, t.Context(), ev(2))

	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	if err := a.Handle(ctx, ev(3)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Handle error = %v, want one wrapping context.DeadlineExceeded", err)
	}
	if d := a.Dropped(); d != 1 {
		t.Errorf("Dropped() = %d, want 1", d)
	}
}

// TestAsyncBlockCancelledContextWithRoom publishes with an already cancelled
// context while the queue has plenty of room. Nothing has to wait, so
// nothing should be dropped: Dropped is documented to count events whose
// publisher's "context ended while blocked". (Regression: Handle used to
// select between the send and ctx.Done at random, dropping about half.)
func TestAsyncBlockCancelledContextWithRoom(t *testing.T) {
	t.Parallel()
	var rec recorder
	a := NewAsync(rec.handler("h"), AsyncOptions{QueueSize: 256, Overflow: Block, OnError: failOnError(t)})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var errs int
	for i := 1; i <= 100; i++ {
		if err := a.Handle(ctx, ev(i)); err != nil {
			errs++
		}
	}
	a.Close()
	if d, h := a.Dropped(), a.Handled(); errs != 0 || d != 0 || h != 100 {
		t.Errorf("with room in the queue and a cancelled context: %d errors, Dropped %d, Handled %d; want 0, 0, 100",
			errs, d, h)
	}
}

func TestAsyncDropNewest(t *testing.T) {
	t.Parallel()
	g := newGated(8)
	var ec errCollector
	a := NewAsync(g, AsyncOptions{QueueSize: 2, Overflow: DropNewest, OnError: ec.onError})

	mustHandle(t, a, t.Context(), ev(1))
	g.waitStarted(t) // the worker holds 1; the queue is empty again

	// 2 and 3 fill the queue, 4..8 are dropped; none of these calls may block.
	done := make(chan []error, 1)
	go func() {
		var errs []error
		for i := 2; i <= 8; i++ {
			errs = append(errs, a.Handle(t.Context(), ev(i)))
		}
		done <- errs
	}()
	errs := waitOrFail(t, done, "Handle with DropNewest on a full queue")
	for i, err := range errs {
		if err != nil {
			t.Errorf("Handle(%d) = %v, want nil", i+2, err)
		}
	}
	if d, p := a.Dropped(), a.Pending(); d != 5 || p != 2 {
		t.Errorf("Dropped %d Pending %d, want 5 and 2", d, p)
	}

	close(g.gate)
	a.Close()
	if h := a.Handled(); h != 3 {
		t.Errorf("Handled() = %d, want 3 (the enqueued events)", h)
	}
	if got, want := seqs(g.handled()), wantSeqs(1, 3); !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v", got, want)
	}
	if d := a.Dropped(); d != 5 {
		t.Errorf("Dropped() after Close = %d, want 5", d)
	}
	// The drops were reported through OnError (and nothing else was).
	var reported uint64
	for _, he := range ec.all() {
		var de *DropError
		if !errors.As(he, &de) || !errors.Is(he, ErrDropped) || he.Kind != kindSeq {
			t.Fatalf("OnError got %v, want only drop reports", he)
		}
		reported += de.Dropped
	}
	if reported != 5 {
		t.Errorf("drop reports add up to %d, want 5", reported)
	}
}

func TestAsyncDropNewestIgnoresCancelledContext(t *testing.T) {
	t.Parallel()
	g := newGated(8)
	close(g.gate)
	a := NewAsync(g, AsyncOptions{QueueSize: 8, Overflow: DropNewest, OnError: failOnError(t)})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for i := 1; i <= 5; i++ {
		mustHandle(t, a, ctx, ev(i))
	}
	a.Close()
	if h, d := a.Handled(), a.Dropped(); h != 5 || d != 0 {
		t.Errorf("Handled %d Dropped %d, want 5 and 0", h, d)
	}
}

func TestAsyncCloseDrains(t *testing.T) {
	t.Parallel()
	const n = 10
	g := newGated(n)
	a := NewAsync(g, AsyncOptions{QueueSize: 16, OnError: failOnError(t)})
	for i := 1; i <= n; i++ {
		mustHandle(t, a, t.Context(), ev(i))
	}
	g.waitStarted(t)

	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	assertBlocked(t, closed, "Close with queued events")

	close(g.gate)
	if err := waitOrFail(t, closed, "Close after the gate opened"); err != nil {
		t.Fatal(err)
	}
	// Every queued event was handled before Close returned.
	if h, p := a.Handled(), a.Pending(); h != n || p != 0 {
		t.Errorf("after Close: Handled %d Pending %d, want %d and 0", h, p, n)
	}
	if got, want := seqs(g.handled()), wantSeqs(1, n); !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v", got, want)
	}
}

func TestAsyncCloseIdempotent(t *testing.T) {
	t.Parallel()
	g := newGated(8)
	a := NewAsync(g, AsyncOptions{OnError: failOnError(t)})
	for i := 1; i <= 3; i++ {
		mustHandle(t, a, t.Context(), ev(i))
	}
	g.waitStarted(t)

	// Concurrent Close calls all wait for the drain.
	const closers = 4
	results := make(chan uint64, closers)
	for range closers {
		go func() {
			if err := a.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			results <- a.Handled()
		}()
	}
	assertBlocked(t, results, "Close with queued events")
	close(g.gate)
	for range closers {
		if h := waitOrFail(t, results, "Close"); h != 3 {
			t.Errorf("a Close returned with Handled() = %d, want 3", h)
		}
	}
	// And later ones return at once.
	if err := a.Close(); err != nil {
		t.Errorf("Close after Close = %v", err)
	}
}

func TestAsyncHandleAfterClose(t *testing.T) {
	t.Parallel()
	for _, overflow := range []Overflow{Block, DropNewest} {
		t.Run(fmt.Sprint("overflow=", overflow), func(t *testing.T) {
			t.Parallel()
			var rec recorder
			a := NewAsync(rec.handler("h"), AsyncOptions{Overflow: overflow, OnError: failOnError(t)})
			a.Close()
			for i := 1; i <= 3; i++ {
				if err := a.Handle(t.Context(), ev(i)); err != nil {
					t.Errorf("Handle after Close = %v, want nil", err)
				}
			}
			if d, h := a.Dropped(), a.Handled(); d != 3 || h != 0 {
				t.Errorf("Dropped %d Handled %d, want 3 and 0", d, h)
			}
			if got := rec.events(); len(got) != 0 {
				t.Errorf("handler called after Close: %v", got)
			}
		})
	}
}

func TestAsyncErrorsAndPanicsReachOnError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	h := HandlerFunc(func(_ context.Context, e Event) error {
		switch e.Kind() {
		case KindToolError:
			return fmt.Errorf("handling: %w", boom)
		case KindToolStart:
			panic("async kaboom")
		}
		return nil
	})
	var ec errCollector
	a := NewAsync(h, AsyncOptions{OnError: ec.onError})
	for _, e := range []Event{&ToolError{}, &ToolStart{}, &ToolFinish{}} {
		mustHandle(t, a, t.Context(), e)
	}
	a.Close()

	if h := a.Handled(); h != 3 {
		t.Errorf("Handled() = %d, want 3 (failures count as handled)", h)
	}
	errs := ec.all()
	if len(errs) != 2 {
		t.Fatalf("OnError called %d times, want 2: %v", len(errs), errs)
	}
	if he := errs[0]; he.Kind != KindToolError || !errors.Is(he, boom) || he.Panic != nil {
		t.Errorf("error: got %+v, want kind %s wrapping boom", he, KindToolError)
	}
	he := errs[1]
	if he.Kind != KindToolStart || he.Panic != "async kaboom" || len(he.Stack) == 0 || he.Err == nil {
		t.Errorf("panic: got Kind %q Panic %v Stack %d bytes Err %v", he.Kind, he.Panic, len(he.Stack), he.Err)
	}
	if !strings.Contains(string(he.Stack), "async_test.go") {
		t.Errorf("panic stack does not show the panicking handler:\n%s", he.Stack)
	}
}

func TestBusSubscribeAsync(t *testing.T) {
	t.Parallel()
	var ec errCollector
	b := New(Options{OnError: ec.onError})
	g := newGated(8)
	g.err = func(e Event) error { return fmt.Errorf("failed %d", e.(*seqEvent).Seq) }
	a, err := b.SubscribeAsync(g, AsyncOptions{QueueSize: 8}, kindSeq)
	if err != nil {
		t.Fatalf("SubscribeAsync: %v", err)
	}
	const n = 5
	for i := 1; i <= n; i++ {
		b.Publish(t.Context(), ev(i))
	}
	b.Publish(t.Context(), &ToolFinish{}) // another kind: not delivered
	g.waitStarted(t)

	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	assertBlocked(t, closed, "Bus.Close with a busy async handler")
	close(g.gate)
	if err := waitOrFail(t, closed, "Bus.Close"); err != nil {
		t.Fatal(err)
	}

	// Bus.Close drained the async handler...
	if h := a.Handled(); h != n {
		t.Errorf("Handled() after Bus.Close = %d, want %d", h, n)
	}
	if got, want := seqs(g.handled()), wantSeqs(1, n); !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v", got, want)
	}
	// ...whose errors went to the bus's OnError.
	errs := ec.all()
	if len(errs) != n {
		t.Fatalf("bus OnError called %d times, want %d", len(errs), n)
	}
	for i, he := range errs {
		if he.Kind != kindSeq || he.Err == nil || he.Err.Error() != fmt.Sprint("failed ", i+1) {
			t.Errorf("error %d = %+v", i, he)
		}
	}
	// The async handler is closed too.
	if err := a.Handle(t.Context(), ev(99)); err != nil || a.Dropped() != 1 {
		t.Errorf("async handler still open after Bus.Close: err %v, Dropped %d", err, a.Dropped())
	}
	b.Publish(t.Context(), ev(100))
	if d := b.Dropped(); d != 1 {
		t.Errorf("bus Dropped() = %d, want 1", d)
	}
}

func TestBusSubscribeAsyncOwnOnError(t *testing.T) {
	t.Parallel()
	var busErrs, ownErrs errCollector
	b := New(Options{OnError: busErrs.onError})
	boom := errors.New("boom")
	if _, err := b.SubscribeAsync(HandlerFunc(func(context.Context, Event) error { return boom }),
		AsyncOptions{OnError: ownErrs.onError}); err != nil {
		t.Fatal(err)
	}
	b.Publish(t.Context(), &AgentError{})
	b.Close()
	if n := len(busErrs.all()); n != 0 {
		t.Errorf("bus OnError called %d times, want 0", n)
	}
	if errs := ownErrs.all(); len(errs) != 1 || !errors.Is(errs[0], boom) {
		t.Errorf("AsyncOptions.OnError got %v, want one error wrapping boom", errs)
	}
}

type ctxKey struct{}

func TestAsyncContextKeepsValuesNotCancellation(t *testing.T) {
	t.Parallel()
	type observed struct {
		err      error
		done     bool
		value    any
		deadline bool
	}
	obs := make(chan observed, 1)
	gate := make(chan struct{})
	a := NewAsync(HandlerFunc(func(ctx context.Context, _ Event) error {
		<-gate // runs after the publisher's context was cancelled
		o := observed{err: ctx.Err(), value: ctx.Value(ctxKey{})}
		select {
		case <-ctx.Done():
			o.done = true
		default:
		}
		_, o.deadline = ctx.Deadline()
		obs <- o
		return nil
	}), AsyncOptions{OnError: failOnError(t)})
	defer a.Close()

	ctx, cancel := context.WithTimeout(context.WithValue(t.Context(), ctxKey{}, "v"), time.Hour)
	mustHandle(t, a, ctx, &ToolFinish{})
	cancel()
	if ctx.Err() == nil {
		t.Fatal("publisher context not cancelled")
	}
	close(gate)

	o := waitOrFail(t, obs, "the handler call")
	if o.err != nil || o.done {
		t.Errorf("handler context cancelled with the publisher's: Err %v, Done closed %v", o.err, o.done)
	}
	if o.deadline {
		t.Error("handler context kept the publisher's deadline")
	}
	if o.value != "v" {
		t.Errorf("handler context value = %v, want %q", o.value, "v")
	}
}

func TestAsyncSingleWorkerPreservesOrder(t *testing.T) {
	t.Parallel()
	const n = 2000
	var got []uint64 // only the single worker appends
	a := NewAsync(HandlerFunc(func(_ context.Context, e Event) error {
		got = append(got, e.(*seqEvent).Seq)
		return nil
	}), AsyncOptions{Workers: 1, QueueSize: 16, OnError: failOnError(t)})
	for i := 1; i <= n; i++ {
		mustHandle(t, a, t.Context(), ev(i))
	}
	a.Close()
	if want := wantSeqs(1, n); !slices.Equal(got, want) {
		t.Errorf("single worker handled %d events out of order", len(got))
	}
}

func TestAsyncWorkersRunConcurrently(t *testing.T) {
	t.Parallel()
	const workers = 3
	g := newGated(workers)
	a := NewAsync(g, AsyncOptions{Workers: workers, OnError: failOnError(t)})
	for i := 1; i <= workers; i++ {
		mustHandle(t, a, t.Context(), ev(i))
	}
	seen := map[uint64]bool{}
	for range workers {
		// Every worker is inside the handler at the same time.
		seen[g.waitStarted(t).(*seqEvent).Seq] = true
	}
	close(g.gate)
	a.Close()
	if len(seen) != workers || a.Handled() != workers {
		t.Errorf("started %v, Handled %d, want %d distinct events", seen, a.Handled(), workers)
	}
}

func TestAsyncConcurrentHandleAndClose(t *testing.T) {
	t.Parallel()
	for _, overflow := range []Overflow{Block, DropNewest} {
		t.Run(fmt.Sprint("overflow=", overflow), func(t *testing.T) {
			t.Parallel()
			// Overflow drops are reported through OnError; nothing else may be.
			onError := func(he *HandlerError) {
				if !errors.Is(he, ErrDropped) {
					t.Errorf("unexpected handler error: %v", he)
				}
			}
			a := NewAsync(HandlerFunc(func(context.Context, Event) error { return nil }),
				AsyncOptions{QueueSize: 4, Workers: 2, Overflow: overflow, OnError: onError})
			const publishers, each = 8, 200
			var wg sync.WaitGroup
			for range publishers {
				wg.Go(func() {
					for i := range each {
						if err := a.Handle(t.Context(), ev(i+1)); err != nil {
							t.Errorf("Handle: %v", err)
						}
					}
				})
			}
			wg.Go(func() { a.Close() })
			wg.Wait()
			a.Close()
			// Every event was either handled or dropped (by overflow or
			// because it arrived after Close).
			if h, d := a.Handled(), a.Dropped(); h+d != publishers*each {
				t.Errorf("Handled %d + Dropped %d = %d, want %d", h, d, h+d, publishers*each)
			}
		})
	}
}

// TestBusSubscribeAsyncRacingClose checks that an Async returned by a
// SubscribeAsync that races with Bus.Close is closed by it. Without the fix
// the failure shows reliably under -race (tens of leaks per run), rarely
// without it.
func TestBusSubscribeAsyncRacingClose(t *testing.T) {
	t.Parallel()
	const rounds = 20000
	leaked := 0
	h := HandlerFunc(func(context.Context, Event) error { return nil })
	for range rounds {
		b := New(Options{OnError: failOnError(t)})
		var a *Async
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			a, _ = b.SubscribeAsync(h, AsyncOptions{QueueSize: 1})
		})
		wg.Go(func() {
			<-start
			b.Close()
		})
		close(start)
		wg.Wait()
		if a == nil {
			continue // SubscribeAsync lost the race and returned ErrClosed: fine
		}
		// After Bus.Close the Async must be closed: Handle drops.
		if err := a.Handle(t.Context(), &ToolFinish{}); err != nil {
			t.Fatal(err)
		}
		if a.Dropped() == 0 {
			leaked++
			a.Close()
		}
	}
	if leaked > 0 {
		t.Errorf("%d of %d SubscribeAsync calls racing Bus.Close returned an Async left open", leaked, rounds)
	}
}
