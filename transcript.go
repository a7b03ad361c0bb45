package bichat

import (
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// historyFromMessages turns stored messages into the model conversation:
// complete messages only, and a question whose answer failed or was
// abandoned is left out together with that answer, so the model never sees
// a question without its answer. Likewise an answer whose question is not
// in msgs (the history window cut the exchange in half) is left out.
func historyFromMessages(msgs []domain.Message) []agents.Message {
	out := make([]agents.Message, 0, len(msgs))
	for i, m := range msgs {
		switch {
		case m.Status != domain.StatusComplete:
			continue
		case m.Role == domain.RoleUser:
			if i+1 < len(msgs) && msgs[i+1].Role == domain.RoleAssistant && msgs[i+1].Status != domain.StatusComplete {
				continue
			}
			out = append(out, agents.Message{Role: m.Role, Parts: m.Parts})
		case m.Role == domain.RoleAssistant:
			if i == 0 || msgs[i-1].Role != domain.RoleUser {
				continue
			}
			out = append(out, expandAssistant(m.Parts)...)
		default:
			out = append(out, agents.Message{Role: m.Role, Parts: m.Parts})
		}
	}
	return out
}

// expandAssistant splits a stored assistant message (which holds a whole
// run: text, tool calls, tool results, more text) into the alternating
// assistant and tool messages providers expect.
func expandAssistant(parts []domain.Part) []agents.Message {
	var out []agents.Message
	start := 0
	for start < len(parts) {
		isResult := parts[start].Type == domain.PartToolResult
		end := start
		for end < len(parts) && (parts[end].Type == domain.PartToolResult) == isResult {
			end++
		}
		role := domain.RoleAssistant
		if isResult {
			role = domain.RoleTool
		}
		out = append(out, agents.Message{Role: role, Parts: parts[start:end:end]})
		start = end
	}
	return out
}

// partsFromTranscript flattens a run transcript (user turn first) into the
// parts of the assistant message, leaving out the user turn and the empty
// result slot of a pending interrupt.
func partsFromTranscript(msgs []agents.Message, pendingCallID string) []domain.Part {
	n := 0
	for i, m := range msgs {
		if i == 0 && m.Role == domain.RoleUser {
			continue
		}
		n += len(m.Parts)
	}
	parts := make([]domain.Part, 0, n)
	for i, m := range msgs {
		if i == 0 && m.Role == domain.RoleUser {
			continue
		}
		for _, p := range m.Parts {
			if pendingCallID != "" && p.Type == domain.PartToolResult && p.ToolResult != nil && p.ToolResult.CallID == pendingCallID {
				continue
			}
			parts = append(parts, p)
		}
	}
	return parts
}
