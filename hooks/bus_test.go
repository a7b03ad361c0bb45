package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// customEvent is a host-defined event: it embeds Meta and has its own kind.
type customEvent struct {
	Meta
	Payload string
}

const kindCustom Kind = "test.custom"

func (*customEvent) Kind() Kind { return kindCustom }

// seqEvent carries a sequence number, for the concurrency test.
type seqEvent struct {
	Meta
	Seq uint64
}

const kindSeq Kind = "test.seq"

func (*seqEvent) Kind() Kind { return kindSeq }

// recorder records "name:kind" for every event it handles.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) handler(name string) Handler {
	return HandlerFunc(func(_ context.Context, e Event) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, name+":"+string(e.Kind()))
		return nil
	})
}

func (r *recorder) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// errCollector is an Options.OnError / AsyncOptions.OnError that keeps every
// HandlerError.
type errCollector struct {
	mu   sync.Mutex
	errs []*HandlerError
}

func (c *errCollector) onError(he *HandlerError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, he)
}

func (c *errCollector) all() []*HandlerError {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs)
}

// failOnError is an OnError for tests that expect no handler failure.
func failOnError(t *testing.T) func(*HandlerError) {
	return func(he *HandlerError) { t.Errorf("unexpected handler error: %v", he) }
}

func mustSubscribe(t *testing.T, b *Bus, h Handler, kinds ...Kind) func() {
	t.Helper()
	unsub, err := b.Subscribe(h, kinds...)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	return unsub
}

// oneOfEach returns one event of every bichat kind plus a custom one.
func oneOfEach() []Event {
	return []Event{
		&AgentStart{}, &AgentFinish{}, &AgentError{}, &LLMRequest{}, &LLMResponse{},
		&ToolStart{}, &ToolFinish{}, &ToolError{}, &ContextCompile{},
		&SessionCreate{}, &SessionUpdate{}, &SessionDelete{}, &MessageSave{}, &Interrupt{},
		&customEvent{},
	}
}

func TestEventKinds(t *testing.T) {
	t.Parallel()
	want := []Kind{
		KindAgentStart, KindAgentFinish, KindAgentError, KindLLMRequest, KindLLMResponse,
		KindToolStart, KindToolFinish, KindToolError, KindContextCompile,
		KindSessionCreate, KindSessionUpdate, KindSessionDelete, KindMessageSave, KindInterrupt,
		kindCustom,
	}
	evs := oneOfEach()
	if len(evs) != len(want) {
		t.Fatalf("oneOfEach has %d events, want %d", len(evs), len(want))
	}
	for i, e := range evs {
		if got := e.Kind(); got != want[i] {
			t.Errorf("%T.Kind() = %q, want %q", e, got, want[i])
		}
		if e.Header() == nil {
			t.Errorf("%T.Header() = nil", e)
		}
	}
	// Header returns the embedded Meta, so publishers can fill it in place.
	ev := &ToolFinish{}
	ev.Header().RunID = "r1"
	if ev.RunID != "r1" {
		t.Errorf("Header does not alias the embedded Meta")
	}
}

func TestSubscribeByKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		kinds []Kind
		want  []Kind // kinds received when oneOfEach is published
	}{
		{"single kind", []Kind{KindToolFinish}, []Kind{KindToolFinish}},
		{"two kinds", []Kind{KindAgentStart, KindAgentFinish}, []Kind{KindAgentStart, KindAgentFinish}},
		{"duplicate kinds deliver once", []Kind{KindToolError, KindToolError, KindToolError}, []Kind{KindToolError}},
		{"custom kind", []Kind{kindCustom}, []Kind{kindCustom}},
		{"unknown kind", []Kind{"nobody.publishes.this"}, nil},
		{"catch-all", nil, []Kind{
			KindAgentStart, KindAgentFinish, KindAgentError, KindLLMRequest, KindLLMResponse,
			KindToolStart, KindToolFinish, KindToolError, KindContextCompile,
			KindSessionCreate, KindSessionUpdate, KindSessionDelete, KindMessageSave, KindInterrupt,
			kindCustom,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := New(Options{OnError: failOnError(t)})
			defer b.Close()
			var got []Kind
			mustSubscribe(t, b, HandlerFunc(func(_ context.Context, e Event) error {
				got = append(got, e.Kind())
				return nil
			}), tt.kinds...)
			for _, e := range oneOfEach() {
				b.Publish(t.Context(), e)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("received %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPublishNilEventIsNoop(t *testing.T) {
	t.Parallel()
	b := New(Options{OnError: failOnError(t)})
	defer b.Close()
	called := false
	mustSubscribe(t, b, HandlerFunc(func(context.Context, Event) error { called = true; return nil }))
	b.Publish(t.Context(), nil)
	if called {
		t.Error("handler called for a nil event")
	}
	if d := b.Dropped(); d != 0 {
		t.Errorf("Dropped() = %d, want 0", d)
	}
}

func TestDeliveryOrderIsSubscriptionOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		kinds []Kind // kinds of every subscription
	}{
		{"by kind", []Kind{KindToolFinish}},
		{"catch-all", nil},
		{"several kinds", []Kind{KindAgentStart, KindToolFinish}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := New(Options{OnError: failOnError(t)})
			defer b.Close()
			var rec recorder
			var want []string
			for i := range 10 {
				name := fmt.Sprint("h", i)
				mustSubscribe(t, b, rec.handler(name), tt.kinds...)
				want = append(want, name+":"+string(KindToolFinish))
			}
			b.Publish(t.Context(), &ToolFinish{})
			if got := rec.events(); !slices.Equal(got, want) {
				t.Errorf("delivery order %v, want %v", got, want)
			}
		})
	}
}

// TestDeliveryOrderMixesKindAndCatchAll checks the documented promise of
// Publish ("in subscription order") when kind-specific and catch-all
// subscriptions are interleaved. (Regression: Publish used to run every
// kind-specific handler before every catch-all one.)
func TestDeliveryOrderMixesKindAndCatchAll(t *testing.T) {
	t.Parallel()
	b := New(Options{OnError: failOnError(t)})
	defer b.Close()
	var rec recorder
	mustSubscribe(t, b, rec.handler("all1"))
	mustSubscribe(t, b, rec.handler("kind2"), KindToolFinish)
	mustSubscribe(t, b, rec.handler("all3"))
	mustSubscribe(t, b, rec.handler("kind4"), KindToolFinish)
	b.Publish(t.Context(), &ToolFinish{})
	want := []string{"all1:tool.finish", "kind2:tool.finish", "all3:tool.finish", "kind4:tool.finish"}
	if got := rec.events(); !slices.Equal(got, want) {
		t.Errorf("delivery order %v, want %v", got, want)
	}
}

// TestSubscriptionModel drives the bus with a random mix of kind-specific
// and catch-all subscriptions, unsubscriptions and publications, and checks
// every delivery against a model: the handlers subscribed to the event's
// kind or to everything, once each, in subscription order.
func TestSubscriptionModel(t *testing.T) {
	t.Parallel()
	kinds := []Kind{KindAgentStart, KindToolStart, KindToolFinish, kindCustom}
	events := map[Kind]Event{
		KindAgentStart: &AgentStart{}, KindToolStart: &ToolStart{}, KindToolFinish: &ToolFinish{},
		kindCustom: &customEvent{}, KindInterrupt: &Interrupt{}, // nobody subscribes to interrupt by kind
	}
	publishable := append(slices.Clone(kinds), KindInterrupt)
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			b := New(Options{OnError: failOnError(t)})
			defer b.Close()

			type modelSub struct {
				name   string
				kinds  map[Kind]bool // nil: catch-all
				unsub  func()
				active bool
			}
			var subs []*modelSub
			var rec recorder
			for step := range 400 {
				switch op := rng.IntN(10); {
				case op < 3: // subscribe by kind, possibly with duplicates
					var ks []Kind
					set := map[Kind]bool{}
					for range 1 + rng.IntN(3) {
						k := kinds[rng.IntN(len(kinds))]
						ks = append(ks, k)
						set[k] = true
					}
					s := &modelSub{name: fmt.Sprint("k", step), kinds: set, active: true}
					s.unsub = mustSubscribe(t, b, rec.handler(s.name), ks...)
					subs = append(subs, s)
				case op < 4: // subscribe to everything
					s := &modelSub{name: fmt.Sprint("a", step), active: true}
					s.unsub = mustSubscribe(t, b, rec.handler(s.name))
					subs = append(subs, s)
				case op < 6: // unsubscribe (possibly again)
					if len(subs) == 0 {
						continue
					}
					s := subs[rng.IntN(len(subs))]
					s.unsub()
					s.active = false
				default: // publish
					k := publishable[rng.IntN(len(publishable))]
					before := len(rec.events())
					b.Publish(t.Context(), events[k])
					got := rec.events()[before:]
					var want []string
					for _, s := range subs {
						if s.active && (s.kinds == nil || s.kinds[k]) {
							want = append(want, s.name+":"+string(k))
						}
					}
					if !slices.Equal(got, want) {
						t.Fatalf("step %d, publish %s: delivered %v, want %v", step, k, got, want)
					}
				}
			}
		})
	}
}

func TestUnsubscribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		kinds []Kind
	}{
		{"by kind", []Kind{KindToolFinish}},
		{"several kinds", []Kind{KindToolFinish, KindToolStart}},
		{"catch-all", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := New(Options{OnError: failOnError(t)})
			defer b.Close()
			var rec recorder
			mustSubscribe(t, b, rec.handler("before"), tt.kinds...)
			unsub := mustSubscribe(t, b, rec.handler("gone"), tt.kinds...)
			mustSubscribe(t, b, rec.handler("after"), tt.kinds...)

			b.Publish(t.Context(), &ToolFinish{})
			unsub()
			unsub() // idempotent
			b.Publish(t.Context(), &ToolFinish{})
			b.Publish(t.Context(), &ToolStart{})
			unsub() // still harmless

			var want []string
			want = append(want, "before:tool.finish", "gone:tool.finish", "after:tool.finish")
			want = append(want, "before:tool.finish", "after:tool.finish")
			if len(tt.kinds) != 1 {
				want = append(want, "before:tool.start", "after:tool.start")
			}
			if got := rec.events(); !slices.Equal(got, want) {
				t.Errorf("received %v\nwant     %v", got, want)
			}
		})
	}
}

func TestUnsubscribeAfterCloseIsHarmless(t *testing.T) {
	t.Parallel()
	b := New(Options{})
	unsub := mustSubscribe(t, b, HandlerFunc(func(context.Context, Event) error { return nil }))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	unsub()
	unsub()
}

