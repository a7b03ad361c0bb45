package providers

import "github.com/bichat-go/bichat/agents"

// Spec is one model the registry knows: its agents.ModelInfo (provider,
// context window, max output, capabilities, prices) plus aliases and the
// date its figures were checked. Hosts override any entry with
// Registry.Register.
type Spec struct {
	Info agents.ModelInfo
	// Aliases are other names that resolve to this model (dated
	// snapshots, short names).
	Aliases []string
	// Checked is the date (YYYY-MM-DD) the context window and prices were
	// last checked against the provider's published figures. Prices
	// change: override them with Register when yours differ, and give
	// announced changes as Info.PriceChanges (dated; each model call is
	// priced at the prices in force at its time, see
	// agents.ModelInfo.PricingAt).
	Checked string
	// Source says where the figures come from.
	Source string
	// Adaptive marks Anthropic models with adaptive thinking only: a
	// reasoning budget is sent as {"type":"adaptive"} and sampling
	// parameters (temperature) are not sent, which these models reject.
	Adaptive bool
}

// Provider names used in ModelInfo.Provider and in "provider/model"
// names.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
	Gemini    = "gemini"
	Ollama    = "ollama"
)

// checked is the date the curated table was last checked.
const checked = "2026-11-22"

var (
	capsAll   = agents.Capabilities{Tools: true, ParallelTools: true, Vision: true, Reasoning: true, JSON: true}
	capsClaud = agents.Capabilities{Tools: true, ParallelTools: true, Vision: true, Reasoning: true}
)

const (
	srcOpenAI    = "OpenAI pricing and model pages as quoted by API resellers (apiyi, wavespeed, tokenmix), 2026-06..11"
	srcAnthropic = "platform.claude.com model overview pages"
	srcGemini    = "ai.google.dev/gemini-api/docs/pricing as transcribed 2026-10-07; context limits from Google's model pages"
)

