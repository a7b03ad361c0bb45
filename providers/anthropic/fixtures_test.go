package anthropic_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/providers/anthropic"
	"github.com/bichat-go/bichat/providers/providertest"
)

// expectedStream is what a Messages stream holds, computed from the
// fixture with a separate, minimal reading (providertest.SplitSSE and
// generic JSON), not with the package's decoder.
type expectedStream struct {
	text, reasoning, signature string
	calls                      []expectedCall
	items                      []agents.ItemKind
	stop                       agents.StopReason
	input, output, cacheRead   int
}

type expectedCall struct{ id, name, args string }

func readExpected(t *testing.T, body []byte) expectedStream {
	t.Helper()
	_, data := providertest.SplitSSE(body)
	var ex expectedStream
	type block struct {
		typ, id, name string
		args          strings.Builder
		stopped       bool
	}
	var blocks []*block
	stopReason := ""
	for _, d := range data {
		var ev map[string]any
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("fixture event %q: %v", d, err)
		}
		idx, _ := ev["index"].(float64)
		switch ev["type"] {
		case "message_start":
			u := ev["message"].(map[string]any)["usage"].(map[string]any)
			ex.input = num(u, "input_tokens") + num(u, "cache_creation_input_tokens") + num(u, "cache_read_input_tokens")
			ex.cacheRead = num(u, "cache_read_input_tokens")
			ex.output = num(u, "output_tokens")
		case "content_block_start":
			cb := ev["content_block"].(map[string]any)
			b := &block{typ: cb["type"].(string)}
			b.id, _ = cb["id"].(string)
			b.name, _ = cb["name"].(string)
			for len(blocks) <= int(idx) {
				blocks = append(blocks, nil)
			}
			blocks[int(idx)] = b
			switch b.typ {
			case "text":
				ex.text += cb["text"].(string)
			case "thinking", "redacted_thinking", "tool_use":
			case "server_tool_use", "mcp_tool_use":
				ex.items = append(ex.items, agents.ItemServerToolCall)
			default:
				if strings.HasSuffix(b.typ, "_tool_result") {
					ex.items = append(ex.items, agents.ItemServerToolResult)
				} else {
					ex.items = append(ex.items, agents.ItemUnsupported)
				}
			}
		case "content_block_delta":
			dl := ev["delta"].(map[string]any)
			b := blocks[int(idx)]
			switch dl["type"] {
			case "text_delta":
				ex.text += dl["text"].(string)
			case "thinking_delta":
				ex.reasoning += dl["thinking"].(string)
			case "signature_delta":
				ex.signature += dl["signature"].(string)
			case "input_json_delta":
				b.args.WriteString(dl["partial_json"].(string))
			case "citations_delta":
				ex.items = append(ex.items, agents.ItemCitation)
			}
		case "content_block_stop":
			blocks[int(idx)].stopped = true
		case "message_delta":
			if r, ok := ev["delta"].(map[string]any)["stop_reason"].(string); ok {
				stopReason = r
			}
			if sd, ok := ev["delta"].(map[string]any)["stop_details"].(map[string]any); ok && sd != nil {
				ex.items = append(ex.items, agents.ItemNotice)
			}
			if u, ok := ev["usage"].(map[string]any); ok {
				if v := num(u, "input_tokens") + num(u, "cache_creation_input_tokens") + num(u, "cache_read_input_tokens"); v != 0 {
					ex.input = v
				}
				if _, ok := u["output_tokens"]; ok {
					ex.output = num(u, "output_tokens")
				}
			}
		}
	}
	for i, b := range blocks {
		// A call the token limit cut (no stop, or the last block of a
		// max_tokens answer) is not a call.
		interrupted := stopReason == "max_tokens" || stopReason == "model_context_window_exceeded" || stopReason == "refusal"
		if b == nil || b.typ != "tool_use" || interrupted && (!b.stopped || i == len(blocks)-1) {
			continue
		}
		args := strings.TrimSpace(b.args.String())
		if args == "" {
			args = "{}"
		}
		ex.calls = append(ex.calls, expectedCall{b.id, b.name, args})
	}
	ex.stop = map[string]agents.StopReason{"end_turn": agents.StopEndTurn, "tool_use": agents.StopToolUse,
		"max_tokens": agents.StopMaxTokens, "refusal": agents.StopRefusal}[stopReason]
	return ex
}

