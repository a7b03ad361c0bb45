package providers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/providers"
)

func TestCatalogIsComplete(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	perProvider := map[string]int{}
	for _, s := range providers.Catalog() {
		i := s.Info
		if i.Name == "" || i.ContextWindow <= 0 || i.MaxOutputTokens <= 0 || i.MaxOutputTokens > i.ContextWindow {
			t.Errorf("%s: incomplete limits %+v", i.Name, i)
		}
		if i.Pricing.InputPerMTok <= 0 || i.Pricing.OutputPerMTok <= i.Pricing.InputPerMTok {
			t.Errorf("%s: implausible prices %+v", i.Name, i.Pricing)
		}
		if p := i.Pricing.CachedInputPerMTok; p < 0 || p >= i.Pricing.InputPerMTok && p != 0 {
			t.Errorf("%s: cached price %v not below input price", i.Name, p)
		}
		if !i.Capabilities.Tools {
			t.Errorf("%s: no tool support", i.Name)
		}
		if _, err := time.Parse(time.DateOnly, s.Checked); err != nil || s.Source == "" {
			t.Errorf("%s: checked %q source %q", i.Name, s.Checked, s.Source)
		}
		perProvider[i.Provider]++
		for _, n := range append([]string{i.Name}, s.Aliases...) {
			if prev, dup := seen[strings.ToLower(n)]; dup {
				t.Errorf("name %q used by %s and %s", n, prev, i.Name)
			}
			seen[strings.ToLower(n)] = i.Name
		}
	}
	for _, p := range []string{providers.OpenAI, providers.Anthropic, providers.Gemini} {
		if perProvider[p] < 3 {
			t.Errorf("%s: %d models in the catalog", p, perProvider[p])
		}
	}
	// Catalog returns a copy.
	c := providers.Catalog()
	c[0].Aliases = append(c[0].Aliases, "mutated")
	c[0].Info.Name = "mutated"
	if providers.Catalog()[0].Info.Name == "mutated" {
		t.Error("Catalog exposes the curated table")
	}
}

