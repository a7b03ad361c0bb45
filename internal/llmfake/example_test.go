package llmfake_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/bichat-go/bichat/internal/llmfake"
)

// A fake Chat Completions server streaming one text turn, then a 429.
func Example() {
	// In a test, pass the test's t instead of nil: the server then closes
	// itself and fails the test on unscripted requests.
	srv := llmfake.NewServer(nil,
		llmfake.OpenAIStream(llmfake.Turn{Text: []string{"Hi"}}).Truncated(2),
		llmfake.OpenAIError(429, "requests", "rate_limit_exceeded", "slow down").WithHeader("Retry-After", "1"),
	)
	defer srv.Close()
	for range 2 {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d events=%d retry-after=%q\n", resp.StatusCode, strings.Count(string(body), "data: "), resp.Header.Get("Retry-After"))
	}
	fmt.Println(srv.Count(), srv.Request(0).Path)
	// Output:
	// 200 events=2 retry-after=""
	// 429 events=0 retry-after="1"
	// 2 /v1/chat/completions
}
