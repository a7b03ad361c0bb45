package openai_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/providers/openai"
)

const testKey = "sk-test-0123456789abcdefghij"

func testConn(url string) openai.Connection {
	return openai.Connection{BaseURL: url + "/v1", APIKey: testKey, RetryBaseDelay: time.Millisecond, RetryMaxDelay: time.Millisecond}
}

func mustNew(t *testing.T, o openai.Options) *openai.Model {
	t.Helper()
	m, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func generate(t *testing.T, m agents.Model, req *agents.Request) *agents.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := agents.Generate(ctx, m, req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resp
}

var sqlTool = agents.ToolSpec{Name: "run_sql", Description: "Run SQL",
	Schema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"},"limit":{"type":"integer"}},"required":["sql"]}`)}

func TestRequestShape(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"ok"}}))
	conn := testConn(srv.URL)
	conn.Organization, conn.Project = "org-1", "proj-1"
	m := mustNew(t, openai.Options{Connection: conn, Model: "gpt-4.1"})
	temp, par := 0.2, false
	generate(t, m, &agents.Request{System: "Be brief.", Messages: []agents.Message{agents.UserMessage("hi")},
		Tools:   []agents.ToolSpec{sqlTool},
		Options: agents.Options{Temperature: &temp, MaxTokens: 300, ParallelToolCalls: &par, ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceTool, Name: "run_sql"}}})
	r := srv.Request(0)
	if r.Method != "POST" || r.Path != "/v1/chat/completions" {
		t.Fatalf("%s %s", r.Method, r.Path)
	}
	for k, want := range map[string]string{"Authorization": "Bearer " + testKey, "Content-Type": "application/json",
		"Accept": "text/event-stream", "Openai-Organization": "org-1", "Openai-Project": "proj-1"} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	var body map[string]any
	json.Unmarshal(r.Body, &body)
	want := map[string]any{
		"model":    "gpt-4.1",
		"messages": []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "hi"}},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{
			"name": "run_sql", "description": "Run SQL", "strict": true,
			"parameters": map[string]any{"type": "object", "additionalProperties": false, "required": []any{"limit", "sql"},
				"properties": map[string]any{"sql": map[string]any{"type": "string"}, "limit": map[string]any{"type": []any{"integer", "null"}}}}}}},
		"tool_choice":           map[string]any{"type": "function", "function": map[string]any{"name": "run_sql"}},
		"parallel_tool_calls":   false,
		"temperature":           0.2,
		"max_completion_tokens": float64(300),
		"stream":                true,
		"stream_options":        map[string]any{"include_usage": true},
	}
	if !reflect.DeepEqual(body, want) {
		got, _ := json.MarshalIndent(body, "", " ")
		t.Errorf("body:\n%s", got)
	}
}

func TestRequestDeterministic(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}), llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}))
	m := mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "gpt-4.1"})
	schema := json.RawMessage(`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"object","properties":{"z":{"type":"number"},"y":{"type":"string"}}}}}`)
	req := &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}, Tools: []agents.ToolSpec{{Name: "t", Description: "d", Schema: schema}}}
	generate(t, m, req)
	generate(t, m, req)
	if string(srv.Request(0).Body) != string(srv.Request(1).Body) {
		t.Fatal("the same request encoded differently: prompt caches would miss")
	}
}

func TestReasoningModelRules(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}), llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}))
	temp := 0.3
	req := &agents.Request{System: "sys", Messages: []agents.Message{agents.UserMessage("x")},
		Options: agents.Options{Temperature: &temp, MaxTokens: 1000, ReasoningBudget: 4000}}
	generate(t, mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "o4-mini"}), req)
	var cr llmfake.OpenAIChatRequest
	srv.Request(0).Decode(&cr)
	if cr.Messages[0].Role != "developer" || cr.Temperature != nil || cr.MaxTokens != nil ||
		cr.MaxCompletionTokens == nil || *cr.MaxCompletionTokens != 1000 || cr.ReasoningEffort != "medium" {
		t.Errorf("reasoning request: %s", srv.Request(0).Body)
	}
	// Forced off for a model whose name looks like a reasoning model, and
	// legacy max_tokens.
	generate(t, mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "o3-custom", Reasoning: new(false), LegacyMaxTokens: true}), req)
	cr = llmfake.OpenAIChatRequest{}
	srv.Request(1).Decode(&cr)
	if cr.Messages[0].Role != "system" || cr.Temperature == nil || *cr.Temperature != 0.3 || cr.MaxTokens == nil || *cr.MaxTokens != 1000 || cr.MaxCompletionTokens != nil {
		t.Errorf("chat request: %s", srv.Request(1).Body)
	}
}

