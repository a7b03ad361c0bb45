package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/openai"
	"github.com/bichat-go/bichat/providers/providertest"
)

// sentBody returns the JSON body the model sends for req (the fake server
// answers with an error, which is ignored).
func sentBody(t *testing.T, responses bool, req *agents.Request) map[string]any {
	t.Helper()
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"captured","type":"invalid_request_error"}}`))
	}))
	defer srv.Close()
	m, err := openai.New(openai.Options{Connection: openai.Connection{BaseURL: srv.URL, APIKey: "k", MaxAttempts: 1},
		Model: "gpt-4o", ResponsesAPI: responses})
	if err != nil {
		t.Fatal(err)
	}
	for range m.Stream(t.Context(), req) {
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("sent body %q: %v", body, err)
	}
	return out
}

// typed collects the objects of v that have a "type" member, by type,
// outside tool parameter schemas (whose "type" is a JSON Schema type).
func typed(v any, out map[string][]map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		if t, ok := x["type"].(string); ok {
			out[t] = append(out[t], x)
		}
		for k, e := range x {
			if k != "parameters" {
				typed(e, out)
			}
		}
	case []any:
		for _, e := range x {
			typed(e, out)
		}
	}
}

func keys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

// TestSpecRequestExamples checks the request encoders against the API
// reference's request examples (shared/reference/provider-fixtures/
// openai-spec/*.request.txt): every typed object the example sends (an
// input_image, an image_url part, a function tool, ...) must be sent by
// the encoder with at least the example's members, each of the same JSON
// kind; and input_image carries detail, which the reference marks
// required ("auto" by default) although its example omits it.
func TestSpecRequestExamples(t *testing.T) {
	t.Parallel()
	dir := providertest.FixtureDir(t)
	req := &agents.Request{
		System: "You are a helpful assistant.",
		Messages: []agents.Message{
			{Role: domain.RoleUser, Parts: []domain.Part{domain.TextPart("What is in this image?"),
				{Type: domain.PartImage, File: &domain.FileRef{MediaType: "image/jpeg", URI: "https://example.com/a.jpg"}}}},
			{Role: domain.RoleAssistant, Parts: []domain.Part{{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{
				ID: "call_1", Name: "get_current_weather", Arguments: json.RawMessage(`{"location":"Boston, MA"}`)}}}},
			{Role: domain.RoleTool, Parts: []domain.Part{{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{
				CallID: "call_1", Name: "get_current_weather", Content: "22C"}}}},
		},
		Tools: []agents.ToolSpec{{Name: "get_current_weather", Description: "Get the current weather",
			Schema: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`)}},
		Options: agents.Options{MaxTokens: 300},
	}
	sent := map[bool]map[string][]map[string]any{}
	for _, responses := range []bool{false, true} {
		sent[responses] = map[string][]map[string]any{}
		typed(sentBody(t, responses, req), sent[responses])
	}
	for _, img := range sent[true]["input_image"] {
		if img["detail"] != "auto" {
			t.Errorf("input_image = %v, want detail \"auto\"", img)
		}
	}
	// Types the encoders never send (built-in tools, files, logprobs)
	// are listed; any other type of an example must match.
	unsupported := map[string]bool{"input_file": true, "file_search": true, "web_search_preview": true, "web_search": true}
	files, _ := filepath.Glob(filepath.Join(dir, "openai-spec", "*.request.txt"))
	if len(files) == 0 {
		t.Fatal("no request examples")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ex struct {
			Curl string `json:"curl"`
		}
		if err := json.Unmarshal(data, &ex); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		i, j := strings.Index(ex.Curl, "-d '"), strings.LastIndex(ex.Curl, "'")
		if i < 0 || j <= i+4 {
			t.Fatalf("%s: no curl body", f)
		}
		var body any
		if err := json.Unmarshal([]byte(ex.Curl[i+4:j]), &body); err != nil {
			t.Fatalf("%s: curl body: %v", f, err)
		}
		responses := strings.HasPrefix(filepath.Base(f), "responses_")
		want := map[string][]map[string]any{}
		typed(body, want)
		for typ, objs := range want {
			if unsupported[typ] {
				continue
			}
			got := sent[responses][typ]
			if len(got) == 0 {
				t.Errorf("%s: the encoder sends no %q object", filepath.Base(f), typ)
				continue
			}
			for _, w := range objs {
				for _, k := range keys(w) {
					if _, ok := got[0][k]; !ok {
						t.Errorf("%s: %q object %v lacks %q (example %v)", filepath.Base(f), typ, keys(got[0]), k, keys(w))
						continue
					}
					if kind(got[0][k]) != kind(w[k]) {
						t.Errorf("%s: %q.%s is %s, the example has %s", filepath.Base(f), typ, k, kind(got[0][k]), kind(w[k]))
					}
				}
			}
		}
	}
	if !slices.ContainsFunc(sent[true]["function"], func(m map[string]any) bool { return m["name"] == "get_current_weather" }) {
		t.Errorf("responses tools = %v", sent[true]["function"])
	}
}

func kind(v any) string {
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
