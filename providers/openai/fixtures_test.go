package openai_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/openai"
	"github.com/bichat-go/bichat/providers/providertest"
)

// want is what a fixture holds, read from it with generic JSON, apart from
// the package's decoders.
type want struct {
	text      string
	reasoning string
	calls     []wantCall
	items     []agents.ItemKind
	stop      agents.StopReason
	prompt    int
	output    int
	cached    int
	reasonTok int
}

type wantCall struct{ id, name, args string }

func replay(t *testing.T, responses bool, r providertest.Replay) agents.Model {
	t.Helper()
	m, err := openai.New(openai.Options{Connection: openai.Connection{BaseURL: providertest.ServeFixture(t, r),
		APIKey: "test-key", MaxAttempts: 1}, Model: "gpt-4o", ResponsesAPI: responses})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func jnum(m map[string]any, path ...string) int {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return 0
		}
		v = mm[p]
	}
	f, _ := v.(float64)
	return int(f)
}

func jstr(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// chatWant reads Chat Completions chunks (the data of each event).
func chatWant(t *testing.T, events []string) want {
	t.Helper()
	var w want
	type call struct {
		id, name string
		args     strings.Builder
	}
	var calls []*call
	byIndex := map[int]*call{}
	finish, refusal, lastCall := "", false, false
	for _, d := range events {
		if d == "[DONE]" {
			continue
		}
		var ck map[string]any
		if err := json.Unmarshal([]byte(d), &ck); err != nil {
			t.Fatalf("fixture chunk %q: %v", d, err)
		}
		choices, _ := ck["choices"].([]any)
		for _, c := range choices {
			c := c.(map[string]any)
			if jnum(c, "index") != 0 {
				continue
			}
			delta, _ := c["delta"].(map[string]any)
			if s := jstr(delta, "content"); s != "" {
				w.text += s
				lastCall = false
			}
			if s := jstr(delta, "refusal"); s != "" {
				w.text += s
				refusal, lastCall = true, false
			}
			tcs, _ := delta["tool_calls"].([]any)
			for _, tc := range tcs {
				tc := tc.(map[string]any)
				i := jnum(tc, "index")
				cl := byIndex[i]
				if cl == nil || jstr(tc, "id") != "" && cl.id != "" && jstr(tc, "id") != cl.id {
					cl = &call{}
					byIndex[i] = cl
					calls = append(calls, cl)
				}
				if id := jstr(tc, "id"); id != "" {
					cl.id = id
				}
				fn, _ := tc["function"].(map[string]any)
				if n := jstr(fn, "name"); n != "" {
					cl.name = n
				}
				cl.args.WriteString(jstr(fn, "arguments"))
				lastCall = true
			}
			anns, _ := delta["annotations"].([]any)
			for range anns {
				w.items = append(w.items, agents.ItemCitation)
			}
			if f := jstr(c, "finish_reason"); f != "" {
				finish = f
			}
		}
		if u, ok := ck["usage"].(map[string]any); ok {
			w.prompt, w.output = jnum(u, "prompt_tokens"), jnum(u, "completion_tokens")
			w.cached = jnum(u, "prompt_tokens_details", "cached_tokens")
			w.reasonTok = jnum(u, "completion_tokens_details", "reasoning_tokens")
		}
	}
	cut := (finish == "length" || finish == "content_filter") && lastCall && len(calls) > 0
	if cut {
		calls = calls[:len(calls)-1] // cut by the limit or the filter
	}
	for _, c := range calls {
		w.calls = append(w.calls, wantCall{c.id, c.name, c.args.String()})
	}
	w.stop = chatStop(finish, refusal, len(w.calls) > 0, cut)
	return w
}

// chatStop is the stop reason of a Chat Completions answer: calls make it
// tool_use unless a call was cut (the provider's reason stays).
func chatStop(finish string, refusal, calls, cut bool) agents.StopReason {
	s := map[string]agents.StopReason{"stop": agents.StopEndTurn, "length": agents.StopMaxTokens,
		"tool_calls": agents.StopToolUse, "content_filter": agents.StopContentFilter}[finish]
	if refusal && s == agents.StopEndTurn {
		s = agents.StopRefusal
	}
	if cut && (s == "" || s == agents.StopEndTurn) {
		s = agents.StopMaxTokens
	}
	if calls && !cut {
		s = agents.StopToolUse
	}
	return s
}

// chatWholeWant reads a chat.completion object.
func chatWholeWant(t *testing.T, body []byte) want {
	t.Helper()
	var c map[string]any
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	var w want
	ch := c["choices"].([]any)[0].(map[string]any)
	msg := ch["message"].(map[string]any)
	w.text = jstr(msg, "content") + jstr(msg, "refusal")
	tcs, _ := msg["tool_calls"].([]any)
	for _, tc := range tcs {
		tc := tc.(map[string]any)
		fn := tc["function"].(map[string]any)
		w.calls = append(w.calls, wantCall{jstr(tc, "id"), jstr(fn, "name"), jstr(fn, "arguments")})
	}
	anns, _ := msg["annotations"].([]any)
	for range anns {
		w.items = append(w.items, agents.ItemCitation)
	}
	finish := jstr(ch, "finish_reason")
	cut := (finish == "length" || finish == "content_filter") && len(w.calls) > 0
	if cut {
		w.calls = w.calls[:len(w.calls)-1]
	}
	w.stop = chatStop(finish, jstr(msg, "refusal") != "", len(w.calls) > 0, cut)
	u := c["usage"].(map[string]any)
	w.prompt, w.output = jnum(u, "prompt_tokens"), jnum(u, "completion_tokens")
	w.cached = jnum(u, "prompt_tokens_details", "cached_tokens")
	w.reasonTok = jnum(u, "completion_tokens_details", "reasoning_tokens")
	return w
}

// responseWant reads a Responses API response object.
func responseWant(t *testing.T, r map[string]any) want {
	t.Helper()
	var w want
	refusal := false
	out, _ := r["output"].([]any)
	for _, it := range out {
		it := it.(map[string]any)
		switch typ := jstr(it, "type"); typ {
		case "message":
			for _, c := range it["content"].([]any) {
				c := c.(map[string]any)
				w.text += jstr(c, "text") + jstr(c, "refusal")
				refusal = refusal || jstr(c, "refusal") != ""
				anns, _ := c["annotations"].([]any)
				for range anns {
					w.items = append(w.items, agents.ItemCitation)
				}
			}
		case "function_call":
			w.calls = append(w.calls, wantCall{jstr(it, "call_id"), jstr(it, "name"), jstr(it, "arguments")})
		case "reasoning":
			for _, s := range it["summary"].([]any) {
				w.reasoning += jstr(s.(map[string]any), "text")
			}
		default:
			if strings.HasSuffix(typ, "_call") {
				w.items = append(w.items, agents.ItemServerToolCall)
			} else {
				w.items = append(w.items, agents.ItemUnsupported)
			}
		}
	}
	w.stop = agents.StopEndTurn
	if refusal {
		w.stop = agents.StopRefusal
	}
	if jstr(r, "status") == "incomplete" {
		w.stop = agents.StopOther
		if d, ok := r["incomplete_details"].(map[string]any); ok && jstr(d, "reason") == "max_output_tokens" {
			w.stop = agents.StopMaxTokens
		}
	}
	if len(w.calls) > 0 && w.stop != agents.StopMaxTokens {
		w.stop = agents.StopToolUse
	}
	if u, ok := r["usage"].(map[string]any); ok {
		w.prompt, w.output = jnum(u, "input_tokens"), jnum(u, "output_tokens")
		w.cached = jnum(u, "input_tokens_details", "cached_tokens")
		w.reasonTok = jnum(u, "output_tokens_details", "reasoning_tokens")
	}
	return w
}

// responsesStreamWant reads a Responses event stream: text and reasoning
// from the deltas, calls from the items and argument deltas, provider
// items from finished built-in items and added annotations, usage and
// status from the terminal event.
func responsesStreamWant(t *testing.T, events []string) want {
	t.Helper()
	var w want
	var final map[string]any
	type call struct {
		id, name string
		args     strings.Builder
	}
	var calls []*call
	byOutput := map[int]*call{}
	for _, d := range events {
		if d == "[DONE]" {
			continue // after the terminal event; the adapter stops before it
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("fixture event %q: %v", d, err)
		}
		switch jstr(ev, "type") {
		case "response.output_text.delta", "response.refusal.delta":
			w.text += jstr(ev, "delta")
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			w.reasoning += jstr(ev, "delta")
		case "response.output_item.added":
			it := ev["item"].(map[string]any)
			if jstr(it, "type") == "function_call" {
				c := &call{id: jstr(it, "call_id"), name: jstr(it, "name")}
				c.args.WriteString(jstr(it, "arguments"))
				byOutput[jnum(ev, "output_index")] = c
				calls = append(calls, c)
			}
		case "response.function_call_arguments.delta":
			byOutput[jnum(ev, "output_index")].args.WriteString(jstr(ev, "delta"))
		case "response.output_item.done":
			it := ev["item"].(map[string]any)
			switch typ := jstr(it, "type"); {
			case typ == "message" || typ == "reasoning" || typ == "function_call":
			case strings.HasSuffix(typ, "_call"):
				w.items = append(w.items, agents.ItemServerToolCall)
			default:
				w.items = append(w.items, agents.ItemUnsupported)
			}
		case "response.output_text.annotation.added":
			w.items = append(w.items, agents.ItemCitation)
		case "response.completed", "response.incomplete":
			final = ev["response"].(map[string]any)
		}
	}
	if final == nil {
		t.Fatal("fixture has no terminal event")
	}
	fw := responseWant(t, final)
	w.stop, w.prompt, w.output, w.cached, w.reasonTok = fw.stop, fw.prompt, fw.output, fw.cached, fw.reasonTok
	for _, c := range calls {
		w.calls = append(w.calls, wantCall{c.id, c.name, c.args.String()})
	}
	if len(w.calls) > 0 && w.stop == agents.StopEndTurn {
		w.stop = agents.StopToolUse
	}
	return w
}

func check(t *testing.T, resp *agents.Response, w want) {
	t.Helper()
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
		if c.ID != w.calls[i].id || c.Name != w.calls[i].name || !jsonEqual(string(c.Arguments), w.calls[i].args) {
			t.Errorf("call %d = %s %s %s, want %+v", i, c.ID, c.Name, c.Arguments, w.calls[i])
		}
	}
	if got := providertest.ItemKinds(resp); !slices.Equal(got, w.items) {
		t.Errorf("items = %v, want %v", got, w.items)
	}
	if resp.Stop != w.stop {
		t.Errorf("stop = %q, want %q", resp.Stop, w.stop)
	}
	u := resp.Usage
	if u.PromptTokens != w.prompt || u.CompletionTokens != w.output || u.CachedTokens != w.cached || u.ReasoningTokens != w.reasonTok {
		t.Errorf("usage = %+v, want prompt %d completion %d cached %d reasoning %d", u, w.prompt, w.output, w.cached, w.reasonTok)
	}
}

