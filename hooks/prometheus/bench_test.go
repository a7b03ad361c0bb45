package prometheus_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	bichatprom "github.com/bichat-go/bichat/hooks/prometheus"
)

// benchEvents is a typical mix: model responses, tool calls, SQL
// statements, plus the rarer run, sandbox and error events.
func benchEvents() []hooks.Event {
	meta := hooks.Meta{TenantID: "acme", RunID: "r1"}
	return []hooks.Event{
		&hooks.LLMRequest{Meta: meta, Provider: "openai", Model: "gpt-a", Attempt: 1},
		&hooks.LLMResponse{Meta: meta, Provider: "openai", Model: "gpt-a", Attempt: 1,
			Usage:    domain.Usage{PromptTokens: 1200, CompletionTokens: 80, CachedTokens: 1000, TotalTokens: 1280},
			Duration: 900 * time.Millisecond, TimeToFirstToken: 300 * time.Millisecond, CostUSD: 0.0021},
		&hooks.ToolFinish{Meta: meta, Tool: "sql_query", Duration: 40 * time.Millisecond},
		&hooks.SQLQuery{Meta: meta, Tool: "sql_query", Rows: 25, Duration: 12 * time.Millisecond},
		&hooks.ToolError{Meta: meta, Tool: "sql_query", Code: "timeout", Duration: time.Second},
		&hooks.SQLQuery{Meta: meta, Tool: "sql_query", Error: "rejected"},
		&hooks.AgentFinish{Meta: meta, Reason: "end_turn", Turns: 2, Duration: 3 * time.Second},
		&hooks.SandboxRun{Meta: meta, Outcome: "ok", Duration: time.Second},
	}
}

// BenchmarkHandle measures Handle per event over a typical mix
// (llm.response, tool.finish, sqldb.query and others), tenant label on.
func BenchmarkHandle(b *testing.B) {
	m, err := bichatprom.New(prometheus.NewRegistry(), bichatprom.Options{
		Tools: []string{"sql_query", "python"}, Models: []string{"gpt-a"}, TenantLabel: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	events := benchEvents()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		_ = m.Handle(ctx, events[i%len(events)])
		i++
	}
}

// BenchmarkHandleParallel is BenchmarkHandle from GOMAXPROCS publishers.
func BenchmarkHandleParallel(b *testing.B) {
	m, err := bichatprom.New(prometheus.NewRegistry(), bichatprom.Options{
		Tools: []string{"sql_query", "python"}, Models: []string{"gpt-a"}, TenantLabel: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	events := benchEvents()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_ = m.Handle(ctx, events[i%len(events)])
			i++
		}
	})
}

// BenchmarkBusPublish is one event through a bus with the handler
// subscribed, as the executor publishes it.
func BenchmarkBusPublish(b *testing.B) {
	bus := hooks.New(hooks.Options{})
	defer bus.Close()
	m, err := bichatprom.New(prometheus.NewRegistry(), bichatprom.Options{Tools: []string{"sql_query"}, Models: []string{"gpt-a"}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := bus.Subscribe(m); err != nil {
		b.Fatal(err)
	}
	events := benchEvents()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		bus.Publish(ctx, events[i%len(events)])
		i++
	}
}

// BenchmarkHandleByKind measures Handle for each event of the mix.
func BenchmarkHandleByKind(b *testing.B) {
	m, err := bichatprom.New(prometheus.NewRegistry(), bichatprom.Options{
		Tools: []string{"sql_query", "python"}, Models: []string{"gpt-a"}, TenantLabel: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, e := range benchEvents() {
		b.Run(string(e.Kind()), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = m.Handle(ctx, e)
			}
		})
	}
}
