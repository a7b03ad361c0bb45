package gemini

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/internal/llmtest"
)

func TestConvertSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want, wantErr string
	}{
		{"empty", ``, `{"properties":{},"type":"object"}`, ""},
		{"drops unsupported, keeps order deterministic",
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","type":"object","$comment":"c",
			  "properties":{"b":{"type":"integer","minimum":1,"examples":[2],"exclusiveMaximum":9},"a":{"type":"string","const":"k"}},
			  "required":["b"],"additionalProperties":false,"patternProperties":{"^x":{}}}`,
			`{"additionalProperties":false,"properties":{"a":{"enum":["k"],"type":"string"},"b":{"minimum":1,"type":"integer"}},"required":["b"],"type":"object"}`, ""},
		{"inlines refs with sibling overrides",
			`{"type":"object","$defs":{"Y":{"type":"integer","description":"year"},"P":{"type":"object","properties":{"y":{"$ref":"#/$defs/Y"}}}},
			  "properties":{"p":{"$ref":"#/$defs/P","description":"period"},"q":{"$ref":"#/definitions/Z"},"r":{"type":"array","items":{"$ref":"#/$defs/Y"}}},
			  "definitions":{"Z":{"type":"boolean"}}}`,
			`{"properties":{"p":{"description":"period","properties":{"y":{"description":"year","type":"integer"}},"type":"object"},"q":{"type":"boolean"},"r":{"items":{"description":"year","type":"integer"},"type":"array"}},"type":"object"}`, ""},
		{"oneOf becomes anyOf, allOf merged",
			`{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"null"}]}},
			  "allOf":[{"properties":{"w":{"type":"number"}},"required":["w"]},{"required":["v"]}]}`,
			`{"properties":{"v":{"anyOf":[{"type":"string"},{"type":"null"}]},"w":{"type":"number"}},"required":["w","v"],"type":"object"}`, ""},
		{"large numbers kept exactly", `{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740993}}}`,
			`{"properties":{"n":{"maximum":9007199254740993,"type":"integer"}},"type":"object"}`, ""},
		{"recursive ref", `{"type":"object","$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N"}}}},"properties":{"n":{"$ref":"#/$defs/N"}}}`, "", "recursive"},
		{"remote ref", `{"type":"object","properties":{"n":{"$ref":"https://x/y.json"}}}`, "", "not a local reference"},
		{"dangling ref", `{"type":"object","properties":{"n":{"$ref":"#/$defs/Nope"}}}`, "", "does not resolve"},
		{"invalid json", `{"type":`, "", "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ConvertSchema(json.RawMessage(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestEncodeConversation(t *testing.T) {
	t.Parallel()
	temp := 0.5
	req := &agents.Request{
		System: "You are a BI analyst.",
		Messages: []agents.Message{
			agents.UserMessage("Revenue?"),
			{Role: domain.RoleAssistant, Parts: []domain.Part{
				{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "plan", Provider: "gemini", Opaque: []byte("TS1")}},
				{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "foreign", Signature: "x", Provider: "anthropic"}},
				domain.TextPart("Checking."),
				{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Provider: "gemini", Opaque: []byte("TS2")}},
				{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "fc-1", Name: "run_sql", Arguments: json.RawMessage(`{"sql":"SELECT 1"}`), Provider: "gemini", Opaque: []byte("TS3")}},
				{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: SyntheticIDPrefix + "r1-1", Name: "search_kb", Arguments: json.RawMessage(`{"q":"rev"}`)}},
				{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: SyntheticIDPrefix + "r1-2", Name: "now"}},
			}},
			// Results out of order and one without a name: sent in call
			// order, named from the call.
			{Role: domain.RoleTool, Parts: []domain.Part{
				{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: SyntheticIDPrefix + "r1-2", Content: "2026-01-01"}},
				{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: SyntheticIDPrefix + "r1-1", Name: "search_kb", Content: "timeout", IsError: true}},
				{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: "fc-1", Name: "run_sql", Content: `[{"m":"2024-01","rev":10}]`}},
			}},
		},
		Tools: []agents.ToolSpec{
			{Name: "run_sql", Description: "Run SQL", Schema: json.RawMessage(`{"$schema":"x","type":"object","properties":{"sql":{"type":"string"}},"required":["sql"],"additionalProperties":false}`)},
			{Name: "now", Description: "Time", Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		},
		Options: agents.Options{Temperature: &temp, MaxTokens: 2048, ReasoningBudget: 1024,
			ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceTool, Name: "run_sql"}},
	}
	w, err := encodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"contents":[{"role":"user","parts":[{"text":"Revenue?"}]},` +
		`{"role":"model","parts":[{"text":"plan","thought":true,"thoughtSignature":"VFMx"},{"text":"Checking.","thoughtSignature":"VFMy"},` +
		`{"functionCall":{"id":"fc-1","name":"run_sql","args":{"sql":"SELECT 1"}},"thoughtSignature":"VFMz"},` +
		`{"functionCall":{"name":"search_kb","args":{"q":"rev"}}},{"functionCall":{"name":"now","args":{}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"id":"fc-1","name":"run_sql","response":{"result":[{"m":"2024-01","rev":10}]}}},` +
		`{"functionResponse":{"name":"search_kb","response":{"error":"timeout"}}},{"functionResponse":{"name":"now","response":{"result":"2026-01-01"}}}]}],` +
		`"systemInstruction":{"parts":[{"text":"You are a BI analyst."}]},` +
		`"tools":[{"functionDeclarations":[{"name":"run_sql","description":"Run SQL","parametersJsonSchema":{"additionalProperties":false,"properties":{"sql":{"type":"string"}},"required":["sql"],"type":"object"}},` +
		`{"name":"now","description":"Time"}]}],` +
		`"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["run_sql"]}},` +
		`"generationConfig":{"temperature":0.5,"maxOutputTokens":2048,"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}}}`
	if got := llmtest.MustJSON(t, w); got != want {
		t.Errorf("request\n got %s\nwant %s", got, want)
	}
}