func TestToolChoiceAndNoTools(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		choice agents.ToolChoice
		tools  bool
		want   string
	}{
		{agents.ToolChoice{}, true, ""},
		{agents.ToolChoice{Mode: agents.ToolChoiceAuto}, true, `"auto"`},
		{agents.ToolChoice{Mode: agents.ToolChoiceNone}, true, `"none"`},
		{agents.ToolChoice{Mode: agents.ToolChoiceRequired}, true, `"required"`},
		{agents.ToolChoice{Mode: agents.ToolChoiceRequired}, false, ""}, // no tools: no tool_choice
	} {
		srv := llmfake.NewServer(t, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}))
		req := &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}, Options: agents.Options{ToolChoice: tc.choice, ParallelToolCalls: new(true)}}
		if tc.tools {
			req.Tools = []agents.ToolSpec{sqlTool}
		}
		generate(t, mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "gpt-4.1"}), req)
		var cr llmfake.OpenAIChatRequest
		srv.Request(0).Decode(&cr)
		if string(cr.ToolChoice) != tc.want {
			t.Errorf("%+v: tool_choice %s, want %s", tc.choice, cr.ToolChoice, tc.want)
		}
		if (cr.ParallelToolCalls != nil) != tc.tools {
			t.Errorf("%+v: parallel_tool_calls sent %v with tools %v", tc.choice, cr.ParallelToolCalls != nil, tc.tools)
		}
	}
	m := mustNew(t, openai.Options{Connection: testConn("http://127.0.0.1:1"), Model: "gpt-4.1"})
	_, err := agents.Generate(context.Background(), m, &agents.Request{Tools: []agents.ToolSpec{sqlTool},
		Options: agents.Options{ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceTool}}})
	if err == nil || !strings.Contains(err.Error(), "without a tool name") {
		t.Errorf("tool choice without name: %v", err)
	}
}

func TestConversationEncoding(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}))
	m := mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "gpt-4.1"})
	msgs := []agents.Message{
		{Role: domain.RoleUser, Parts: []domain.Part{domain.TextPart("chart this"),
			{Type: domain.PartImage, File: &domain.FileRef{MediaType: "image/png", URI: "data:image/png;base64,AAAA"}}}},
		{Role: domain.RoleAssistant, Parts: []domain.Part{
			{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "private"}},
			{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "c1", Name: "now", Arguments: nil}},
		}},
		{Role: domain.RoleTool, Parts: []domain.Part{{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: "c1", Content: "boom", IsError: true}}}},
	}
	generate(t, m, &agents.Request{Messages: msgs})
	var body struct{ Messages []map[string]any }
	json.Unmarshal(srv.Request(0).Body, &body)
	got, _ := json.Marshal(body.Messages)
	want := `[{"content":[{"text":"chart this","type":"text"},{"image_url":{"url":"data:image/png;base64,AAAA"},"type":"image_url"}],"role":"user"},` +
		`{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"now"},"id":"c1","type":"function"}]},` +
		`{"content":"Error: boom","role":"tool","tool_call_id":"c1"}]`
	if string(got) != want {
		t.Errorf("messages:\n got %s\nwant %s", got, want)
	}
}

func TestStrictSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
			`{"additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}`},
		{`{"$schema":"x","type":"object","properties":{"e":{"type":"string","enum":["x","y"]},"r":{"$ref":"#/$defs/R"}},"$defs":{"R":{"type":"object","properties":{"n":{"type":"integer"}}}}}`,
			`{"$defs":{"R":{"additionalProperties":false,"properties":{"n":{"type":["integer","null"]}},"required":["n"],"type":"object"}},"additionalProperties":false,"properties":{"e":{"enum":["x","y",null],"type":["string","null"]},"r":{"anyOf":[{"$ref":"#/$defs/R"},{"type":"null"}]}},"required":["e","r"],"type":"object"}`},
		{`{"type":"object","properties":{"list":{"type":"array","items":{"type":"object","properties":{"v":{"type":["number","null"]}},"required":["v"]}}},"required":["list"]}`,
			`{"additionalProperties":false,"properties":{"list":{"items":{"additionalProperties":false,"properties":{"v":{"type":["number","null"]}},"required":["v"],"type":"object"},"type":"array"}},"required":["list"],"type":"object"}`},
		{`{"type":"object"}`, `{"additionalProperties":false,"properties":{},"required":[],"type":"object"}`},
	} {
		got, ok := openai.StrictSchema(json.RawMessage(tc.in))
		if !ok || string(got) != tc.want {
			t.Errorf("StrictSchema(%s)\n got %s %v\nwant %s", tc.in, got, ok, tc.want)
		}
	}
	for _, in := range []string{`{"type":"object","additionalProperties":{"type":"string"}}`, `{"oneOf":[{"type":"string"}]}`, `[1]`, `nope`} {
		if _, ok := openai.StrictSchema(json.RawMessage(in)); ok {
			t.Errorf("StrictSchema(%s) accepted a schema strict mode cannot express", in)
		}
	}
}

