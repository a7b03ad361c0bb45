package main

import (
	"context"
	"fmt"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/scripted"
)

// A write tool never runs on the model's word. Here the executor alone
// (without a Service or a store) stops at send_email with a confirmation
// request; the email goes out only when the host approves with the token.
func Example_confirmation() {
	box := &outbox{}
	send, err := newSendEmail(box)
	if err != nil {
		panic(err)
	}
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{scripted.CallJSON(toolSendEmail, emailInput{
			To: "team@example.com", Subject: "Revenue", Body: "2025 revenue: €1.2 M."})}},
		{Text: "Sent."},
	}}
	exec, err := agents.NewExecutor(agents.Config{Model: model, Tools: []agents.Tool{send}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	var cp *agents.Checkpoint
	in := agents.Input{TenantID: "acme", UserID: "ana", Message: agents.UserMessage("Email the revenue to my team.")}
	for ev, err := range exec.Run(ctx, in) {
		if err != nil {
			panic(err)
		}
		if e, ok := ev.(*agents.Interrupted); ok {
			fmt.Printf("confirm %s (%s): %s\n", e.Confirmation.Tool, e.Confirmation.Permission, e.Confirmation.Arguments)
			cp = e.Checkpoint
		}
	}
	fmt.Println("sent before approval:", len(box.emails()))

	d := agents.Decision{Token: cp.Confirmation.Token, TenantID: "acme", UserID: "ana"}
	for ev, err := range exec.Approve(ctx, cp, d) {
		if err != nil {
			panic(err)
		}
		if e, ok := ev.(*agents.RunFinished); ok {
			fmt.Println("answer:", e.Text)
		}
	}
	for _, e := range box.emails() {
		fmt.Println(e.ID, "to", e.To)
	}
	// Output:
	// confirm send_email (write): {"body":"2025 revenue: €1.2 M.","subject":"Revenue","to":"team@example.com"}
	// sent before approval: 0
	// answer: Sent.
	// mail-1 to team@example.com
}
