package bichat_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// RegionQuery is the typed input of the example's tool; its JSON Schema is
// generated from the struct and the model's arguments are validated
// against it before the function runs.
type RegionQuery struct {
	Region string `json:"region" jsonschema:"enum=EMEA,enum=APAC,description=Sales region"`
}

// Example creates a session, asks a question that the agent answers with a
// typed tool call, and reads the persisted answer back.
func Example() {
	ctx := context.Background()
	revenue := agents.MustTool("revenue", "Revenue of a sales region in EUR.",
		func(_ context.Context, q RegionQuery) (string, error) {
			return q.Region + ": 1200.00 EUR over 14 orders", nil
		})
	// A scripted model stands in for an LLM provider.
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{scripted.CallJSON("revenue", RegionQuery{Region: "EMEA"})}},
		{Text: "EMEA booked 1200.00 EUR."},
	}}
	svc, err := bichat.New(bichat.Config{
		Agent: agents.Config{Model: model, System: "You are a BI analyst.", Tools: []agents.Tool{revenue}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ana := domain.Principal{TenantID: "acme", UserID: "ana", Roles: []domain.AccessRole{domain.AccessContributor}}
	sess, err := svc.CreateSession(ctx, ana, bichat.SessionOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}

	var answerID string
	var text strings.Builder
	for ev, err := range svc.Send(ctx, ana, sess.ID, "What did EMEA book?") {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch e := ev.(type) {
		case *agents.RunStarted:
			answerID = e.MessageID
		case *agents.ToolCallStarted:
			fmt.Printf("tool call:   %s %s\n", e.Name, e.Arguments)
		case *agents.ToolCallFinished:
			fmt.Printf("tool result: %s\n", e.Summary)
		case *agents.TextDelta:
			text.WriteString(e.Text)
		case *agents.RunFinished:
			fmt.Printf("streamed:    %s (%s)\n", text.String(), e.Reason)
		}
	}

	m, err := svc.Message(ctx, ana, answerID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("persisted:   %s %s %q\n", m.Role, m.Status, m.Text())
	for _, tc := range m.Metadata.ToolCalls {
		fmt.Printf("  tool %s(%s) -> %s\n", tc.Name, tc.Arguments, tc.Result)
	}
	s, _ := svc.GetSession(ctx, ana, sess.ID)
	fmt.Printf("session:     %q\n", s.Title)
	// Output:
	// tool call:   revenue {"region":"EMEA"}
	// tool result: EMEA: 1200.00 EUR over 14 orders
	// streamed:    EMEA booked 1200.00 EUR. (end_turn)
	// persisted:   assistant complete "EMEA booked 1200.00 EUR."
	//   tool revenue({"region":"EMEA"}) -> EMEA: 1200.00 EUR over 14 orders
	// session:     "What did EMEA book?"
}
