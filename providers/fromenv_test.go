package providers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers"
)

// clearEnv unsets every variable FromEnv reads (t.Setenv restores them).
func clearEnv(t *testing.T) {
	for _, k := range []string{providers.EnvOpenAIKey, providers.EnvOpenAIBaseURL, providers.EnvAnthropicKey,
		providers.EnvGeminiKey, providers.EnvGoogleKey, providers.EnvOllamaHost, providers.EnvModel} {
		t.Setenv(k, "")
	}
}

func TestFromEnvOffline(t *testing.T) {
	clearEnv(t)
	m, note, err := providers.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if note != providers.OfflineNotice || m.Info().Provider != "scripted" {
		t.Fatalf("note %q, model %+v", note, m.Info())
	}
	for range 2 { // answers every time, not just once
		resp, err := agents.Generate(context.Background(), m, &agents.Request{Messages: []agents.Message{agents.UserMessage("hi")}})
		if err != nil || resp.Message.Text() != providers.OfflineNotice {
			t.Fatalf("offline answer %v %v", resp, err)
		}
	}
}

func TestFromEnvPicksProvider(t *testing.T) {
	cases := []struct {
		name      string
		env       map[string]string
		provider  string
		model     string
		wantErr   string
		notePiece string
	}{
		{"anthropic", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-SECRET1"}, "anthropic", "claude-sonnet-5-5", "", "BICHAT_MODEL"},
		{"google key", map[string]string{"GOOGLE_API_KEY": "AIza-SECRET2"}, "gemini", "gemini-3.5-flash", "", ""},
		{"openai first", map[string]string{"OPENAI_API_KEY": "sk-SECRET3", "ANTHROPIC_API_KEY": "sk-ant-SECRET1"}, "openai", "gpt-5.5", "", ""},
		{"ollama", map[string]string{"OLLAMA_HOST": "127.0.0.1:11434"}, "ollama", "llama3.2", "", ""},
		{"named model", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-SECRET1", "GEMINI_API_KEY": "gem-SECRET4", "BICHAT_MODEL": "gemini-pro"},
			"gemini", "gemini-3.1-pro-preview", "", "from BICHAT_MODEL"},
		{"compatible server needs a model name", map[string]string{"OPENAI_BASE_URL": "http://vllm:8000/v1"}, "", "", "BICHAT_MODEL", ""},
		{"compatible server", map[string]string{"OPENAI_BASE_URL": "http://vllm:8000/v1", "BICHAT_MODEL": "openai/qwen3-32b"},
			"openai", "qwen3-32b", "", ""},
		{"named model unavailable", map[string]string{"BICHAT_MODEL": "opus"}, "", "", "ANTHROPIC_API_KEY", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			m, note, err := providers.FromEnv()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info := m.Info(); info.Provider != c.provider || info.Name != c.model {
				t.Errorf("model %s/%s, want %s/%s", info.Provider, info.Name, c.provider, c.model)
			}
			if !strings.Contains(note, c.model) || !strings.Contains(note, c.notePiece) {
				t.Errorf("note %q", note)
			}
			if strings.Contains(note, "SECRET") {
				t.Errorf("note %q reveals a key", note)
			}
		})
	}
}
