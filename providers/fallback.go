package providers

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/hooks"
)

// KindModelFallback is the kind of FallbackEvent.
const KindModelFallback hooks.Kind = "model.fallback"

// FallbackEvent is published on the bus when a Fallback model gives up on
// one model and moves to the next: the model failed with a retryable error
// (rate limit, overload, server error, connection failure) after its own
// retries and before it streamed anything.
type FallbackEvent struct {
	hooks.Meta
	// From and To are the failed model and the one tried next.
	From agents.ModelInfo `json:"from"`
	To   agents.ModelInfo `json:"to"`
	// Reason is the failure's message (provider errors never carry keys).
	Reason string `json:"reason"`
	// Err is the failure.
	Err error `json:"-"`
}

// Kind returns KindModelFallback.
func (*FallbackEvent) Kind() hooks.Kind { return KindModelFallback }

// FallbackModels implements hooks.Fallback.
func (e *FallbackEvent) FallbackModels() (fromProvider, fromModel, toProvider, toModel string) {
	return e.From.Provider, e.From.Name, e.To.Provider, e.To.Name
}

// Scrub scrubs Reason and Err (provider error text) for a redacting bus
// (hooks.Options.Redact).
func (e *FallbackEvent) Scrub(f func(string) string) {
	e.Reason = f(e.Reason)
	e.Err = hooks.ScrubError(e.Err, f)
}

var (
	_ hooks.Fallback = (*FallbackEvent)(nil)
	_ hooks.Scrubber = (*FallbackEvent)(nil)
)

// Fallback is an agents.Model that tries a chain of models in order. A
// model that fails with a retryable error before yielding any chunk (its
// own retries exhausted) hands the request to the next one, and a
// FallbackEvent is published; any other failure, or a failure after the
// first chunk, ends the stream with that error, so an answer is never
// stitched from two models. Build it with NewFallback or
// Registry.Fallback.
type Fallback struct {
	models []agents.Model
	bus    *hooks.Bus
	info   agents.ModelInfo
	// Now stamps events (default time.Now).
	Now func() time.Time
}

// NewFallback returns a Fallback over models (at least one), publishing
// FallbackEvents on bus (nil publishes nothing).
func NewFallback(bus *hooks.Bus, models ...agents.Model) (*Fallback, error) {
	if len(models) == 0 {
		return nil, errors.New("providers: a fallback chain needs at least one model")
	}
	info := models[0].Info()
	for _, m := range models[1:] {
		mi := m.Info()
		if mi.ContextWindow > 0 && (info.ContextWindow == 0 || mi.ContextWindow < info.ContextWindow) {
			info.ContextWindow = mi.ContextWindow
		}
		if mi.MaxOutputTokens > 0 && (info.MaxOutputTokens == 0 || mi.MaxOutputTokens < info.MaxOutputTokens) {
			info.MaxOutputTokens = mi.MaxOutputTokens
		}
	}
	return &Fallback{models: models, bus: bus, info: info, Now: time.Now}, nil
}

// Info describes the first model of the chain, with the smallest context
// window and max output of the chain so that a request built for it fits
// every model.
func (f *Fallback) Info() agents.ModelInfo { return f.info }

// Models returns the chain.
func (f *Fallback) Models() []agents.Model { return append([]agents.Model(nil), f.models...) }

// Stream streams from the first model that does not fail retryably before
// its first chunk.
func (f *Fallback) Stream(ctx context.Context, req *agents.Request) iter.Seq2[agents.Chunk, error] {
	return func(yield func(agents.Chunk, error) bool) {
		for i, m := range f.models {
			yielded := false
			var failure error
			for c, err := range m.Stream(ctx, req) {
				if err != nil {
					failure = err
					break
				}
				yielded = true
				if !yield(c, nil) {
					return
				}
			}
			if failure == nil {
				return
			}
			last := i == len(f.models)-1
			if yielded || last || ctx.Err() != nil || !agents.Retryable(failure) {
				yield(agents.Chunk{}, failure)
				return
			}
			f.publish(ctx, m.Info(), f.models[i+1].Info(), failure)
		}
	}
}

func (f *Fallback) publish(ctx context.Context, from, to agents.ModelInfo, err error) {
	if f.bus == nil {
		return
	}
	ev := &FallbackEvent{From: from, To: to, Reason: err.Error(), Err: err}
	now := f.Now
	if now == nil {
		now = time.Now
	}
	ev.Time = now()
	if ci, ok := agents.CallInfoFromContext(ctx); ok {
		ev.TenantID, ev.UserID, ev.SessionID, ev.MessageID, ev.RunID, ev.ParentRunID =
			ci.TenantID, ci.UserID, ci.SessionID, ci.MessageID, ci.RunID, ci.ParentRunID
	}
	f.bus.Publish(ctx, ev)
}

// Fallback returns a Fallback over the named models, in order, publishing
// on bus. Models whose provider is not configured are left out; it fails
// when a name is unknown or no named model is available.
func (r *Registry) Fallback(bus *hooks.Bus, names ...string) (*Fallback, error) {
	if len(names) == 0 {
		return nil, errors.New("providers: a fallback chain needs at least one model")
	}
	var models []agents.Model
	var skipped []error
	for _, n := range names {
		m, err := r.Model(n)
		if errors.Is(err, ErrUnavailable) {
			skipped = append(skipped, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		models = append(models, m)
	}
	if len(models) == 0 {
		return nil, fmt.Errorf("providers: no model of the fallback chain is available: %w", errors.Join(skipped...))
	}
	return NewFallback(bus, models...)
}
