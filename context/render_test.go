package context

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// renderBlocks is a small conversation in the middle of a run: two
// parallel tool calls answered in one tool message.
func renderBlocks(t testing.TB) []Block {
	codecs := NewCodecs()
	hist := history(8)
	steps := []agents.Message{
		{Role: domain.RoleAssistant, Parts: []domain.Part{
			{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "Two queries.", Signature: "sig-1", Provider: "anthropic"}},
			call("call_a", "query_database", `{"sql":"SELECT region, sum(total) FROM sales.orders o JOIN sales.customers c ON c.id = o.customer_id GROUP BY 1"}`),
			call("call_b", "get_schema", `{"names":["sales.customers"]}`)}},
		{Role: domain.RoleTool, Parts: []domain.Part{result("call_a", "query_database", "3 rows: north 10, south 20, west 5"),
			result("call_b", "get_schema", "sales.customers: id bigint, region text")}},
	}
	b := NewBuilder(codecs).
		Rules("You are a careful BI analyst.").
		Tools(sqlTool, schemaTool).
		Datasets(ordersDataset, customersDataset).
		JoinHints(ordersJoin).
		Recipes(Recipe{Question: "monthly revenue", SQL: []string{"SELECT date_trunc('month', created_at), sum(total) FROM sales.orders GROUP BY 1;"}, Successes: 2}).
		State(State{Page: "dashboard/revenue", Facts: map[string]string{"currency": "EUR", "year": "2024"}}).
		History(hist...).
		Turn(TextTurn("Revenue by region?")).
		Steps(steps...)
	blocks, err := b.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

func TestRendererGolden(t *testing.T) {
	t.Parallel()
	renderers := map[string]Renderer{
		"openai":    must(NewOpenAIRenderer("gpt-4o")),
		"anthropic": must(NewAnthropicRenderer()),
		"gemini":    must(NewGeminiRenderer()),
	}
	for name, r := range renderers {
		out := compile(t, NewCompiler(), renderBlocks(t), r, Policy{ContextWindow: 200000})
		got, err := json.MarshalIndent(struct {
			Request *agents.Request `json:"request"`
			Tokens  int             `json:"tokens"`
			Prefix  int             `json:"cache_prefix_tokens"`
		}{out.Request, out.Report.Tokens, out.Report.CachePrefixTokens}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("testdata", "render_"+name+".golden.json")
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestRendererGolden -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s rendering differs from %s (rerun with -update if intended):\n%s", name, path, got)
		}
		checkLayout(t, name, out.Request)
	}
}

// checkLayout asserts the provider rules the golden files encode.
func checkLayout(t *testing.T, name string, req *agents.Request) {
	t.Helper()
	// The system prompt prefix covers the rules and references, not memory
	// or state.
	prefix := req.System[:req.Cache.SystemPrefix]
	if !strings.HasPrefix(prefix, "You are a careful BI analyst.") || !strings.Contains(prefix, "sales.customers") ||
		!strings.Contains(prefix, "Join hint: ") || strings.Contains(prefix, "Recipe") || !strings.Contains(req.System[len(prefix):], "Recipe") {
		t.Errorf("%s: system prefix %q", name, prefix)
	}
	if len(req.Tools) != 2 {
		t.Errorf("%s: tools %d", name, len(req.Tools))
	}
	msgs := req.Messages
	if msgs[0].Role != domain.RoleUser {
		t.Errorf("%s: first message role %s", name, msgs[0].Role)
	}
	// Breakpoints: last history message, then the last message.
	hint := req.Cache.Messages
	if len(hint) != 2 || hint[1] != len(msgs)-1 || msgs[hint[0]].Text() != "Revenue in month 2 was 1037.01 EUR." {
		t.Errorf("%s: message breakpoints %v", name, hint)
	}
	turn := hint[0] + 1
	if msgs[turn].Text() != "Revenue by region?" {
		t.Errorf("%s: turn at %d is %q", name, turn, msgs[turn].Text())
	}
	switch name {
	case "openai":
		// One role=tool message per result, in call order.
		tail := msgs[len(msgs)-2:]
		for i, id := range []string{"call_a", "call_b"} {
			if tail[i].Role != domain.RoleTool || len(tail[i].Parts) != 1 || tail[i].Parts[0].ToolResult.CallID != id {
				t.Errorf("openai: tool message %d: %+v", i, tail[i])
			}
		}
	default:
		for i, m := range msgs {
			if m.Role == domain.RoleTool {
				t.Errorf("%s: message %d has role tool", name, i)
			}
			if i > 0 && msgs[i-1].Role == m.Role {
				t.Errorf("%s: messages %d and %d share role %s", name, i-1, i, m.Role)
			}
			seenText := false
			for _, p := range m.Parts {
				if p.Type == domain.PartText {
					seenText = true
				}
				if p.Type == domain.PartToolResult && seenText {
					t.Errorf("%s: message %d has a tool result after text", name, i)
				}
			}
		}
		last := msgs[len(msgs)-1]
		if last.Role != domain.RoleUser || len(last.Parts) != 2 || last.Parts[1].ToolResult.CallID != "call_b" {
			t.Errorf("%s: results message %+v", name, last)
		}
		// Reasoning with its signature survives on the assistant turn.
		prev := msgs[len(msgs)-2]
		if prev.Parts[0].Type != domain.PartReasoning || prev.Parts[0].Reasoning.Signature != "sig-1" {
			t.Errorf("%s: reasoning lost: %+v", name, prev.Parts[0])
		}
	}
}

