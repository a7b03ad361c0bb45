package agents_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/internal/bench"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/redact"
)

// benchHistory returns n alternating user and assistant messages of about
// 200 bytes each.
func benchHistory(n int) []agents.Message {
	const filler = "Quarterly revenue for the EMEA region rose on the back of strong subscription renewals, " +
		"while hardware sales were flat; the board asked for a breakdown by product line and currency. "
	h := make([]agents.Message, n)
	for i := range h {
		text := fmt.Sprintf("%d: %s%s", i, filler, filler)[:200]
		if i%2 == 0 {
			h[i] = agents.UserMessage(text)
		} else {
			h[i] = agents.AssistantMessage(text)
		}
	}
	return h
}

// benchTools returns the three benchmark tools: two parallel-safe, one not.
func benchTools() (sales, fx, note agents.Tool) {
	sales, fx, note, err := bench.Tools()
	if err != nil {
		panic(err)
	}
	return sales, fx, note
}

// benchSetup builds an executor whose every run is one ReAct turn with
// three tool calls (two parallel-safe, one not) and a short final answer:
// two model calls and three tool calls.
func benchSetup(b *testing.B, bus *hooks.Bus, redactFn ...func(string) string) (*agents.Executor, *scripted.Model, agents.Input) {
	b.Helper()
	var f func(string) string
	if len(redactFn) > 0 {
		f = redactFn[0]
	}
	sales, fx, note := benchTools()
	m := &scripted.Model{ChunkSize: 32, Turns: []scripted.Turn{
		{Text: "Let me fetch the figures.", ToolCalls: bench.Calls()},
		{Text: "EMEA sales in 2025 were 1.34 M$ over 321 orders."},
	}}
	e, err := agents.NewExecutor(agents.Config{Model: m, System: "You are a data analyst.", Bus: bus,
		Tools: []agents.Tool{sales, fx, note}, Redact: f})
	if err != nil {
		b.Fatal(err)
	}
	in := agents.Input{RunID: "bench-run", TenantID: "t", UserID: "u", SessionID: "s",
		History: benchHistory(50), Message: agents.UserMessage("What were EMEA sales in 2025, in dollars?")}
	return e, m, in
}

func runBench(b *testing.B, bus *hooks.Bus, redactFn ...func(string) string) {
	e, m, in := benchSetup(b, bus, redactFn...)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		// Reset restarts the script and truncates the recorded requests
		// (a mutex and a reslice, no allocation), so it stays in the loop.
		m.Reset()
		var last agents.Event
		tools := 0
		for ev, err := range e.Run(ctx, in) {
			if err != nil {
				b.Fatal(err)
			}
			if f, ok := ev.(*agents.ToolCallFinished); ok {
				if f.Error != "" {
					b.Fatalf("tool %s failed: %s", f.Name, f.Error)
				}
				tools++
			}
			last = ev
		}
		rf, ok := last.(*agents.RunFinished)
		if !ok || tools != 3 || rf.Turns != 2 || !strings.HasPrefix(rf.Text, "EMEA sales") {
			b.Fatalf("unexpected run: last %T, %d tools", last, tools)
		}
	}
}

// BenchmarkExecutorTurn measures one run: 50 history messages, one turn
// with three tool calls (two in parallel), then a short answer.
func BenchmarkExecutorTurn(b *testing.B) { runBench(b, nil) }

// BenchmarkExecutorTurnRedacted is BenchmarkExecutorTurn with the default
// redactor (bichat's default): every request (50 history messages) and
// every event is scrubbed, streamed text held to the end of its word.
// Divided by BenchmarkExecutorTurn it is the cost of redaction.
func BenchmarkExecutorTurnRedacted(b *testing.B) { runBench(b, nil, redact.Default().Func()) }

// BenchmarkExecutorTurnWithBus is BenchmarkExecutorTurn with a bus that has
// one no-op subscriber.
func BenchmarkExecutorTurnWithBus(b *testing.B) {
	bus := hooks.New(hooks.Options{})
	defer bus.Close()
	if _, err := bus.Subscribe(hooks.HandlerFunc(func(context.Context, hooks.Event) error { return nil })); err != nil {
		b.Fatal(err)
	}
	runBench(b, bus)
}

// BenchmarkExecutorTurnBaseline does the same work by hand, without the
// executor: both model calls through Generate and the three tool calls one
// after another. BenchmarkExecutorTurn divided by it is the executor's
// overhead (events, goroutines, timeouts, accounting).
func BenchmarkExecutorTurnBaseline(b *testing.B) {
	e, m, in := benchSetup(b, nil)
	specs := e.Tools()
	ctx := context.Background()
	// benchSetup keeps its tools inside the executor; build identical ones.
	tools := map[string]agents.Tool{}
	sales, fx, note := benchTools()
	tools["sales_total"], tools["fx_rate"], tools["save_note"] = sales, fx, note
	b.ReportAllocs()
	for b.Loop() {
		m.Reset()
		msgs := make([]agents.Message, 0, len(in.History)+4)
		msgs = append(msgs, in.History...)
		msgs = append(msgs, in.Message)
		resp, err := agents.Generate(ctx, m, &agents.Request{System: "You are a data analyst.", Messages: msgs, Tools: specs})
		if err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, resp.Message)
		calls := resp.Message.ToolCalls()
		results := agents.Message{Role: "tool", Parts: make([]domain.Part, 0, len(calls))}
		for _, c := range calls {
			res, err := tools[c.Name].Call(ctx, c.Arguments)
			if err != nil {
				b.Fatal(err)
			}
			results.Parts = append(results.Parts, domain.Part{Type: domain.PartToolResult,
				ToolResult: &domain.ToolResult{CallID: c.ID, Name: c.Name, Content: res.Summary}})
		}
		msgs = append(msgs, results)
		resp, err = agents.Generate(ctx, m, &agents.Request{System: "You are a data analyst.", Messages: msgs, Tools: specs})
		if err != nil {
			b.Fatal(err)
		}
		if !strings.HasPrefix(resp.Message.Text(), "EMEA sales") {
			b.Fatalf("unexpected answer %q", resp.Message.Text())
		}
	}
}
