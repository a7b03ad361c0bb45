package llmfake

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/bichat-go/bichat/domain"
)

// OpenAI Chat Completions dialect: streamed chunks ("data: {...}" and a
// final "data: [DONE]"), complete responses, errors and embeddings, as
// documented for POST /v1/chat/completions and /v1/embeddings.

// OpenAIDone is the terminator frame of a Chat Completions stream.
var OpenAIDone = Data("[DONE]")

func openaiDefaults(t Turn) (id, model string) {
	return t.ids("chatcmpl-fake1")
}

// OpenAIChunk formats one chat.completion.chunk event with a single choice
// carrying delta and finishReason ("" for null).
func OpenAIChunk(id, model string, delta map[string]any, finishReason string) []byte {
	var fr any
	if finishReason != "" {
		fr = finishReason
	}
	return JSONData("", map[string]any{
		"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": model,
		"system_fingerprint": "fp_fake", "obfuscation": "xYz",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": fr}},
		"usage":   nil,
	})
}

// OpenAIUsage renders u as a Chat Completions usage object.
func OpenAIUsage(u domain.Usage) map[string]any {
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return map[string]any{
		"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": total,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedTokens, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens, "audio_tokens": 0},
	}
}

func openaiFinish(t Turn) string {
	if t.Stop != "" {
		return t.Stop
	}
	if len(t.Calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// OpenAIStream renders t as a streamed Chat Completions reply: a role
// chunk, reasoning as delta.reasoning_content (the DeepSeek and vLLM
// field), text deltas, tool-call fragments keyed by index (the first
// fragment of a call carries id, type and name with empty arguments), the
// finish chunk, the include_usage chunk with empty choices, and [DONE].
func OpenAIStream(t Turn) Reply {
	id, model := openaiDefaults(t)
	var ev [][]byte
	ev = append(ev, OpenAIChunk(id, model, map[string]any{"role": "assistant", "content": "", "refusal": nil}, ""))
	for _, r := range t.Reasoning {
		for _, s := range r.Text {
			ev = append(ev, OpenAIChunk(id, model, map[string]any{"reasoning_content": s}, ""))
		}
	}
	for _, s := range t.Text {
		ev = append(ev, OpenAIChunk(id, model, map[string]any{"content": s}, ""))
	}
	for _, f := range t.fragments() {
		c := t.Calls[f[0]]
		tc := map[string]any{"index": f[0]}
		if f[1] < 0 {
			tc["id"], tc["type"] = c.ID, "function"
			tc["function"] = map[string]any{"name": c.Name, "arguments": ""}
		} else {
			tc["function"] = map[string]any{"arguments": c.Args[f[1]]}
		}
		ev = append(ev, OpenAIChunk(id, model, map[string]any{"tool_calls": []any{tc}}, ""))
	}
	ev = append(ev, OpenAIChunk(id, model, map[string]any{}, openaiFinish(t)))
	ev = append(ev, JSONData("", map[string]any{
		"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": model,
		"choices": []any{}, "usage": OpenAIUsage(t.Usage),
	}))
	ev = append(ev, OpenAIDone)
	return Reply{Events: ev, Header: http.Header{"X-Request-Id": {"req_fake_" + id}}}
}

// OpenAICompletion renders t as a non-streamed chat.completion object.
func OpenAICompletion(t Turn) Reply {
	id, model := openaiDefaults(t)
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	text := ""
	for _, s := range t.Text {
		text += s
	}
	if text != "" {
		msg["content"] = text
	}
	reasoning := ""
	for _, r := range t.Reasoning {
		reasoning += r.Joined()
	}
	if reasoning != "" {
		msg["reasoning_content"] = reasoning
	}
	if len(t.Calls) > 0 {
		var calls []any
		for _, c := range t.Calls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.ArgsText()}})
		}
		msg["tool_calls"] = calls
	}
	r := JSONReply(map[string]any{
		"id": id, "object": "chat.completion", "created": 1700000000, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": openaiFinish(t)}},
		"usage":   OpenAIUsage(t.Usage),
	})
	r.Header = http.Header{"X-Request-Id": {"req_fake_" + id}}
	return r
}

