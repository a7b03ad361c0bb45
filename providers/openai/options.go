package openai

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/backoff"
	"github.com/bichat-go/bichat/internal/llmhttp"
)

// DefaultBaseURL is OpenAI's API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// Connection says where and how to reach an OpenAI-compatible server. It
// is shared by Options (chat) and EmbedderOptions.
type Connection struct {
	// Provider names the service in errors and ModelInfo (default
	// "openai"; the presets set "azure", "ollama", ...).
	Provider string
	// BaseURL is the API root to which "/chat/completions" and
	// "/embeddings" are appended (default DefaultBaseURL, or
	// OPENAI_BASE_URL when set).
	BaseURL string
	// APIKey authenticates; empty means the environment variable KeyEnv
	// (default OPENAI_API_KEY).
	APIKey string
	// KeyEnv names the environment variable read when APIKey is empty.
	KeyEnv string
	// KeyOptional allows running without a key (local servers); otherwise
	// New fails when no key is found.
	KeyOptional bool
	// KeyHeader is the header carrying the key: empty means
	// "Authorization: Bearer KEY"; any other name (Azure's "api-key") gets
	// the bare key.
	KeyHeader string
	// Organization and Project set the OpenAI-Organization and
	// OpenAI-Project headers when non-empty.
	Organization string
	Project      string
	// Header is added to every request.
	Header http.Header
	// Query is added to every request URL (Azure's api-version).
	Query url.Values

	// HTTPClient sends the requests (default http.DefaultClient).
	HTTPClient *http.Client
	// MaxAttempts is the number of tries of one request, the first
	// included (default 3; 1 disables retries).
	MaxAttempts int
	// RetryBaseDelay and RetryMaxDelay shape the exponential backoff with
	// jitter between tries (default 500 ms doubling up to 8 s).
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// MaxRetryDelay caps a Retry-After the server asks for (default 30 s);
	// a longer one fails at once with a retryable error.
	MaxRetryDelay time.Duration
	// Timeout bounds one attempt including the whole stream (default 10
	// min, 30 min for reasoning models); IdleTimeout bounds the wait for
	// headers and between reads of the stream (default 5 min, 15 min for
	// reasoning models, which may think silently for minutes). Negative
	// disables either.
	Timeout     time.Duration
	IdleTimeout time.Duration
	// OnRetry, when set, is called before each retry with the failed
	// attempt's number (1 for the first), the wait and the error (key
	// redacted), e.g. to log or count retries.
	OnRetry func(attempt int, delay time.Duration, err error)
}

// resolved is a Connection after defaults and the environment.
type resolved struct {
	provider string
	base     string
	header   http.Header
	query    url.Values
	client   *llmhttp.Client
}

func (c Connection) resolve() (*resolved, error) {
	provider := cmp.Or(c.Provider, "openai")
	base := c.BaseURL
	if base == "" {
		base = cmp.Or(os.Getenv("OPENAI_BASE_URL"), DefaultBaseURL)
	}
	base = strings.TrimRight(base, "/")
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: invalid base URL %q: want http(s)://host/path", provider, llmhttp.Redact(base))
	}
	key := c.APIKey
	env := cmp.Or(c.KeyEnv, "OPENAI_API_KEY")
	if key == "" {
		key = os.Getenv(env)
	}
	if key == "" && !c.KeyOptional {
		return nil, fmt.Errorf("%s: no API key: set Options.APIKey or the %s environment variable", provider, env)
	}
	h := c.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if key != "" {
		if c.KeyHeader == "" || strings.EqualFold(c.KeyHeader, "Authorization") {
			h.Set("Authorization", "Bearer "+key)
		} else {
			h.Set(c.KeyHeader, key)
		}
	}
	if c.Organization != "" {
		h.Set("OpenAI-Organization", c.Organization)
	}
	if c.Project != "" {
		h.Set("OpenAI-Project", c.Project)
	}
	r := &resolved{provider: provider, base: base, header: h, query: c.Query}
	r.client = &llmhttp.Client{
		Provider:      provider,
		HTTP:          c.HTTPClient,
		MaxAttempts:   c.MaxAttempts,
		Backoff:       backoff.Policy{Base: c.RetryBaseDelay, Max: c.RetryMaxDelay},
		MaxRetryDelay: c.MaxRetryDelay,
		Timeout:       c.Timeout,
		IdleTimeout:   c.IdleTimeout,
		ParseError:    parseError,
	}
	if c.OnRetry != nil {
		r.client.OnRetry = func(ri llmhttp.RetryInfo) { c.OnRetry(ri.Attempt, ri.Delay, ri.Err) }
	}
	return r, nil
}

// url returns base+path with the connection's query.
func (r *resolved) url(path string) string {
	u := r.base + path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	return u
}