func jsonEqual(a, b string) bool {
	if strings.TrimSpace(b) == "" {
		b = "{}"
	}
	return providertest.SameJSON(a, b)
}

// TestVendorFixtures replays every OpenAI stream and response the vendor's
// SDKs record or its API reference publishes
// (shared/reference/provider-fixtures) through the adapter over HTTP and
// compares text, reasoning, tool calls, provider items, stop reason and
// usage with an independent reading of the same file. Request examples
// are checked against the encoders in TestSpecRequestExamples.
func TestVendorFixtures(t *testing.T) {
	t.Parallel()
	dir := providertest.FixtureDir(t)
	var cov providertest.Coverage
	var files []string
	for _, sub := range []string{"openai-spec", "openai-python", "openai-node"} {
		files = append(files, providertest.FixtureFiles(t, dir, sub)...)
	}
	for _, f := range files {
		base := filepath.Base(f)
		switch {
		case strings.HasSuffix(base, ".request.txt"):
			cov.NotApplicable(f, "a request example (code samples), not a response; its JSON body is checked against the encoders in TestSpecRequestExamples")
			continue
		case base == "test_completions_streaming.py":
			cov.NotApplicable(f, "the SDK test that recorded the .bin streams, not a response; the streams themselves are replayed")
			continue
		}
		body, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(f, func(t *testing.T) {
			var (
				m agents.Model
				w want
			)
			switch {
			case base == "chat_completions_streaming.txt":
				// The API reference's streaming example: chunk objects
				// separated by blank lines without the data: framing,
				// with a "...." elision. Each object is sent as an event.
				var sse bytes.Buffer
				var events []string
				for _, p := range strings.Split(string(body), "\n\n") {
					p = strings.TrimSpace(p)
					if !json.Valid([]byte(p)) {
						continue
					}
					events = append(events, p)
					sse.WriteString("data: " + p + "\n\n")
				}
				sse.WriteString("data: [DONE]\n\n")
				if len(events) < 2 {
					t.Fatalf("the example has %d chunks", len(events))
				}
				m, w = replay(t, false, providertest.Replay{Body: sse.Bytes()}), chatWant(t, events)
			case strings.HasPrefix(base, "chat_completions_"):
				m = replay(t, false, providertest.Replay{ContentType: "application/json", Body: body})
				w = chatWholeWant(t, body)
			case base == "responses_streaming.txt" || strings.HasPrefix(base, "responses_stream_"):
				_, events := providertest.SplitSSE(body)
				m, w = replay(t, true, providertest.Replay{Body: body}), responsesStreamWant(t, events)
			case strings.HasPrefix(base, "responses_"):
				var r map[string]any
				if err := json.Unmarshal(body, &r); err != nil {
					t.Fatal(err)
				}
				m, w = replay(t, true, providertest.Replay{ContentType: "application/json", Body: body}), responseWant(t, r)
			default: // recorded Chat Completions streams (.bin, chat_stream_*.sse)
				_, events := providertest.SplitSSE(body)
				m, w = replay(t, false, providertest.Replay{Body: body}), chatWant(t, events)
			}
			_, resp, err := providertest.Collect(t, m)
			if err != nil {
				t.Fatalf("replay failed: %v", err)
			}
			check(t, resp, w)
		})
		cov.Cover(f)
	}
	cov.Check(t, files)
}