// OpenAIError returns an HTTP error reply with OpenAI's error body
// {"error":{"message","type","param","code"}} (code null when empty) and
// an x-request-id header.
func OpenAIError(status int, typ, code, message string) Reply {
	var c any
	if code != "" {
		c = code
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": c}})
	return Reply{Status: status, Body: b, Header: http.Header{"X-Request-Id": {fmt.Sprintf("req_err_%d", status)}}}
}

// OpenAIStreamError is an error event inside a stream after the 200:
// data: {"error":{...}}.
func OpenAIStreamError(typ, code, message string) []byte {
	var c any
	if code != "" {
		c = code
	}
	return JSONData("", map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": c}})
}

// OpenAIMalformed is a chunk whose JSON is cut off.
var OpenAIMalformed = Data(`{"id":"chatcmpl-fake1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"br`)

// OpenAIEmbeddings renders an /v1/embeddings answer. Items are listed in
// the order given by order (indexes into vectors; nil means natural
// order), so tests can check that clients sort by "index".
func OpenAIEmbeddings(model string, vectors [][]float32, order []int) Reply {
	if order == nil {
		order = make([]int, len(vectors))
		for i := range order {
			order[i] = i
		}
	}
	var data []any
	for _, i := range order {
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": vectors[i]})
	}
	return JSONReply(map[string]any{"object": "list", "model": model, "data": data,
		"usage": map[string]any{"prompt_tokens": 3 * len(vectors), "total_tokens": 3 * len(vectors)}})
}

// OpenAIEmbeddingRequest is the body of an /v1/embeddings request.
type OpenAIEmbeddingRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format,omitempty"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

// OpenAIEmbeddingResponder answers embedding requests with deterministic
// vectors of dims floats derived from each input (see FakeVector),
// listing the items in reverse order. Use it with Server.Respond.
func OpenAIEmbeddingResponder(dims int) func(Request) Reply {
	return func(r Request) Reply {
		var in OpenAIEmbeddingRequest
		if err := r.Decode(&in); err != nil {
			return OpenAIError(400, "invalid_request_error", "", "bad body: "+err.Error())
		}
		vecs := make([][]float32, len(in.Input))
		order := make([]int, len(in.Input))
		for i, s := range in.Input {
			vecs[i] = FakeVector(s, dims)
			order[len(in.Input)-1-i] = i
		}
		return OpenAIEmbeddings(in.Model, vecs, order)
	}
}

// FakeVector returns a deterministic vector of dims floats for s: element
// 0 is len(s), the others a simple hash of s, so tests can tell inputs
// apart and check order.
func FakeVector(s string, dims int) []float32 {
	v := make([]float32, dims)
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	for i := range v {
		if i == 0 {
			v[i] = float32(len(s))
			continue
		}
		h = h*1664525 + 1013904223
		v[i] = float32(h%1000) / 1000
	}
	return v
}

// OpenAIChatRequest is the subset of a Chat Completions request body that
// tests inspect; unknown fields are ignored.
type OpenAIChatRequest struct {
	Model             string          `json:"model"`
	Messages          []OpenAIMessage `json:"messages"`
	Tools             []OpenAITool    `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Stream            bool            `json:"stream"`
	StreamOptions     *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int     `json:"max_tokens"`
	MaxCompletionTokens *int     `json:"max_completion_tokens"`
	Temperature         *float64 `json:"temperature"`
	ReasoningEffort     string   `json:"reasoning_effort"`
}

// OpenAIMessage is one message of a Chat Completions request.
type OpenAIMessage struct {
	Role             string           `json:"role"`
	Content          json.RawMessage  `json:"content"`
	ReasoningContent *string          `json:"reasoning_content"`
	ToolCalls        []OpenAIToolCall `json:"tool_calls"`
	ToolCallID       string           `json:"tool_call_id"`
}

// Text returns the message content as text: a JSON string, or the text
// parts of a content array joined.
func (m OpenAIMessage) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(m.Content, &parts)
	for _, p := range parts {
		s += p.Text
	}
	return s
}

// OpenAIToolCall is a tool call of an assistant message.
type OpenAIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// OpenAITool is a tool declaration.
type OpenAITool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}
