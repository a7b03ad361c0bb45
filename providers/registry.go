package providers

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/anthropic"
	"github.com/bichat-go/bichat/providers/gemini"
	"github.com/bichat-go/bichat/providers/openai"
)

// Config says which providers are reachable and how. A provider is
// available when its key (or, for OpenAI-compatible servers and Ollama,
// its base URL) is set. ConfigFromEnv fills it from the usual environment
// variables.
type Config struct {
	// OpenAIKey and OpenAIBaseURL configure OpenAI or any
	// OpenAI-compatible server (a base URL without a key is a local
	// server).
	OpenAIKey, OpenAIBaseURL string
	// AnthropicKey and AnthropicBaseURL configure Anthropic.
	AnthropicKey, AnthropicBaseURL string
	// GeminiKey and GeminiBaseURL configure Google Gemini.
	GeminiKey, GeminiBaseURL string
	// OllamaHost is the Ollama server, e.g. "http://localhost:11434".
	OllamaHost string
	// Model is the preferred model name for Default (BICHAT_MODEL).
	Model string

	// HTTPClient, Timeout (per attempt), IdleTimeout and MaxAttempts
	// apply to every model built; zero values mean the provider defaults.
	HTTPClient  *http.Client
	Timeout     time.Duration
	IdleTimeout time.Duration
	MaxAttempts int
	// RetryBaseDelay and RetryMaxDelay shape the backoff between retries.
	RetryBaseDelay, RetryMaxDelay time.Duration
}

// Environment variables read by ConfigFromEnv.
const (
	EnvOpenAIKey     = "OPENAI_API_KEY"
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"
	EnvAnthropicKey  = "ANTHROPIC_API_KEY"
	EnvGeminiKey     = "GEMINI_API_KEY"
	EnvGoogleKey     = "GOOGLE_API_KEY"
	EnvOllamaHost    = "OLLAMA_HOST"
	// EnvModel names the model FromEnv uses (a catalog name, an alias or
	// "provider/model").
	EnvModel = "BICHAT_MODEL"
)

// ConfigFromEnv reads OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY,
// GEMINI_API_KEY (else GOOGLE_API_KEY), OLLAMA_HOST and BICHAT_MODEL.
func ConfigFromEnv() Config {
	return Config{
		OpenAIKey:     os.Getenv(EnvOpenAIKey),
		OpenAIBaseURL: os.Getenv(EnvOpenAIBaseURL),
		AnthropicKey:  os.Getenv(EnvAnthropicKey),
		GeminiKey:     cmp.Or(os.Getenv(EnvGeminiKey), os.Getenv(EnvGoogleKey)),
		OllamaHost:    os.Getenv(EnvOllamaHost),
		Model:         os.Getenv(EnvModel),
	}
}

// Registry resolves model names and aliases to agents.Model values. It
// starts with the curated Catalog; hosts add or override entries with
// Register. It is safe for concurrent use.
type Registry struct {
	cfg Config

	mu    sync.RWMutex
	specs map[string]Spec   // by name
	alias map[string]string // lower-case alias or name -> name
}

// ErrUnknownModel is returned (wrapped) for a name the registry does not
// know and that has no "provider/" prefix.
var ErrUnknownModel = errors.New("providers: unknown model")

// ErrUnavailable is returned (wrapped) for a model whose provider is not
// configured (no key or base URL).
var ErrUnavailable = errors.New("providers: provider not configured")

// New returns a Registry with the curated catalog and cfg's providers.
func New(cfg Config) *Registry {
	r := &Registry{cfg: cfg, specs: map[string]Spec{}, alias: map[string]string{}}
	if err := r.Register(Catalog()...); err != nil {
		panic(err) // the curated table is checked by the tests
	}
	return r
}

