package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/providers/gemini"
	"github.com/bichat-go/bichat/providers/providertest"
)

func TestRequestShape(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.GeminiStream(llmfake.Turn{Text: []string{"ok"}}))
	cfg := providertest.DefaultConfig()
	m := newFakeModel(t, srv.URL, cfg)
	req := &agents.Request{
		System:   "You are a BI analyst.",
		Messages: []agents.Message{agents.UserMessage("Revenue?")},
		Tools: []agents.ToolSpec{{Name: "revenue", Description: "Revenue of a period",
			Schema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
				`"$defs":{"P":{"type":"object","properties":{"year":{"type":"integer","exclusiveMinimum":1999}},"required":["year"]}},` +
				`"properties":{"period":{"$ref":"#/$defs/P"}},"required":["period"]}`)}},
	}
	if _, err := agents.Generate(context.Background(), m, req); err != nil {
		t.Fatal(err)
	}
	r := srv.Request(0)
	if r.Path != "/v1beta/models/gemini-test:streamGenerateContent" || r.Query.Get("alt") != "sse" || len(r.Query) != 1 {
		t.Errorf("request %s ?%s", r.Path, r.Query.Encode())
	}
	if r.Header.Get("X-Goog-Api-Key") != cfg.APIKey || strings.Contains(r.Query.Encode(), cfg.APIKey) {
		t.Errorf("key header %q, query %q", r.Header.Get("X-Goog-Api-Key"), r.Query.Encode())
	}
	var body llmfake.GeminiRequest
	if err := r.Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.SystemInstruction == nil || *body.SystemInstruction.Parts[0].Text != "You are a BI analyst." {
		t.Errorf("systemInstruction = %+v", body.SystemInstruction)
	}
	decl := body.Tools[0].FunctionDeclarations[0]
	want := `{"properties":{"period":{"properties":{"year":{"type":"integer"}},"required":["year"],"type":"object"}},"required":["period"],"type":"object"}`
	if string(decl.ParametersJSONSchema) != want || decl.Parameters != nil {
		t.Errorf("schema = %s\nwant     %s", decl.ParametersJSONSchema, want)
	}
	if string(body.ToolConfig) != `{"functionCallingConfig":{"mode":"AUTO"}}` {
		t.Errorf("toolConfig = %s", body.ToolConfig)
	}
}

func TestRetryInfoDelayIsHonoured(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t,
		llmfake.GeminiError(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted", "0.15s"),
		llmfake.GeminiStream(llmfake.Turn{Text: []string{"ok"}}))
	m := newFakeModel(t, srv.URL, providertest.DefaultConfig())
	start := time.Now()
	resp, err := agents.Generate(context.Background(), m, &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
	if err != nil || resp.Message.Text() != "ok" {
		t.Fatal(resp, err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("retried after %v, before the 150 ms RetryInfo delay", d)
	}
}

func TestGenerateContentNonStreaming(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.GeminiResponse(llmfake.Turn{Text: []string{"Revenue ", "was up."},
		Calls: []llmfake.Call{{Name: "run_sql", Args: []string{`{"sql":"SELECT 1"}`}, Opaque: []byte("sig")}},
		Usage: domain.Usage{PromptTokens: 10, CompletionTokens: 5}}))
	m := newFakeModel(t, srv.URL, providertest.DefaultConfig())
	resp, err := m.Generate(context.Background(), &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if r := srv.Request(0); r.Path != "/v1beta/models/gemini-test:generateContent" || r.Query.Get("alt") != "" {
		t.Errorf("path %s ?%s", r.Path, r.Query.Encode())
	}
	calls := resp.Message.ToolCalls()
	if resp.Message.Text() != "Revenue was up." || len(calls) != 1 || string(calls[0].Opaque) != "sig" ||
		!strings.HasPrefix(calls[0].ID, gemini.SyntheticIDPrefix) || resp.Stop != agents.StopToolUse || resp.Usage.TotalTokens != 15 {
		t.Errorf("response = %+v", resp)
	}
}

func TestBlockedPromptAndSafetyStop(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.GeminiBlocked("PROHIBITED_CONTENT"),
		llmfake.GeminiStream(llmfake.Turn{Text: []string{"I can't"}, Stop: "SAFETY"}))
	m := newFakeModel(t, srv.URL, providertest.DefaultConfig())
	req := &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}}
	_, err := agents.Generate(context.Background(), m, req)
	var ae *llmhttp.APIError
	if !errors.As(err, &ae) || ae.Type != gemini.ErrTypeBlocked || ae.Code != "PROHIBITED_CONTENT" || agents.Retryable(err) {
		t.Fatalf("blocked prompt: %v", err)
	}
	resp, err := agents.Generate(context.Background(), m, req)
	if err != nil || resp.Stop != agents.StopContentFilter {
		t.Fatalf("safety stop: %+v %v", resp, err)
	}
	if srv.Count() != 2 {
		t.Errorf("%d requests: the blocked prompt was retried", srv.Count())
	}
}

