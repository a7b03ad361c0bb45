package scripted_test

import (
	"context"
	"fmt"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// A scripted model answers the first request with a tool call and then,
// once the script is used up, reacts to the tool result through Respond.
func Example() {
	m := &scripted.Model{
		Turns: []scripted.Turn{
			{ToolCalls: []scripted.Call{scripted.CallJSON("revenue", map[string]any{"year": 2025})}},
		},
		Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
			last := req.Messages[len(req.Messages)-1]
			return scripted.Turn{Text: "Revenue in 2025 was " + last.Parts[0].ToolResult.Content + "."}, nil
		},
	}
	ctx := context.Background()

	req := &agents.Request{Messages: []agents.Message{agents.UserMessage("What was revenue in 2025?")}}
	resp, err := agents.Generate(ctx, m, req)
	if err != nil {
		panic(err)
	}
	call := resp.Message.ToolCalls()[0]
	fmt.Println(resp.Stop, call.ID, call.Name, string(call.Arguments))

	// Send the tool result back, as the executor would.
	req.Messages = append(req.Messages, resp.Message, agents.Message{Role: domain.RoleTool, Parts: []domain.Part{{
		Type:       domain.PartToolResult,
		ToolResult: &domain.ToolResult{CallID: call.ID, Name: call.Name, Content: "1.2 M EUR"},
	}}})
	resp, err = agents.Generate(ctx, m, req)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Stop, resp.Message.Text())
	fmt.Println("requests:", m.Calls())
	// Output:
	// tool_use call_1_1 revenue {"year":2025}
	// end_turn Revenue in 2025 was 1.2 M EUR.
	// requests: 2
}

// Text streams in ChunkSize-character pieces, never splitting a character.
func ExampleModel_Stream() {
	m := &scripted.Model{ChunkSize: 3, Turns: []scripted.Turn{{Text: "Zürich 東京"}}}
	for c, err := range m.Stream(context.Background(), &agents.Request{}) {
		if err != nil {
			panic(err)
		}
		switch c.Type {
		case agents.ChunkText:
			fmt.Printf("text %q\n", c.Text)
		case agents.ChunkStop:
			fmt.Println("stop", c.Stop)
		}
	}
	// Output:
	// text "Zür"
	// text "ich"
	// text " 東京"
	// stop end_turn
}
