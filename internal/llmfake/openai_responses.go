package llmfake

import (
	"encoding/json"
	"net/http"

	"github.com/bichat-go/bichat/domain"
)

// OpenAI Responses API dialect (POST /v1/responses): named events
// ("event: response.output_text.delta" ...) whose data repeats the type
// and a sequence_number, ending with a terminal response.completed.

type respStream struct {
	ev  [][]byte
	seq int
}

func (s *respStream) add(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = s.seq
	s.seq++
	s.ev = append(s.ev, JSONData(typ, fields))
}

// OpenAIResponsesUsage renders u as a Responses usage object.
func OpenAIResponsesUsage(u domain.Usage) map[string]any {
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return map[string]any{
		"input_tokens": u.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": u.CachedTokens},
		"output_tokens": u.CompletionTokens, "output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
		"total_tokens": total,
	}
}

// OpenAIResponsesStream renders t as a streamed Responses reply: reasoning
// items (summary deltas; Reasoning.Signature is the item id and Opaque its
// encrypted_content), a message item with output_text deltas, function
// call items (added, argument deltas by item_id, done), and
// response.completed carrying usage. Stop "incomplete:<reason>" ends with
// response.incomplete instead.
func OpenAIResponsesStream(t Turn) Reply {
	s := &respStream{}
	id, model := t.ids("resp_fake1")
	s.add("response.created", map[string]any{"response": map[string]any{"id": id, "object": "response", "status": "in_progress", "model": model, "output": []any{}}})
	s.add("response.in_progress", map[string]any{"response": map[string]any{"id": id, "status": "in_progress"}})
	out := 0
	var output []any
	for _, r := range t.Reasoning {
		rid := r.Signature
		if rid == "" {
			rid = "rs_fake"
		}
		s.add("response.output_item.added", map[string]any{"output_index": out, "item": map[string]any{"type": "reasoning", "id": rid, "summary": []any{}}})
		for _, txt := range r.Text {
			s.add("response.reasoning_summary_text.delta", map[string]any{"item_id": rid, "output_index": out, "summary_index": 0, "delta": txt})
		}
		item := map[string]any{"type": "reasoning", "id": rid,
			"summary": []any{map[string]any{"type": "summary_text", "text": r.Joined()}}}
		if r.Opaque != nil {
			item["encrypted_content"] = string(r.Opaque)
		}
		s.add("response.output_item.done", map[string]any{"output_index": out, "item": item})
		output = append(output, item)
		out++
	}
	if len(t.Text) > 0 {
		mid := "msg_fake"
		s.add("response.output_item.added", map[string]any{"output_index": out, "item": map[string]any{"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []any{}}})
		s.add("response.content_part.added", map[string]any{"item_id": mid, "output_index": out, "content_index": 0, "part": map[string]any{"type": "output_text", "text": ""}})
		text := ""
		for _, txt := range t.Text {
			text += txt
			s.add("response.output_text.delta", map[string]any{"item_id": mid, "output_index": out, "content_index": 0, "delta": txt})
		}
		s.add("response.output_text.done", map[string]any{"item_id": mid, "output_index": out, "content_index": 0, "text": text})
		item := map[string]any{"type": "message", "id": mid, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
		s.add("response.output_item.done", map[string]any{"output_index": out, "item": item})
		output = append(output, item)
		out++
	}
	first := out
	for _, f := range t.fragments() {
		c := t.Calls[f[0]]
		fid := "fc_" + c.ID
		if f[1] < 0 {
			s.add("response.output_item.added", map[string]any{"output_index": first + f[0], "item": map[string]any{
				"type": "function_call", "id": fid, "call_id": c.ID, "name": c.Name, "arguments": "", "status": "in_progress"}})
			continue
		}
		s.add("response.function_call_arguments.delta", map[string]any{"item_id": fid, "output_index": first + f[0], "delta": c.Args[f[1]]})
	}
	for i, c := range t.Calls {
		item := map[string]any{"type": "function_call", "id": "fc_" + c.ID, "call_id": c.ID, "name": c.Name, "arguments": c.ArgsText(), "status": "completed"}
		s.add("response.function_call_arguments.done", map[string]any{"item_id": "fc_" + c.ID, "output_index": first + i, "name": c.Name, "arguments": c.ArgsText()})
		s.add("response.output_item.done", map[string]any{"output_index": first + i, "item": item})
		output = append(output, item)
	}
	resp := map[string]any{"id": id, "object": "response", "status": "completed", "model": model, "output": output, "usage": OpenAIResponsesUsage(t.Usage)}
	terminal := "response.completed"
	if len(t.Stop) > len("incomplete:") && t.Stop[:len("incomplete:")] == "incomplete:" {
		resp["status"] = "incomplete"
		resp["incomplete_details"] = map[string]any{"reason": t.Stop[len("incomplete:"):]}
		terminal = "response.incomplete"
	}
	s.add(terminal, map[string]any{"response": resp})
	return Reply{Events: s.ev, Header: http.Header{"X-Request-Id": {"req_fake_" + id}}}
}

// OpenAIResponsesError is an "error" event inside a Responses stream.
func OpenAIResponsesError(code, message string) []byte {
	return JSONData("error", map[string]any{"type": "error", "code": code, "message": message, "param": nil, "sequence_number": 99})
}

// OpenAIResponsesFailed is a terminal response.failed event.
func OpenAIResponsesFailed(code, message string) []byte {
	return JSONData("response.failed", map[string]any{"type": "response.failed", "sequence_number": 99,
		"response": map[string]any{"id": "resp_fake1", "status": "failed", "error": map[string]any{"code": code, "message": message}}})
}

// OpenAIResponsesMalformed is a Responses event whose JSON is cut off.
var OpenAIResponsesMalformed = Frame("response.output_text.delta", `{"type":"response.output_text.delta","delta":"br`)

// OpenAIResponsesRequest is the subset of a Responses request body tests
// inspect.
type OpenAIResponsesRequest struct {
	Model        string            `json:"model"`
	Instructions string            `json:"instructions"`
	Input        []json.RawMessage `json:"input"`
	Tools        []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	MaxOutputTokens   *int            `json:"max_output_tokens"`
	Temperature       *float64        `json:"temperature"`
	Reasoning         *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	Store   *bool    `json:"store"`
	Stream  bool     `json:"stream"`
	Include []string `json:"include"`
}

// OpenAIResponsesItem is one input item, all kinds' fields merged.
type OpenAIResponsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// function_call and function_call_output
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Output    string `json:"output"`
	// reasoning
	ID               string `json:"id"`
	EncryptedContent string `json:"encrypted_content"`
	Summary          []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"summary"`
}

// Text returns a message item's text (string content or text parts).
func (it OpenAIResponsesItem) Text() string {
	return OpenAIMessage{Content: it.Content}.Text()
}
