package llmhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/backoff"
)

func fastClient() *Client {
	return &Client{Provider: "test", Backoff: backoff.Policy{Base: time.Millisecond, Max: 2 * time.Millisecond}}
}

// script serves the given statuses in order (then 200 "ok"), counting
// requests.
func script(t *testing.T, n *atomic.Int32, answers ...func(w http.ResponseWriter)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i < len(answers) {
			answers[i](w)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func status(code int, hdr ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, `{"error":"x"}`)
	}
}

func TestDoRetriesTransientStatuses(t *testing.T) {
	t.Parallel()
	for _, code := range []int{408, 409, 429, 500, 502, 503, 504, 529} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := script(t, &n, status(code))
			var retries []RetryInfo
			c := fastClient()
			c.OnRetry = func(ri RetryInfo) { retries = append(retries, ri) }
			resp, err := c.Do(context.Background(), &Request{URL: srv.URL, Body: []byte(`{}`)})
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "ok" || n.Load() != 2 || len(retries) != 1 || retries[0].Attempt != 1 {
				t.Fatalf("body %q after %d requests, retries %+v", b, n.Load(), retries)
			}
		})
	}
}

func TestDoDoesNotRetryPermanent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ans  func(http.ResponseWriter)
	}{
		{"400", status(400)},
		{"401", status(401)},
		{"404", status(404)},
		{"429 x-should-retry false", status(429, "X-Should-Retry", "false")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := script(t, &n, tc.ans)
			_, err := fastClient().Do(context.Background(), &Request{URL: srv.URL})
			var ae *APIError
			if !errors.As(err, &ae) || agents.Retryable(err) || n.Load() != 1 {
				t.Fatalf("err = %v after %d requests, want one permanent APIError", err, n.Load())
			}
		})
	}
	// x-should-retry: true makes an otherwise permanent status retryable.
	var n atomic.Int32
	srv := script(t, &n, status(400, "X-Should-Retry", "true"))
	if _, err := fastClient().Do(context.Background(), &Request{URL: srv.URL}); err != nil || n.Load() != 2 {
		t.Fatalf("x-should-retry true: err %v after %d requests", err, n.Load())
	}
}

func TestDoGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := script(t, &n, status(503), status(503), status(503), status(503))
	c := fastClient()
	c.MaxAttempts = 2
	_, err := c.Do(context.Background(), &Request{URL: srv.URL})
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 503 || !ae.Retryable() || n.Load() != 2 {
		t.Fatalf("err = %v after %d requests", err, n.Load())
	}
}

func TestRetryAfterHonouredAndCapped(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := script(t, &n, status(429, "Retry-After", "0.15"))
	start := time.Now()
	if _, err := fastClient().Do(context.Background(), &Request{URL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("retried after %v, before Retry-After", d)
	}
	var m atomic.Int32
	srv2 := script(t, &m, status(429, "Retry-After", "120"))
	c := fastClient()
	c.MaxRetryDelay = time.Second
	start = time.Now()
	_, err := c.Do(context.Background(), &Request{URL: srv2.URL})
	var ae *APIError
	if !errors.As(err, &ae) || ae.RetryAfter != 120*time.Second || m.Load() != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %d requests in %v: want an immediate failure carrying RetryAfter", err, m.Load(), time.Since(start))
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		hdr  map[string]string
		want time.Duration
	}{
		{map[string]string{}, 0},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": "-3"}, 0},
		{map[string]string{"Retry-After": "30", "Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After": "30", "Retry-After-Ms": "bad"}, 30 * time.Second},
	} {
		h := http.Header{}
		for k, v := range tc.hdr {
			h.Set(k, v)
		}
		if got := ParseRetryAfter(h, now); got != tc.want {
			t.Errorf("%v: got %v, want %v", tc.hdr, got, tc.want)
		}
	}
}