func TestLookupAndOverride(t *testing.T) {
	t.Parallel()
	r := providers.New(providers.Config{AnthropicKey: "k"})
	s, ok := r.Lookup("SONNET")
	if !ok || s.Info.Name != "claude-sonnet-5-5" || s.Info.Provider != providers.Anthropic || !s.Adaptive {
		t.Fatalf("alias lookup: %+v %v", s, ok)
	}
	if s, ok := r.Lookup("ollama/qwen3:8b"); !ok || s.Info.Provider != "ollama" || s.Info.Name != "qwen3:8b" || s.Info.ContextWindow != 0 {
		t.Errorf("provider/model lookup: %+v", s)
	}
	if s, ok := r.Lookup("gemini/gemini-2.5-flash"); !ok || s.Info.ContextWindow != 1_048_576 {
		t.Errorf("provider/catalog-model lookup: %+v", s)
	}
	if _, ok := r.Lookup("nope"); ok {
		t.Error("unknown name resolved")
	}
	if _, ok := r.Lookup("acme/model"); ok {
		t.Error("unknown provider resolved")
	}
	// Host override: new prices, the alias moves to a new model.
	s.Info.Pricing.InputPerMTok = 1.5
	if err := r.Register(s, providers.Spec{Info: agents.ModelInfo{Provider: providers.Anthropic, Name: "claude-next",
		ContextWindow: 500_000}, Aliases: []string{"sonnet"}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Lookup("claude-sonnet-5-5"); got.Info.Pricing.InputPerMTok != 1.5 {
		t.Errorf("override not applied: %+v", got.Info.Pricing)
	}
	if got, _ := r.Lookup("sonnet"); got.Info.Name != "claude-next" {
		t.Errorf("alias did not move: %s", got.Info.Name)
	}
	m, err := r.Model("claude-sonnet-5-5")
	if err != nil || m.Info().Pricing.InputPerMTok != 1.5 || m.Info().ContextWindow != 1_000_000 {
		t.Fatalf("model from override: %+v %v", m, err)
	}
	for _, bad := range []providers.Spec{{Info: agents.ModelInfo{Provider: "acme", Name: "x"}}, {Info: agents.ModelInfo{Provider: "openai"}}} {
		if err := r.Register(bad); err == nil {
			t.Errorf("Register(%+v) accepted", bad.Info)
		}
	}
	specs := r.Specs()
	for i := 1; i < len(specs); i++ {
		a, b := specs[i-1].Info, specs[i].Info
		if a.Provider > b.Provider || a.Provider == b.Provider && a.Name >= b.Name {
			t.Fatalf("Specs not sorted at %d: %s/%s, %s/%s", i, a.Provider, a.Name, b.Provider, b.Name)
		}
	}
}

func TestAvailability(t *testing.T) {
	t.Parallel()
	r := providers.New(providers.Config{GeminiKey: "g", OllamaHost: "localhost:11434"})
	for name, want := range map[string]bool{"gemini-pro": true, "ollama/llama3.2": true, "gpt-5.5": false, "opus": false} {
		if got := r.Available(name); got != want {
			t.Errorf("Available(%q) = %v", name, got)
		}
	}
	for _, s := range r.AvailableSpecs() {
		if s.Info.Provider != providers.Gemini {
			t.Errorf("available: %s/%s", s.Info.Provider, s.Info.Name)
		}
	}
	_, err := r.Model("opus")
	if !errors.Is(err, providers.ErrUnavailable) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("unavailable model: %v", err)
	}
	if _, err := r.Model("gpt-9000"); !errors.Is(err, providers.ErrUnknownModel) {
		t.Errorf("unknown model: %v", err)
	}
	if r := providers.New(providers.Config{OpenAIBaseURL: "http://vllm:8000/v1"}); !r.Available("openai/my-model") {
		t.Error("a base URL alone does not make openai available")
	}
}

func generate(t *testing.T, m agents.Model) *agents.Response {
	t.Helper()
	temp := 0.2
	resp, err := agents.Generate(context.Background(), m, &agents.Request{
		Messages: []agents.Message{agents.UserMessage("hi")},
		Options:  agents.Options{Temperature: &temp, ReasoningBudget: 2048, MaxTokens: 8000}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Each provider's models are built with the registry's keys and endpoints
// and talk their own wire format.
func TestModelBuildsEachProvider(t *testing.T) {
	t.Parallel()
	turn := llmfake.Turn{Text: []string{"ok"}}
	oa := llmfake.NewServer(t, llmfake.OpenAIStream(turn))
	an := llmfake.NewServer(t, llmfake.AnthropicStream(turn), llmfake.AnthropicStream(turn))
	ge := llmfake.NewServer(t, llmfake.GeminiStream(turn))
	ol := llmfake.NewServer(t, llmfake.OpenAIStream(turn))
	r := providers.New(providers.Config{
		OpenAIKey: "sk-openai-test", OpenAIBaseURL: oa.URL + "/v1",
		AnthropicKey: "ant-test", AnthropicBaseURL: an.URL,
		GeminiKey: "gem-test", GeminiBaseURL: ge.URL,
		OllamaHost: ol.URL, MaxAttempts: 1,
	})
	cases := []struct {
		name, provider string
		srv            *llmfake.Server
		path, header   string
	}{
		{"gpt-5.5", "openai", oa, "/v1/chat/completions", "Authorization"},
		{"sonnet", "anthropic", an, "/v1/messages", "X-Api-Key"},
		{"claude-haiku-4-5", "anthropic", an, "/v1/messages", "X-Api-Key"},
		{"gemini-flash", "gemini", ge, "/v1beta/models/gemini-3.5-flash:streamGenerateContent", "X-Goog-Api-Key"},
		{"ollama/llama3.2", "ollama", ol, "/v1/chat/completions", ""},
	}
	counts := map[*llmfake.Server]int{}
	for _, c := range cases {
		m, err := r.Model(c.name)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if m.Info().Provider != c.provider {
			t.Errorf("%s: provider %q", c.name, m.Info().Provider)
		}
		if got := generate(t, m).Message.Text(); got != "ok" {
			t.Errorf("%s: text %q", c.name, got)
		}
		req := c.srv.Request(counts[c.srv])
		counts[c.srv]++
		if req.Path != c.path {
			t.Errorf("%s: path %s", c.name, req.Path)
		}
		if c.header != "" && req.Header.Get(c.header) == "" {
			t.Errorf("%s: no %s header", c.name, c.header)
		}
		if c.header == "" && req.Header.Get("Authorization") != "" {
			t.Errorf("%s: unexpected Authorization header", c.name)
		}
	}
	// Adaptive Anthropic models get adaptive thinking and no temperature;
	// older ones a budget and the temperature.
	var adaptive, budget llmfake.AnthropicRequest
	an.Request(0).Decode(&adaptive)
	an.Request(1).Decode(&budget)
	if string(adaptive.Thinking) != `{"type":"adaptive"}` || adaptive.Temperature != nil || adaptive.MaxTokens != 8000 {
		t.Errorf("sonnet 5.5 request: thinking %s temperature %v", adaptive.Thinking, adaptive.Temperature)
	}
	if string(budget.Thinking) != `{"type":"enabled","budget_tokens":2048}` || budget.Temperature == nil {
		t.Errorf("haiku 4.5 request: thinking %s temperature %v", budget.Thinking, budget.Temperature)
	}
}
