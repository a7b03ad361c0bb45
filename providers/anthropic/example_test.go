package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/anthropic"
)

// A stand-in for the Messages API answering one streamed message.
func fakeAnthropic() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\n"+
			`data: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":20,"cache_read_input_tokens":100,"output_tokens":1}}}`+"\n\n"+
			"event: content_block_start\n"+
			`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n"+
			"event: content_block_delta\n"+
			`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Revenue grew 5%."}}`+"\n\n"+
			"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":0}`+"\n\n"+
			"event: message_delta\n"+
			`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":6}}`+"\n\n"+
			"event: message_stop\n"+`data: {"type":"message_stop"}`+"\n\n")
	}))
}

func Example() {
	srv := fakeAnthropic()
	defer srv.Close()

	// Without BaseURL this talks to api.anthropic.com; without APIKey it
	// reads ANTHROPIC_API_KEY.
	model, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-5-5", APIKey: "sk-ant-example", BaseURL: srv.URL})
	if err != nil {
		panic(err)
	}
	resp, err := agents.Generate(context.Background(), model, &agents.Request{
		System:   "You are a BI analyst. <long, stable rules>",
		Messages: []agents.Message{agents.UserMessage("How did revenue develop?")},
		// Cache the whole system prompt.
		Cache: agents.CacheHints{SystemPrefix: len("You are a BI analyst. <long, stable rules>")},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Text())
	fmt.Printf("stop=%s prompt=%d cached=%d completion=%d\n", resp.Stop, resp.Usage.PromptTokens,
		resp.Usage.CachedTokens, resp.Usage.CompletionTokens)
	// Output:
	// Revenue grew 5%.
	// stop=end_turn prompt=120 cached=100 completion=6
}