func TestListenTyped(t *testing.T) {
	t.Parallel()
	b := New(Options{OnError: failOnError(t)})
	defer b.Close()
	var got []*ToolFinish
	unsub, err := Listen(b, func(_ context.Context, e *ToolFinish) error {
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	want := &ToolFinish{
		Meta:     Meta{RunID: "run-1", TenantID: "t1"},
		CallID:   "call-1",
		Tool:     "sql",
		Duration: 42 * time.Millisecond, SummaryBytes: 7, Truncated: true, Artifacts: 2,
	}
	for _, e := range oneOfEach() {
		b.Publish(t.Context(), e)
	}
	b.Publish(t.Context(), want)
	if len(got) != 2 {
		t.Fatalf("Listen[*ToolFinish] received %d events, want 2", len(got))
	}
	if got[1] != want {
		t.Fatalf("received %p, want the published pointer %p", got[1], want)
	}
	// Typed access to the fields, including the embedded Meta.
	if e := got[1]; e.Tool != "sql" || e.CallID != "call-1" || e.Duration != 42*time.Millisecond ||
		e.SummaryBytes != 7 || !e.Truncated || e.Artifacts != 2 || e.RunID != "run-1" || e.TenantID != "t1" {
		t.Errorf("fields not delivered intact: %+v", *e)
	}
	unsub()
	b.Publish(t.Context(), want)
	if len(got) != 2 {
		t.Errorf("received an event after unsubscribe")
	}
}

func TestListenCustomHostEvent(t *testing.T) {
	t.Parallel()
	b := New(Options{OnError: failOnError(t)})
	defer b.Close()
	var payloads []string
	if _, err := Listen(b, func(_ context.Context, e *customEvent) error {
		payloads = append(payloads, e.Payload+"@"+e.SessionID)
		return nil
	}); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	var kinds []Kind
	mustSubscribe(t, b, HandlerFunc(func(_ context.Context, e Event) error {
		kinds = append(kinds, e.Kind())
		return nil
	}), kindCustom)

	b.Publish(t.Context(), &ToolFinish{})
	b.Publish(t.Context(), &customEvent{Meta: Meta{SessionID: "s1"}, Payload: "hello"})
	if want := []string{"hello@s1"}; !slices.Equal(payloads, want) {
		t.Errorf("Listen[*customEvent] got %v, want %v", payloads, want)
	}
	if want := []Kind{kindCustom}; !slices.Equal(kinds, want) {
		t.Errorf("Subscribe(%q) got %v, want %v", kindCustom, kinds, want)
	}
}

func TestListenErrorReachesOnError(t *testing.T) {
	t.Parallel()
	var ec errCollector
	b := New(Options{OnError: ec.onError})
	defer b.Close()
	boom := errors.New("boom")
	if _, err := Listen(b, func(context.Context, *ToolError) error { return boom }); err != nil {
		t.Fatal(err)
	}
	b.Publish(t.Context(), &ToolError{})
	errs := ec.all()
	if len(errs) != 1 || !errors.Is(errs[0], boom) || errs[0].Kind != KindToolError {
		t.Errorf("OnError got %v, want one error wrapping %v for %s", errs, boom, KindToolError)
	}
}

func TestHandlerErrorReachesOnError(t *testing.T) {
	t.Parallel()
	var ec errCollector
	b := New(Options{OnError: ec.onError})
	defer b.Close()
	boom := errors.New("boom")
	var rec recorder
	mustSubscribe(t, b, rec.handler("first"), KindAgentError)
	mustSubscribe(t, b, HandlerFunc(func(context.Context, Event) error {
		return fmt.Errorf("wrapped: %w", boom)
	}), KindAgentError)
	mustSubscribe(t, b, rec.handler("later"), KindAgentError)
	mustSubscribe(t, b, rec.handler("catch-all"))

	b.Publish(t.Context(), &AgentError{})

	if got, want := rec.events(), []string{"first:agent.error", "later:agent.error", "catch-all:agent.error"}; !slices.Equal(got, want) {
		t.Errorf("handlers run %v, want %v", got, want)
	}
	errs := ec.all()
	if len(errs) != 1 {
		t.Fatalf("OnError called %d times, want 1", len(errs))
	}
	he := errs[0]
	if he.Kind != KindAgentError {
		t.Errorf("Kind = %q, want %q", he.Kind, KindAgentError)
	}
	if !errors.Is(he, boom) {
		t.Errorf("errors.Is(%v, boom) = false", he)
	}
	var target *HandlerError
	if !errors.As(error(he), &target) || target != he {
		t.Errorf("errors.As to *HandlerError failed")
	}
	if he.Panic != nil || he.Stack != nil {
		t.Errorf("Panic/Stack set for a returned error: %v / %d bytes", he.Panic, len(he.Stack))
	}
	if msg := he.Error(); !strings.Contains(msg, "agent.error") || !strings.Contains(msg, "boom") {
		t.Errorf("Error() = %q, want the kind and the cause", msg)
	}
}

func TestHandlerPanicReachesOnError(t *testing.T) {
	t.Parallel()
	panicErr := errors.New("panic as error")
	tests := []struct {
		name  string
		value any
	}{
		{"string", "kaboom"},
		{"error", panicErr},
		{"int", 42},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ec errCollector
			b := New(Options{OnError: ec.onError})
			defer b.Close()
			var rec recorder
			mustSubscribe(t, b, HandlerFunc(func(context.Context, Event) error { panic(tt.value) }), KindToolStart)
			mustSubscribe(t, b, rec.handler("later"), KindToolStart)
			mustSubscribe(t, b, rec.handler("catch-all"))

			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("Publish panicked: %v", r)
					}
				}()
				b.Publish(t.Context(), &ToolStart{})
			}()

			if got, want := rec.events(), []string{"later:tool.start", "catch-all:tool.start"}; !slices.Equal(got, want) {
				t.Errorf("handlers run %v, want %v", got, want)
			}
			errs := ec.all()
			if len(errs) != 1 {
				t.Fatalf("OnError called %d times, want 1", len(errs))
			}
			he := errs[0]
			if he.Kind != KindToolStart {
				t.Errorf("Kind = %q, want %q", he.Kind, KindToolStart)
			}
			if he.Panic != tt.value {
				t.Errorf("Panic = %v, want %v", he.Panic, tt.value)
			}
			if len(he.Stack) == 0 {
				t.Error("Stack is empty")
			}
			if he.Err == nil || !strings.Contains(he.Err.Error(), fmt.Sprint(tt.value)) {
				t.Errorf("Err = %v, want a description of the panic", he.Err)
			}
			if msg := he.Error(); !strings.Contains(msg, "panicked") || !strings.Contains(msg, fmt.Sprint(tt.value)) {
				t.Errorf("Error() = %q", msg)
			}
		})
	}
}

func TestHandlerErrorMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		he   *HandlerError
		want string
	}{
		{&HandlerError{Kind: KindToolError, Err: errors.New("x")}, "hooks: handler for tool.error: x"},
		{&HandlerError{Kind: KindAgentStart, Err: errors.New("panic: y"), Panic: "y"}, "hooks: handler for agent.start panicked: y"},
	}
	for _, tt := range tests {
		if got := tt.he.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(tt.he, tt.he.Err) {
			t.Errorf("Unwrap does not return Err")
		}
	}
}

func TestNilBus(t *testing.T) {
	t.Parallel()
	var b *Bus
	b.Publish(t.Context(), &ToolFinish{}) // must not panic
	if d := b.Dropped(); d != 0 {
		t.Errorf("Dropped() = %d, want 0", d)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close() = %v, want nil", err)
	}
	h := HandlerFunc(func(context.Context, Event) error { return nil })
	if unsub, err := b.Subscribe(h); err == nil || unsub != nil {
		t.Errorf("Subscribe on nil bus = (%v, %v), want (nil, error)", unsub != nil, err)
	}
	if a, err := b.SubscribeAsync(h, AsyncOptions{}); err == nil || a != nil {
		t.Errorf("SubscribeAsync on nil bus = (%v, %v), want (nil, error)", a, err)
	}
	if _, err := Listen(b, func(context.Context, *ToolFinish) error { return nil }); err == nil {
		t.Error("Listen on nil bus: want an error")
	}
}

func TestSubscribeNilHandler(t *testing.T) {
	t.Parallel()
	b := New(Options{})
	defer b.Close()
	for _, kinds := range [][]Kind{nil, {KindToolFinish}} {
		unsub, err := b.Subscribe(nil, kinds...)
		if err == nil || unsub != nil {
			t.Errorf("Subscribe(nil, %v) = (%v, %v), want (nil, error)", kinds, unsub != nil, err)
		}
	}
}

