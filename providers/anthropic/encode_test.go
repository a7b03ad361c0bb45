package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmtest"
)

func callPart(id, name, args string) domain.Part {
	return domain.Part{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}}
}

func resultPart(id, name, content string, isErr bool) domain.Part {
	return domain.Part{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: id, Name: name, Content: content, IsError: isErr}}
}

func TestEncodeFullConversation(t *testing.T) {
	t.Parallel()
	temp := 0.2
	no := false
	req := &agents.Request{
		System: "RULES.dynamic",
		Messages: []agents.Message{
			agents.UserMessage("Revenue?"),
			{Role: domain.RoleAssistant, Parts: []domain.Part{
				{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "think", Signature: "SIG", Provider: "anthropic"}},
				{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Provider: "anthropic", Opaque: []byte("\x00\xffsecret")}},
				{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Provider: "anthropic/raw", Opaque: []byte("not base64!")}},
				{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "unsigned"}},
				{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "x", Signature: "s", Provider: "openai"}},
				domain.TextPart("Let me query."),
				callPart("toolu_1", "run_sql", `{"sql":"SELECT 1"}`),
				callPart("toolu_2", "list", ``),
			}},
			{Role: domain.RoleTool, Parts: []domain.Part{
				resultPart("toolu_1", "run_sql", "[1]", false),
				resultPart("toolu_2", "list", "timeout", true),
			}},
			agents.UserMessage("and 2023?"),
		},
		Tools: []agents.ToolSpec{
			{Name: "run_sql", Description: "Run SQL", Schema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"}},"required":["sql"]}`)},
			{Name: "list", Description: "List"},
		},
		Options: agents.Options{Temperature: &temp, ParallelToolCalls: &no},
		Cache:   agents.CacheHints{SystemPrefix: 5, Messages: []int{2}},
	}
	w, err := encodeRequest(req, encodeOptions{model: "claude-x", defaultMaxTokens: 8192})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-x","max_tokens":8192,` +
		`"system":[{"type":"text","text":"RULES","cache_control":{"type":"ephemeral"}},{"type":"text","text":".dynamic"}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"Revenue?"}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"think","signature":"SIG"},{"type":"redacted_thinking","data":"AP9zZWNyZXQ="},{"type":"redacted_thinking","data":"not base64!"},` +
		`{"type":"text","text":"Let me query."},{"type":"tool_use","id":"toolu_1","name":"run_sql","input":{"sql":"SELECT 1"}},` +
		`{"type":"tool_use","id":"toolu_2","name":"list","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"[1]"},` +
		`{"type":"tool_result","tool_use_id":"toolu_2","content":"timeout","is_error":true,"cache_control":{"type":"ephemeral"}},` +
		`{"type":"text","text":"and 2023?"}]}],` +
		`"tools":[{"name":"run_sql","description":"Run SQL","input_schema":{"type":"object","properties":{"sql":{"type":"string"}},"required":["sql"]}},` +
		`{"name":"list","description":"List","input_schema":{"type":"object","properties":{}}}],` +
		`"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"temperature":0.2,"stream":true}`
	if got := llmtest.MustJSON(t, w); got != want {
		t.Errorf("request\n got %s\nwant %s", got, want)
	}
}

func TestEncodeToolResultsBeforeText(t *testing.T) {
	t.Parallel()
	// A user message before the tool message merges into one user turn,
	// but the tool results must lead it.
	req := &agents.Request{Messages: []agents.Message{
		agents.UserMessage("q"),
		{Role: domain.RoleAssistant, Parts: []domain.Part{callPart("a", "t", `{}`)}},
		agents.UserMessage("by the way"),
		{Role: domain.RoleTool, Parts: []domain.Part{resultPart("a", "t", "ok", false)}},
	}, Tools: []agents.ToolSpec{{Name: "t"}}}
	w, err := encodeRequest(req, encodeOptions{model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Messages) != 3 {
		t.Fatalf("messages = %d, want 3 (alternating roles)", len(w.Messages))
	}
	last := w.Messages[2].Content
	if last[0].Type != "tool_result" || last[1].Type != "text" {
		t.Errorf("user turn order = %s, %s; want tool_result first", last[0].Type, last[1].Type)
	}
	if w.MaxTokens != 4096 {
		t.Errorf("max_tokens default = %d, want 4096", w.MaxTokens)
	}
}

func TestEncodeCacheBreakpoints(t *testing.T) {
	t.Parallel()
	var msgs []agents.Message
	for i := range 8 {
		if i%2 == 0 {
			msgs = append(msgs, agents.UserMessage("u"))
		} else {
			msgs = append(msgs, agents.AssistantMessage("a"))
		}
	}
	tests := []struct {
		name   string
		hints  agents.CacheHints
		system string
		// wantSys is the number of system blocks and whether the first is marked.
		wantSys       int
		wantSysMarked bool
		wantMarked    []int // wire message indexes with a marked last block
	}{
		{"none", agents.CacheHints{}, "abc", 1, false, nil},
		{"whole system", agents.CacheHints{SystemPrefix: 3}, "abc", 1, true, nil},
		{"prefix beyond length is clamped", agents.CacheHints{SystemPrefix: 99}, "abc", 1, true, nil},
		{"four at most, latest kept", agents.CacheHints{SystemPrefix: 1, Messages: []int{0, 1, 2, 3, 5, 9}}, "abc", 2, true, []int{2, 3, 5}},
		{"no system: four messages", agents.CacheHints{Messages: []int{7, 1, 2, 3, 4, 4}}, "", 0, false, []int{2, 3, 4, 7}},
		{"mid-rune split backs off", agents.CacheHints{SystemPrefix: 2}, "äb", 2, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := encodeRequest(&agents.Request{System: tt.system, Messages: msgs, Cache: tt.hints}, encodeOptions{model: "m", cacheTTL: "1h"})
			if err != nil {
				t.Fatal(err)
			}
			if len(w.System) != tt.wantSys {
				t.Fatalf("system blocks = %d, want %d: %s", len(w.System), tt.wantSys, llmtest.MustJSON(t, w.System))
			}
			if tt.wantSys > 0 && (w.System[0].CacheControl != nil) != tt.wantSysMarked {
				t.Errorf("system marked = %v", w.System[0].CacheControl != nil)
			}
			if tt.wantSysMarked && w.System[0].CacheControl.TTL != "1h" {
				t.Errorf("ttl = %q", w.System[0].CacheControl.TTL)
			}
			var got []int
			total := 0
			for i, m := range w.Messages {
				for j, b := range m.Content {
					if b.CacheControl != nil {
						total++
						if j == len(m.Content)-1 {
							got = append(got, i)
						}
					}
				}
			}
			for _, b := range w.System {
				if b.CacheControl != nil {
					total++
				}
			}
			if llmtest.MustJSON(t, got) != llmtest.MustJSON(t, tt.wantMarked) {
				t.Errorf("marked messages = %v, want %v", got, tt.wantMarked)
			}
			if total > MaxCacheBreakpoints {
				t.Errorf("%d breakpoints, more than %d", total, MaxCacheBreakpoints)
			}
			for _, b := range w.System {
				if !strings.HasPrefix(*b.Text, "b") && !strings.HasPrefix(*b.Text, "ä") && !strings.HasPrefix(*b.Text, "a") {
					t.Errorf("system split produced %q", *b.Text)
				}
			}
		})
	}
}

