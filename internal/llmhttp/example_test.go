package llmhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/bichat-go/bichat/internal/backoff"
	"github.com/bichat-go/bichat/internal/llmhttp"
)

// A provider's client: the first answer is a 429 with Retry-After, the
// second succeeds; the 400 after that is parsed into a typed error.
func Example() {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "0.01")
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
		case 2:
			io.WriteString(w, "hello")
		default:
			w.Header().Set("X-Request-Id", "req_9")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"bad schema","type":"invalid_request_error"}}`)
		}
	}))
	defer srv.Close()

	c := &llmhttp.Client{
		Provider: "example",
		Backoff:  backoff.Policy{Base: time.Millisecond},
		ParseError: func(e *llmhttp.APIError, body []byte) {
			var b struct {
				Error struct{ Message, Type string }
			}
			if json.Unmarshal(body, &b) == nil {
				e.Message, e.Type = b.Error.Message, b.Error.Type
			}
		},
		OnRetry: func(ri llmhttp.RetryInfo) { fmt.Println("retrying after:", ri.Err) },
	}
	resp, err := c.Do(context.Background(), &llmhttp.Request{URL: srv.URL, Body: []byte(`{}`)})
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("body:", string(body))

	_, err = c.Do(context.Background(), &llmhttp.Request{URL: srv.URL, Body: []byte(`{}`)})
	var ae *llmhttp.APIError
	fmt.Println(errors.As(err, &ae), ae.StatusCode, ae.Retryable())
	fmt.Println(err)
	// Output:
	// retrying after: example: HTTP 429 (rate_limit): slow down
	// body: hello
	// true 400 false
	// example: HTTP 400 (invalid_request_error): bad schema [request id req_9]
}
