package anthropic

import (
	"errors"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/internal/llmtest"
)

// decodeEvents runs event data through a decoder and an accumulator.
func decodeEvents(t *testing.T, events ...string) (*agents.Response, []agents.Chunk, error) {
	t.Helper()
	var d decoder
	var chunks []agents.Chunk
	for _, e := range events {
		var err error
		chunks, err = d.decode("", []byte(e), chunks)
		if err != nil {
			return nil, chunks, err
		}
	}
	var acc agents.Accumulator
	for _, c := range chunks {
		if err := acc.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := acc.Response()
	return resp, chunks, err
}

func TestDecodeTextThinkingAndTools(t *testing.T) {
	t.Parallel()
	resp, _, err := decodeEvents(t,
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":null,"usage":{"input_tokens":50,"output_tokens":1,"cache_creation_input_tokens":3000,"cache_read_input_tokens":200}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Need monthly "}}`,
		`{"type":"ping"}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"sums"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"xyz"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"ENC=="}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Let me "}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{}}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"query."}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_1","name":"run_sql","input":{}}}`,
		`{"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"toolu_2","name":"noargs","input":{}}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":""}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"sql\": \"SELECT"}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":" 1\"}"}}`,
		`{"type":"content_block_stop","index":4}`,
		`{"type":"content_block_stop","index":3}`,
		`{"type":"some_future_event","foo":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}`,
		`{"type":"message_delta","delta":{},"usage":{"output_tokens":89}}`,
		`{"type":"message_stop"}`,
	)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Message.Parts
	if len(p) != 5 {
		t.Fatalf("parts = %d: %+v", len(p), p)
	}
	if r := p[0].Reasoning; r == nil || r.Text != "Need monthly sums" || r.Signature != "EqQBxyz" || r.Provider != "anthropic" {
		t.Errorf("thinking = %+v", r)
	}
	if r := p[1].Reasoning; r == nil || string(r.Opaque) != "ENC==" || r.Provider != "anthropic/raw" || r.Text != "" {
		t.Errorf("redacted = %+v", r)
	}
	if p[2].Text != "Let me query." {
		t.Errorf("text = %q", p[2].Text)
	}
	if c := p[3].ToolCall; c.ID != "toolu_1" || c.Name != "run_sql" || string(c.Arguments) != `{"sql": "SELECT 1"}` {
		t.Errorf("call 1 = %+v", c)
	}
	if c := p[4].ToolCall; c.ID != "toolu_2" || string(c.Arguments) != `{}` {
		t.Errorf("call 2 = %+v (%s)", c, c.Arguments)
	}
	want := domain.Usage{PromptTokens: 3250, CompletionTokens: 89, CachedTokens: 200, CacheWriteTokens: 3000, TotalTokens: 3339}
	if resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if resp.Stop != agents.StopToolUse {
		t.Errorf("stop = %q", resp.Stop)
	}
}

func TestDecodeRoundTripsThinking(t *testing.T) {
	t.Parallel()
	// What the decoder produces, the encoder sends back unchanged.
	resp, _, err := decodeEvents(t,
		`{"type":"message_start","message":{"usage":{"input_tokens":5}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a\"b"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"S+/="}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"R+/="}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"redacted_thinking","data":"AP9zZWNyZXQ="}}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_9","name":"t","input":{}}}`,
		`{"type":"content_block_stop","index":3}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}`,
		`{"type":"message_stop"}`,
	)
	if err != nil {
		t.Fatal(err)
	}
	w, err := encodeRequest(&agents.Request{Messages: []agents.Message{agents.UserMessage("q"), resp.Message},
		Tools: []agents.ToolSpec{{Name: "t"}}}, encodeOptions{model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	got := llmtest.MustJSON(t, w.Messages[1].Content)
	if r := resp.Message.Parts[2].Reasoning; string(r.Opaque) != "\x00\xffsecret" || r.Provider != "anthropic" {
		t.Errorf("base64 data decoded to %q (%s)", r.Opaque, r.Provider)
	}
	want := `[{"type":"thinking","thinking":"a\"b","signature":"S+/="},{"type":"redacted_thinking","data":"R+/="},` +
		`{"type":"redacted_thinking","data":"AP9zZWNyZXQ="},` +
		`{"type":"tool_use","id":"toolu_9","name":"t","input":{}}]`
	if got != want {
		t.Errorf("assistant turn\n got %s\nwant %s", got, want)
	}
}

func TestDecodeWholeInputInStart(t *testing.T) {
	t.Parallel()
	resp, _, err := decodeEvents(t,
		`{"type":"message_start","message":{"usage":{"input_tokens":5}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}`,
		`{"type":"message_stop"}`,
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Message.Parts[0].ToolCall.Arguments); got != `{"a":1}` {
		t.Errorf("arguments = %s", got)
	}
}

func TestDecodeErrorsAndStops(t *testing.T) {
	t.Parallel()
	_, _, err := decodeEvents(t, `{"type":"message_start","message":{}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	var se *llmhttp.APIError
	if !errors.As(err, &se) || se.Type != "overloaded_error" || se.Message != "Overloaded" || !se.Retryable() || se.StatusCode != 0 {
		t.Errorf("error event: %v", err)
	}
	_, _, err = decodeEvents(t, `{"type":"content_block_start","index":2000000000,"content_block":{"type":"text","text":""}}`)
	if !errors.Is(err, agents.ErrMalformedStream) {
		t.Errorf("huge index: %v", err)
	}
	_, _, err = decodeEvents(t, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"`)
	if !errors.Is(err, agents.ErrMalformedStream) || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("malformed: %v", err)
	}
	for in, want := range map[string]agents.StopReason{
		"end_turn": agents.StopEndTurn, "stop_sequence": agents.StopEndTurn, "max_tokens": agents.StopMaxTokens,
		"refusal": agents.StopRefusal, "pause_turn": agents.StopOther, "model_context_window_exceeded": agents.StopMaxTokens,
	} {
		resp, _, err := decodeEvents(t, `{"type":"message_start","message":{}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"hi"}}`,
			`{"type":"message_delta","delta":{"stop_reason":"`+in+`"}}`, `{"type":"message_stop"}`)
		if err != nil || resp.Stop != want {
			t.Errorf("%s: stop = %v, %v; want %s", in, resp, err, want)
		}
	}
}
