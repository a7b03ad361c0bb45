package gemini_test

import (
	"testing"

	"github.com/bichat-go/bichat/internal/llmtest"
	"github.com/bichat-go/bichat/providers/gemini"
)

// TestLive talks to the real API. It runs only when GEMINI_API_KEY or
// GOOGLE_API_KEY is set (BICHAT_GEMINI_MODEL picks the model, default
// gemini-2.5-flash),
// so a user can check the provider against the service:
//
//	GEMINI_API_KEY=... go test -run TestLive ./providers/gemini
func TestLive(t *testing.T) {
	model := llmtest.LiveModel(t, "the Gemini API", "BICHAT_GEMINI_MODEL", "gemini-2.5-flash", gemini.EnvAPIKey, gemini.EnvAPIKeyAlt)
	m, err := gemini.New(gemini.Config{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	llmtest.LiveToolRun(t, m)
}
