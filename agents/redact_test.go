package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// scrubSecret replaces the word SECRET-XYZ (the test's secret).
func scrubSecret(s string) string { return strings.ReplaceAll(s, "SECRET-XYZ", "[R]") }

func TestRedactEventsAndRequests(t *testing.T) {
	t.Parallel()
	lookup := agents.MustTool("lookup", "Looks up.", func(_ context.Context, in struct {
		Key string `json:"key"`
	}) (string, error) {
		return "found " + in.Key, nil
	})
	for _, chunk := range []int{1, 3, 7, 64} {
		m := &scripted.Model{ChunkSize: chunk, Turns: []scripted.Turn{
			{Reasoning: "thinking about SECRET-XYZ", ReasoningSignature: "sig", Text: "I will look SECRET-XYZ up.",
				ToolCalls: []scripted.Call{scripted.CallJSON("lookup", map[string]string{"key": "SECRET-XYZ"})}},
			{Text: "The answer mentions SECRET-XYZ again"},
		}}
		e, err := agents.NewExecutor(agents.Config{Model: m, Tools: []agents.Tool{lookup}, Redact: scrubSecret})
		if err != nil {
			t.Fatal(err)
		}
		items := drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("what is SECRET-XYZ?")}))
		var text strings.Builder
		for _, ev := range events(t, items) {
			b, err := agents.MarshalEvent(ev)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "SECRET-XYZ") {
				t.Errorf("chunk %d: event %s leaks the secret: %s", chunk, ev.Type(), b)
			}
			if d, ok := ev.(*agents.TextDelta); ok {
				text.WriteString(d.Text)
			}
		}
		if got, want := text.String(), "I will look [R] up.The answer mentions [R] again"; got != want {
			t.Errorf("chunk %d: streamed text = %q, want %q", chunk, got, want)
		}
		reqs := m.Requests()
		for i, req := range reqs {
			for _, msg := range req.Messages {
				for _, p := range msg.Parts {
					switch {
					case p.Type == domain.PartText && strings.Contains(p.Text, "SECRET-XYZ"),
						p.ToolCall != nil && strings.Contains(string(p.ToolCall.Arguments), "SECRET-XYZ"),
						p.ToolResult != nil && strings.Contains(p.ToolResult.Content, "SECRET-XYZ"):
						t.Errorf("chunk %d: request %d sends the secret: %+v", chunk, i, p)
					case p.Reasoning != nil && !strings.Contains(p.Reasoning.Text, "SECRET-XYZ"):
						// Signed reasoning goes back exactly as received.
						t.Errorf("chunk %d: request %d changed the signed reasoning: %q", chunk, i, p.Reasoning.Text)
					}
				}
			}
		}
		if len(reqs) != 2 {
			t.Fatalf("chunk %d: %d requests", chunk, len(reqs))
		}
	}
}

func TestRedactKeepsCheckpointWhole(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{scripted.CallJSON(agents.ToolAskUserQuestion,
		map[string]any{"questions": []map[string]any{{"question": "Is SECRET-XYZ yours?"}}})}}}}
	e, err := agents.NewExecutor(agents.Config{Model: m, Redact: scrubSecret})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("check SECRET-XYZ")})))
	in, ok := evs[len(evs)-1].(*agents.Interrupted)
	if !ok {
		t.Fatalf("last event %T", evs[len(evs)-1])
	}
	if in.Questions[0].Question != "Is [R] yours?" {
		t.Fatalf("question = %q", in.Questions[0].Question)
	}
	// The checkpoint is resumed, not shown: it keeps the exact transcript.
	if in.Checkpoint.Questions[0].Question != "Is SECRET-XYZ yours?" || in.Checkpoint.Messages[0].Text() != "check SECRET-XYZ" {
		t.Fatalf("checkpoint was scrubbed: %+v", in.Checkpoint.Questions)
	}
}

func TestRedactMessagesCopies(t *testing.T) {
	t.Parallel()
	ms := []agents.Message{agents.UserMessage("a SECRET-XYZ"), agents.AssistantMessage("clean")}
	out := agents.RedactMessages(ms, scrubSecret)
	if out[0].Text() != "a [R]" || ms[0].Text() != "a SECRET-XYZ" {
		t.Fatalf("RedactMessages = %q, input now %q", out[0].Text(), ms[0].Text())
	}
	clean := []agents.Message{agents.AssistantMessage("clean")}
	if got := agents.RedactMessages(clean, scrubSecret); &got[0] != &clean[0] {
		t.Fatal("a clean transcript was copied")
	}
	if got := agents.RedactMessages(ms, nil); &got[0] != &ms[0] {
		t.Fatal("a nil func copied the transcript")
	}
}

