package anthropic

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/backoff"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/internal/sse"
)

// Defaults.
const (
	// DefaultBaseURL is the Anthropic API.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultVersion is the anthropic-version header sent.
	DefaultVersion = "2023-06-01"
	// EnvAPIKey is the environment variable read when Config.APIKey is
	// empty.
	EnvAPIKey = "ANTHROPIC_API_KEY"
	// DefaultMaxTokens is max_tokens when neither the request nor the
	// model info says more.
	DefaultMaxTokens = 4096
)

// ThinkingMode says how Options.ReasoningBudget is sent.
type ThinkingMode uint8

// Thinking modes.
const (
	// ThinkingBudget sends {"type":"enabled","budget_tokens":N} (models
	// with manual extended thinking).
	ThinkingBudget ThinkingMode = iota
	// ThinkingAdaptive sends {"type":"adaptive"} when a budget is asked
	// for: newer models decide the depth themselves and reject budgets.
	ThinkingAdaptive
)

// Config configures a Model. Only Model is required; the API key comes
// from APIKey or the ANTHROPIC_API_KEY environment variable.
type Config struct {
	// Model is the model id, e.g. "claude-sonnet-5-5".
	Model string
	// APIKey is sent as x-api-key. It is never logged and never appears
	// in errors.
	APIKey string
	// BaseURL defaults to DefaultBaseURL; requests go to BaseURL +
	// "/v1/messages".
	BaseURL string
	// Version is the anthropic-version header (default DefaultVersion).
	Version string
	// Beta lists anthropic-beta features to enable.
	Beta []string
	// Info describes the model (context window, prices, ...); Provider and
	// Name are filled in. Info.MaxOutputTokens is the default max_tokens.
	Info agents.ModelInfo
	// MaxTokens is max_tokens when a request sets none (default
	// Info.MaxOutputTokens, else DefaultMaxTokens).
	MaxTokens int
	// CacheTTL is the cache_control ttl ("5m" or "1h"); empty means the
	// API default (5 minutes).
	CacheTTL string
	// Thinking selects how a reasoning budget is sent.
	Thinking ThinkingMode
	// OmitTemperature drops Options.Temperature, for models that reject
	// sampling parameters.
	OmitTemperature bool
	// HTTPClient is the client used (default http.DefaultClient); leave its
	// Timeout at 0 and use Timeout below.
	HTTPClient *http.Client
	// Timeout bounds one attempt, from sending to the end of the stream
	// (default 10 minutes). IdleTimeout bounds each wait for bytes
	// (default 2 minutes).
	Timeout, IdleTimeout time.Duration
	// MaxAttempts is the number of tries of a request that fails before
	// its first chunk (default 3; 1 disables retries).
	MaxAttempts int
	// RetryBaseDelay and RetryMaxDelay shape the exponential backoff with
	// jitter used when the API sent no retry-after (default 500 ms
	// doubling up to 8 s).
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// MaxRetryDelay caps the retry-after the API may ask for (default
	// 30 s); a longer wait fails at once so a fallback model can take over.
	MaxRetryDelay time.Duration
}

// Model is an agents.Model speaking the Anthropic Messages API with
// streaming. It is safe for concurrent use.
type Model struct {
	info    agents.ModelInfo
	enc     encodeOptions
	url     string
	header  http.Header
	client  *llmhttp.Client
	omitTmp bool
}

// New returns a Model for cfg. It fails when the model id or the API key
// is missing.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: Config.Model is required")
	}
	key, err := llmhttp.APIKey(providerName, "Config.APIKey", cfg.APIKey, EnvAPIKey)
	if err != nil {
		return nil, err
	}
	base := llmhttp.BaseURL(cfg.BaseURL, DefaultBaseURL)
	version := cfg.Version
	if version == "" {
		version = DefaultVersion
	}
	h := http.Header{}
	h.Set("x-api-key", key)
	h.Set("anthropic-version", version)
	h.Set("accept", "text/event-stream")
	if len(cfg.Beta) > 0 {
		h.Set("anthropic-beta", strings.Join(cfg.Beta, ","))
	}
	info := cfg.Info
	info.Provider, info.Name = providerName, cfg.Model
	if info.Capabilities == (agents.Capabilities{}) {
		info.Capabilities = agents.Capabilities{Tools: true, ParallelTools: true, Vision: true, Reasoning: true}
	}
	maxTokens := cfg.MaxTokens
	if maxTokens <= 0 {
		maxTokens = info.MaxOutputTokens
	}
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	return &Model{
		info:   info,
		enc:    encodeOptions{model: cfg.Model, defaultMaxTokens: maxTokens, cacheTTL: cfg.CacheTTL, thinking: cfg.Thinking},
		url:    base + "/v1/messages",
		header: h,
		client: &llmhttp.Client{
			Provider: providerName, HTTP: cfg.HTTPClient, MaxAttempts: cfg.MaxAttempts,
			Backoff: backoff.Policy{Base: cfg.RetryBaseDelay, Max: cfg.RetryMaxDelay}, MaxRetryDelay: cfg.MaxRetryDelay,
			Timeout: cfg.Timeout, IdleTimeout: cfg.IdleTimeout, ParseError: parseError,
		},
		omitTmp: cfg.OmitTemperature,
	}, nil
}

// Info describes the model.
func (m *Model) Info() agents.ModelInfo { return m.info }

// Stream sends req to the Messages API and yields the streamed response.
// Failures before the first chunk (HTTP 408/409/429/5xx/529, a reset
// connection, an overload error as the first event) are retried; later
// ones end the sequence with the error. A stream that ends before
// message_stop is an error wrapping llmhttp.ErrIncomplete, never a
// complete answer.
func (m *Model) Stream(ctx context.Context, req *agents.Request) iter.Seq2[agents.Chunk, error] {
	body, err := m.body(req)
	if err != nil {
		return llmhttp.Fail[agents.Chunk](err)
	}
	return llmhttp.Stream(ctx, m.client, &llmhttp.Request{URL: m.url, Header: m.header, Body: body}, decodeStream)
}

// body encodes the JSON request body of req.
func (m *Model) body(req *agents.Request) ([]byte, error) {
	w, err := encodeRequest(req, m.enc)
	if err != nil {
		return nil, err
	}
	if m.omitTmp {
		w.Temperature = nil
	}
	b, err := llmhttp.EncodeJSON(w)
	if err != nil {
		return nil, errors.Join(errEncode, err)
	}
	return b, nil
}

// decodeStream reads the SSE body until message_stop.
func decodeStream(resp *http.Response, yield func(agents.Chunk) bool) error {
	r := sse.NewReader(resp.Body)
	var d decoder
	buf := make([]agents.Chunk, 0, 4)
	for {
		ev, err := r.Next()
		if err != nil {
			return err // io.EOF here is a stream cut before message_stop
		}
		buf, err = d.decode(ev.Name, ev.Data, buf[:0])
		for _, c := range buf {
			if !yield(c) {
				return nil
			}
		}
		if err != nil || d.done {
			return err
		}
	}
}
