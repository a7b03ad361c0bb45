package llmfake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/bichat-go/bichat/domain"
)

// Anthropic Messages dialect: named SSE events (message_start,
// content_block_start/delta/stop, message_delta, message_stop, ping,
// error), error bodies {"type":"error","error":{...},"request_id":...} and
// the request-id header, as documented for POST /v1/messages.

// AnthropicStop is the terminator frame of a Messages stream.
var AnthropicStop = Frame("message_stop", `{"type":"message_stop"}`)

// AnthropicPing is a ping event, which may appear anywhere.
var AnthropicPing = Frame("ping", `{"type":"ping"}`)

// AnthropicMalformed is a content_block_delta whose JSON is cut off.
var AnthropicMalformed = Frame("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"br`)

// AnthropicUsage renders u in Anthropic's terms: input_tokens is the
// uncached part of the prompt, cache writes and reads are separate.
func AnthropicUsage(u domain.Usage) map[string]any {
	return map[string]any{
		"input_tokens":                max(0, u.PromptTokens-u.CachedTokens-u.CacheWriteTokens),
		"output_tokens":               u.CompletionTokens,
		"cache_creation_input_tokens": u.CacheWriteTokens,
		"cache_read_input_tokens":     u.CachedTokens,
		"service_tier":                "standard",
	}
}

func anthropicEvent(name string, v map[string]any) []byte {
	v["type"] = name
	return JSONData(name, v)
}

// AnthropicStream renders t as a streamed Messages reply: message_start
// with the prompt usage, a ping, one thinking block per reasoning entry
// (thinking_delta per fragment and a signature_delta, then a
// redacted_thinking block whose data is the base64 of Opaque when set), a text block with a
// text_delta per fragment, tool_use blocks with an "input":{} placeholder
// and input_json_delta fragments (interleaved across blocks when
// t.Interleave), message_delta with the stop reason and cumulative output
// tokens, and message_stop.
func AnthropicStream(t Turn) Reply {
	id, model := t.ids("msg_fake1")
	start := AnthropicUsage(t.Usage)
	start["output_tokens"] = 1
	ev := [][]byte{
		anthropicEvent("message_start", map[string]any{"message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": start}}),
		AnthropicPing,
	}
	idx := 0
	stop := func(i int) []byte { return anthropicEvent("content_block_stop", map[string]any{"index": i}) }
	for _, r := range t.Reasoning {
		if len(r.Text) == 0 && r.Signature == "" {
			ev = append(ev, redacted(idx, r.Opaque), stop(idx))
			idx++
			continue
		}
		ev = append(ev, anthropicEvent("content_block_start", map[string]any{"index": idx,
			"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}))
		for _, s := range r.Text {
			ev = append(ev, anthropicEvent("content_block_delta", map[string]any{"index": idx,
				"delta": map[string]any{"type": "thinking_delta", "thinking": s}}))
		}
		if r.Signature != "" {
			ev = append(ev, anthropicEvent("content_block_delta", map[string]any{"index": idx,
				"delta": map[string]any{"type": "signature_delta", "signature": r.Signature}}))
		}
		ev = append(ev, stop(idx))
		idx++
		if len(r.Opaque) > 0 {
			ev = append(ev, redacted(idx, r.Opaque), stop(idx))
			idx++
		}
	}
	if len(t.Text) > 0 {
		ev = append(ev, anthropicEvent("content_block_start", map[string]any{"index": idx,
			"content_block": map[string]any{"type": "text", "text": ""}}))
		for _, s := range t.Text {
			ev = append(ev, anthropicEvent("content_block_delta", map[string]any{"index": idx,
				"delta": map[string]any{"type": "text_delta", "text": s}}))
		}
		ev = append(ev, stop(idx))
		idx++
	}
	first := idx
	for _, f := range t.fragments() {
		c := t.Calls[f[0]]
		bi := first + f[0]
		if f[1] < 0 {
			ev = append(ev, anthropicEvent("content_block_start", map[string]any{"index": bi,
				"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}}))
			// The first fragment is often empty.
			ev = append(ev, anthropicEvent("content_block_delta", map[string]any{"index": bi,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": ""}}))
			continue
		}
		ev = append(ev, anthropicEvent("content_block_delta", map[string]any{"index": bi,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": c.Args[f[1]]}}))
		if !t.Interleave && f[1] == len(c.Args)-1 {
			ev = append(ev, stop(bi))
		}
	}
	for i, c := range t.Calls {
		if t.Interleave || len(c.Args) == 0 {
			ev = append(ev, stop(first+i))
		}
	}
	reason := t.Stop
	if reason == "" {
		reason = "end_turn"
		if len(t.Calls) > 0 {
			reason = "tool_use"
		}
	}
	ev = append(ev,
		anthropicEvent("message_delta", map[string]any{"delta": map[string]any{"stop_reason": reason, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": t.Usage.CompletionTokens}}),
		AnthropicStop)
	return Reply{Events: ev, Header: http.Header{"Request-Id": {"req_fake_" + id}}}
}

// redacted renders a redacted_thinking block start; its data is the
// standard base64 of opaque, as the API sends it.
func redacted(idx int, opaque []byte) []byte {
	return anthropicEvent("content_block_start", map[string]any{"index": idx,
		"content_block": map[string]any{"type": "redacted_thinking", "data": base64.StdEncoding.EncodeToString(opaque)}})
}

// AnthropicError returns an HTTP error reply with Anthropic's error body
// and a request-id header, e.g. AnthropicError(529, "overloaded_error",
// "Overloaded").
func AnthropicError(status int, typ, message string) Reply {
	rid := fmt.Sprintf("req_err_%d", status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message},
		"request_id": rid})
	return Reply{Status: status, Body: b, Header: http.Header{"Request-Id": {rid}}}
}

// AnthropicStreamError is an error event inside a stream after the 200,
// e.g. AnthropicStreamError("overloaded_error", "Overloaded").
func AnthropicStreamError(typ, message string) []byte {
	return anthropicEvent("error", map[string]any{"error": map[string]any{"type": typ, "message": message}})
}

// AnthropicRequest is the subset of a Messages request body tests
// inspect; unknown fields are ignored.
type AnthropicRequest struct {
	Model       string             `json:"model"`
	MaxTokens   int                `json:"max_tokens"`
	System      []AnthropicBlock   `json:"system"`
	Messages    []AnthropicMessage `json:"messages"`
	Tools       []AnthropicTool    `json:"tools"`
	ToolChoice  json.RawMessage    `json:"tool_choice"`
	Thinking    json.RawMessage    `json:"thinking"`
	Temperature *float64           `json:"temperature"`
	Stream      bool               `json:"stream"`
}

// AnthropicMessage is one message of a Messages request.
type AnthropicMessage struct {
	Role    string           `json:"role"`
	Content []AnthropicBlock `json:"content"`
}

// AnthropicBlock is a content block of any kind.
type AnthropicBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	Thinking     string          `json:"thinking"`
	Signature    string          `json:"signature"`
	Data         string          `json:"data"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      bool            `json:"is_error"`
	CacheControl *struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	} `json:"cache_control"`
}

// AnthropicTool is a tool declaration.
type AnthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}
