package bichat_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/quota"
	"github.com/bichat-go/bichat/redact"
)

// Budgets stop a run before a model call the budget does not allow. Here
// every model call costs $0.40 (1,000 prompt tokens at $400 per million,
// a price made up for the example) and an answer may cost $1: the third
// call would pass it, so the run stops after two with a message saying
// why.
func ExampleBudgets() {
	ctx := context.Background()
	model := &scripted.Model{
		ModelInfo: agents.ModelInfo{Provider: "scripted", Name: "pricey", ContextWindow: 128_000,
			Capabilities: agents.Capabilities{Tools: true}, Pricing: agents.Pricing{InputPerMTok: 400}},
		Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
			return scripted.Turn{ToolCalls: []scripted.Call{{Name: "look", Args: "{}"}},
				Usage: domain.Usage{PromptTokens: 1000, TotalTokens: 1000}}, nil
		}}
	look := agents.MustTool("look", "Looks around.", func(context.Context, struct{}) (string, error) { return "nothing yet", nil })
	svc, err := bichat.New(bichat.Config{
		Agent:   agents.Config{Model: model, Tools: []agents.Tool{look}},
		Budgets: bichat.Budgets{PerMessageUSD: 1, PerTenantDayUSD: 50},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	defer svc.Close(ctx)
	me := domain.Principal{TenantID: "acme", UserID: "ana", Roles: []domain.AccessRole{domain.AccessContributor}}
	sess, _ := svc.CreateSession(ctx, me, bichat.SessionOptions{})
	for ev, err := range svc.Send(ctx, me, sess.ID, "Look until you find it.") {
		if errors.Is(err, bichat.ErrBudgetExceeded) {
			fmt.Println("error matches ErrBudgetExceeded")
		}
		if f, ok := ev.(*agents.RunFailed); ok {
			fmt.Println(f.Code+":", f.Message)
		}
	}
	fmt.Println("model calls:", model.Calls())
	spent, _ := svc.Costs().SessionCost(ctx, me.TenantID, sess.ID)
	fmt.Printf("session cost: $%.2f\n", spent)
	// Output:
	// budget_exceeded: The answer stopped because the per-answer budget of $1.00 is used up ($0.80 spent).
	// error matches ErrBudgetExceeded
	// model calls: 2
	// session cost: $0.80
}

// A quota limits requests, tokens and concurrent runs per tenant and per
// user; a refused request creates nothing and says when to retry (the
// HTTP handler answers 429 with Retry-After).
func ExampleConfig_quota() {
	ctx := context.Background()
	limiter, err := quota.NewMemory(quota.Policy{User: quota.Limits{RequestsPerMinute: 1}}, quota.MemoryOptions{})
	if err != nil {
		panic(err)
	}
	model := &scripted.Model{Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "Done."}, nil
	}}
	svc, err := bichat.New(bichat.Config{Agent: agents.Config{Model: model}, Quota: limiter, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer svc.Close(ctx)
	me := domain.Principal{TenantID: "acme", UserID: "ana", Roles: []domain.AccessRole{domain.AccessContributor}}
	sess, _ := svc.CreateSession(ctx, me, bichat.SessionOptions{})
	for i := range 2 {
		for _, err := range svc.Send(ctx, me, sess.ID, "Anything new?") {
			var rl *bichat.RateLimitError
			if errors.As(err, &rl) {
				fmt.Printf("question %d refused (HTTP %d), retry in %s\n", i+1, bichat.HTTPStatus(err), rl.RetryAfter.Round(time.Second))
			}
		}
	}
	// Output:
	// question 2 refused (HTTP 429), retry in 1m0s
}

// The service scrubs secrets from what it sends out: here the API key the
// user pasted never reaches the model, the stored question or the stream.
func ExampleConfig_redactor() {
	ctx := context.Background()
	model := &scripted.Model{Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "You wrote: " + req.Messages[len(req.Messages)-1].Text()}, nil
	}}
	r, err := redact.New(redact.Options{Secrets: []string{"acme-internal-pw"}})
	if err != nil {
		panic(err)
	}
	svc, err := bichat.New(bichat.Config{Agent: agents.Config{Model: model}, Redactor: r, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer svc.Close(ctx)
	me := domain.Principal{TenantID: "acme", UserID: "ana", Roles: []domain.AccessRole{domain.AccessContributor}}
	sess, _ := svc.CreateSession(ctx, me, bichat.SessionOptions{})
	for ev := range svc.Send(ctx, me, sess.ID, "Use key sk-proj-"+"Zx81kQ2vB7nL0pR4tY6wE9uI3oA5sD1fG8hJ and password acme-internal-pw") {
		if f, ok := ev.(*agents.RunFinished); ok {
			fmt.Println(f.Text)
		}
	}
	// Output:
	// You wrote: Use key [REDACTED] and password [REDACTED]
}
