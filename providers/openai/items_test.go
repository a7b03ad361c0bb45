package openai_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/providers/providertest"
)

func sseOf(events ...string) []byte {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return []byte(b.String())
}

// TestTruncatedToolCall: a response cut by the output token limit (or the
// content filter) in the middle of a tool call keeps that stop reason and
// drops the broken call (complete calls before it stay), in Chat
// Completions (streamed and whole) and the Responses API (streamed and
// whole).
func TestTruncatedToolCall(t *testing.T) {
	t.Parallel()
	const c = `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":`
	tests := []struct {
		name      string
		responses bool
		replay    providertest.Replay
		wantCalls []string
	}{
		{"chat stream, only call cut", false, providertest.Replay{Body: sseOf(
			c+`{"role":"assistant","content":"Saving."},"finish_reason":null}]}`,
			c+`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"make_file","arguments":"{\"lines\": [\"a"}}]},"finish_reason":null}]}`,
			c+`{},"finish_reason":"length"}]}`, `[DONE]`)}, nil},
		{"chat stream, second call cut", false, providertest.Replay{Body: sseOf(
			c+`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}}]},"finish_reason":null}]}`,
			c+`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"b","arguments":"{\"y\":"}}]},"finish_reason":null}]}`,
			c+`{},"finish_reason":"length"}]}`, `[DONE]`)}, []string{"call_1"}},
		{"chat whole", false, providertest.Replay{ContentType: "application/json", Body: []byte(
			`{"choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":null,"tool_calls":[` +
				`{"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"q\":\"x"}}]}}]}`)}, nil},
		{"responses stream", true, providertest.Replay{Body: sseOf(
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"run_sql","arguments":"","status":"in_progress"}}`,
			`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"sql\":\"SEL"}`,
			`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[],"usage":{"input_tokens":5,"output_tokens":9,"total_tokens":14}}}`)}, nil},
		{"chat stream, content filter mid-call", false, providertest.Replay{Body: sseOf(
			c+`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"x\":"}}]},"finish_reason":null}]}`,
			c+`{},"finish_reason":"content_filter"}]}`, `[DONE]`)}, nil},
		{"responses whole", true, providertest.Replay{ContentType: "application/json", Body: []byte(
			`{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[` +
				`{"type":"function_call","id":"fc_0","call_id":"call_0","name":"a","arguments":"{}","status":"completed"},` +
				`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"b","arguments":"{\"x","status":"incomplete"}]}`)}, []string{"call_0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, resp, err := providertest.Collect(t, replay(t, tc.responses, tc.replay))
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, call := range resp.Message.ToolCalls() {
				ids = append(ids, call.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.wantCalls, ",") {
				t.Errorf("calls = %v, want %v", ids, tc.wantCalls)
			}
			want := agents.StopMaxTokens
			if strings.Contains(tc.name, "content filter") {
				want = agents.StopContentFilter
			}
			if resp.Stop != want {
				t.Errorf("stop = %q, want %q", resp.Stop, want)
			}
		})
	}
}

// TestAnnotationsAndBuiltinTools: url_citation annotations (Chat
// Completions deltas and messages, Responses annotation events) become
// citation items, built-in tool items of the Responses API server tool
// items; none is dropped and none becomes a client tool call.
func TestAnnotationsAndBuiltinTools(t *testing.T) {
	t.Parallel()
	const c = `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":`
	chatStream := providertest.Replay{Body: sseOf(
		c+`{"role":"assistant","content":"Rain today."},"finish_reason":null}]}`,
		c+`{"annotations":[{"type":"url_citation","url_citation":{"start_index":0,"end_index":11,"url":"https://weather.example/x","title":"Weather"}}]},"finish_reason":null}]}`,
		c+`{},"finish_reason":"stop"}]}`, `[DONE]`)}
	chatWhole := providertest.Replay{ContentType: "application/json", Body: []byte(
		`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Rain today.","annotations":[` +
			`{"type":"url_citation","url_citation":{"start_index":0,"end_index":11,"url":"https://weather.example/x","title":"Weather"}}]}}]}`)}
	respStream := providertest.Replay{Body: sseOf(
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"web_search_call","id":"ws_1","status":"in_progress"}}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"rain"}}}`,
		`{"type":"response.output_text.delta","output_index":1,"item_id":"msg_1","delta":"Rain today."}`,
		`{"type":"response.output_text.annotation.added","output_index":1,"item_id":"msg_1","annotation":{"type":"url_citation","start_index":0,"end_index":11,"url":"https://weather.example/x","title":"Weather"}}`,
		`{"type":"response.completed","response":{"status":"completed","output":[]}}`)}
	for _, tc := range []struct {
		name      string
		responses bool
		replay    providertest.Replay
		server    bool
	}{{"chat stream", false, chatStream, false}, {"chat whole", false, chatWhole, false}, {"responses stream", true, respStream, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, resp, err := providertest.Collect(t, replay(t, tc.responses, tc.replay))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Text() != "Rain today." || len(resp.Message.ToolCalls()) != 0 {
				t.Errorf("message = %+v", resp.Message)
			}
			var cit *agents.ProviderItem
			for i := range resp.Items {
				if resp.Items[i].Kind == agents.ItemCitation {
					cit = &resp.Items[i]
				}
			}
			if cit == nil || cit.Citation == nil || cit.Citation.URL != "https://weather.example/x" || cit.Citation.Title != "Weather" || cit.Type != "url_citation" {
				t.Errorf("citation = %+v (items %+v)", cit, resp.Items)
			}
			if tc.server {
				if len(resp.Items) != 2 || resp.Items[0].Kind != agents.ItemServerToolCall || resp.Items[0].ID != "ws_1" ||
					string(resp.Items[0].Input) != `{"type":"search","query":"rain"}` {
					t.Errorf("items = %+v, want the web_search_call first", resp.Items)
				}
			}
		})
	}
}

// TestUnterminatedLastEvent: a last event without the closing blank line
// is decoded (a "[DONE]" or a terminal Responses event completes the
// answer); one cut in the middle of its JSON is an incomplete stream.
func TestUnterminatedLastEvent(t *testing.T) {
	t.Parallel()
	const c = `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":`
	head := string(sseOf(c+`{"content":"hi"},"finish_reason":null}]}`, c+`{},"finish_reason":"stop"}]}`))
	for _, end := range []string{"data: [DONE]", "data: [DONE]\n", "data: [DONE]\r\n"} {
		_, resp, err := providertest.Collect(t, replay(t, false, providertest.Replay{Body: []byte(head + end)}))
		if err != nil || resp.Message.Text() != "hi" || resp.Stop != agents.StopEndTurn {
			t.Errorf("chat ending %q: %+v, %v", end, resp, err)
		}
	}
	_, _, err := providertest.Collect(t, replay(t, false, providertest.Replay{Body: []byte(head + `data: {"id":"c","choi`)}))
	if !errors.Is(err, llmhttp.ErrIncomplete) {
		t.Errorf("chat cut inside the last event: err = %v, want ErrIncomplete", err)
	}
	rhead := string(sseOf(`{"type":"response.output_text.delta","output_index":0,"item_id":"m","delta":"hi"}`))
	_, resp, err := providertest.Collect(t, replay(t, true, providertest.Replay{Body: []byte(rhead +
		`event: response.completed` + "\n" + `data: {"type":"response.completed","response":{"status":"completed","output":[]}}`)}))
	if err != nil || resp.Message.Text() != "hi" {
		t.Errorf("responses ending unterminated: %+v, %v", resp, err)
	}
	_, _, err = providertest.Collect(t, replay(t, true, providertest.Replay{Body: []byte(rhead + `data: {"type":"response.compl`)}))
	if !errors.Is(err, llmhttp.ErrIncomplete) {
		t.Errorf("responses cut inside the last event: err = %v, want ErrIncomplete", err)
	}
}