// Register adds specs or replaces the entries of the same name (host
// overrides: prices, context windows, new models). Each spec needs a
// known provider (openai, anthropic, gemini, ollama) and a name. An alias
// given again moves to the new spec.
func (r *Registry) Register(specs ...Spec) error {
	for _, s := range specs {
		if s.Info.Name == "" {
			return errors.New("providers: Register: a spec without a model name")
		}
		if !knownProvider(s.Info.Provider) {
			return fmt.Errorf("providers: Register %q: unknown provider %q (want openai, anthropic, gemini or ollama)",
				s.Info.Name, s.Info.Provider)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range specs {
		s.Aliases = slices.Clone(s.Aliases)
		if old, ok := r.specs[s.Info.Name]; ok {
			for _, a := range old.Aliases {
				if r.alias[strings.ToLower(a)] == old.Info.Name {
					delete(r.alias, strings.ToLower(a))
				}
			}
		}
		r.specs[s.Info.Name] = s
		r.alias[strings.ToLower(s.Info.Name)] = s.Info.Name
		for _, a := range s.Aliases {
			r.alias[strings.ToLower(a)] = s.Info.Name
		}
	}
	return nil
}

func knownProvider(p string) bool {
	switch p {
	case OpenAI, Anthropic, Gemini, Ollama:
		return true
	}
	return false
}

// Lookup returns the spec for a model name or alias (case-insensitive).
// A "provider/model" name the catalog does not list resolves to a spec
// with only the provider and name set, so any model of a configured
// provider can be used.
func (r *Registry) Lookup(name string) (Spec, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if n, ok := r.alias[strings.ToLower(name)]; ok {
		return r.specs[n], true
	}
	if p, m, ok := strings.Cut(name, "/"); ok && knownProvider(p) && m != "" {
		if s, ok := r.specs[m]; ok && s.Info.Provider == p {
			return s, true
		}
		return Spec{Info: agents.ModelInfo{Provider: p, Name: m}}, true
	}
	return Spec{}, false
}

// Specs returns every registered model, sorted by provider and name.
func (r *Registry) Specs() []Spec {
	r.mu.RLock()
	out := make([]Spec, 0, len(r.specs))
	for _, s := range r.specs {
		s.Aliases = slices.Clone(s.Aliases)
		out = append(out, s)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b Spec) int {
		return cmp.Or(cmp.Compare(a.Info.Provider, b.Info.Provider), cmp.Compare(a.Info.Name, b.Info.Name))
	})
	return out
}

// ProviderAvailable reports whether provider is configured: its key is
// set, or for openai a key or base URL, for ollama a host.
func (r *Registry) ProviderAvailable(provider string) bool {
	c := r.cfg
	switch provider {
	case OpenAI:
		return c.OpenAIKey != "" || c.OpenAIBaseURL != ""
	case Anthropic:
		return c.AnthropicKey != ""
	case Gemini:
		return c.GeminiKey != ""
	case Ollama:
		return c.OllamaHost != ""
	}
	return false
}

// Available reports whether name resolves to a model whose provider is
// configured.
func (r *Registry) Available(name string) bool {
	s, ok := r.Lookup(name)
	return ok && r.ProviderAvailable(s.Info.Provider)
}

// AvailableSpecs returns the registered models whose provider is
// configured, sorted like Specs.
func (r *Registry) AvailableSpecs() []Spec {
	var out []Spec
	for _, s := range r.Specs() {
		if r.ProviderAvailable(s.Info.Provider) {
			out = append(out, s)
		}
	}
	return out
}

// Model returns an agents.Model for a catalog name, an alias or a
// "provider/model" name, configured with the registry's keys, endpoints
// and retry settings and described by the spec's ModelInfo (so cost
// events use its prices). It fails with ErrUnknownModel or ErrUnavailable.
func (r *Registry) Model(name string) (agents.Model, error) {
	s, ok := r.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q: use a catalog name, an alias or \"provider/model\"", ErrUnknownModel, name)
	}
	if !r.ProviderAvailable(s.Info.Provider) {
		return nil, fmt.Errorf("%w: model %q needs %s", ErrUnavailable, name, requirement(s.Info.Provider))
	}
	c := r.cfg
	switch s.Info.Provider {
	case OpenAI, Ollama:
		var o openai.Options
		if s.Info.Provider == Ollama {
			o = openai.Ollama(s.Info.Name)
			host := c.OllamaHost
			if !strings.Contains(host, "://") {
				host = "http://" + host
			}
			o.BaseURL = strings.TrimRight(host, "/") + "/v1"
		} else {
			o = openai.OpenAI(s.Info.Name)
			o.APIKey, o.BaseURL = c.OpenAIKey, c.OpenAIBaseURL
			o.KeyOptional = c.OpenAIKey == "" && c.OpenAIBaseURL != ""
		}
		o.Info = s.Info
		o.HTTPClient, o.Timeout, o.IdleTimeout, o.MaxAttempts = c.HTTPClient, c.Timeout, c.IdleTimeout, c.MaxAttempts
		o.RetryBaseDelay, o.RetryMaxDelay = c.RetryBaseDelay, c.RetryMaxDelay
		return openai.New(o)
	case Anthropic:
		ac := anthropic.Config{Model: s.Info.Name, APIKey: c.AnthropicKey, BaseURL: c.AnthropicBaseURL, Info: s.Info,
			HTTPClient: c.HTTPClient, Timeout: c.Timeout, IdleTimeout: c.IdleTimeout, MaxAttempts: c.MaxAttempts,
			RetryBaseDelay: c.RetryBaseDelay, RetryMaxDelay: c.RetryMaxDelay}
		if s.Adaptive {
			ac.Thinking, ac.OmitTemperature = anthropic.ThinkingAdaptive, true
		}
		return anthropic.New(ac)
	default: // Gemini
		return gemini.New(gemini.Config{Model: s.Info.Name, APIKey: c.GeminiKey, BaseURL: c.GeminiBaseURL, Info: s.Info,
			HTTPClient: c.HTTPClient, Timeout: c.Timeout, IdleTimeout: c.IdleTimeout, MaxAttempts: c.MaxAttempts,
			RetryBaseDelay: c.RetryBaseDelay, RetryMaxDelay: c.RetryMaxDelay})
	}
}

// requirement says what configures provider.
func requirement(provider string) string {
	switch provider {
	case OpenAI:
		return EnvOpenAIKey + " (or " + EnvOpenAIBaseURL + " for a compatible server)"
	case Anthropic:
		return EnvAnthropicKey
	case Gemini:
		return EnvGeminiKey + " or " + EnvGoogleKey
	}
	return EnvOllamaHost
}
