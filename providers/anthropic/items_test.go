package anthropic_test

import (
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/providertest"
)

func events(evs ...string) []byte {
	var b strings.Builder
	for _, e := range evs {
		name := e[len(`{"type":"`):]
		name = name[:strings.IndexByte(name, '"')]
		b.WriteString("event: " + name + "\ndata: " + e + "\n\n")
	}
	return []byte(b.String())
}

const (
	msgStart = `{"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}`
	msgStop  = `{"type":"message_stop"}`
)

// TestCitationsAndUnknownDeltas: citations_delta fragments become citation
// items with URL, title and cited text; a delta type this package does not
// know is carried as an unsupported item, not dropped.
func TestCitationsAndUnknownDeltas(t *testing.T) {
	t.Parallel()
	body := events(msgStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","citations":[]}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Revenue rose."}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","cited_text":"Revenue rose 5%","url":"https://ir.example/q3","title":"Q3 report","encrypted_index":"Eo8B"}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"sparkle_delta","sparkle":1}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}`, msgStop)
	_, resp, err := providertest.Collect(t, replayModel(t, providertest.Replay{Body: body}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "Revenue rose." || len(resp.Items) != 2 {
		t.Fatalf("text %q items %+v", resp.Message.Text(), resp.Items)
	}
	c := resp.Items[0]
	if c.Kind != agents.ItemCitation || c.Citation == nil || c.Citation.URL != "https://ir.example/q3" || c.Citation.Title != "Q3 report" ||
		c.Text != "Revenue rose 5%" || c.Citation.Source != "web" || !strings.Contains(string(c.Raw), "encrypted_index") {
		t.Errorf("citation = %+v", c)
	}
	if u := resp.Items[1]; u.Kind != agents.ItemUnsupported || u.Type != "sparkle_delta" || string(u.Raw) != `{"type":"sparkle_delta","sparkle":1}` {
		t.Errorf("unknown delta = %+v", u)
	}
}

// TestServerToolBlocks: a server_tool_use block (whose input streams as
// input_json_delta like a client call) and its result never become client
// tool calls, also beside a real client call and when the stream ends
// before the block stopped; a whole (non-streamed) message with cited text
// yields the same items.
func TestServerToolBlocks(t *testing.T) {
	t.Parallel()
	body := events(msgStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"code_execution","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"code\": \"print(1)\"}"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"run_sql","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"sql\": \"SELECT 1\"}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"code_execution_result","stdout":"1\n"}}}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}`, msgStop)
	_, resp, err := providertest.Collect(t, replayModel(t, providertest.Replay{Body: body}))
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != 1 || calls[0].ID != "toolu_1" || string(calls[0].Arguments) != `{"sql": "SELECT 1"}` || resp.Stop != agents.StopToolUse {
		t.Errorf("calls %+v stop %q", calls, resp.Stop)
	}
	if len(resp.Items) != 2 || resp.Items[0].Kind != agents.ItemServerToolCall || string(resp.Items[0].Input) != `{"code": "print(1)"}` ||
		resp.Items[1].Kind != agents.ItemServerToolResult || resp.Items[1].ID != "srvtoolu_1" || !strings.Contains(string(resp.Items[1].Raw), `"stdout":"1\n"`) {
		t.Errorf("items = %+v", resp.Items)
	}

	whole := []byte(`{"type":"message","role":"assistant","content":[` +
		`{"type":"server_tool_use","id":"srvtoolu_2","name":"web_search","input":{"query":"q3"}},` +
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_2","content":[]},` +
		`{"type":"text","text":"Up 5%.","citations":[{"type":"web_search_result_location","url":"https://ir.example/q3","title":"Q3","cited_text":"up 5%"}]}],` +
		`"stop_reason":"end_turn","usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":4}}`)
	_, resp, err = providertest.Collect(t, replayModel(t, providertest.Replay{ContentType: "application/json", Body: whole}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "Up 5%." || len(resp.Message.ToolCalls()) != 0 || resp.Stop != agents.StopEndTurn ||
		resp.Usage.PromptTokens != 10 || resp.Usage.CachedTokens != 3 || resp.Usage.CompletionTokens != 4 {
		t.Errorf("whole message: %+v", resp)
	}
	kinds := providertest.ItemKinds(resp)
	if len(kinds) != 3 || kinds[0] != agents.ItemServerToolCall || kinds[1] != agents.ItemServerToolResult || kinds[2] != agents.ItemCitation ||
		string(resp.Items[0].Input) != `{"query":"q3"}` || resp.Items[2].Citation.URL != "https://ir.example/q3" {
		t.Errorf("whole message items = %+v", resp.Items)
	}
}

// TestTruncatedToolCall: when max_tokens cuts the answer inside a tool
// call, the call is dropped (also when the block was closed) and the
// stop reason stays max_tokens; an earlier complete call stays.
func TestTruncatedToolCall(t *testing.T) {
	t.Parallel()
	body := events(msgStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"a","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"x\": 1}"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_2","name":"b","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"lines\": [\"a"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":20}}`, msgStop)
	_, resp, err := providertest.Collect(t, replayModel(t, providertest.Replay{Body: body}))
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != 1 || calls[0].ID != "toolu_1" || resp.Stop != agents.StopMaxTokens {
		t.Errorf("calls %+v stop %q, want toolu_1 only and max_tokens", calls, resp.Stop)
	}

	// A refusal that stops the stream in the middle of a call.
	body = events(msgStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_3","name":"a","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"x\": "}}`,
		`{"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":4}}`, msgStop)
	_, resp, err = providertest.Collect(t, replayModel(t, providertest.Replay{Body: body}))
	if err != nil {
		t.Fatal(err)
	}
	if calls := resp.Message.ToolCalls(); len(calls) != 0 || resp.Stop != agents.StopRefusal {
		t.Errorf("refusal mid-call: calls %+v stop %q, want none and refusal", calls, resp.Stop)
	}
}
