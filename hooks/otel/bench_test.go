package otel_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	bichatotel "github.com/bichat-go/bichat/hooks/otel"
)

// benchRun returns the events of a run with one tool call: start, two
// turns (request and response each), the call with one SQL statement, and
// the finish.
func benchRun(runID string) []hooks.Event {
	t0 := time.Now()
	m := func(ms int) hooks.Meta {
		return hooks.Meta{Time: t0.Add(time.Duration(ms) * time.Millisecond), TenantID: "t1", SessionID: "s1",
			MessageID: "m1", RunID: runID}
	}
	u := domain.Usage{PromptTokens: 1200, CompletionTokens: 40, CachedTokens: 1000, TotalTokens: 1240}
	return []hooks.Event{
		&hooks.AgentStart{Meta: m(0), Agent: "analyst", Model: "gpt-5"},
		&hooks.LLMRequest{Meta: m(1), Provider: "openai", Model: "gpt-5", Turn: 1, Attempt: 1, Messages: 2, Tools: 5},
		&hooks.LLMResponse{Meta: m(300), Provider: "openai", Model: "gpt-5", Turn: 1, Attempt: 1, Usage: u,
			StopReason: "tool_use", ToolCalls: 1, Duration: 299 * time.Millisecond, CostUSD: 0.002,
			TimeToFirstToken: 120 * time.Millisecond},
		&hooks.ToolStart{Meta: m(301), CallID: "call_1", Tool: "sql_query", Arguments: []byte(`{"sql":"SELECT 1"}`)},
		&hooks.SQLQuery{Meta: m(320), CallID: "call_1", Tool: "sql_query", Dialect: "postgres", SQL: "SELECT 1",
			Rows: 1, Duration: 15 * time.Millisecond},
		&hooks.ToolFinish{Meta: m(321), CallID: "call_1", Tool: "sql_query", Duration: 20 * time.Millisecond, SummaryBytes: 80},
		&hooks.LLMRequest{Meta: m(322), Provider: "openai", Model: "gpt-5", Turn: 2, Attempt: 1, Messages: 4, Tools: 5},
		&hooks.LLMResponse{Meta: m(600), Provider: "openai", Model: "gpt-5", Turn: 2, Attempt: 1, Usage: u,
			StopReason: "end_turn", Duration: 278 * time.Millisecond, CostUSD: 0.002, TimeToFirstToken: 90 * time.Millisecond},
		&hooks.AgentFinish{Meta: m(601), Agent: "analyst", Reason: "end_turn", Turns: 2, ToolCalls: 1, Usage: u.Add(u),
			CostUSD: 0.004, Duration: 601 * time.Millisecond},
	}
}

// BenchmarkHandle measures the cost of one event (ns/op is per event),
// cycling through the nine events of a run: with the SDK (spans recorded
// and handed to an exporter that drops them) and with a no-op provider
// (the Tracer's own bookkeeping), serially and from parallel runs.
func BenchmarkHandle(b *testing.B) {
	providers := []struct {
		name string
		tp   func() trace.TracerProvider
	}{
		{"sdk", func() trace.TracerProvider {
			return sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
		}},
		{"noop", func() trace.TracerProvider { return noop.NewTracerProvider() }},
	}
	for _, p := range providers {
		for _, capture := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/capture=%v", p.name, capture), func(b *testing.B) {
				tr := bichatotel.New(p.tp(), bichatotel.Options{CaptureContent: capture})
				ctx := context.Background()
				events := benchRun("run-1")
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if err := tr.Handle(ctx, events[i]); err != nil {
						b.Fatal(err)
					}
					if i++; i == len(events) {
						i = 0
					}
				}
			})
		}
		b.Run(p.name+"/parallel", func(b *testing.B) {
			tr := bichatotel.New(p.tp(), bichatotel.Options{})
			ctx := context.Background()
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				events := benchRun(fmt.Sprintf("run-%d", next.Add(1)))
				i := 0
				for pb.Next() {
					if err := tr.Handle(ctx, events[i]); err != nil {
						b.Error(err)
						return
					}
					if i++; i == len(events) {
						i = 0
					}
				}
			})
		})
	}
}
