package gemini_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/gemini"
)

// TestLive talks to the real API. It runs only when GEMINI_API_KEY or
// GOOGLE_API_KEY is set (BICHAT_GEMINI_MODEL picks the model, default
// gemini-2.5-flash),
// so a user can check the provider against the service:
//
//	GEMINI_API_KEY=... go test -run TestLive ./providers/gemini
func TestLive(t *testing.T) {
	if os.Getenv(gemini.EnvAPIKey) == "" && os.Getenv(gemini.EnvAPIKeyAlt) == "" {
		t.Skip("set GEMINI_API_KEY or GOOGLE_API_KEY to run the live test against the Gemini API")
	}
	model := os.Getenv("BICHAT_GEMINI_MODEL")
	if model == "" {
		model = "gemini-2.5-flash"
	}
	m, err := gemini.New(gemini.Config{Model: model})
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
