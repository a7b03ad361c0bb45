package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// decodeStream reads the SSE body until message_stop. A last event the
// server did not close with a blank line is still decoded (see
// llmhttp.TailReader); one cut in the middle is an incomplete stream. A
// JSON body (a proxy that ignored "stream") is read as a whole message.
func decodeStream(resp *http.Response, yield func(agents.Chunk) bool) error {
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		return decodeWhole(resp, yield)
	}
	tail := llmhttp.NewTailReader(resp.Body, false)
	r := sse.NewReader(tail)
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
		if err != nil {
			if cutTail(err, tail, r) {
				return llmhttp.CutTailError(providerName, err)
			}
			return err
		}
		if d.done {
			return nil
		}
	}
}

// maxResponse bounds a non-streamed response body.
const maxResponse = 64 << 20

// decodeWhole reads a whole Messages response (a JSON message object, or
// an error object) and yields it as the stream would have.
func decodeWhole(resp *http.Response, yield func(agents.Chunk) bool) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return err
	}
	out, err := decodeMessage(data)
	for _, c := range out {
		if !yield(c) {
			return nil
		}
	}
	return err
}

// decodeMessage turns a whole message object into chunks, by the rules of
// the stream: each content block is started and stopped in turn.
func decodeMessage(data []byte) ([]agents.Chunk, error) {
	var m wireMessageResponse
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, &malformedError{event: "message", err: err}
	}
	if m.Type == "error" || m.Error != nil {
		return nil, streamError(m.Error)
	}
	if m.Type != "message" {
		return nil, &malformedError{event: "message", err: fmt.Errorf("type %q is not a message", m.Type)}
	}
	var d decoder
	d.started = true
	d.addUsage(m.Usage)
	var out []agents.Chunk
	for i, raw := range m.Content {
		ev, err := json.Marshal(struct {
			Type         string          `json:"type"`
			Index        int             `json:"index"`
			ContentBlock json.RawMessage `json:"content_block"`
		}{"content_block_start", i, raw})
		if err != nil {
			return out, &malformedError{event: "message", err: err}
		}
		if out, err = d.decode("content_block_start", ev, out); err != nil {
			return out, err
		}
		out = d.stopBlock(i, out)
	}
	d.stop = m.StopReason
	if cuts(d.stop) {
		out = d.cutCalls(out)
	}
	d.done = true
	return append(out, agents.Chunk{Type: agents.ChunkUsage, Usage: d.Usage()},
		agents.Chunk{Type: agents.ChunkStop, Stop: mapStop(d.stop)}), nil
}

// cutTail reports whether err, from decoding the event just read from r,
// is a malformed last event the server left unterminated: the stream was
// cut in the middle of it.
func cutTail(err error, tail *llmhttp.TailReader, r *sse.Reader) bool {
	var me *malformedError
	return errors.As(err, &me) && llmhttp.CutTail(tail, r)
}
