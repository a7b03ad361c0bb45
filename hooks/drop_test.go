package hooks

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// parked returns a handler that blocks until gate is closed and a channel
// that receives once when the first event reached it.
func parked(gate <-chan struct{}) (Handler, <-chan struct{}) {
	first := make(chan struct{})
	var once sync.Once
	return HandlerFunc(func(context.Context, Event) error {
		once.Do(func() { close(first) })
		<-gate
		return nil
	}), first
}

// dropReport is what a test keeps of one drop report.
type dropReport struct {
	at   time.Time
	kind Kind
	err  DropError
}

type dropReports struct {
	mu    sync.Mutex
	list  []dropReport
	other []*HandlerError
}

func (r *dropReports) onError(he *HandlerError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var de *DropError
	if errors.As(he, &de) && errors.Is(he, ErrDropped) {
		r.list = append(r.list, dropReport{at: time.Now(), kind: he.Kind, err: *de})
		return
	}
	r.other = append(r.other, he)
}

func (r *dropReports) all() ([]dropReport, []*HandlerError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]dropReport(nil), r.list...), append([]*HandlerError(nil), r.other...)
}

func (r *dropReports) sum() uint64 {
	list, _ := r.all()
	var n uint64
	for _, d := range list {
		n += d.err.Dropped
	}
	return n
}

// The case from the issue: a DropNewest handler behind a bus drops most of
// 16,000 events. The drops must show where the host looks: Bus.Dropped,
// the bus's error handler, and Async.Dropped.
func TestBusCountsAndReportsAsyncDrops(t *testing.T) {
	t.Parallel()
	var rep dropReports
	b := New(Options{OnError: rep.onError})
	gate := make(chan struct{})
	h, first := parked(gate)
	const queue, n = 64, 16000
	a, err := b.SubscribeAsync(h, AsyncOptions{QueueSize: queue, Overflow: DropNewest})
	if err != nil {
		t.Fatal(err)
	}
	b.Publish(t.Context(), ev(0))
	waitOrFail(t, first, "the first event to reach the handler")
	for i := 1; i < n; i++ {
		b.Publish(t.Context(), ev(i))
	}
	// The worker holds event 0 and the queue holds the next 64: every
	// other event was dropped.
	const want = n - 1 - queue
	if d := a.Dropped(); d != want {
		t.Errorf("Async.Dropped() = %d, want %d", d, want)
	}
	if d := b.Dropped(); d != want {
		t.Errorf("Bus.Dropped() = %d, want %d (the async handler's drops)", d, want)
	}
	close(gate)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	list, other := rep.all()
	if len(other) != 0 {
		t.Errorf("unexpected handler errors: %v", other)
	}
	if len(list) == 0 {
		t.Fatal("the bus's error handler was never told about the drops")
	}
	if got := rep.sum(); got != want {
		t.Errorf("drop reports add up to %d, want %d", got, want)
	}
	// Publishing all events took far less than the report interval, so
	// the drops came in at most two reports (the first drop's, and the
	// rest at the next interval or at Close).
	if len(list) > 2 {
		t.Errorf("%d drop reports for one burst, want at most 2", len(list))
	}
	last := list[len(list)-1].err
	if last.QueueSize != queue || last.Total != want || list[0].kind != kindSeq {
		t.Errorf("last report = %+v (kind %s), want queue %d, total %d, kind %s", last, list[0].kind, queue, want, kindSeq)
	}
	if a.Handled() != queue+1 {
		t.Errorf("Handled() = %d, want %d", a.Handled(), queue+1)
	}
	// After Close the bus keeps counting what it did not deliver.
	b.Publish(t.Context(), ev(n))
	if d := b.Dropped(); d != want+1 {
		t.Errorf("Bus.Dropped() after Close = %d, want %d", d, want+1)
	}
}