// catalog is the curated table. Figures are per million tokens in US
// dollars; tiered prices use the base (short-prompt) tier.
var catalog = []Spec{
	// OpenAI (Chat Completions).
	{Info: agents.ModelInfo{Provider: OpenAI, Name: "gpt-5.6-sol", ContextWindow: 1_050_000, MaxOutputTokens: 128_000,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 5, CachedInputPerMTok: 0.5, OutputPerMTok: 30}},
		Aliases: []string{"gpt-5.6"}, Checked: checked, Source: srcOpenAI},
	{Info: agents.ModelInfo{Provider: OpenAI, Name: "gpt-5.6-terra", ContextWindow: 1_000_000, MaxOutputTokens: 128_000,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 2.5, CachedInputPerMTok: 0.25, OutputPerMTok: 15}},
		Checked: checked, Source: srcOpenAI},
	{Info: agents.ModelInfo{Provider: OpenAI, Name: "gpt-5.5", ContextWindow: 1_050_000, MaxOutputTokens: 128_000,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 5, CachedInputPerMTok: 0.5, OutputPerMTok: 30}},
		Checked: checked, Source: srcOpenAI},
	{Info: agents.ModelInfo{Provider: OpenAI, Name: "gpt-5.4-mini", ContextWindow: 400_000, MaxOutputTokens: 128_000,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 0.75, CachedInputPerMTok: 0.075, OutputPerMTok: 4.5}},
		Checked: checked, Source: srcOpenAI},
	{Info: agents.ModelInfo{Provider: OpenAI, Name: "gpt-5.4-nano", ContextWindow: 400_000, MaxOutputTokens: 128_000,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 0.2, CachedInputPerMTok: 0.02, OutputPerMTok: 1.25}},
		Checked: checked, Source: srcOpenAI},

	// Anthropic (Messages API). Cache writes are the 5-minute price.
	{Info: agents.ModelInfo{Provider: Anthropic, Name: "claude-opus-5-5", ContextWindow: 1_000_000, MaxOutputTokens: 128_000,
		Capabilities: capsClaud, Pricing: agents.Pricing{InputPerMTok: 4, OutputPerMTok: 20, CachedInputPerMTok: 0.2, CacheWritePerMTok: 5}},
		Aliases: []string{"opus"}, Checked: checked, Source: srcAnthropic, Adaptive: true},
	{Info: agents.ModelInfo{Provider: Anthropic, Name: "claude-sonnet-5-5", ContextWindow: 1_000_000, MaxOutputTokens: 128_000,
		Capabilities: capsClaud, Pricing: agents.Pricing{InputPerMTok: 2, OutputPerMTok: 10, CachedInputPerMTok: 0.2, CacheWritePerMTok: 2.5}},
		Aliases: []string{"sonnet", "claude"}, Checked: checked, Source: srcAnthropic, Adaptive: true},
	{Info: agents.ModelInfo{Provider: Anthropic, Name: "claude-haiku-5-5", ContextWindow: 1_000_000, MaxOutputTokens: 128_000,
		Capabilities: capsClaud, Pricing: agents.Pricing{InputPerMTok: 0.1, OutputPerMTok: 0.5, CacheWritePerMTok: 0.125}},
		Aliases: []string{"haiku"}, Checked: checked, Source: srcAnthropic + " (prompts up to 100k tokens; cache-read price not listed)", Adaptive: true},
	{Info: agents.ModelInfo{Provider: Anthropic, Name: "claude-haiku-4-5", ContextWindow: 200_000, MaxOutputTokens: 64_000,
		Capabilities: capsClaud, Pricing: agents.Pricing{InputPerMTok: 1, OutputPerMTok: 5, CachedInputPerMTok: 0.1, CacheWritePerMTok: 1.25}},
		Aliases: []string{"claude-haiku-4-5-20251001"}, Checked: checked, Source: srcAnthropic},

	// Google Gemini.
	{Info: agents.ModelInfo{Provider: Gemini, Name: "gemini-3.8-flash", ContextWindow: 1_048_576, MaxOutputTokens: 65_536,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 0.75, OutputPerMTok: 3.75}},
		Checked: checked, Source: srcGemini + " (introductory price through 2026-12-31, then 1.50/7.50)"},
	{Info: agents.ModelInfo{Provider: Gemini, Name: "gemini-3.5-flash", ContextWindow: 1_048_576, MaxOutputTokens: 65_536,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 1.5, OutputPerMTok: 9}},
		Aliases: []string{"gemini-flash"}, Checked: checked, Source: srcGemini},
	{Info: agents.ModelInfo{Provider: Gemini, Name: "gemini-3.5-flash-lite", ContextWindow: 1_048_576, MaxOutputTokens: 65_536,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 0.3, OutputPerMTok: 2.5}},
		Checked: checked, Source: srcGemini},
	{Info: agents.ModelInfo{Provider: Gemini, Name: "gemini-3.1-pro-preview", ContextWindow: 1_048_576, MaxOutputTokens: 65_536,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 2, OutputPerMTok: 12}},
		Aliases: []string{"gemini-pro"}, Checked: checked, Source: srcGemini + " (prompts up to 200k tokens)"},
	{Info: agents.ModelInfo{Provider: Gemini, Name: "gemini-2.5-pro", ContextWindow: 1_048_576, MaxOutputTokens: 65_536,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 1.25, OutputPerMTok: 10}},
		Checked: checked, Source: srcGemini + " (prompts up to 200k tokens)"},
	{Info: agents.ModelInfo{Provider: Gemini, Name: "gemini-2.5-flash", ContextWindow: 1_048_576, MaxOutputTokens: 65_536,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 0.3, OutputPerMTok: 2.5, CachedInputPerMTok: 0.03}},
		Checked: checked, Source: srcGemini},
	{Info: agents.ModelInfo{Provider: Gemini, Name: "gemini-2.5-flash-lite", ContextWindow: 1_048_576, MaxOutputTokens: 65_536,
		Capabilities: capsAll, Pricing: agents.Pricing{InputPerMTok: 0.1, OutputPerMTok: 0.4}},
		Checked: checked, Source: srcGemini},
}

// Default models per provider, used by Registry.Default and FromEnv when
// no model is named.
var defaultModels = map[string]string{
	OpenAI:    "gpt-5.5",
	Anthropic: "claude-sonnet-5-5",
	Gemini:    "gemini-3.5-flash",
	Ollama:    "llama3.2",
}

// Catalog returns a copy of the curated model table.
func Catalog() []Spec {
	out := make([]Spec, len(catalog))
	for i, s := range catalog {
		s.Aliases = append([]string(nil), s.Aliases...)
		out[i] = s
	}
	return out
}
