package llmhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/internal/backoff"
)

// Defaults of Client's zero fields.
const (
	DefaultMaxAttempts   = 3
	DefaultMaxRetryDelay = 30 * time.Second
	DefaultTimeout       = 10 * time.Minute
	DefaultIdleTimeout   = 5 * time.Minute
	// maxErrorBody bounds how much of an error response is read.
	maxErrorBody = 1 << 20
)

// Request is one HTTP exchange. Body is sent again on every attempt.
type Request struct {
	// Method defaults to POST.
	Method string
	URL    string
	// Header carries auth and provider headers. Values of Authorization,
	// Api-Key, X-Api-Key and X-Goog-Api-Key are redacted from every error.
	Header http.Header
	// Body is the JSON request; Content-Type defaults to application/json
	// when Body is set.
	Body []byte
}

// RetryInfo describes a retry about to happen, for Client.OnRetry.
type RetryInfo struct {
	// Attempt is the attempt that failed (1 for the first).
	Attempt int
	// Delay is the wait before the next attempt.
	Delay time.Duration
	// Err is the failure (an *APIError or a *ConnError).
	Err error
}

// Client sends provider requests. Configure the fields before first use;
// the zero value (with Provider set) works. A Client is safe for
// concurrent use.
type Client struct {
	// Provider names the provider in errors.
	Provider string
	// HTTP is the client used; nil means http.DefaultClient. Its own
	// Timeout should be 0: streams are long and Timeout/IdleTimeout below
	// bound them instead.
	HTTP *http.Client
	// MaxAttempts is the number of tries of one request, first included
	// (default 3); 1 disables retries.
	MaxAttempts int
	// Backoff spaces retries when the provider gave no Retry-After (default
	// 500 ms doubling to 8 s, with jitter).
	Backoff backoff.Policy
	// MaxRetryDelay caps the wait a provider may ask for (default 30 s): a
	// Retry-After longer than that is not waited for; the error is returned
	// at once so a fallback model can take over.
	MaxRetryDelay time.Duration
	// Timeout bounds one attempt from sending the request to closing the
	// response body (default 10 min); negative disables it.
	Timeout time.Duration
	// IdleTimeout bounds the wait for response headers and then for each
	// read of the response body (default 5 min); a stalled stream fails
	// with a ConnError wrapping ErrStalled. Negative disables it.
	IdleTimeout time.Duration
	// ParseError fills e from an error response body. e comes prefilled
	// with Provider, StatusCode, RequestID, RetryAfter (from headers),
	// Transient (from the status and x-should-retry) and Message (the
	// status text). ParseError sets Type, Code and Message, may set
	// RetryAfter from the body, and clears Transient for failures that must
	// not be retried (an exhausted quota). Messages are redacted after it
	// returns. nil keeps the prefilled values and the body text as Message.
	ParseError func(e *APIError, body []byte)
	// OnRetry, when set, is called before each retry wait.
	OnRetry func(RetryInfo)
}

// RetryableStatus reports whether an HTTP status is worth retrying: 408,
// 409, 429, 500, 502, 503, 504 and 529.
func RetryableStatus(code int) bool {
	switch code {
	case 408, 409, 429, 500, 502, 503, 504, 529:
		return true
	}
	return false
}

// Do sends req, retrying transient failures, and returns the first 2xx
// response. The caller must close its Body; the body is closed by itself
// as soon as ctx ends, and its read errors are *ConnError values (or the
// context's error). A non-2xx answer is returned as an *APIError after the
// retries; a transport failure as a *ConnError; a cancelled ctx as
// ctx.Err().
func (c *Client) Do(ctx context.Context, req *Request) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := c.attempt(ctx, req)
		if err == nil {
			return resp, nil
		}
		if !c.retry(ctx, attempt, err) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
	}
}

// Stream sends req and decodes the response with decode, yielding what it
// yields. When the exchange fails retryably before decode yielded its first
// value (an HTTP error, a reset connection, an overload error as the first
// event), the whole request is retried; after the first value, an error
// is yielded as it is and the sequence ends. decode must return when yield
// returns false; the body is closed when it returns. A decode error goes
// through ReadError, so EOF before the end marker is an error wrapping
// ErrIncomplete. When ctx ends, the sequence ends with ctx.Err().
func Stream[T any](ctx context.Context, c *Client, req *Request, decode func(resp *http.Response, yield func(T) bool) error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		for attempt := 1; ; attempt++ {
			resp, err := c.attempt(ctx, req)
			yielded, stopped := false, false
			if err == nil {
				err = decode(resp, func(v T) bool {
					yielded = true
					if !yield(v, nil) {
						stopped = true
						return false
					}
					return true
				})
				resp.Body.Close()
				if stopped {
					return
				}
				if err == nil {
					return
				}
				err = ReadError(c.Provider, err)
			}
			if ctx.Err() != nil {
				yield(zero, ctx.Err())
				return
			}
			if yielded || !c.retry(ctx, attempt, err) {
				if ctx.Err() != nil {
					err = ctx.Err()
				}
				yield(zero, err)
				return
			}
		}
	}
}

// retry decides whether attempt's failure is retried and waits the delay;
// false means give up (also when ctx ended while waiting).
func (c *Client) retry(ctx context.Context, attempt int, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	maxAttempts := c.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	if attempt >= maxAttempts {
		return false
	}
	var r interface{ Retryable() bool }
	if !errors.As(err, &r) || !r.Retryable() {
		return false
	}
	delay := c.Backoff.Delay(attempt)
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		limit := c.MaxRetryDelay
		if limit <= 0 {
			limit = DefaultMaxRetryDelay
		}
		if ae.RetryAfter > limit {
			return false
		}
		delay = ae.RetryAfter
	}
	if c.OnRetry != nil {
		c.OnRetry(RetryInfo{Attempt: attempt, Delay: delay, Err: err})
	}
	return backoff.Sleep(ctx, delay) == nil
}