func TestEncodeErrors(t *testing.T) {
	t.Parallel()
	_, err := encodeRequest(&agents.Request{Messages: []agents.Message{{Role: domain.RoleTool, Parts: []domain.Part{
		{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: "zz", Content: "x"}}}}}})
	if err == nil || !errors.Is(err, errEncode) || !strings.Contains(err.Error(), "no name") {
		t.Errorf("nameless result: %v", err)
	}
	_, err = encodeRequest(&agents.Request{Tools: []agents.ToolSpec{{Name: "t", Schema: json.RawMessage(`{"$ref":"#/x"}`)}}})
	if err == nil || !strings.Contains(err.Error(), `tool "t"`) {
		t.Errorf("bad schema: %v", err)
	}
}

func decodeChunks(t *testing.T, chunks ...string) (*agents.Response, error) {
	t.Helper()
	var d decoder
	var out []agents.Chunk
	var err error
	for _, c := range chunks {
		if out, err = d.decode([]byte(c), out); err != nil {
			return nil, err
		}
	}
	if out, err = d.end(out); err != nil {
		return nil, err
	}
	var acc agents.Accumulator
	for _, c := range out {
		if err := acc.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	return acc.Response()
}

func TestDecodeStream(t *testing.T) {
	t.Parallel()
	resp, err := decodeChunks(t,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Plan: ","thought":true}]},"index":0}],"responseId":"r1"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"query.","thought":true,"thoughtSignature":"VDE="}]},"index":0}],"responseId":"r1"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Revenue "}]},"index":0}],"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12},"responseId":"r1"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"was up.","thoughtSignature":"VDI="}]},"index":0}],"responseId":"r1"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"fc-1","name":"run_sql","args":{"sql":"SELECT 1"}},"thoughtSignature":"VDM="},{"functionCall":{"name":"search_kb","args":{"q":"x"}}},{"functionCall":{"name":"now"}}]},"finishReason":"STOP","index":0}],`+
			`"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":18,"thoughtsTokenCount":40,"cachedContentTokenCount":100,"toolUsePromptTokenCount":2,"totalTokenCount":180},"responseId":"r1"}`,
	)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Message.Parts
	if len(p) != 6 {
		t.Fatalf("parts = %d: %s", len(p), llmtest.MustJSON(t, p))
	}
	if r := p[0].Reasoning; r.Text != "Plan: query." || string(r.Opaque) != "T1" || r.Provider != "gemini" {
		t.Errorf("thought = %+v", r)
	}
	if p[1].Text != "Revenue was up." || string(p[2].Reasoning.Opaque) != "T2" || p[2].Reasoning.Text != "" {
		t.Errorf("text/signature = %s", llmtest.MustJSON(t, p[1:3]))
	}
	c1, c2, c3 := p[3].ToolCall, p[4].ToolCall, p[5].ToolCall
	if c1.ID != "fc-1" || string(c1.Opaque) != "T3" || string(c1.Arguments) != `{"sql":"SELECT 1"}` {
		t.Errorf("call 1 = %+v", c1)
	}
	if c2.ID != SyntheticIDPrefix+"r1-1" || c3.ID != SyntheticIDPrefix+"r1-2" || string(c3.Arguments) != "{}" {
		t.Errorf("synthesized ids = %q %q (%s)", c2.ID, c3.ID, c3.Arguments)
	}
	want := domain.Usage{PromptTokens: 122, CompletionTokens: 58, CachedTokens: 100, ReasoningTokens: 40, TotalTokens: 180}
	if resp.Usage != want || resp.Stop != agents.StopToolUse {
		t.Errorf("usage %+v stop %s", resp.Usage, resp.Stop)
	}

	// The decoded message goes back verbatim.
	w, err := encodeRequest(&agents.Request{Messages: []agents.Message{agents.UserMessage("q"), resp.Message}})
	if err != nil {
		t.Fatal(err)
	}
	wantModel := `{"role":"model","parts":[{"text":"Plan: query.","thought":true,"thoughtSignature":"VDE="},{"text":"Revenue was up.","thoughtSignature":"VDI="},` +
		`{"functionCall":{"id":"fc-1","name":"run_sql","args":{"sql":"SELECT 1"}},"thoughtSignature":"VDM="},` +
		`{"functionCall":{"name":"search_kb","args":{"q":"x"}}},{"functionCall":{"name":"now","args":{}}}]}`
	if got := llmtest.MustJSON(t, w.Contents[1]); got != wantModel {
		t.Errorf("round trip\n got %s\nwant %s", got, wantModel)
	}
}

