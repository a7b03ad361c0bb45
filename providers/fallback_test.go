package providers_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/providers"
	"github.com/bichat-go/bichat/providers/scripted"
)

// recorder collects FallbackEvents from a bus.
type recorder struct {
	mu     sync.Mutex
	events []*providers.FallbackEvent
}

func listen(t *testing.T) (*hooks.Bus, *recorder) {
	t.Helper()
	bus := hooks.New(hooks.Options{})
	t.Cleanup(func() { bus.Close() })
	rec := &recorder{}
	if _, err := hooks.Listen(bus, func(_ context.Context, e *providers.FallbackEvent) error {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.events = append(rec.events, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return bus, rec
}

func (r *recorder) get() []*providers.FallbackEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*providers.FallbackEvent(nil), r.events...)
}

func named(name string, window int, turns ...scripted.Turn) *scripted.Model {
	return &scripted.Model{Turns: turns, ModelInfo: agents.ModelInfo{Provider: "scripted", Name: name, ContextWindow: window,
		MaxOutputTokens: window / 10}}
}

var errOverloaded = agents.TransientError(errors.New("overloaded"))

func TestFallbackMovesOnRetryableFailureBeforeFirstChunk(t *testing.T) {
	t.Parallel()
	bus, rec := listen(t)
	a := named("a", 200_000, scripted.Turn{Err: errOverloaded})
	b := named("b", 100_000, scripted.Turn{Text: "from b"})
	f, err := providers.NewFallback(bus, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if info := f.Info(); info.Name != "a" || info.ContextWindow != 100_000 || info.MaxOutputTokens != 10_000 {
		t.Errorf("info = %+v: want the first model with the smallest limits", info)
	}
	ctx := agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "t1", SessionID: "s1", RunID: "r1"})
	resp, err := agents.Generate(ctx, f, &agents.Request{Messages: []agents.Message{agents.UserMessage("q")}})
	if err != nil || resp.Message.Text() != "from b" {
		t.Fatalf("resp %v err %v", resp, err)
	}
	evs := rec.get()
	if len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
	e := evs[0]
	if e.From.Name != "a" || e.To.Name != "b" || !strings.Contains(e.Reason, "overloaded") || e.Time.IsZero() ||
		e.TenantID != "t1" || e.SessionID != "s1" || e.RunID != "r1" || e.Kind() != providers.KindModelFallback {
		t.Errorf("event = %+v", e)
	}
}

func TestFallbackDoesNotMoveOn(t *testing.T) {
	t.Parallel()
	permanent := errors.New("invalid request")
	cases := []struct {
		name  string
		first scripted.Turn
		want  error
	}{
		{"permanent error", scripted.Turn{Err: permanent}, permanent},
		// A failure after a chunk was yielded: never stitched from two models.
		{"retryable after first chunk", scripted.Turn{Text: "partial answer", Err: errOverloaded, FailAfter: 1}, errOverloaded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bus, rec := listen(t)
			b := named("b", 1000, scripted.Turn{Text: "from b"})
			f, _ := providers.NewFallback(bus, named("a", 1000, c.first), b)
			_, err := agents.Generate(context.Background(), f, &agents.Request{Messages: []agents.Message{agents.UserMessage("q")}})
			if !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
			if b.Calls() != 0 || len(rec.get()) != 0 {
				t.Errorf("moved on: %d calls of b, %d events", b.Calls(), len(rec.get()))
			}
		})
	}
	t.Run("last model fails", func(t *testing.T) {
		t.Parallel()
		bus, rec := listen(t)
		f, _ := providers.NewFallback(bus, named("a", 1, scripted.Turn{Err: errOverloaded}), named("b", 1, scripted.Turn{Err: errOverloaded}))
		_, err := agents.Generate(context.Background(), f, &agents.Request{Messages: []agents.Message{agents.UserMessage("q")}})
		if !errors.Is(err, errOverloaded) || !agents.Retryable(err) || len(rec.get()) != 1 {
			t.Errorf("err %v, %d events", err, len(rec.get()))
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		b := named("b", 1, scripted.Turn{Text: "x"})
		f, _ := providers.NewFallback(nil, named("a", 1, scripted.Turn{Text: "y", Delay: time.Second}), b)
		_, err := agents.Generate(ctx, f, &agents.Request{Messages: []agents.Message{agents.UserMessage("q")}})
		if !errors.Is(err, context.Canceled) || b.Calls() != 0 {
			t.Errorf("err %v, b called %d times", err, b.Calls())
		}
	})
	if _, err := providers.NewFallback(nil); err == nil {
		t.Error("empty chain accepted")
	}
}

// Through the registry: Anthropic answers 529 until its retries are
// exhausted, then Gemini answers; the bus hears about it.
func TestRegistryFallbackWithProviders(t *testing.T) {
	t.Parallel()
	an := llmfake.NewServer(t, llmfake.AnthropicError(529, "overloaded_error", "Overloaded"),
		llmfake.AnthropicError(529, "overloaded_error", "Overloaded"))
	ge := llmfake.NewServer(t, llmfake.GeminiStream(llmfake.Turn{Text: []string{"gemini here"}}))
	r := providers.New(providers.Config{AnthropicKey: "ant-secret-key", AnthropicBaseURL: an.URL, GeminiKey: "g",
		GeminiBaseURL: ge.URL, MaxAttempts: 2, RetryBaseDelay: time.Millisecond, RetryMaxDelay: 5 * time.Millisecond})
	bus, rec := listen(t)
	f, err := r.Fallback(bus, "opus", "gpt-5.5", "gemini-flash")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Models()) != 2 {
		t.Fatalf("chain of %d models: the unavailable OpenAI model should be left out", len(f.Models()))
	}
	resp, err := agents.Generate(context.Background(), f, &agents.Request{Messages: []agents.Message{agents.UserMessage("q")}})
	if err != nil || resp.Message.Text() != "gemini here" {
		t.Fatalf("resp %v err %v", resp, err)
	}
	if an.Count() != 2 {
		t.Errorf("anthropic got %d requests, want 2 (its retries first)", an.Count())
	}
	evs := rec.get()
	if len(evs) != 1 || evs[0].From.Name != "claude-opus-5-5" || evs[0].To.Name != "gemini-3.5-flash" ||
		!strings.Contains(evs[0].Reason, "529") || strings.Contains(evs[0].Reason, "ant-secret-key") {
		t.Errorf("events = %+v", evs)
	}
	if _, err := r.Fallback(bus, "gpt-5.5"); !errors.Is(err, providers.ErrUnavailable) {
		t.Errorf("chain of unavailable models: %v", err)
	}
	if _, err := r.Fallback(bus, "opus", "no-such-model"); !errors.Is(err, providers.ErrUnknownModel) {
		t.Errorf("unknown model in chain: %v", err)
	}
	if _, err := r.Fallback(bus); err == nil {
		t.Error("empty chain accepted")
	}
}
