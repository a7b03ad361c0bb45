package gemini_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/providers/gemini"
	"github.com/bichat-go/bichat/providers/providertest"
)

// gwant is what a fixture holds, read with generic JSON apart from the
// package's decoder.
type gwant struct {
	text, reasoning string
	calls           []gcall
	items           []agents.ItemKind
	stop            agents.StopReason
	prompt, output  int
	cached, thought int
	// err describes the error expected instead of an answer.
	err func(error) bool
	// errWhy names the expected error in failure messages.
	errWhy string
}

type gcall struct{ id, name, args string }

func gnum(m map[string]any, k string) int {
	f, _ := m[k].(float64)
	return int(f)
}

// readGemini reads GenerateContentResponse objects in order.
func readGemini(t *testing.T, objs []map[string]any) gwant {
	t.Helper()
	var w gwant
	finish, finishMsg := "", ""
	var usage map[string]any
	seen := map[string]bool{}
	fresh := func(kind string, v any) bool {
		if v == nil {
			return false
		}
		b, _ := json.Marshal(v)
		k := kind + string(b)
		if seen[k] {
			return false
		}
		seen[k] = true
		return true
	}
	for _, o := range objs {
		if e, ok := o["error"].(map[string]any); ok {
			code := strconv.Itoa(gnum(e, "code"))
			w.errWhy = "in-stream error " + code
			w.err = func(err error) bool {
				var ae *llmhttp.APIError
				return errors.As(err, &ae) && ae.Code == code && ae.Type == e["status"]
			}
			return w
		}
		if u, ok := o["usageMetadata"].(map[string]any); ok {
			usage = u
		}
		cands, _ := o["candidates"].([]any)
		pf, _ := o["promptFeedback"].(map[string]any)
		if len(cands) == 0 {
			if br, _ := pf["blockReason"].(string); br != "" {
				w.errWhy = "blocked prompt " + br
				w.err = func(err error) bool {
					var ae *llmhttp.APIError
					return errors.As(err, &ae) && ae.Type == gemini.ErrTypeBlocked && ae.Code == br && !ae.Retryable()
				}
				return w
			}
			continue
		}
		c := cands[0].(map[string]any)
		content, _ := c["content"].(map[string]any)
		parts, _ := content["parts"].([]any)
		for _, p := range parts {
			p := p.(map[string]any)
			switch {
			case p["functionCall"] != nil:
				fc := p["functionCall"].(map[string]any)
				args, _ := json.Marshal(fc["args"])
				if fc["args"] == nil {
					args = []byte("{}")
				}
				id, _ := fc["id"].(string)
				w.calls = append(w.calls, gcall{id, fc["name"].(string), string(args)})
			case p["thought"] == true:
				s, _ := p["text"].(string)
				w.reasoning += s
			case p["executableCode"] != nil:
				w.items = append(w.items, agents.ItemCode)
			case p["codeExecutionResult"] != nil:
				w.items = append(w.items, agents.ItemCodeResult)
			case p["inlineData"] != nil || p["fileData"] != nil:
				w.items = append(w.items, agents.ItemMedia)
			case p["text"] != nil:
				w.text += p["text"].(string)
			case len(p) > 0 && p["thoughtSignature"] == nil:
				w.items = append(w.items, agents.ItemUnsupported)
			}
		}
		if cm, ok := c["citationMetadata"].(map[string]any); ok && fresh("c", cm) {
			for _, k := range []string{"citations", "citationSources"} {
				l, _ := cm[k].([]any)
				for range l {
					w.items = append(w.items, agents.ItemCitation)
				}
			}
		}
		if gm, ok := c["groundingMetadata"].(map[string]any); ok && fresh("g", gm) {
			w.items = append(w.items, agents.ItemGrounding)
			chunks, _ := gm["groundingChunks"].([]any)
			for _, ch := range chunks {
				for range ch.(map[string]any) {
					w.items = append(w.items, agents.ItemCitation)
				}
			}
		}
		if um, ok := c["urlContextMetadata"]; ok && fresh("u", um) {
			w.items = append(w.items, agents.ItemGrounding)
		}
		blocked := func(rs any) bool {
			l, _ := rs.([]any)
			for _, r := range l {
				if r.(map[string]any)["blocked"] == true {
					return true
				}
			}
			return false
		}
		if blocked(c["safetyRatings"]) {
			w.items = append(w.items, agents.ItemSafety)
		}
		if br, _ := pf["blockReason"].(string); br != "" || blocked(pf["safetyRatings"]) {
			w.items = append(w.items, agents.ItemSafety)
		}
		if f, _ := c["finishReason"].(string); f != "" {
			finish = f
			finishMsg, _ = c["finishMessage"].(string)
		}
	}
	switch finish {
	case "":
		w.errWhy = "incomplete (no finishReason)"
		w.err = func(err error) bool { return errors.Is(err, llmhttp.ErrIncomplete) }
		return w
	case "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL":
		w.errWhy = "finish reason " + finish
		w.err = func(err error) bool {
			var ae *llmhttp.APIError
			return errors.As(err, &ae) && ae.Type == gemini.ErrTypeFinish && ae.Code == finish
		}
		return w
	case "STOP":
		w.stop = agents.StopEndTurn
	case "MAX_TOKENS":
		w.stop = agents.StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII":
		w.stop = agents.StopContentFilter
	default:
		w.stop = agents.StopOther
	}
	if len(w.calls) > 0 && w.stop == agents.StopEndTurn {
		w.stop = agents.StopToolUse
	}
	if finishMsg != "" {
		w.items = append(w.items, agents.ItemNotice)
	}
	if usage != nil {
		w.prompt = gnum(usage, "promptTokenCount") + gnum(usage, "toolUsePromptTokenCount")
		w.output = gnum(usage, "candidatesTokenCount") + gnum(usage, "thoughtsTokenCount")
		w.cached, w.thought = gnum(usage, "cachedContentTokenCount"), gnum(usage, "thoughtsTokenCount")
	}
	return w
}