func TestSynthesizedIDsUseASafeAlphabet(t *testing.T) {
	t.Parallel()
	resp, err := decodeChunks(t, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f"}}]},"finishReason":"STOP"}],"responseId":"a/b+c=d.é"}`)
	if err != nil {
		t.Fatal(err)
	}
	if id := resp.Message.Parts[0].ToolCall.ID; id != SyntheticIDPrefix+"a_b_c_d___-0" {
		t.Errorf("id = %q", id)
	}
}

func TestDecodeSynthesizedIDsDifferWithoutResponseID(t *testing.T) {
	t.Parallel()
	ids := map[string]bool{}
	for range 2 {
		resp, err := decodeChunks(t, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP"}]}`)
		if err != nil {
			t.Fatal(err)
		}
		ids[resp.Message.Parts[0].ToolCall.ID] = true
	}
	if len(ids) != 2 {
		t.Errorf("ids of two responses collide: %v", ids)
	}
}

func TestDecodeFinishReasonsAndErrors(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]agents.StopReason{
		"STOP": agents.StopEndTurn, "MAX_TOKENS": agents.StopMaxTokens, "SAFETY": agents.StopContentFilter,
		"RECITATION": agents.StopContentFilter, "PROHIBITED_CONTENT": agents.StopContentFilter, "OTHER": agents.StopOther,
		"TOO_MANY_TOOL_CALLS": agents.StopOther,
	} {
		resp, err := decodeChunks(t, `{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"`+reason+`"}]}`)
		if err != nil || resp.Stop != want {
			t.Errorf("%s: %v %v, want %s", reason, resp, err, want)
		}
	}
	_, err := decodeChunks(t, `{"candidates":[{"content":{"parts":[]},"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"bad"}]}`)
	var ae *llmhttp.APIError
	if !errors.As(err, &ae) || ae.Type != ErrTypeFinish || ae.Code != "MALFORMED_FUNCTION_CALL" || !ae.Retryable() || !strings.Contains(err.Error(), "bad") {
		t.Errorf("malformed call: %v", err)
	}
	_, err = decodeChunks(t, `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":3}}`)
	if !errors.As(err, &ae) || ae.Type != ErrTypeBlocked || ae.Code != "SAFETY" || agents.Retryable(err) {
		t.Errorf("blocked: %v", err)
	}
	_, err = decodeChunks(t, `{"candidates":[{"content":{"parts":[{"text":"par"}]}}]}`)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: %v", err)
	}
	_, err = decodeChunks(t, `{"candidates":[{"content":{"parts":[{"text":"par"}]}}]}`,
		`{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2s"}]}}`)
	if !errors.As(err, &ae) || ae.Code != "503" || ae.Type != "UNAVAILABLE" || !ae.Retryable() || ae.RetryAfter != 2*time.Second {
		t.Errorf("in-stream error: %+v", err)
	}
	_, err = decodeChunks(t, `{"candidates":[`)
	if !errors.Is(err, agents.ErrMalformedStream) {
		t.Errorf("malformed: %v", err)
	}
}