func TestAPIErrorParsedAndRedacted(t *testing.T) {
	t.Parallel()
	const key = "sk-proj-abcdefghijklmnop0123456789"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req_42")
		w.WriteHeader(401)
		io.WriteString(w, "Incorrect API key provided: "+r.Header.Get("Authorization")+" and "+r.Header.Get("X-Goog-Api-Key"))
	}))
	defer srv.Close()
	c := fastClient()
	c.ParseError = func(e *APIError, body []byte) {
		e.Type, e.Code, e.Message = "invalid_request_error", "invalid_api_key", string(body)
	}
	_, err := c.Do(context.Background(), &Request{URL: srv.URL + "?key=" + "querysecret123",
		Header: http.Header{"Authorization": {"Bearer " + key}, "X-Goog-Api-Key": {"AIzaSyA-very-secret-google-key-1234"}}})
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	for _, secret := range []string{key, "AIzaSyA-very-secret-google-key-1234", "abcdefghijklmnop"} {
		if strings.Contains(msg, secret) {
			t.Fatalf("error leaks %q: %s", secret, msg)
		}
	}
	for _, want := range []string{"test: HTTP 401", "invalid_request_error/invalid_api_key", "Incorrect API key provided", "[request id req_42]", Redacted} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"key sk-abc123def456ghi is bad":                  "key [REDACTED] is bad",
		"Authorization: Bearer abc.def-ghi_123456":       "Authorization: [REDACTED]",
		"google AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI": "google [REDACTED]",
		"mysecretvalue in text":                          "[REDACTED] in text",
		"nothing here, sk-1":                             "nothing here, sk-1",
	} {
		if got := Redact(in, "mysecretvalue", "", "ab"); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConnErrorsRetriedThenReported(t *testing.T) {
	t.Parallel()
	// A listener that accepts and closes at once: EOF before any response.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	_, err = fastClient().Do(context.Background(), &Request{URL: "http://" + ln.Addr().String() + "/v1?key=topsecret99"})
	var ce *ConnError
	if !errors.As(err, &ce) || !agents.Retryable(err) {
		t.Fatalf("err = %v (%T), want a retryable ConnError", err, err)
	}
	if strings.Contains(err.Error(), "topsecret99") {
		t.Fatalf("error leaks the URL query: %v", err)
	}
	if got := n.Load(); got != DefaultMaxAttempts {
		t.Fatalf("%d connections, want %d attempts", got, DefaultMaxAttempts)
	}
}

func TestTLSErrorNotRetried(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	defer srv.Close()
	_, err := fastClient().Do(context.Background(), &Request{URL: srv.URL})
	if err == nil || agents.Retryable(err) {
		t.Fatalf("err = %v, want a permanent certificate error", err)
	}
}

func TestContextCancelClosesBody(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := fastClient().Do(ctx, &Request{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err = io.ReadAll(resp.Body)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("read ended with %v after %v, want context.Canceled promptly", err, time.Since(start))
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := fastClient()
	c.IdleTimeout = 100 * time.Millisecond
	resp, err := c.Do(context.Background(), &Request{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	var ce *ConnError
	if !errors.Is(err, ErrStalled) || !errors.As(err, &ce) || !ce.Retryable() {
		t.Fatalf("err = %v, want a retryable ConnError wrapping ErrStalled", err)
	}
	// Headers that never come count as a stall too, and are retried.
	var n atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		<-r.Context().Done()
	}))
	defer slow.Close()
	_, err = c.Do(context.Background(), &Request{URL: slow.URL})
	if !errors.Is(err, ErrStalled) || n.Load() != DefaultMaxAttempts {
		t.Fatalf("err = %v after %d requests", err, n.Load())
	}
}

func TestAttemptTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for {
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	c := fastClient()
	c.Timeout = 150 * time.Millisecond
	resp, err := c.Do(context.Background(), &Request{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	if !errors.Is(err, ErrAttemptTimeout) {
		t.Fatalf("err = %v, want ErrAttemptTimeout despite keep-alives", err)
	}
}

func TestStreamRetriesOnlyBeforeFirstValue(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "abc")
	}))
	defer srv.Close()
	boom := &APIError{Provider: "test", Message: "overloaded", Transient: true}
	c := fastClient()
	// Fails before yielding: retried until attempts run out.
	var got []error
	for _, err := range Stream(context.Background(), c, &Request{URL: srv.URL}, func(resp *http.Response, yield func(int) bool) error {
		n.Add(1)
		return boom
	}) {
		got = append(got, err)
	}
	if n.Load() != DefaultMaxAttempts || len(got) != 1 || got[0] != boom {
		t.Fatalf("%d decodes, errors %v", n.Load(), got)
	}
	// Fails after yielding: not retried, error after the value.
	n.Store(0)
	var vals []int
	var last error
	for v, err := range Stream(context.Background(), c, &Request{URL: srv.URL}, func(resp *http.Response, yield func(int) bool) error {
		n.Add(1)
		yield(7)
		return io.ErrUnexpectedEOF
	}) {
		if err != nil {
			last = err
			continue
		}
		vals = append(vals, v)
	}
	if n.Load() != 1 || len(vals) != 1 || !errors.Is(last, ErrIncomplete) {
		t.Fatalf("%d decodes, values %v, last error %v", n.Load(), vals, last)
	}
}

func TestReadError(t *testing.T) {
	t.Parallel()
	ae := &APIError{Provider: "p"}
	if ReadError("p", ae) != error(ae) || ReadError("p", nil) != nil {
		t.Fatal("typed errors and nil must pass through")
	}
	if err := ReadError("p", context.Canceled); err != context.Canceled {
		t.Fatalf("context error changed: %v", err)
	}
	for _, e := range []error{io.EOF, io.ErrUnexpectedEOF} {
		if err := ReadError("p", e); !errors.Is(err, ErrIncomplete) || !agents.Retryable(err) {
			t.Fatalf("ReadError(%v) = %v", e, err)
		}
	}
}