func TestPublishAfterClose(t *testing.T) {
	t.Parallel()
	b := New(Options{OnError: failOnError(t)})
	var rec recorder
	mustSubscribe(t, b, rec.handler("k"), KindToolFinish)
	mustSubscribe(t, b, rec.handler("all"))
	b.Publish(t.Context(), &ToolFinish{})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil { // idempotent
		t.Fatalf("second Close: %v", err)
	}
	for range 3 {
		b.Publish(t.Context(), &ToolFinish{})
	}
	b.Publish(t.Context(), &customEvent{})
	if got, want := rec.events(), []string{"k:tool.finish", "all:tool.finish"}; !slices.Equal(got, want) {
		t.Errorf("received %v, want %v", got, want)
	}
	if d := b.Dropped(); d != 4 {
		t.Errorf("Dropped() = %d, want 4", d)
	}
}

func TestSubscribeAfterClose(t *testing.T) {
	t.Parallel()
	b := New(Options{})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	h := HandlerFunc(func(context.Context, Event) error { return nil })
	if _, err := b.Subscribe(h); !errors.Is(err, ErrClosed) {
		t.Errorf("Subscribe after Close: err = %v, want ErrClosed", err)
	}
	if _, err := b.Subscribe(h, KindToolFinish); !errors.Is(err, ErrClosed) {
		t.Errorf("Subscribe(kind) after Close: err = %v, want ErrClosed", err)
	}
	if _, err := Listen(b, func(context.Context, *ToolFinish) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Listen after Close: err = %v, want ErrClosed", err)
	}
	if a, err := b.SubscribeAsync(h, AsyncOptions{}); !errors.Is(err, ErrClosed) || a != nil {
		t.Errorf("SubscribeAsync after Close = (%v, %v), want (nil, ErrClosed)", a, err)
	}
}

// seqCounter is a handler recording, per sequence number, how many times it
// saw the event.
type seqCounter struct {
	seen []atomic.Uint32
	bad  atomic.Uint64 // events that were not *seqEvent or out of range
}

func newSeqCounter(n int) *seqCounter { return &seqCounter{seen: make([]atomic.Uint32, n+1)} }

func (c *seqCounter) Handle(_ context.Context, e Event) error {
	se, ok := e.(*seqEvent)
	if !ok || se.Seq == 0 || se.Seq >= uint64(len(c.seen)) {
		c.bad.Add(1)
		return nil
	}
	c.seen[se.Seq].Add(1)
	return nil
}

// check verifies that nothing was seen twice, that no event numbered after
// to was seen and, when mustSee is set, that every event numbered in
// (from, to] was seen. An event numbered before an unsubscription may still
// legitimately miss the handler (its Publish may load the subscription table
// after the removal), so mustSee only holds for handlers still subscribed.
func (c *seqCounter) check(t *testing.T, name string, from, to, total uint64, mustSee bool) {
	t.Helper()
	if n := c.bad.Load(); n != 0 {
		t.Errorf("%s: %d unexpected events", name, n)
	}
	var missing, dup, late int
	for s := uint64(1); s <= total; s++ {
		n := c.seen[s].Load()
		switch {
		case n > 1:
			dup++
		case mustSee && s > from && s <= to && n != 1:
			missing++
		case s > to && n != 0:
			late++
		}
	}
	if missing+dup+late > 0 {
		t.Errorf("%s (window (%d, %d] of %d): %d missing, %d duplicated, %d delivered after unsubscribe",
			name, from, to, total, missing, dup, late)
	}
}