func num(m map[string]any, k string) int {
	v, _ := m[k].(float64)
	return int(v)
}

func replayModel(t *testing.T, r providertest.Replay) agents.Model {
	t.Helper()
	m, err := anthropic.New(anthropic.Config{Model: "claude-replay", APIKey: "test-key", MaxAttempts: 1,
		BaseURL: providertest.ServeFixture(t, r)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkResponse compares what the adapter assembled with ex.
func checkResponse(t *testing.T, resp *agents.Response, ex expectedStream) {
	t.Helper()
	if got := resp.Message.Text(); got != ex.text {
		t.Errorf("text = %q, want %q", got, ex.text)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != len(ex.calls) {
		t.Fatalf("tool calls = %+v, want %+v", calls, ex.calls)
	}
	for i, c := range calls {
		w := ex.calls[i]
		if c.ID != w.id || c.Name != w.name || !providertest.SameJSON(string(c.Arguments), w.args) {
			t.Errorf("call %d = %s %s %s, want %s %s %s", i, c.ID, c.Name, c.Arguments, w.id, w.name, w.args)
		}
	}
	var reasoning, sig string
	for _, p := range resp.Message.Parts {
		if p.Reasoning != nil {
			reasoning += p.Reasoning.Text
			sig += p.Reasoning.Signature
		}
	}
	if reasoning != ex.reasoning || sig != ex.signature {
		t.Errorf("reasoning = %q / %q, want %q / %q", reasoning, sig, ex.reasoning, ex.signature)
	}
	if got := providertest.ItemKinds(resp); strings.Join(kindStrings(got), ",") != strings.Join(kindStrings(ex.items), ",") {
		t.Errorf("items = %v, want %v", got, ex.items)
	}
	if resp.Stop != ex.stop {
		t.Errorf("stop = %q, want %q", resp.Stop, ex.stop)
	}
	if resp.Usage.PromptTokens != ex.input || resp.Usage.CompletionTokens != ex.output || resp.Usage.CachedTokens != ex.cacheRead {
		t.Errorf("usage = %+v, want prompt %d completion %d cached %d", resp.Usage, ex.input, ex.output, ex.cacheRead)
	}
}

func kindStrings(ks []agents.ItemKind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

// TestVendorFixtures replays every Anthropic stream and message the
// vendor's SDKs record or publish (shared/reference/provider-fixtures)
// through the adapter over HTTP, byte for byte, and checks the assembled
// text, reasoning, tool calls, provider items, usage and stop reason
// against an independent reading of each file, plus the exact values
// listed in TestVendorFixtureValues.
func TestVendorFixtures(t *testing.T) {
	t.Parallel()
	dir := providertest.FixtureDir(t)
	var cov providertest.Coverage
	var files []string
	for _, sub := range []string{"anthropic-python", "anthropic-ts"} {
		files = append(files, providertest.FixtureFiles(t, dir, sub)...)
	}
	for _, f := range files {
		body, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, "ToolRunner.json") {
			replayToolRunner(t, f, body)
			cov.Cover(f)
			continue
		}
		t.Run(f, func(t *testing.T) {
			_, resp, err := providertest.Collect(t, replayModel(t, providertest.Replay{Body: body}))
			if err != nil {
				t.Fatalf("replay failed: %v", err)
			}
			checkResponse(t, resp, readExpected(t, body))
		})
		cov.Cover(f)
	}
	cov.Check(t, files)
}

// replayToolRunner serves each recorded (non-streamed) message of the
// TypeScript SDK's ToolRunner recording as a JSON body, the answer of a
// proxy that ignored "stream", and checks text, calls, usage and stop.
func replayToolRunner(t *testing.T, name string, body []byte) {
	var rec []struct {
		Status   int             `json:"status"`
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(rec) == 0 {
		t.Fatalf("%s: no recorded exchanges", name)
	}
	for i, r := range rec {
		t.Run(name+"/"+string(rune('a'+i)), func(t *testing.T) {
			var msg struct {
				Content []struct {
					Type  string          `json:"type"`
					Text  string          `json:"text"`
					ID    string          `json:"id"`
					Name  string          `json:"name"`
					Input json.RawMessage `json:"input"`
				} `json:"content"`
				StopReason string         `json:"stop_reason"`
				Usage      map[string]any `json:"usage"`
			}
			if err := json.Unmarshal(r.Response, &msg); err != nil {
				t.Fatal(err)
			}
			ex := expectedStream{stop: map[string]agents.StopReason{"end_turn": agents.StopEndTurn,
				"tool_use": agents.StopToolUse}[msg.StopReason]}
			for _, c := range msg.Content {
				switch c.Type {
				case "text":
					ex.text += c.Text
				case "tool_use":
					ex.calls = append(ex.calls, expectedCall{c.ID, c.Name, string(c.Input)})
				default:
					t.Fatalf("unexpected block %q in the recording", c.Type)
				}
			}
			ex.input = num(msg.Usage, "input_tokens") + num(msg.Usage, "cache_creation_input_tokens") + num(msg.Usage, "cache_read_input_tokens")
			ex.cacheRead = num(msg.Usage, "cache_read_input_tokens")
			ex.output = num(msg.Usage, "output_tokens")
			_, resp, err := providertest.Collect(t, replayModel(t, providertest.Replay{Status: r.Status,
				ContentType: "application/json", Body: r.Response}))
			if err != nil {
				t.Fatalf("replay failed: %v", err)
			}
			checkResponse(t, resp, ex)
		})
	}
}

// TestVendorFixtureValues pins exact values of the fixtures that show the
// traps: a server tool (web search) with its result, a call the token limit
// cut, a client tool call, a refusal with a signed thinking block.
func TestVendorFixtureValues(t *testing.T) {
	t.Parallel()
	dir := providertest.FixtureDir(t)
	tests := []struct {
		file  string
		check func(t *testing.T, resp *agents.Response)
	}{
		{"anthropic-python/stream-a-toolrefusal.sse", func(t *testing.T, resp *agents.Response) {
			if n := len(resp.Message.ToolCalls()); n != 0 {
				t.Errorf("server tool use became %d client tool call(s)", n)
			}
			if len(resp.Items) != 3 || resp.Items[2].Kind != agents.ItemNotice || resp.Items[2].Type != "stop_details" {
				t.Fatalf("items = %+v, want the web_search call, its result and the refusal's stop_details", resp.Items)
			}
			call, res := resp.Items[0], resp.Items[1]
			if call.Kind != agents.ItemServerToolCall || call.ID != "srvtoolu_fixture_a_0001" || call.Name != "web_search" ||
				!providertest.SameJSON(string(call.Input), `{"query":"solar eclipse viewing safety news 2026"}`) {
				t.Errorf("server tool call = %+v", call)
			}
			if res.Kind != agents.ItemServerToolResult || res.Type != "web_search_tool_result" || res.ID != "srvtoolu_fixture_a_0001" ||
				!strings.Contains(string(res.Raw), "https://www.example.com/eclipse-viewing-safety") {
				t.Errorf("server tool result = %+v", res)
			}
			if resp.Stop != agents.StopRefusal || !strings.HasPrefix(resp.Message.Text(), "Here's a summary of this year's solar eclipses") {
				t.Errorf("stop %q text %q", resp.Stop, resp.Message.Text())
			}
		}},
		{"anthropic-python/incomplete_partial_json_response.txt", func(t *testing.T, resp *agents.Response) {
			if calls := resp.Message.ToolCalls(); len(calls) != 0 {
				t.Errorf("the call cut by max_tokens was kept: %+v", calls)
			}
			if resp.Stop != agents.StopMaxTokens {
				t.Errorf("stop = %q, want max_tokens", resp.Stop)
			}
			if !strings.HasSuffix(resp.Message.Text(), "Let me do that for you now.") {
				t.Errorf("text = %q", resp.Message.Text())
			}
			if resp.Usage.PromptTokens != 450 || resp.Usage.CompletionTokens != 124 {
				t.Errorf("usage = %+v", resp.Usage)
			}
		}},
		{"anthropic-python/tool_use_response.txt", func(t *testing.T, resp *agents.Response) {
			calls := resp.Message.ToolCalls()
			if len(calls) != 1 || calls[0].ID != "toolu_01NRLabsLyVHZPKxbKvkfSMn" || calls[0].Name != "get_weather" ||
				!providertest.SameJSON(string(calls[0].Arguments), `{"location":"Paris"}`) {
				t.Errorf("calls = %+v", calls)
			}
			if resp.Stop != agents.StopToolUse || resp.Usage.PromptTokens != 377 || resp.Usage.CompletionTokens != 65 {
				t.Errorf("stop %q usage %+v", resp.Stop, resp.Usage)
			}
		}},
		{"anthropic-python/stream-a-refusal.sse", func(t *testing.T, resp *agents.Response) {
			if resp.Stop != agents.StopRefusal || len(resp.Message.Parts) == 0 || resp.Message.Parts[0].Reasoning == nil ||
				resp.Message.Parts[0].Reasoning.Signature != "c3ludGhldGljLXNpZ25hdHVyZS1maXh0dXJlLWEtbm90LWEtcmVhbC1zaWduYXR1cmU=" {
				t.Errorf("resp = %+v", resp)
			}
		}},
		{"anthropic-python/refusal_response.txt", func(t *testing.T, resp *agents.Response) {
			if resp.Stop != agents.StopRefusal || len(resp.Items) != 1 || resp.Items[0].Kind != agents.ItemNotice ||
				resp.Items[0].Text != "This request was refused due to policy." {
				t.Errorf("stop %q items %+v", resp.Stop, resp.Items)
			}
		}},
		{"anthropic-python/compaction_response.txt", func(t *testing.T, resp *agents.Response) {
			if len(resp.Items) != 1 || resp.Items[0].Type != "compaction" ||
				!strings.Contains(string(resp.Items[0].Raw), "Earlier conversation summarized.") {
				t.Errorf("items = %+v", resp.Items)
			}
			if resp.Message.Text() != "Hello there!" {
				t.Errorf("text = %q", resp.Message.Text())
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			_, resp, err := providertest.Collect(t, replayModel(t, providertest.Replay{Body: body}))
			if err != nil {
				t.Fatalf("replay failed: %v", err)
			}
			tc.check(t, resp)
		})
	}
}

// TestUnterminatedLastEvent: a stream whose message_stop is not followed
// by a blank line (as several vendor recordings end) is complete; one cut
// inside its last event is an incomplete stream, never an answer.
func TestUnterminatedLastEvent(t *testing.T) {
	t.Parallel()
	const head = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"
	for _, end := range []string{"event: message_stop\ndata: {\"type\":\"message_stop\"}", "event: message_stop\ndata: {\"type\":\"message_stop\"}\n",
		"event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n"} {
		_, resp, err := providertest.Collect(t, replayModel(t, providertest.Replay{Body: []byte(head + end)}))
		if err != nil || resp.Message.Text() != "hi" || resp.Stop != agents.StopEndTurn {
			t.Errorf("ending %q: resp %+v, err %v; want the flushed message_stop to complete the answer", end, resp, err)
		}
	}
	for _, end := range []string{"event: message_stop\ndata: {\"type\":\"message_st", "event: message_stop\ndata: {\"type\":\"message_st\n"} {
		_, _, err := providertest.Collect(t, replayModel(t, providertest.Replay{Body: []byte(head + end)}))
		if !errors.Is(err, llmhttp.ErrIncomplete) {
			t.Errorf("ending %q: err = %v, want ErrIncomplete", end, err)
		}
	}
}
