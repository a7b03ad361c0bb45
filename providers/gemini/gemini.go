package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/backoff"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/internal/sse"
)

// Defaults.
const (
	// DefaultBaseURL is the Gemini API; requests go to BaseURL +
	// "/v1beta/models/{model}:streamGenerateContent?alt=sse".
	DefaultBaseURL = "https://generativelanguage.googleapis.com"
	// EnvAPIKey and EnvAPIKeyAlt are read, in that order, when
	// Config.APIKey is empty.
	EnvAPIKey    = "GEMINI_API_KEY"
	EnvAPIKeyAlt = "GOOGLE_API_KEY"
)

// Config configures a Model. Only Model is required; the API key comes
// from APIKey or the GEMINI_API_KEY (else GOOGLE_API_KEY) environment
// variable.
type Config struct {
	// Model is the model id, e.g. "gemini-3.5-flash" ("models/" prefix
	// optional).
	Model string
	// APIKey is sent as x-goog-api-key, never in the URL. It is never
	// logged and never appears in errors.
	APIKey string
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// APIVersion is the path version (default "v1beta").
	APIVersion string
	// Info describes the model (context window, prices, ...); Provider and
	// Name are filled in.
	Info agents.ModelInfo
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
	// jitter used when the API sent no retry delay (default 500 ms
	// doubling up to 8 s).
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// MaxRetryDelay caps the retry delay the API may ask for (default
	// 30 s); a longer wait fails at once so a fallback model can take over.
	MaxRetryDelay time.Duration
}

// Model is an agents.Model speaking the Gemini API. Stream uses
// streamGenerateContent with alt=sse; Generate uses generateContent. It is
// safe for concurrent use.
type Model struct {
	info             agents.ModelInfo
	streamURL, whole string
	header           http.Header
	client           *llmhttp.Client
}

// New returns a Model for cfg. It fails when the model id or the API key
// is missing.
func New(cfg Config) (*Model, error) {
	name := strings.TrimPrefix(cfg.Model, "models/")
	if name == "" {
		return nil, errors.New("gemini: Config.Model is required")
	}
	key, err := llmhttp.APIKey(providerName, "Config.APIKey", cfg.APIKey, EnvAPIKey, EnvAPIKeyAlt)
	if err != nil {
		return nil, err
	}
	base := llmhttp.BaseURL(cfg.BaseURL, DefaultBaseURL)
	version := cfg.APIVersion
	if version == "" {
		version = "v1beta"
	}
	prefix := base + "/" + version + "/models/" + url.PathEscape(name)
	h := http.Header{}
	h.Set("x-goog-api-key", key)
	info := cfg.Info
	info.Provider, info.Name = providerName, name
	if info.Capabilities == (agents.Capabilities{}) {
		info.Capabilities = agents.Capabilities{Tools: true, ParallelTools: true, Vision: true, Reasoning: true, JSON: true}
	}
	return &Model{
		info:      info,
		streamURL: prefix + ":streamGenerateContent?alt=sse",
		whole:     prefix + ":generateContent",
		header:    h,
		client: &llmhttp.Client{
			Provider: providerName, HTTP: cfg.HTTPClient, MaxAttempts: cfg.MaxAttempts,
			Backoff: backoff.Policy{Base: cfg.RetryBaseDelay, Max: cfg.RetryMaxDelay}, MaxRetryDelay: cfg.MaxRetryDelay,
			Timeout: cfg.Timeout, IdleTimeout: cfg.IdleTimeout, ParseError: parseError,
		},
	}, nil
}

// Info describes the model.
func (m *Model) Info() agents.ModelInfo { return m.info }

// Stream sends req with streamGenerateContent (alt=sse) and yields the
// response as it arrives. Gemini's stream has no end marker: one that ends
// before a finishReason is an error wrapping llmhttp.ErrIncomplete.
// Failures before the first chunk (HTTP 408/409/429/5xx, a reset
// connection, an error as the first chunk) are retried, honouring the
// RetryInfo delay.
func (m *Model) Stream(ctx context.Context, req *agents.Request) iter.Seq2[agents.Chunk, error] {
	body, err := encodeBody(req)
	if err != nil {
		return llmhttp.Fail[agents.Chunk](err)
	}
	return llmhttp.Stream(ctx, m.client, &llmhttp.Request{URL: m.streamURL, Header: m.header, Body: body}, decodeStream)
}

// Generate sends req with generateContent (no streaming) and returns the
// whole response, decoded by the same rules as Stream.
func (m *Model) Generate(ctx context.Context, req *agents.Request) (*agents.Response, error) {
	body, err := encodeBody(req)
	if err != nil {
		return nil, err
	}
	hreq := &llmhttp.Request{URL: m.whole, Header: m.header, Body: body}
	var acc agents.Accumulator
	for c, err := range llmhttp.Stream(ctx, m.client, hreq, decodeWhole) {
		if err != nil {
			return nil, err
		}
		if err := acc.Add(c); err != nil {
			return nil, err
		}
	}
	return acc.Response()
}

func encodeBody(req *agents.Request) ([]byte, error) {
	w, err := encodeRequest(req)
	if err != nil {
		return nil, err
	}
	b, err := llmhttp.EncodeJSON(w)
	if err != nil {
		return nil, errors.Join(errEncode, err)
	}
	return b, nil
}

// decodeStream reads the SSE body to its end.
func decodeStream(resp *http.Response, yield func(agents.Chunk) bool) error {
	tail := llmhttp.NewTailReader(resp.Body, true)
	r := sse.NewReader(tail)
	var d decoder
	buf := make([]agents.Chunk, 0, 4)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			if stray := tail.Stray(); stray != nil {
				// A JSON body outside data: lines: the server failed in
				// the middle of the stream.
				return strayError(stray)
			}
			buf, err = d.end(buf[:0])
			for _, c := range buf {
				if !yield(c) {
					return nil
				}
			}
			return err
		}
		if err != nil {
			return err
		}
		buf, err = d.decode(ev.Data, buf[:0])
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
	}
}

// strayError reports JSON the server wrote outside data: lines: its error
// object when it is one, else that the stream is not an event stream.
func strayError(stray []byte) error {
	var b wireErrorBody
	if json.Unmarshal(stray, &b) == nil && b.Error != nil {
		return statusError(b.Error)
	}
	return &malformedError{errors.New("the stream carries JSON outside data: lines: " + llmhttp.Redact(string(stray[:min(len(stray), 200)])))}
}

// decodeWhole reads a generateContent answer.
func decodeWhole(resp *http.Response, yield func(agents.Chunk) bool) error {
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var d decoder
	out, err := d.decode(body, nil)
	if err == nil {
		out, err = d.end(out)
	}
	for _, c := range out {
		if !yield(c) {
			return nil
		}
	}
	return err
}

// cutTail reports whether err, from decoding the event just read from r,
// is a malformed last event the server left unterminated: the stream was
// cut in the middle of it.
func cutTail(err error, tail *llmhttp.TailReader, r *sse.Reader) bool {
	var me *malformedError
	return errors.As(err, &me) && llmhttp.CutTail(tail, r)
}