// Calls without ids get synthesized ids; the next request sends the calls
// and their responses without them, in call order, with names.
func TestSynthesizedIDsRoundTrip(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t,
		llmfake.GeminiStream(llmfake.Turn{Calls: []llmfake.Call{
			{Name: "a", Args: []string{`{"x":1}`}, Opaque: []byte("\x00sig")},
			{Name: "b"},
			{Name: "a", Args: []string{`{"x":2}`}}}}),
		llmfake.GeminiStream(llmfake.Turn{Text: []string{"done"}}))
	m := newFakeModel(t, srv.URL, providertest.DefaultConfig())
	req := &agents.Request{Messages: []agents.Message{agents.UserMessage("go")},
		Tools: []agents.ToolSpec{{Name: "a"}, {Name: "b"}}}
	resp, err := agents.Generate(context.Background(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != 3 || calls[0].ID == calls[2].ID || string(calls[1].Arguments) != "{}" {
		t.Fatalf("calls = %+v", calls)
	}
	// Results in reverse order, without names: sent back in call order.
	var results []domain.Part
	for i := len(calls) - 1; i >= 0; i-- {
		results = append(results, domain.Part{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{
			CallID: calls[i].ID, Content: string(rune('0' + i))}})
	}
	req.Messages = append(req.Messages, resp.Message, agents.Message{Role: domain.RoleTool, Parts: results})
	if _, err := agents.Generate(context.Background(), m, req); err != nil {
		t.Fatal(err)
	}
	var body llmfake.GeminiRequest
	srv.Request(1).Decode(&body)
	if len(body.Contents) != 3 {
		t.Fatalf("contents = %d", len(body.Contents))
	}
	model, user := body.Contents[1], body.Contents[2]
	if model.Role != "model" || model.Parts[0].FunctionCall.ID != "" || model.Parts[0].ThoughtSignature != "AHNpZw==" {
		t.Errorf("model turn = %v", model.Parts)
	}
	for i, p := range user.Parts {
		fr := p.FunctionResponse
		if fr == nil || fr.ID != "" || fr.Name != calls[i].Name || string(fr.Response) != `{"result":"`+string(rune('0'+i))+`"}` {
			t.Errorf("response %d = %v", i, p)
		}
	}
}

func TestConfig(t *testing.T) {
	t.Setenv(gemini.EnvAPIKey, "")
	t.Setenv(gemini.EnvAPIKeyAlt, "")
	if _, err := gemini.New(gemini.Config{Model: "m"}); err == nil || !strings.Contains(err.Error(), gemini.EnvAPIKeyAlt) {
		t.Errorf("missing key: %v", err)
	}
	t.Setenv(gemini.EnvAPIKeyAlt, "google-key")
	m, err := gemini.New(gemini.Config{Model: "models/gemini-x"})
	if err != nil {
		t.Fatal(err)
	}
	if info := m.Info(); info.Name != "gemini-x" || info.Provider != "gemini" {
		t.Errorf("info = %+v", info)
	}
	t.Setenv(gemini.EnvAPIKey, "gemini-key")
	srv := llmfake.NewServer(t, llmfake.GeminiStream(llmfake.Turn{Text: []string{"ok"}}))
	m, _ = gemini.New(gemini.Config{Model: "m", BaseURL: srv.URL})
	if _, err := agents.Generate(context.Background(), m, &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Request(0).Header.Get("X-Goog-Api-Key"); got != "gemini-key" {
		t.Errorf("GEMINI_API_KEY should win over GOOGLE_API_KEY, sent %q", got)
	}
}