func TestNonBase64SignatureIsKeptVerbatim(t *testing.T) {
	t.Parallel()
	resp, err := decodeChunks(t, `{"candidates":[{"content":{"parts":[{"text":"hm","thought":true,"thoughtSignature":"not base64!"},`+
		`{"functionCall":{"name":"f","args":{}},"thoughtSignature":"also-not_b64"}]},"finishReason":"STOP"}],"responseId":"r"}`)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Message.Parts[0].Reasoning; string(r.Opaque) != "not base64!" || r.Provider != "gemini/raw" {
		t.Errorf("reasoning = %+v", r)
	}
	w, err := encodeRequest(&agents.Request{Messages: []agents.Message{agents.UserMessage("q"), resp.Message}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"model","parts":[{"text":"hm","thought":true,"thoughtSignature":"not base64!"},` +
		`{"functionCall":{"name":"f","args":{}},"thoughtSignature":"also-not_b64"}]}`
	if got := llmtest.MustJSON(t, w.Contents[1]); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestForeignCallsGetTheValidatorBypass(t *testing.T) {
	t.Parallel()
	w, err := encodeRequest(&agents.Request{Messages: []agents.Message{
		agents.UserMessage("q"),
		{Role: domain.RoleAssistant, Parts: []domain.Part{
			{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "toolu_1", Name: "a", Arguments: json.RawMessage(`{}`), Provider: "anthropic"}},
			{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "toolu_2", Name: "b", Arguments: json.RawMessage(`{}`), Provider: "anthropic"}},
		}},
		{Role: domain.RoleTool, Parts: []domain.Part{
			{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: "toolu_1", Name: "a", Content: "1"}},
			{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: "toolu_2", Name: "b", Content: "2"}},
		}},
		{Role: domain.RoleAssistant, Parts: []domain.Part{
			{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: SyntheticIDPrefix + "r-0", Name: "a", Provider: "gemini"}},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	foreign := w.Contents[1].Parts
	if foreign[0].ThoughtSignature != "skip_thought_signature_validator" || foreign[1].ThoughtSignature != "" {
		t.Errorf("foreign calls: %s", llmtest.MustJSON(t, foreign))
	}
	if own := w.Contents[3].Parts[0]; own.ThoughtSignature != "" {
		t.Errorf("a Gemini call without signature got one: %s", llmtest.MustJSON(t, own))
	}
}