// errGuard is a RunFailure the guard test returns.
type errGuard struct{}

func (errGuard) Error() string                      { return "over budget" }
func (errGuard) RunFailure() (code, message string) { return "budget_exceeded", "No more." }

func TestGuardStopsBeforeModelCall(t *testing.T) {
	t.Parallel()
	noop := agents.MustTool("noop", "Does nothing.", func(context.Context, struct{}) (string, error) { return "ok", nil })
	m := &scripted.Model{ModelInfo: agents.ModelInfo{Provider: "scripted", Name: "priced", ContextWindow: 1000,
		Capabilities: agents.Capabilities{Tools: true}, Pricing: agents.Pricing{InputPerMTok: 1e6}},
		Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
			return scripted.Turn{ToolCalls: []scripted.Call{{Name: "noop", Args: "{}"}}, Usage: domain.Usage{PromptTokens: 2, TotalTokens: 2}}, nil
		}}
	var seen []float64
	e, err := agents.NewExecutor(agents.Config{Model: m, Tools: []agents.Tool{noop}, MaxTurns: 10,
		Guard: func(_ context.Context, tc *agents.TurnContext) error {
			seen = append(seen, tc.CostUSD)
			if tc.Usage.PromptTokens != int(tc.CostUSD) {
				t.Errorf("turn %d: usage %+v does not match cost %v", tc.Turn, tc.Usage, tc.CostUSD)
			}
			if tc.CostUSD >= 4 {
				return errGuard{}
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	items := drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")}))
	last := items[len(items)-1]
	if !errors.Is(last.err, errGuard{}) {
		t.Fatalf("last = %+v, want the guard's error", last)
	}
	rf, ok := items[len(items)-2].ev.(*agents.RunFailed)
	if !ok || rf.Code != "budget_exceeded" || rf.Message != "No more." {
		t.Fatalf("RunFailed = %+v", items[len(items)-2].ev)
	}
	if m.Calls() != 2 || len(seen) != 3 || seen[0] != 0 || seen[1] != 2 || seen[2] != 4 {
		t.Fatalf("model calls %d, guard saw costs %v; want 2 calls and 0, 2, 4", m.Calls(), seen)
	}
}

// A sub-agent whose executor sets no Guard or Redact runs under its
// parent's, and its tool calls carry the parent's attributes.
func TestSubAgentInheritsGuardRedactAndAttributes(t *testing.T) {
	t.Parallel()
	var seenAttrs map[string]string
	childTool := agents.MustTool("look", "Looks.", func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := agents.CallInfoFromContext(ctx)
		seenAttrs = info.Attributes
		return "found SECRET-XYZ", nil
	})
	cm := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{ID: "c1", Name: "look", Args: "{}"}}},
		{Text: "The child saw SECRET-XYZ."},
	}}
	child, err := agents.NewExecutor(agents.Config{Model: cm, Tools: []agents.Tool{childTool}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := agents.NewTaskTool(agents.SubAgent{Name: "helper", Description: "Helps.", Executor: child})
	if err != nil {
		t.Fatal(err)
	}
	pm := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{ID: "t1", Name: agents.ToolTask, Args: `{"agent":"helper","task":"look for SECRET-XYZ"}`}}},
		{Text: "Done."},
	}}
	var guarded []string
	parent, err := agents.NewExecutor(agents.Config{Model: pm, Tools: []agents.Tool{task}, Redact: scrubSecret,
		Guard: func(_ context.Context, tc *agents.TurnContext) error {
			guarded = append(guarded, tc.Input.ParentRunID)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	attrs := map[string]string{"tenant_id": "acme", "user_id": "ana"}
	evs := events(t, drain(t, parent.Run(t.Context(), agents.Input{RunID: "p", Message: agents.UserMessage("go"), Attributes: attrs})))
	for _, ev := range evs {
		b, _ := agents.MarshalEvent(ev)
		if strings.Contains(string(b), "SECRET-XYZ") {
			t.Errorf("event %s leaks the secret: %s", ev.Type(), b)
		}
	}
	for i, req := range cm.Requests() {
		b, _ := json.Marshal(req)
		if strings.Contains(string(b), "SECRET-XYZ") {
			t.Errorf("child request %d sends the secret", i)
		}
	}
	// Two parent calls and two child calls, all guarded.
	if len(guarded) != 4 || guarded[0] != "" || guarded[1] != "p" || guarded[2] != "p" || guarded[3] != "" {
		t.Errorf("guard calls by parent run id = %q", guarded)
	}
	if seenAttrs["user_id"] != "ana" || seenAttrs["tenant_id"] != "acme" {
		t.Errorf("child tool call attributes = %v", seenAttrs)
	}
}
