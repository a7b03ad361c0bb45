package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/providers/openai"
	"github.com/bichat-go/bichat/providers/providertest"
)

// inspectResponses decodes a Responses request into the suite's view.
func inspectResponses(t *testing.T, r llmfake.Request) providertest.Seen {
	t.Helper()
	if r.Path != "/v1/responses" {
		t.Errorf("path = %q, want /v1/responses", r.Path)
	}
	var rr llmfake.OpenAIResponsesRequest
	if err := r.Decode(&rr); err != nil {
		t.Fatalf("request body: %v", err)
	}
	if rr.Store == nil || *rr.Store {
		t.Errorf("store = %v, want false", rr.Store)
	}
	seen := providertest.Seen{Stream: rr.Stream, System: rr.Instructions}
	for _, tool := range rr.Tools {
		if tool.Type != "function" {
			t.Errorf("tool type %q", tool.Type)
		}
		seen.ToolNames = append(seen.ToolNames, tool.Name)
	}
	for _, raw := range rr.Input {
		var it llmfake.OpenAIResponsesItem
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatalf("input item %s: %v", raw, err)
		}
		switch {
		case it.Type == "function_call":
			seen.ToolCalls = append(seen.ToolCalls, domain.ToolCall{ID: it.CallID, Name: it.Name, Arguments: json.RawMessage(it.Arguments)})
		case it.Type == "function_call_output":
			seen.ToolResults = append(seen.ToolResults, domain.ToolResult{CallID: it.CallID, Content: it.Output})
		case it.Type == "reasoning":
			var text string
			for _, s := range it.Summary {
				text += s.Text
			}
			seen.Reasoning = append(seen.Reasoning, domain.Reasoning{Text: text, Signature: it.ID, Opaque: []byte(it.EncryptedContent)})
		case it.Role == "user":
			seen.UserText = append(seen.UserText, it.Text())
		case it.Role == "developer" || it.Role == "system":
			seen.System += "\n" + it.Text()
		}
	}
	return seen
}

func TestConformanceResponses(t *testing.T) {
	t.Parallel()
	h := harness("openai-responses", func(baseURL string, cfg providertest.Config) openai.Options {
		return openai.Options{Connection: connFor(baseURL, cfg), Model: "o4-mini", ResponsesAPI: true}
	})
	h.Stream = llmfake.OpenAIResponsesStream
	h.StreamError = func(transient bool) []byte {
		if transient {
			return llmfake.OpenAIResponsesError("server_error", "The server had an error.")
		}
		return llmfake.OpenAIResponsesFailed("invalid_prompt", "Invalid prompt.")
	}
	h.Malformed = llmfake.OpenAIResponsesMalformed
	h.Inspect = inspectResponses
	h.Features = providertest.Features{ReasoningText: true, ReasoningSignature: true, ReasoningOpaque: true,
		ReasoningEcho: true, ReasoningTokens: true}
	providertest.Run(t, h)
}

func TestResponsesRequestShape(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAIResponsesStream(llmfake.Turn{Text: []string{"ok"}}),
		llmfake.OpenAIResponsesStream(llmfake.Turn{Text: []string{"ok"}, Stop: "incomplete:max_output_tokens"}))
	m := mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "o4-mini", ResponsesAPI: true})
	req := &agents.Request{System: "sys", Messages: []agents.Message{agents.UserMessage("x")}, Tools: []agents.ToolSpec{sqlTool},
		Options: agents.Options{MaxTokens: 500, ReasoningBudget: 50000, ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceTool, Name: "run_sql"}}}
	generate(t, m, req)
	var body map[string]any
	json.Unmarshal(srv.Request(0).Body, &body)
	got, _ := json.Marshal(body)
	want := `{"include":["reasoning.encrypted_content"],"input":[{"content":"x","role":"user"}],"instructions":"sys","max_output_tokens":500,` +
		`"model":"o4-mini","reasoning":{"effort":"high","summary":"auto"},"store":false,"stream":true,"tool_choice":{"name":"run_sql","type":"function"},` +
		`"tools":[{"description":"Run SQL","name":"run_sql","parameters":{"additionalProperties":false,"properties":{"limit":{"type":["integer","null"]},"sql":{"type":"string"}},"required":["limit","sql"],"type":"object"},"strict":true,"type":"function"}]}`
	if string(got) != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
	if resp := generate(t, m, req); resp.Stop != agents.StopMaxTokens {
		t.Errorf("incomplete response: stop %q", resp.Stop)
	}
}

func TestResponsesNoStream(t *testing.T) {
	t.Parallel()
	body := `{"id":"resp_1","object":"response","status":"completed","model":"gpt-4.1","output":[` +
		`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"plan"}],"encrypted_content":"gAAAA=="},` +
		`{"type":"function_call","id":"fc_1","call_id":"call_A","name":"run_sql","arguments":"{\"sql\":\"SELECT 1\"}","status":"completed"},` +
		`{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Revenue was ...","annotations":[]}]}],` +
		`"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":20},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":5},"total_tokens":130}}`
	srv := llmfake.NewServer(t, llmfake.Reply{Body: []byte(body)})
	resp := generate(t, mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "gpt-4.1", ResponsesAPI: true, NoStream: true}),
		&agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
	if strings.Contains(string(srv.Request(0).Body), `"stream"`) {
		t.Error("non-streamed request asks for a stream")
	}
	r := resp.Message.Parts[0].Reasoning
	calls := resp.Message.ToolCalls()
	if r == nil || r.Text != "plan" || r.Signature != "rs_1" || string(r.Opaque) != "gAAAA==" || len(calls) != 1 || calls[0].ID != "call_A" ||
		resp.Message.Text() != "Revenue was ..." || resp.Usage.CachedTokens != 20 || resp.Usage.ReasoningTokens != 5 || resp.Stop != agents.StopToolUse {
		t.Errorf("response %+v", resp)
	}
	_, err := agents.Generate(context.Background(), mustNew(t, openai.Options{Connection: testConn("http://127.0.0.1:1"), Model: "m", ResponsesAPI: true}),
		&agents.Request{Messages: []agents.Message{{Role: "wizard", Parts: []domain.Part{domain.TextPart("x")}}}})
	if err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Errorf("bad role: %v", err)
	}
}
