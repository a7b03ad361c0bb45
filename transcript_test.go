package bichat

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

func call(id string) domain.Part {
	return domain.Part{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: id, Name: "t", Arguments: json.RawMessage(`{}`)}}
}

func result(id, content string) domain.Part {
	return domain.Part{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: id, Name: "t", Content: content}}
}

func text(s string) domain.Part { return domain.TextPart(s) }

func msg(role domain.Role, status domain.MessageStatus, parts ...domain.Part) domain.Message {
	return domain.Message{Role: role, Status: status, Parts: parts}
}

func user(s string) domain.Message { return msg(domain.RoleUser, domain.StatusComplete, text(s)) }

func answer(status domain.MessageStatus, parts ...domain.Part) domain.Message {
	return msg(domain.RoleAssistant, status, parts...)
}

func am(role domain.Role, parts ...domain.Part) agents.Message {
	return agents.Message{Role: role, Parts: parts}
}

func TestExpandAssistant(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		parts []domain.Part
		want  []agents.Message
	}{
		{"empty", nil, nil},
		{"text only", []domain.Part{text("hi")}, []agents.Message{am(domain.RoleAssistant, text("hi"))}},
		{"text, calls, results, text",
			[]domain.Part{text("a"), call("1"), call("2"), result("1", "r1"), result("2", "r2"), text("b")},
			[]agents.Message{
				am(domain.RoleAssistant, text("a"), call("1"), call("2")),
				am(domain.RoleTool, result("1", "r1"), result("2", "r2")),
				am(domain.RoleAssistant, text("b")),
			}},
		{"two tool rounds",
			[]domain.Part{call("1"), result("1", "r1"), text("more"), call("2"), result("2", "r2"), text("done")},
			[]agents.Message{
				am(domain.RoleAssistant, call("1")),
				am(domain.RoleTool, result("1", "r1")),
				am(domain.RoleAssistant, text("more"), call("2")),
				am(domain.RoleTool, result("2", "r2")),
				am(domain.RoleAssistant, text("done")),
			}},
		{"ends with results", []domain.Part{call("1"), result("1", "r1")},
			[]agents.Message{am(domain.RoleAssistant, call("1")), am(domain.RoleTool, result("1", "r1"))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := expandAssistant(tc.parts)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("expandAssistant =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestExpandAssistantDoesNotAlias: appending to one expanded message must
// not overwrite the next one's parts in the stored slice.
func TestExpandAssistantDoesNotAlias(t *testing.T) {
	t.Parallel()
	parts := []domain.Part{text("a"), call("1"), result("1", "r1"), text("b")}
	out := expandAssistant(parts)
	_ = append(out[0].Parts, text("appended"))
	if parts[2].Type != domain.PartToolResult || out[1].Parts[0].ToolResult.Content != "r1" {
		t.Fatalf("appending to the first message changed the next: %+v", parts)
	}
}

func TestHistoryFromMessages(t *testing.T) {
	t.Parallel()
	complete, failed, gen, waiting := domain.StatusComplete, domain.StatusFailed, domain.StatusGenerating, domain.StatusAwaitingInput
	cases := []struct {
		name string
		msgs []domain.Message
		want []agents.Message
	}{
		{"empty", nil, []agents.Message{}},
		{"complete exchanges in order",
			[]domain.Message{user("q1"), answer(complete, text("a1")), user("q2"), answer(complete, call("1"), result("1", "r"), text("a2"))},
			[]agents.Message{
				am(domain.RoleUser, text("q1")), am(domain.RoleAssistant, text("a1")),
				am(domain.RoleUser, text("q2")), am(domain.RoleAssistant, call("1")), am(domain.RoleTool, result("1", "r")),
				am(domain.RoleAssistant, text("a2")),
			}},
		{"failed answer drops its question",
			[]domain.Message{user("q1"), answer(failed, text("partial")), user("q2"), answer(complete, text("a2"))},
			[]agents.Message{am(domain.RoleUser, text("q2")), am(domain.RoleAssistant, text("a2"))}},
		{"generating and awaiting answers drop their questions",
			[]domain.Message{user("q1"), answer(gen), user("q2"), answer(waiting, call("ask")), user("q3"), answer(complete, text("a3"))},
			[]agents.Message{am(domain.RoleUser, text("q3")), am(domain.RoleAssistant, text("a3"))}},
		{"answer cut from its question by the window",
			[]domain.Message{answer(complete, call("1"), result("1", "r"), text("a0")), user("q1"), answer(complete, text("a1"))},
			[]agents.Message{am(domain.RoleUser, text("q1")), am(domain.RoleAssistant, text("a1"))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := historyFromMessages(tc.msgs)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("historyFromMessages =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestPartsFromTranscript(t *testing.T) {
	t.Parallel()
	pendingSlot := result("ask", "")
	cases := []struct {
		name    string
		msgs    []agents.Message
		pending string
		want    []domain.Part
	}{
		{"empty", nil, "", []domain.Part{}},
		{"skips the leading user turn",
			[]agents.Message{am(domain.RoleUser, text("q")), am(domain.RoleAssistant, text("a"))}, "",
			[]domain.Part{text("a")}},
		{"flattens calls and results in order",
			[]agents.Message{
				am(domain.RoleUser, text("q")),
				am(domain.RoleAssistant, text("a"), call("1")),
				am(domain.RoleTool, result("1", "r1")),
				am(domain.RoleAssistant, text("b")),
			}, "",
			[]domain.Part{text("a"), call("1"), result("1", "r1"), text("b")}},
		{"leaves out the pending call's empty result",
			[]agents.Message{
				am(domain.RoleUser, text("q")),
				am(domain.RoleAssistant, call("1"), call("ask")),
				am(domain.RoleTool, result("1", "r1"), pendingSlot),
			}, "ask",
			[]domain.Part{call("1"), call("ask"), result("1", "r1")}},
		{"keeps a filled result of the same call when not pending",
			[]agents.Message{
				am(domain.RoleUser, text("q")),
				am(domain.RoleAssistant, call("ask")),
				am(domain.RoleTool, result("ask", "The user answered: Q3")),
			}, "",
			[]domain.Part{call("ask"), result("ask", "The user answered: Q3")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := partsFromTranscript(tc.msgs, tc.pending)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("partsFromTranscript =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}