func TestConcurrentPublishAndSubscribe(t *testing.T) {
	t.Parallel()
	const (
		publishers   = 16
		minPerPub    = 200
		maxPerPub    = 1500
		churnRounds  = 120
		maxEvents    = publishers * maxPerPub
		keepEveryNth = 4
	)
	b := New(Options{OnError: failOnError(t)})
	defer b.Close()

	var seq atomic.Uint64 // last sequence number handed out

	// Subscribers present before publishing starts see every event.
	type sub struct {
		name     string
		c        *seqCounter
		from, to uint64 // to == 0 means still subscribed at the end
	}
	var subs []*sub
	for i, kinds := range [][]Kind{{kindSeq}, nil, {kindSeq, KindToolFinish}, nil} {
		s := &sub{name: fmt.Sprint("static", i), c: newSeqCounter(maxEvents)}
		mustSubscribe(t, b, s.c, kinds...)
		subs = append(subs, s)
	}

	var churnDone atomic.Bool
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range publishers {
		wg.Go(func() {
			<-start
			for i := 0; i < maxPerPub && (i < minPerPub || !churnDone.Load()); i++ {
				b.Publish(t.Context(), &seqEvent{Seq: seq.Add(1)})
			}
		})
	}

	var churned []*sub
	churnErr := make(chan error, 1)
	go func() {
		defer churnDone.Store(true)
		<-start
		for i := range churnRounds {
			var kinds []Kind
			if i%2 == 0 {
				kinds = []Kind{kindSeq}
			}
			s := &sub{name: fmt.Sprint("churn", i), c: newSeqCounter(maxEvents)}
			unsub, err := b.Subscribe(s.c, kinds...)
			if err != nil {
				churnErr <- err
				return
			}
			// Every event numbered after this load starts publishing after
			// the subscription completed.
			s.from = seq.Load()
			if i%keepEveryNth != 0 {
				unsub()
				// Every event numbered after this load starts publishing
				// after the unsubscription completed.
				s.to = seq.Load()
			} else {
				s.to = ^uint64(0)
			}
			churned = append(churned, s)
		}
		churnErr <- nil
	}()

	close(start)
	if err := <-churnErr; err != nil {
		t.Fatalf("Subscribe during publishing: %v", err)
	}
	wg.Wait()

	total := seq.Load()
	if total < publishers*minPerPub {
		t.Fatalf("published %d events, want at least %d", total, publishers*minPerPub)
	}
	for _, s := range subs {
		s.c.check(t, s.name, 0, total, total, true)
	}
	overlapped := 0
	for _, s := range churned {
		if s.from > 0 && s.from < total {
			overlapped++
		}
		s.c.check(t, s.name, s.from, min(s.to, total), total, s.to > total)
	}
	t.Logf("%d events, %d of %d subscriptions made while publishing", total, overlapped, len(churned))
}

// TestDefaultOnErrorLogsWithSlog swaps the process-wide slog default, so it
// must not run in parallel with other tests.
func TestDefaultOnErrorLogsWithSlog(t *testing.T) {
	var buf syncBuffer
	prevLogger := slog.Default()
	prevWriter, prevFlags, prevPrefix := log.Writer(), log.Flags(), log.Prefix()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() {
		slog.SetDefault(prevLogger)
		// slog.SetDefault redirects the log package to the new handler;
		// restoring the previous logger does not undo that.
		log.SetOutput(prevWriter)
		log.SetFlags(prevFlags)
		log.SetPrefix(prevPrefix)
	})

	b := New(Options{})
	mustSubscribe(t, b, HandlerFunc(func(context.Context, Event) error { return errors.New("returned-error") }), KindToolError)
	mustSubscribe(t, b, HandlerFunc(func(context.Context, Event) error { panic("panic-value") }), KindToolStart)
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Publish with default OnError panicked: %v", r)
			}
		}()
		b.Publish(context.Background(), &ToolError{})
		b.Publish(context.Background(), &ToolStart{})
	}()

	// The default OnError of an Async handler logs the same way.
	a := NewAsync(HandlerFunc(func(context.Context, Event) error { return errors.New("async-error") }), AsyncOptions{})
	if err := a.Handle(context.Background(), &LLMResponse{}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()

	// NewSlogHandler with a nil logger logs with slog.Default too.
	if err := NewSlogHandler(nil, SlogOptions{}).Handle(context.Background(), &AgentStart{Model: "default-logger-model"}); err != nil {
		t.Fatal(err)
	}

	out := buf.String()
	for _, want := range []string{
		"level=ERROR", "bichat event handler failed",
		"kind=tool.error", "returned-error",
		"kind=tool.start", "panic-value",
		"kind=llm.response", "async-error",
		"msg=agent.start", "model=default-logger-model",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("slog.Default output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "bichat event handler failed"); n != 3 {
		t.Errorf("%d records logged, want 3:\n%s", n, out)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
