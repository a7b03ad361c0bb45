package providers

import (
	"context"
	"fmt"
	"iter"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/scripted"
)

// OfflineNotice is what the offline model answers and what Default and
// FromEnv return as their note when no provider is configured.
const OfflineNotice = "No LLM provider is configured, so bichat is using its offline scripted model, " +
	"which cannot answer questions. Set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY (or GOOGLE_API_KEY), " +
	"OLLAMA_HOST or OPENAI_BASE_URL to use a real model."

// providerOrder is the order Default tries configured providers in.
var providerOrder = []string{OpenAI, Anthropic, Gemini, Ollama}

// Default returns the model a host gets without choosing: Config.Model
// when set (a catalog name, an alias or "provider/model"), else the
// default model of the first configured provider (OpenAI or an
// OpenAI-compatible server, Anthropic, Gemini, Ollama). With no provider
// configured it returns the offline scripted model. note says in a plain
// sentence which model was chosen and why; show it to the user (Default
// prints nothing).
func (r *Registry) Default() (model agents.Model, note string, err error) {
	if name := r.cfg.Model; name != "" {
		m, err := r.Model(name)
		if err != nil {
			return nil, "", err
		}
		info := m.Info()
		return m, fmt.Sprintf("Using %s model %s (from %s).", info.Provider, info.Name, EnvModel), nil
	}
	for _, p := range providerOrder {
		if !r.ProviderAvailable(p) {
			continue
		}
		if p == OpenAI && r.cfg.OpenAIKey == "" {
			// A compatible server without a key: its model names are its own.
			return nil, "", fmt.Errorf("providers: %s is set without %s: set %s to the name of a model the server serves",
				EnvOpenAIBaseURL, EnvOpenAIKey, EnvModel)
		}
		m, err := r.Model(p + "/" + defaultModels[p])
		if err != nil {
			return nil, "", err
		}
		info := m.Info()
		return m, fmt.Sprintf("Using %s model %s (its provider is configured; set %s to pick another model).",
			info.Provider, info.Name, EnvModel), nil
	}
	return Offline(), OfflineNotice, nil
}

// FromEnv returns the model the environment configures, as
// New(ConfigFromEnv()).Default() does: OPENAI_API_KEY, OPENAI_BASE_URL,
// ANTHROPIC_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY, OLLAMA_HOST pick the
// provider and BICHAT_MODEL the model; with none of them set it returns
// the offline scripted model and OfflineNotice as the note. It never
// prints: show note to the user.
func FromEnv() (model agents.Model, note string, err error) {
	return New(ConfigFromEnv()).Default()
}

// Offline returns the offline scripted model: it answers every request
// with OfflineNotice and never calls tools, so a program runs end to end
// without a provider.
func Offline() agents.Model { return offline{} }

type offline struct{}

var offlineInfo = agents.ModelInfo{Provider: "scripted", Name: "offline", ContextWindow: 128000,
	Capabilities: agents.Capabilities{Tools: true}}

func (offline) Info() agents.ModelInfo { return offlineInfo }

// Stream plays a one-turn script; a fresh scripted.Model per call keeps
// no request history in a long-running program.
func (offline) Stream(ctx context.Context, req *agents.Request) iter.Seq2[agents.Chunk, error] {
	m := &scripted.Model{ModelInfo: offlineInfo, Turns: []scripted.Turn{{Text: OfflineNotice}}}
	return m.Stream(ctx, req)
}