func (c *Client) durations() (timeout, idle time.Duration) {
	timeout, idle = c.Timeout, c.IdleTimeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	return timeout, idle
}

// attempt makes one try. On success the response body is wrapped.
func (c *Client) attempt(ctx context.Context, req *Request) (*http.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	timeout, idle := c.durations()
	actx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{cancel: cancel, idle: idle}
	if timeout > 0 {
		w.total = time.AfterFunc(timeout, func() { cancel(ErrAttemptTimeout) })
	}
	if idle > 0 {
		w.idleT = time.AfterFunc(idle, func() { cancel(ErrStalled) })
	}
	method := req.Method
	if method == "" {
		method = http.MethodPost
	}
	var reqBody io.Reader
	if req.Body != nil {
		reqBody = bytes.NewReader(req.Body)
	}
	hreq, err := http.NewRequestWithContext(actx, method, req.URL, reqBody)
	if err != nil {
		w.stop()
		return nil, newConnError(c.Provider, "build request", err)
	}
	hreq.Header = req.Header.Clone()
	if hreq.Header == nil {
		hreq.Header = http.Header{}
	}
	if req.Body != nil && hreq.Header.Get("Content-Type") == "" {
		hreq.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		w.stop()
		if cause := context.Cause(actx); ctx.Err() == nil && cause != nil && cause != context.Canceled {
			err = cause
		}
		return nil, newConnError(c.Provider, "send request", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		w.stop()
		if rerr != nil && len(data) == 0 && ctx.Err() == nil && !RetryableStatus(resp.StatusCode) {
			return nil, newConnError(c.Provider, "read error response", rerr)
		}
		return nil, c.apiError(resp, data, secretsOf(req))
	}
	w.touch()
	rc := resp.Body
	b := &body{rc: rc, parent: ctx, actx: actx, w: w, provider: c.Provider}
	b.stopAfter = context.AfterFunc(ctx, func() { rc.Close() })
	resp.Body = b
	return resp, nil
}

// watchdog cancels an attempt on its total timeout or when reads stall.
type watchdog struct {
	cancel context.CancelCauseFunc
	total  *time.Timer
	idleT  *time.Timer
	idle   time.Duration
}

func (w *watchdog) touch() {
	if w.idleT != nil {
		w.idleT.Reset(w.idle)
	}
}

func (w *watchdog) stop() {
	if w.total != nil {
		w.total.Stop()
	}
	if w.idleT != nil {
		w.idleT.Stop()
	}
	w.cancel(nil)
}

// body wraps a 2xx response body: it resets the stall timer on reads, maps
// read errors to ConnError or the caller's context error, and releases the
// attempt on Close.
type body struct {
	rc        io.ReadCloser
	parent    context.Context
	actx      context.Context
	w         *watchdog
	provider  string
	stopAfter func() bool
	once      sync.Once
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.w.touch()
	}
	if err != nil && err != io.EOF {
		if perr := b.parent.Err(); perr != nil {
			return n, perr
		}
		if cause := context.Cause(b.actx); cause != nil && cause != context.Canceled {
			err = cause
		}
		return n, newConnError(b.provider, "read response", err)
	}
	return n, err
}

func (b *body) Close() error {
	var err error
	b.once.Do(func() {
		b.stopAfter()
		err = b.rc.Close()
		b.w.stop()
	})
	return err
}

// apiError builds the typed error of a non-2xx response.
func (c *Client) apiError(resp *http.Response, data []byte, secrets []string) *APIError {
	e := &APIError{
		Provider:   c.Provider,
		StatusCode: resp.StatusCode,
		RequestID:  requestID(resp.Header),
		RetryAfter: ParseRetryAfter(resp.Header, time.Now()),
		Transient:  RetryableStatus(resp.StatusCode),
		Message:    http.StatusText(resp.StatusCode),
	}
	switch strings.ToLower(resp.Header.Get("X-Should-Retry")) {
	case "true":
		e.Transient = true
	case "false":
		e.Transient = false
	}
	if c.ParseError != nil {
		c.ParseError(e, data)
	} else if s := strings.TrimSpace(string(data)); s != "" {
		e.Message = s
	}
	if len(e.Message) > 2000 {
		e.Message = e.Message[:2000] + "…"
	}
	e.Message = Redact(e.Message, secrets...)
	return e
}

func requestID(h http.Header) string {
	for _, k := range []string{"X-Request-Id", "Request-Id", "Apim-Request-Id", "X-Goog-Request-Id"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// secretsOf lists the credentials a request carries.
func secretsOf(req *Request) []string {
	var out []string
	for _, k := range []string{"Authorization", "Api-Key", "X-Api-Key", "X-Goog-Api-Key"} {
		for _, v := range req.Header.Values(k) {
			out = append(out, v)
			if f := strings.Fields(v); len(f) == 2 {
				out = append(out, f[1])
			}
		}
	}
	if u, err := url.Parse(req.URL); err == nil {
		for _, k := range []string{"key", "api-key", "api_key"} {
			if v := u.Query().Get(k); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// ParseRetryAfter reads the wait a response asks for: retry-after-ms
// (milliseconds) wins over Retry-After, which is seconds (possibly
// fractional) or an HTTP date relative to now. It returns 0 when neither
// is present or valid.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