func TestEncodeThinkingAndToolChoice(t *testing.T) {
	t.Parallel()
	tools := []agents.ToolSpec{{Name: "t"}}
	tests := []struct {
		name    string
		opts    agents.Options
		want    string // tool_choice + thinking JSON
		wantErr string
	}{
		{"auto", agents.Options{}, `{"type":"auto"}|null`, ""},
		{"none", agents.Options{ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceNone}}, `{"type":"none"}|null`, ""},
		{"required", agents.Options{ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceRequired}}, `{"type":"any"}|null`, ""},
		{"named", agents.Options{ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceTool, Name: "t"}}, `{"type":"tool","name":"t"}|null`, ""},
		{"named without name", agents.Options{ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceTool}}, "", "needs a tool name"},
		{"budget", agents.Options{ReasoningBudget: 2000, MaxTokens: 8000}, `{"type":"auto"}|{"type":"enabled","budget_tokens":2000}`, ""},
		{"small budget raised to minimum", agents.Options{ReasoningBudget: 10, MaxTokens: 8000}, `{"type":"auto"}|{"type":"enabled","budget_tokens":1024}`, ""},
		{"budget above max_tokens", agents.Options{ReasoningBudget: 9000, MaxTokens: 8000}, "", "must be below max_tokens"},
		{"thinking forbids forced tools", agents.Options{ReasoningBudget: 2000, MaxTokens: 8000, ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceRequired}}, "", "only be auto or none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := encodeRequest(&agents.Request{Messages: []agents.Message{agents.UserMessage("x")}, Tools: tools, Options: tt.opts}, encodeOptions{model: "m"})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, errEncode) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := llmtest.MustJSON(t, w.ToolChoice) + "|" + llmtest.MustJSON(t, w.Thinking); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestEncodeRejectsMisplacedParts(t *testing.T) {
	t.Parallel()
	_, err := encodeRequest(&agents.Request{Messages: []agents.Message{
		{Role: domain.RoleUser, Parts: []domain.Part{callPart("a", "t", "{}")}},
	}}, encodeOptions{model: "m"})
	if err == nil || !strings.Contains(err.Error(), "message 0") {
		t.Errorf("tool call in a user message: err = %v", err)
	}
	_, err = encodeRequest(&agents.Request{Tools: []agents.ToolSpec{{Name: "t", Schema: json.RawMessage(`{"type":`)}}}, encodeOptions{model: "m"})
	if err == nil || !strings.Contains(err.Error(), `tool "t"`) {
		t.Errorf("invalid schema: err = %v", err)
	}
}

func TestEncodeFiles(t *testing.T) {
	t.Parallel()
	w, err := encodeRequest(&agents.Request{Messages: []agents.Message{{Role: domain.RoleUser, Parts: []domain.Part{
		{Type: domain.PartImage, File: &domain.FileRef{MediaType: "image/png", URI: "data:image/png;base64,AAAA"}},
		{Type: domain.PartImage, File: &domain.FileRef{MediaType: "image/png", URI: "https://x/y.png"}},
		{Type: domain.PartFile, File: &domain.FileRef{Name: "q.csv", MediaType: "text/csv", URI: "artifact://1"}},
	}}}}, encodeOptions{model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},` +
		`{"type":"image","source":{"type":"url","url":"https://x/y.png"}},{"type":"text","text":"[attached file q.csv (text/csv)]"}]`
	if got := llmtest.MustJSON(t, w.Messages[0].Content); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
