package anthropic_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/anthropic"
	"github.com/bichat-go/bichat/providers/providertest"
)

// TestRecordedRequestShapes checks the request encoder against the
// requests the TypeScript SDK recorded (anthropic-ts/ToolRunner.json):
// the same conversation (user text, assistant text and tool_use, the
// tool_result, one tool) is encoded, and every block and tool the SDK sent
// must come out with at least the SDK's members, of the same JSON kinds.
// The tool "type":"custom" is the API default and not sent.
func TestRecordedRequestShapes(t *testing.T) {
	t.Parallel()
	dir := providertest.FixtureDir(t)
	data, err := os.ReadFile(filepath.Join(dir, "anthropic-ts/ToolRunner.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec []struct {
		Body struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Tools []map[string]any `json:"tools"`
		} `json:"body"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	want := rec[1].Body // user, assistant (text + tool_use), user (tool_result)
	if len(want.Messages) != 3 || len(want.Tools) != 1 {
		t.Fatalf("recording changed: %d messages, %d tools", len(want.Messages), len(want.Tools))
	}
	var sent []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"captured"}}`))
	}))
	defer srv.Close()
	m, err := anthropic.New(anthropic.Config{Model: "claude-opus-4-8", APIKey: "k", BaseURL: srv.URL, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := json.Marshal(want.Tools[0]["input_schema"])
	req := &agents.Request{
		Messages: []agents.Message{
			agents.UserMessage(`Use the test_tool with value "test", then provide a final response`),
			{Role: domain.RoleAssistant, Parts: []domain.Part{domain.TextPart("I'll use the test_tool."),
				{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "toolu_1", Name: "test_tool", Arguments: json.RawMessage(`{"value":"test"}`)}}}},
			{Role: domain.RoleTool, Parts: []domain.Part{{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{
				CallID: "toolu_1", Name: "test_tool", Content: "Tool result"}}}},
		},
		Tools: []agents.ToolSpec{{Name: "test_tool", Description: "A test tool", Schema: schema}},
	}
	for range m.Stream(t.Context(), req) {
	}
	var got struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(sent, &got); err != nil {
		t.Fatalf("sent %s: %v", sent, err)
	}
	if len(got.Messages) != 3 || len(got.Tools) != 1 {
		t.Fatalf("sent %s", sent)
	}
	for i, wm := range want.Messages {
		var blocks []map[string]any
		if json.Unmarshal(wm.Content, &blocks) != nil {
			continue // a plain string; the encoder's text block is equivalent
		}
		if got.Messages[i].Role != wm.Role || len(got.Messages[i].Content) != len(blocks) {
			t.Fatalf("message %d: sent %+v, recorded %s", i, got.Messages[i], wm.Content)
		}
		for j, wb := range blocks {
			sameMembers(t, "message block "+wb["type"].(string), got.Messages[i].Content[j], wb)
		}
	}
	delete(want.Tools[0], "type")
	sameMembers(t, "tool", got.Tools[0], want.Tools[0])
}

// sameMembers fails unless got has every member of want, of the same kind.
func sameMembers(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: member %q missing (sent %v)", what, k, got)
			continue
		}
		if kindOf(g) != kindOf(v) {
			t.Errorf("%s: %q is %s, the SDK sent %s", what, k, kindOf(g), kindOf(v))
		}
	}
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}