func gcheck(t *testing.T, resp *agents.Response, err error, w gwant) {
	t.Helper()
	if w.err != nil {
		if err == nil || !w.err(err) {
			t.Fatalf("err = %v, want %s", err, w.errWhy)
		}
		return
	}
	if err != nil {
		t.Fatalf("replay failed: %v", err)
	}
	if got := resp.Message.Text(); got != w.text {
		t.Errorf("text = %q, want %q", got, w.text)
	}
	if reasoning := providertest.ReasoningText(resp); reasoning != w.reasoning {
		t.Errorf("reasoning = %q, want %q", reasoning, w.reasoning)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != len(w.calls) {
		t.Fatalf("calls = %+v, want %+v", calls, w.calls)
	}
	for i, c := range calls {
		wc := w.calls[i]
		if c.Name != wc.name || !providertest.SameJSON(string(c.Arguments), wc.args) ||
			(wc.id != "" && c.ID != wc.id) || (wc.id == "" && !strings.HasPrefix(c.ID, gemini.SyntheticIDPrefix)) {
			t.Errorf("call %d = %s %s %s, want %+v", i, c.ID, c.Name, c.Arguments, wc)
		}
	}
	if got := providertest.ItemKinds(resp); !slices.Equal(got, w.items) {
		t.Errorf("items = %v, want %v", got, w.items)
	}
	if resp.Stop != w.stop {
		t.Errorf("stop = %q, want %q", resp.Stop, w.stop)
	}
	u := resp.Usage
	if u.PromptTokens != w.prompt || u.CompletionTokens != w.output || u.CachedTokens != w.cached || u.ReasoningTokens != w.thought {
		t.Errorf("usage = %+v, want prompt %d completion %d cached %d reasoning %d", u, w.prompt, w.output, w.cached, w.thought)
	}
}

func replayModel(t *testing.T, r providertest.Replay) *gemini.Model {
	t.Helper()
	m, err := gemini.New(gemini.Config{Model: "gemini-replay", APIKey: "test-key", MaxAttempts: 1,
		BaseURL: providertest.ServeFixture(t, r)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestVendorFixtures replays every generateContent and
// streamGenerateContent response of Firebase's shared SDK test data
// (shared/reference/provider-fixtures/gemini-firebase) through the
// adapter over HTTP, byte for byte: streams through Stream, whole
// responses through Generate, error bodies with their HTTP status. Text,
// reasoning, function calls, provider items (code execution, inline
// data, citations, grounding, URL context, safety blocks, finish
// messages), stop reason, usage and the errors are compared with an
// independent reading of each file.
func TestVendorFixtures(t *testing.T) {
	t.Parallel()
	dir := providertest.FixtureDir(t)
	files := providertest.FixtureFiles(t, dir, "gemini-firebase")
	var cov providertest.Coverage
	for _, f := range files {
		base := filepath.Base(f)
		body, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		isJSON := json.Unmarshal(body, &obj) == nil
		switch {
		case strings.Contains(base, "generate-images"):
			cov.NotApplicable(f, "an Imagen predict response (generateImages), an API bichat does not call")
			continue
		case isJSON && obj["totalTokens"] != nil:
			cov.NotApplicable(f, "a countTokens response, an API bichat does not call")
			continue
		case base == "open-api-schema.json":
			cov.NotApplicable(f, "the OpenAPI-subset schema of the parameters field; bichat sends parametersJsonSchema, converted as json-schema.json is in TestVendorSchemaFixture")
			continue
		case base == "json-schema.json":
			continue // TestVendorSchemaFixture
		}
		cov.Cover(f)
		t.Run(f, func(t *testing.T) {
			switch {
			case strings.HasSuffix(base, ".html"):
				// An HTML 404 page from a wrong location in the URL.
				m := replayModel(t, providertest.Replay{Status: http.StatusNotFound, ContentType: "text/html", Body: body})
				_, err := m.Generate(t.Context(), &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
				var ae *llmhttp.APIError
				if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound {
					t.Fatalf("err = %v, want an API error with HTTP 404", err)
				}
			case isJSON && obj["error"] != nil:
				// An error body: the HTTP status is its code.
				e := obj["error"].(map[string]any)
				status := gnum(e, "code")
				m := replayModel(t, providertest.Replay{Status: status, ContentType: "application/json", Body: body})
				var err error
				if strings.HasPrefix(base, "streaming-") {
					_, _, err = providertest.Collect(t, m)
				} else {
					_, err = m.Generate(t.Context(), &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
				}
				var ae *llmhttp.APIError
				msg, _ := e["message"].(string)
				if !errors.As(err, &ae) || ae.StatusCode != status || ae.Type != e["status"] || !strings.Contains(ae.Message, llmhttp.Redact(msg)) {
					t.Fatalf("err = %#v, want HTTP %d %v %q", err, status, e["status"], msg)
				}
			case isJSON:
				m := replayModel(t, providertest.Replay{ContentType: "application/json", Body: body})
				resp, err := m.Generate(t.Context(), &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
				gcheck(t, resp, err, readGemini(t, []map[string]any{obj}))
			default: // an SSE stream
				_, events := providertest.SplitSSE(body)
				var objs []map[string]any
				for _, e := range events {
					var o map[string]any
					if err := json.Unmarshal([]byte(e), &o); err != nil {
						t.Fatalf("fixture event %q: %v", e, err)
					}
					objs = append(objs, o)
				}
				w := readGemini(t, objs)
				if i := bytes.Index(body, []byte("\n{")); i >= 0 && w.err == nil {
					// A JSON error body after the events, outside data:
					// lines: the server failed in the middle.
					var eb struct {
						Error map[string]any `json:"error"`
					}
					if err := json.Unmarshal(body[i:], &eb); err != nil || eb.Error == nil {
						t.Fatalf("stray content is not an error body: %v", err)
					}
					code := strconv.Itoa(gnum(eb.Error, "code"))
					w = gwant{errWhy: "mid-stream error " + code, err: func(err error) bool {
						var ae *llmhttp.APIError
						return errors.As(err, &ae) && ae.Code == code && ae.Type == eb.Error["status"]
					}}
				}
				if len(objs) == 0 {
					t.Fatal("no events")
				}
				_, resp, err := providertest.Collect(t, replayModel(t, providertest.Replay{Body: body}))
				gcheck(t, resp, err, w)
			}
		})
	}
	cov.NotApplicable("gemini-firebase/mock-responses/schema/json-schema.json", "a request schema, converted in TestVendorSchemaFixture")
	cov.Check(t, files)
}

// TestVendorSchemaFixture converts the JSON Schema Firebase's SDKs send
// as parametersJsonSchema (nullable types, titles, bounds, nested objects)
// and checks the properties survive.
func TestVendorSchemaFixture(t *testing.T) {
	t.Parallel()
	dir := providertest.FixtureDir(t)
	in, err := os.ReadFile(filepath.Join(dir, "gemini-firebase/mock-responses/schema/json-schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := gemini.ConvertSchema(in)
	if err != nil {
		t.Fatalf("ConvertSchema: %v", err)
	}
	var src, got struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(in, &src); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("converted schema %s: %v", out, err)
	}
	if len(src.Properties) == 0 || len(got.Properties) != len(src.Properties) {
		t.Errorf("properties %d -> %d: %s", len(src.Properties), len(got.Properties), out)
	}
}