func TestRendererFor(t *testing.T) {
	t.Parallel()
	cases := map[string]string{"openai": "openai/o200k_base", "anthropic": "anthropic/o200k_base", "gemini": "gemini/o200k_base", "ollama": "openai/o200k_base"}
	for provider, want := range cases {
		r, err := RendererFor(agents.ModelInfo{Provider: provider, Name: "gpt-4o"})
		if err != nil || r.Name() != want {
			t.Errorf("RendererFor(%s) = %v, %v", provider, r, err)
		}
		if provider == "ollama" && r.Margin() != DefaultCompatibleMargin {
			t.Errorf("ollama margin %v", r.Margin())
		}
	}
	if r, _ := RendererFor(agents.ModelInfo{Provider: "openai", Name: "gpt-3.5-turbo"}); r.Name() != "openai/cl100k_base" {
		t.Errorf("gpt-3.5: %s", r.Name())
	}
}

func TestRenderMergesAndDropsOrphans(t *testing.T) {
	t.Parallel()
	codecs := NewCodecs()
	blocks := []Block{
		mustBlock(t, codecs, KindPinned, CodecRules, Rules{Text: "rules"}),
		// A tool result whose call was truncated away, then an assistant
		// message first, then two user messages in a row (a failed run).
		mustBlock(t, codecs, KindHistory, CodecMessage, HistoryMessage{Role: domain.RoleTool, Parts: []domain.Part{result("gone", "q", "orphan")}}, AtPosition(1)),
		mustBlock(t, codecs, KindHistory, CodecMessage, MessageOf(agents.AssistantMessage("earlier answer")), AtPosition(2)),
		mustBlock(t, codecs, KindHistory, CodecMessage, MessageOf(agents.UserMessage("first try")), AtPosition(3)),
		mustBlock(t, codecs, KindTurn, CodecTurn, TextTurn("second try")),
	}
	for name, r := range map[string]Renderer{"openai": openAI(t), "anthropic": must(NewAnthropicRenderer()), "gemini": must(NewGeminiRenderer())} {
		req := compile(t, NewCompiler(), blocks, r, Policy{ContextWindow: 1000}).Request
		js := string(requestJSON(t, req))
		if strings.Contains(js, "orphan") {
			t.Errorf("%s: orphan tool result rendered", name)
		}
		var roles []string
		for _, m := range req.Messages {
			roles = append(roles, string(m.Role))
		}
		got := strings.Join(roles, ",")
		want := "assistant,user,user"
		if name != "openai" {
			want = "user,assistant,user" // a user message first, same roles merged
		}
		if got != want {
			t.Errorf("%s: roles %s, want %s", name, got, want)
		}
		if name != "openai" {
			last := req.Messages[len(req.Messages)-1]
			if len(last.Parts) != 2 || last.Parts[0].Text != "first try" || last.Parts[1].Text != "second try" {
				t.Errorf("%s: merged message %+v", name, last)
			}
			if req.Messages[0].Text() != continuedNote {
				t.Errorf("%s: first message %q", name, req.Messages[0].Text())
			}
		}
	}
}
