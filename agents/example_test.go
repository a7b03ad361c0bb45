package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/scripted"
)

type exampleRevenueIn struct {
	Year   int    `json:"year" jsonschema:"minimum=2000,maximum=2100,description=Fiscal year"`
	Region string `json:"region,omitempty" jsonschema:"enum=EU,enum=US,description=Sales region; all when omitted"`
}

type exampleRevenueOut struct {
	Year  int     `json:"year"`
	Total float64 `json:"total"`
}

func (o exampleRevenueOut) ToolSummary() string {
	return fmt.Sprintf("Revenue %d: %.1f M EUR", o.Year, o.Total/1e6)
}

func exampleRevenueTool() agents.Tool {
	return agents.MustTool("revenue", "Returns the revenue of a fiscal year.",
		func(_ context.Context, in exampleRevenueIn) (exampleRevenueOut, error) {
			return exampleRevenueOut{Year: in.Year, Total: 1.2e6}, nil
		}, agents.WithParallel())
}

func ExampleNewTool() {
	tool, err := agents.NewTool("revenue", "Returns the revenue of a fiscal year.",
		func(_ context.Context, in exampleRevenueIn) (exampleRevenueOut, error) {
			return exampleRevenueOut{Year: in.Year, Total: 1.2e6}, nil
		})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	// Valid arguments reach the function; the model sees the summary and
	// the host gets the typed payload.
	res, err := tool.Call(ctx, json.RawMessage(`{"year":2025,"region":"EU"}`))
	fmt.Println(res.Summary, err)
	fmt.Printf("%+v\n", res.Payload)

	// Invalid arguments never reach the function: the error names the
	// field, so the model can repair the call.
	_, err = tool.Call(ctx, json.RawMessage(`{"year":"2025","region":"APAC"}`))
	fmt.Println(err)
	var ae *agents.ArgumentError
	fmt.Println(errors.Is(err, agents.ErrInvalidArguments), errors.As(err, &ae), len(ae.Problems))
	// Output:
	// Revenue 2025: 1.2 M EUR <nil>
	// {Year:2025 Total:1.2e+06}
	// invalid arguments for revenue: /region: must be one of "EU", "US"; /year: must be integer, not string
	// true true 2
}

func ExampleExecutor_Run() {
	model := &scripted.Model{
		ChunkSize: 64,
		Turns: []scripted.Turn{
			{ToolCalls: []scripted.Call{scripted.CallJSON("revenue", map[string]any{"year": 2025})}},
			{Text: "Revenue in 2025 was 1.2 M EUR."},
		},
	}
	ex, err := agents.NewExecutor(agents.Config{
		Model:  model,
		System: "You answer questions about sales.",
		Tools:  []agents.Tool{exampleRevenueTool()},
	})
	if err != nil {
		panic(err)
	}
	in := agents.Input{Message: agents.UserMessage("What was revenue in 2025?")}
	for ev, err := range ex.Run(context.Background(), in) {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		switch e := ev.(type) {
		case *agents.ToolCallStarted:
			fmt.Println(e.Type(), e.Name, string(e.Arguments))
		case *agents.ToolCallFinished:
			fmt.Println(e.Type(), e.Name, e.Summary)
		case *agents.RunFinished:
			fmt.Println(e.Type(), e.Reason, e.Turns, e.ToolCalls)
			fmt.Println(e.Text)
		default:
			fmt.Println(e.Type())
		}
	}
	fmt.Println("model calls:", model.Calls())
	// Output:
	// run.started
	// usage
	// tool.started revenue {"year":2025}
	// tool.finished revenue Revenue 2025: 1.2 M EUR
	// text.delta
	// usage
	// run.finished end_turn 2 1
	// Revenue in 2025 was 1.2 M EUR.
	// model calls: 2
}