// Drop reports are rate-limited: drops going on for several intervals
// produce about one report per interval, each with the count since the
// previous one, and together they account for every overflow drop.
func TestAsyncDropReportsAreRateLimited(t *testing.T) {
	t.Parallel()
	var rep dropReports
	const interval = 100 * time.Millisecond
	gate := make(chan struct{})
	h, first := parked(gate)
	a := NewAsync(h, AsyncOptions{QueueSize: 1, Overflow: DropNewest, OnError: rep.onError, DropReportInterval: interval})
	mustHandle(t, a, t.Context(), ev(0))
	waitOrFail(t, first, "the first event to reach the handler")
	start := time.Now()
	const span = 6 * interval
	for i := 1; time.Since(start) < span; i++ {
		mustHandle(t, a, t.Context(), &ToolFinish{})
		if i%100 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	elapsed := time.Since(start)
	close(gate)
	a.Close()

	list, other := rep.all()
	if len(other) != 0 {
		t.Errorf("unexpected handler errors: %v", other)
	}
	// One report right away, then at most one per interval, and the rest
	// at Close.
	if maxReports := int(elapsed/interval) + 2; len(list) > maxReports || len(list) < 3 {
		t.Errorf("%d drop reports over %s with interval %s, want between 3 and %d", len(list), elapsed, interval, maxReports)
	}
	// Spacing is a promise about when reports are made (DropError.Time):
	// when OnError then runs depends on the scheduler of a loaded machine.
	for i := 1; i < len(list)-1; i++ { // the last one may be Close's
		if gap := list[i].err.Time.Sub(list[i-1].err.Time); gap < interval {
			t.Errorf("reports %d and %d made only %s apart, want at least %s", i-1, i, gap, interval)
		}
		if list[i].err.Time.After(list[i].at) {
			t.Errorf("report %d made at %s, after it arrived at %s", i, list[i].err.Time, list[i].at)
		}
	}
	if got, want := rep.sum(), a.Dropped(); got != want || want == 0 {
		t.Errorf("drop reports add up to %d, Dropped() = %d", got, want)
	}
	for _, r := range list {
		if r.kind != KindToolFinish || r.err.Dropped == 0 {
			t.Errorf("report %+v", r)
		}
	}
}

// Bus.Dropped is a counter: it never decreases, also when a dropping
// handler is unsubscribed, and it counts an *Async subscribed with plain
// Subscribe as well as one from SubscribeAsync.
func TestBusDroppedIsMonotonic(t *testing.T) {
	t.Parallel()
	var rep dropReports
	b := New(Options{OnError: rep.onError})
	gate := make(chan struct{})
	h, first := parked(gate)
	a := NewAsync(h, AsyncOptions{QueueSize: 1, Overflow: DropNewest, OnError: rep.onError})
	defer a.Close()
	defer close(gate) // runs first: the handler returns, Close can drain
	unsub := mustSubscribe(t, b, a)

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() { // a metrics scraper
		var prev uint64
		for !stop.Load() {
			d := b.Dropped()
			if d < prev {
				t.Errorf("Bus.Dropped() went from %d down to %d", prev, d)
				return
			}
			prev = d
		}
	})
	b.Publish(t.Context(), ev(0))
	waitOrFail(t, first, "the first event to reach the handler")
	for i := 1; i <= 1000; i++ {
		b.Publish(t.Context(), ev(i))
	}
	const want = 1000 - 1 // one event queued
	if d := b.Dropped(); d != want {
		t.Errorf("Bus.Dropped() = %d, want %d", d, want)
	}
	unsub()
	if d := b.Dropped(); d != want {
		t.Errorf("Bus.Dropped() after unsubscribe = %d, want %d (it must not decrease)", d, want)
	}
	// Drops after the unsubscription are not the bus's.
	mustHandle(t, a, t.Context(), ev(2000))
	if d, ad := b.Dropped(), a.Dropped(); d != want || ad != want+1 {
		t.Errorf("after unsubscribe: Bus.Dropped %d, Async.Dropped %d; want %d and %d", d, ad, want, want+1)
	}
	b.Close()
	b.Publish(t.Context(), ev(3000))
	if d := b.Dropped(); d != want+1 {
		t.Errorf("Bus.Dropped() after Close = %d, want %d", d, want+1)
	}
	stop.Store(true)
	wg.Wait()
}

// An *Async subscribed twice to one bus counts each drop once there.
func TestBusCountsDoublySubscribedAsyncOnce(t *testing.T) {
	t.Parallel()
	b := New(Options{OnError: func(*HandlerError) {}})
	gate := make(chan struct{})
	h, first := parked(gate)
	a := NewAsync(h, AsyncOptions{QueueSize: 1, Overflow: DropNewest, OnError: func(*HandlerError) {}})
	mustSubscribe(t, b, a, KindToolFinish)
	unsub := mustSubscribe(t, b, a, KindToolStart)
	b.Publish(t.Context(), &ToolFinish{})
	waitOrFail(t, first, "the first event to reach the handler")
	b.Publish(t.Context(), &ToolFinish{}) // queued
	b.Publish(t.Context(), &ToolStart{})  // dropped
	b.Publish(t.Context(), &ToolFinish{}) // dropped
	if d, ad := b.Dropped(), a.Dropped(); d != 2 || ad != 2 {
		t.Errorf("Bus.Dropped %d, Async.Dropped %d; want 2 and 2", d, ad)
	}
	unsub() // still subscribed for tool.finish
	b.Publish(t.Context(), &ToolFinish{})
	if d := b.Dropped(); d != 3 {
		t.Errorf("Bus.Dropped() = %d, want 3", d)
	}
	close(gate)
	b.Close()
	a.Close()
}
