package otel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/hooks"
	bichatotel "github.com/bichat-go/bichat/hooks/otel"
	"github.com/bichat-go/bichat/providers/scripted"
)

// A run that calls a tool and then answers becomes one trace: the run,
// its two turns, a model call per turn and the tool call. A host passes
// its own TracerProvider (with an OTLP exporter, say); the in-memory
// recorder here shows what it receives.
func Example() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	bus := hooks.New(hooks.Options{})
	if _, err := bus.Subscribe(bichatotel.New(tp, bichatotel.Options{})); err != nil {
		panic(err)
	}
	defer bus.Close()

	revenue := agents.MustTool("revenue", "Returns the revenue of a fiscal year.",
		func(_ context.Context, in struct {
			Year int `json:"year"`
		}) (string, error) {
			return "1.2 M EUR", nil
		})
	ex, err := agents.NewExecutor(agents.Config{
		Name:  "analyst",
		Bus:   bus,
		Tools: []agents.Tool{revenue},
		Model: &scripted.Model{Turns: []scripted.Turn{
			{ToolCalls: []scripted.Call{scripted.CallJSON("revenue", map[string]any{"year": 2025})}},
			{Text: "Revenue in 2025 was 1.2 M EUR."},
		}},
	})
	if err != nil {
		panic(err)
	}
	for _, err := range ex.Run(context.Background(), agents.Input{SessionID: "s1",
		Message: agents.UserMessage("What was revenue in 2025?")}) {
		if err != nil {
			panic(err)
		}
	}
	printTree(rec.Ended())
	// Output:
	// invoke_agent analyst [gen_ai.agent.name=analyst gen_ai.conversation.id=s1]
	//   turn 1
	//     chat scripted [gen_ai.provider.name=scripted gen_ai.response.finish_reasons=["tool_use"]]
	//     execute_tool revenue [gen_ai.tool.call.id=call_1_1 gen_ai.tool.name=revenue]
	//   turn 2
	//     chat scripted [gen_ai.provider.name=scripted gen_ai.response.finish_reasons=["end_turn"]]
}

// printTree prints spans as a tree in start order, with a few attributes.
func printTree(spans []sdktrace.ReadOnlySpan) {
	slices.SortStableFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	show := map[string]bool{"gen_ai.agent.name": true, "gen_ai.conversation.id": true, "gen_ai.provider.name": true,
		"gen_ai.response.finish_reasons": true, "gen_ai.tool.name": true, "gen_ai.tool.call.id": true}
	var walk func(parent sdktrace.ReadOnlySpan, depth int)
	walk = func(parent sdktrace.ReadOnlySpan, depth int) {
		for _, s := range spans {
			isRoot := parent == nil && !s.Parent().IsValid()
			if !isRoot && (parent == nil || s.Parent().SpanID() != parent.SpanContext().SpanID()) {
				continue
			}
			var attrs []string
			for _, kv := range s.Attributes() {
				if show[string(kv.Key)] {
					attrs = append(attrs, string(kv.Key)+"="+kv.Value.String())
				}
			}
			slices.Sort(attrs)
			line := strings.Repeat("  ", depth) + s.Name()
			if len(attrs) > 0 {
				line += " [" + strings.Join(attrs, " ") + "]"
			}
			fmt.Println(line)
			walk(s, depth+1)
		}
	}
	walk(nil, 0)
}
