package hooks

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// benchBus returns a bus with two handlers subscribed to KindToolFinish and
// one catch-all, each incrementing a counter.
func benchBus(b *testing.B) (*Bus, *atomic.Uint64) {
	b.Helper()
	bus := New(Options{OnError: func(he *HandlerError) { b.Errorf("handler error: %v", he) }})
	b.Cleanup(func() { bus.Close() })
	var calls atomic.Uint64
	count := HandlerFunc(func(context.Context, Event) error {
		calls.Add(1)
		return nil
	})
	for _, kinds := range [][]Kind{{KindToolFinish}, {KindToolFinish}, nil} {
		if _, err := bus.Subscribe(count, kinds...); err != nil {
			b.Fatal(err)
		}
	}
	return bus, &calls
}

func BenchmarkBusPublish(b *testing.B) {
	bus, calls := benchBus(b)
	ctx := context.Background()
	e := &ToolFinish{Meta: Meta{RunID: "run"}, Tool: "sql", CallID: "c1", SummaryBytes: 128}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		bus.Publish(ctx, e)
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	if got := calls.Load(); got != 3*uint64(n) {
		b.Fatalf("handlers called %d times for %d events, want %d", got, n, 3*n)
	}
}

// BenchmarkBusPublishBaseline calls the same three handlers directly,
// without the bus: the floor BenchmarkBusPublish is compared with.
func BenchmarkBusPublishBaseline(b *testing.B) {
	var calls atomic.Uint64
	count := HandlerFunc(func(context.Context, Event) error {
		calls.Add(1)
		return nil
	})
	handlers := []Handler{count, count, count}
	ctx := context.Background()
	var e Event = &ToolFinish{Meta: Meta{RunID: "run"}, Tool: "sql", CallID: "c1", SummaryBytes: 128}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		for _, h := range handlers {
			if err := h.Handle(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	if got := calls.Load(); got != 3*uint64(n) {
		b.Fatalf("handlers called %d times for %d events, want %d", got, n, 3*n)
	}
}

func BenchmarkBusPublishParallel(b *testing.B) {
	bus, calls := benchBus(b)
	ctx := context.Background()
	var n atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		e := &ToolFinish{Meta: Meta{RunID: "run"}, Tool: "sql", CallID: "c1", SummaryBytes: 128}
		var local uint64
		for pb.Next() {
			bus.Publish(ctx, e)
			local++
		}
		n.Add(local)
	})
	b.ReportMetric(float64(n.Load())/b.Elapsed().Seconds(), "events/s")
	if got := calls.Load(); got != 3*n.Load() {
		b.Fatalf("handlers called %d times for %d events, want %d", got, n.Load(), 3*n.Load())
	}
}

// BenchmarkAsyncPublishDrop measures Handle on the DropNewest path with the
// worker parked: after the first QueueSize events every call is a drop.
func BenchmarkAsyncPublishDrop(b *testing.B) {
	gate := make(chan struct{})
	a := NewAsync(HandlerFunc(func(context.Context, Event) error {
		<-gate
		return nil
	}), AsyncOptions{QueueSize: 64, Overflow: DropNewest, OnError: func(he *HandlerError) {
		if !errors.Is(he, ErrDropped) { // drop reports are expected here
			b.Errorf("handler error: %v", he)
		}
	}})
	ctx := context.Background()
	e := &ToolFinish{Tool: "sql"}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		if err := a.Handle(ctx, e); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	close(gate)
	a.Close()
	if h, d := a.Handled(), a.Dropped(); h+d != uint64(n) {
		b.Fatalf("Handled %d + Dropped %d != %d events", h, d, n)
	}
}
