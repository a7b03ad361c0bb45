package anthropic_test

import (
	"testing"

	"github.com/bichat-go/bichat/internal/llmtest"
	"github.com/bichat-go/bichat/providers/anthropic"
)

// TestLive talks to the real API. It runs only when ANTHROPIC_API_KEY is
// set (BICHAT_ANTHROPIC_MODEL picks the model, default claude-haiku-4-5),
// so a user can check the provider against the service:
//
//	ANTHROPIC_API_KEY=... go test -run TestLive ./providers/anthropic
func TestLive(t *testing.T) {
	model := llmtest.LiveModel(t, "the Anthropic API", "BICHAT_ANTHROPIC_MODEL", "claude-haiku-4-5", anthropic.EnvAPIKey)
	m, err := anthropic.New(anthropic.Config{Model: model, MaxTokens: 512})
	if err != nil {
		t.Fatal(err)
	}
	llmtest.LiveToolRun(t, m)
}