func TestNonStrictFallback(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}))
	free := agents.ToolSpec{Name: "free", Description: "d", Schema: json.RawMessage(`{"type":"object","additionalProperties":true}`)}
	generate(t, mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "gpt-4.1"}), &agents.Request{
		Messages: []agents.Message{agents.UserMessage("x")}, Tools: []agents.ToolSpec{free}})
	var cr llmfake.OpenAIChatRequest
	srv.Request(0).Decode(&cr)
	if cr.Tools[0].Function.Strict != nil || string(cr.Tools[0].Function.Parameters) != string(free.Schema) {
		t.Errorf("a free-form schema must be sent as is without strict: %s", srv.Request(0).Body)
	}
}

func TestNewErrors(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	if _, err := openai.New(openai.Options{Model: "gpt-4.1"}); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("no key: %v", err)
	}
	if _, err := openai.New(openai.Options{Connection: openai.Connection{APIKey: "k"}}); err == nil || !strings.Contains(err.Error(), "Model") {
		t.Errorf("no model: %v", err)
	}
	if _, err := openai.New(openai.Options{Connection: openai.Connection{APIKey: "k", BaseURL: "ftp://x"}, Model: "m"}); err == nil {
		t.Error("bad base URL accepted")
	}
	t.Setenv("OPENAI_API_KEY", "sk-env-key-123456789")
	t.Setenv("OPENAI_BASE_URL", "http://proxy.local/v1/")
	srv := llmfake.NewServer(t, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}))
	m := mustNew(t, openai.Options{Connection: openai.Connection{BaseURL: srv.URL + "/v1"}, Model: "gpt-4.1"})
	generate(t, m, &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
	if got := srv.Request(0).Header.Get("Authorization"); got != "Bearer sk-env-key-123456789" {
		t.Errorf("key from env: %q", got)
	}
	if info := m.Info(); info.Provider != "openai" || info.Name != "gpt-4.1" || !info.Capabilities.Tools {
		t.Errorf("info %+v", info)
	}
}

func TestPresets(t *testing.T) {
	t.Setenv("OLLAMA_HOST", "gpu-box:11434")
	o := openai.Ollama("llama3.2")
	if o.BaseURL != "http://gpu-box:11434/v1" || !o.KeyOptional || o.Provider != "ollama" || o.Temperature == nil {
		t.Errorf("ollama preset %+v", o)
	}
	if d := openai.DeepSeek("deepseek-chat"); d.BaseURL != "https://api.deepseek.com/v1" || d.KeyEnv != "DEEPSEEK_API_KEY" {
		t.Errorf("deepseek preset %+v", d)
	}
	if l := openai.LMStudio("qwen"); l.BaseURL != "http://localhost:1234/v1" {
		t.Errorf("lmstudio preset %+v", l)
	}
	if v := openai.VLLM("http://gpu:8000/v1", "m"); v.Provider != "vllm" || v.BaseURL != "http://gpu:8000/v1" {
		t.Errorf("vllm preset %+v", v)
	}
}

// TestOllamaPreset sends a request the way Ollama's compatibility layer
// wants it: no auth, max_tokens, a temperature.
func TestOllamaPreset(t *testing.T) {
	srv := llmfake.NewServer(t, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}))
	t.Setenv("OLLAMA_HOST", srv.URL)
	t.Setenv("OLLAMA_API_KEY", "")
	m := mustNew(t, openai.Ollama("llama3.2"))
	generate(t, m, &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}, Tools: []agents.ToolSpec{sqlTool}, Options: agents.Options{MaxTokens: 50}})
	r := srv.Request(0)
	var cr llmfake.OpenAIChatRequest
	r.Decode(&cr)
	if r.Header.Get("Authorization") != "" || cr.MaxTokens == nil || *cr.MaxTokens != 50 || cr.Temperature == nil || *cr.Temperature != 0.8 ||
		cr.Tools[0].Function.Strict != nil || r.Path != "/v1/chat/completions" {
		t.Errorf("ollama request %s %v: %s", r.Path, r.Header, r.Body)
	}
}

func TestAzurePreset(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}))
	o := openai.Azure(srv.URL, "my-gpt4o", "")
	o.APIKey = "azure-secret-key-1234"
	generate(t, mustNew(t, o), &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
	r := srv.Request(0)
	if r.Path != "/openai/deployments/my-gpt4o/chat/completions" || r.Query.Get("api-version") != openai.DefaultAzureAPIVersion ||
		r.Header.Get("Api-Key") != "azure-secret-key-1234" || r.Header.Get("Authorization") != "" {
		t.Errorf("azure request %s ?%s %v", r.Path, r.Query.Encode(), r.Header)
	}
}