// Options configure a chat Model.
type Options struct {
	Connection
	// Model is the model (or Azure deployment) name; required.
	Model string
	// Info describes the model; its zero fields are filled with what the
	// package knows (provider, name, capabilities). The registry passes
	// context windows and prices here.
	Info agents.ModelInfo
	// Reasoning forces reasoning-model request rules on (true) or off
	// (false): max_completion_tokens, the developer role, no temperature.
	// nil guesses from the model name (o1, o3, o4, gpt-5 families).
	Reasoning *bool
	// ReasoningEffort is sent as reasoning_effort to reasoning models
	// ("minimal", "low", "medium", "high"); empty derives it from
	// agents.Options.ReasoningBudget when that is set.
	ReasoningEffort string
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens
	// for non-reasoning models (servers that ignore the newer field, such
	// as Ollama).
	LegacyMaxTokens bool
	// Temperature is sent when a request sets none (Ollama otherwise uses
	// 1.0 rather than the model's default). nil sends nothing.
	Temperature *float64
	// NonStrictTools sends tool schemas as they are, without strict mode.
	NonStrictTools bool
	// NoParallelToolCallsField omits parallel_tool_calls (servers that
	// reject it).
	NoParallelToolCallsField bool
	// SendReasoning sends reasoning text back as reasoning_content on the
	// assistant messages after the last user message, i.e. within the
	// current tool-calling turn (DeepSeek's thinking mode with tool calls
	// wants it there and rejects it elsewhere); off by default because
	// most servers reject or ignore it.
	SendReasoning bool
	// NoStream makes a single non-streamed request per Stream call and
	// yields the complete answer as chunks.
	NoStream bool
	// ResponsesAPI talks to POST /responses instead of
	// /chat/completions, with store:false (the conversation is resent
	// each turn) and reasoning items round-tripped: Reasoning.Text is the
	// summary, Signature the item id and Opaque its encrypted_content.
	ResponsesAPI bool
	// NoStreamUsage omits stream_options.include_usage (servers that
	// reject it); usage is then whatever the server volunteers.
	NoStreamUsage bool
}

// Presets of OpenAI-compatible services. Each returns Options to adjust
// and pass to New; use their Connection for NewEmbedder.

// OpenAI returns Options for api.openai.com with the key from
// OPENAI_API_KEY.
func OpenAI(model string) Options {
	return Options{Model: model}
}

// localIdleTimeout is the stall limit of local-server presets: loading a
// model into memory can delay the first byte by minutes.
const localIdleTimeout = 10 * time.Minute

// Ollama returns Options for a local Ollama server: base URL from
// OLLAMA_HOST (default http://localhost:11434) plus "/v1", no key,
// max_tokens, non-strict tools, and a default temperature of 0.8 since
// Ollama's compatibility layer turns a missing one into 1.0.
func Ollama(model string) Options {
	host := cmp.Or(os.Getenv("OLLAMA_HOST"), "http://localhost:11434")
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	t := 0.8
	return Options{
		Connection: Connection{Provider: "ollama", BaseURL: strings.TrimRight(host, "/") + "/v1",
			KeyEnv: "OLLAMA_API_KEY", KeyOptional: true, IdleTimeout: localIdleTimeout},
		Model: model, LegacyMaxTokens: true, NonStrictTools: true, Temperature: &t,
	}
}

// VLLM returns Options for a vLLM server at baseURL (e.g.
// "http://gpu:8000/v1"); the key, if the server wants one, comes from
// VLLM_API_KEY.
func VLLM(baseURL, model string) Options {
	return Options{
		Connection: Connection{Provider: "vllm", BaseURL: baseURL, KeyEnv: "VLLM_API_KEY", KeyOptional: true, IdleTimeout: localIdleTimeout},
		Model:      model, LegacyMaxTokens: true, NonStrictTools: true,
	}
}

// LMStudio returns Options for LM Studio's local server
// (http://localhost:1234/v1), no key.
func LMStudio(model string) Options {
	return Options{
		Connection: Connection{Provider: "lmstudio", BaseURL: "http://localhost:1234/v1", KeyEnv: "LMSTUDIO_API_KEY", KeyOptional: true, IdleTimeout: localIdleTimeout},
		Model:      model, LegacyMaxTokens: true, NonStrictTools: true,
	}
}

// DeepSeek returns Options for api.deepseek.com with the key from
// DEEPSEEK_API_KEY ("deepseek-chat", "deepseek-reasoner"). Its
// reasoning_content is yielded as reasoning.
func DeepSeek(model string) Options {
	return Options{
		Connection: Connection{Provider: "deepseek", BaseURL: "https://api.deepseek.com/v1", KeyEnv: "DEEPSEEK_API_KEY"},
		Model:      model, LegacyMaxTokens: true, NonStrictTools: true, Reasoning: new(false),
	}
}

// DefaultAzureAPIVersion is the api-version Azure presets send when none
// is given.
const DefaultAzureAPIVersion = "2024-10-21"

// Azure returns Options for an Azure OpenAI deployment: endpoint is the
// resource URL ("https://NAME.openai.azure.com"), deployment the
// deployment name (sent as the model too), apiVersion the api-version
// query value (default DefaultAzureAPIVersion). The key goes in the
// api-key header and comes from AZURE_OPENAI_API_KEY when not set.
func Azure(endpoint, deployment, apiVersion string) Options {
	return Options{
		Connection: Connection{
			Provider: "azure",
			BaseURL:  strings.TrimRight(endpoint, "/") + "/openai/deployments/" + url.PathEscape(deployment),
			KeyEnv:   "AZURE_OPENAI_API_KEY", KeyHeader: "api-key",
			Query: url.Values{"api-version": {cmp.Or(apiVersion, DefaultAzureAPIVersion)}},
		},
		Model: deployment,
	}
}

// isReasoningModel guesses from the name whether a model follows the
// reasoning-model request rules.
func isReasoningModel(name string) bool {
	n := strings.ToLower(name)
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(n, p) && !strings.Contains(n, "chat") {
			return true
		}
	}
	return false
}
