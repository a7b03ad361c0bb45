package anthropic_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/anthropic"
)

// TestLive talks to the real API. It runs only when ANTHROPIC_API_KEY is
// set (BICHAT_ANTHROPIC_MODEL picks the model, default claude-haiku-4-5),
// so a user can check the provider against the service:
//
//	ANTHROPIC_API_KEY=... go test -run TestLive ./providers/anthropic
func TestLive(t *testing.T) {
	if os.Getenv(anthropic.EnvAPIKey) == "" {
		t.Skip("set ANTHROPIC_API_KEY to run the live test against the Anthropic API")
	}
	model := os.Getenv("BICHAT_ANTHROPIC_MODEL")
	if model == "" {
		model = "claude-haiku-4-5"
	}
	m, err := anthropic.New(anthropic.Config{Model: model, MaxTokens: 512})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clock := agents.MustTool("current_year", "Returns the current year.",
		func(context.Context, struct{}) (int, error) { return 2026, nil })
	exec, err := agents.NewExecutor(agents.Config{Model: m, Tools: []agents.Tool{clock}})
	if err != nil {
		t.Fatal(err)
	}
	var answer string
	for ev, err := range exec.Run(ctx, agents.Input{Message: agents.UserMessage("Use the current_year tool, then answer with the year only.")}) {
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := ev.(*agents.RunFinished); ok {
			answer = f.Text
		}
	}
	t.Logf("answer: %q", answer)
	if answer == "" {
		t.Error("no answer")
	}
}
