package agents

import (
	"encoding/json"

	"github.com/bichat-go/bichat/domain"
)

// genAIPart is one part of an OpenTelemetry GenAI message.
type genAIPart struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

// genAIMessage is one message in the OpenTelemetry GenAI input/output
// message format (gen_ai.input.messages).
type genAIMessage struct {
	Role  string      `json:"role"`
	Parts []genAIPart `json:"parts"`
}

// genAIInput encodes a request's system prompt and messages as GenAI
// input messages: text, tool calls and tool-call responses (reasoning
// and files are left out).
func genAIInput(req *Request) []byte {
	msgs := make([]genAIMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, genAIMessage{Role: "system", Parts: []genAIPart{{Type: "text", Content: req.System}}})
	}
	for _, m := range req.Messages {
		gm := genAIMessage{Role: string(m.Role), Parts: []genAIPart{}}
		for _, p := range m.Parts {
			switch {
			case p.Type == domain.PartText:
				gm.Parts = append(gm.Parts, genAIPart{Type: "text", Content: p.Text})
			case p.ToolCall != nil:
				gm.Parts = append(gm.Parts, genAIPart{Type: "tool_call", ID: p.ToolCall.ID, Name: p.ToolCall.Name,
					Arguments: p.ToolCall.Arguments})
			case p.ToolResult != nil:
				gm.Parts = append(gm.Parts, genAIPart{Type: "tool_call_response", ID: p.ToolResult.CallID,
					Response: p.ToolResult.Content})
			}
		}
		msgs = append(msgs, gm)
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return nil // only invalid tool-call arguments can fail; nothing to record then
	}
	return b
}
