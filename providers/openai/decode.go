package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/internal/sse"
)

// maxResponse bounds a non-streamed response body.
const maxResponse = 64 << 20

// callState remembers, per streamed tool-call index, the call's id and
// whether its name was already passed on (some servers repeat the name on
// every fragment, which the Accumulator would otherwise concatenate).
type callState struct {
	index int
	id    string
	named bool
}

// streamDecoder turns Chat Completions chunks into agents.Chunks.
type streamDecoder struct {
	provider string
	calls    []callState
	refusal  bool
	// lastCall: the latest fragment of the first choice was a tool-call
	// fragment, so a "length" finish cut that call.
	lastCall bool
	ck       chunkJSON // reused by the fast decoder
}

func (d *streamDecoder) malformed(err error) error {
	return &llmhttp.ConnError{Provider: d.provider, Op: "decode response", Err: fmt.Errorf("malformed stream chunk: %w", err)}
}

// decodeStream reads an SSE body until "data: [DONE]".
func (m *Model) decodeStream(resp *http.Response, yield func(agents.Chunk) bool) error {
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// A server (or proxy) that ignored "stream": a whole completion,
		// or an error object, with a 200.
		return m.decodeWhole(resp, yield)
	}
	d := &streamDecoder{provider: m.conn.provider}
	tail := llmhttp.NewTailReader(resp.Body, false)
	r := sse.NewReader(tail)
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, sse.ErrEventTooLarge) {
				return d.malformed(err)
			}
			return llmhttp.ReadError(d.provider, err)
		}
		if len(ev.Data) == 0 {
			continue
		}
		if string(ev.Data) == "[DONE]" {
			return nil
		}
		ok, err := d.event(ev.Data, yield)
		if err != nil {
			var ce *llmhttp.ConnError
			if errors.As(err, &ce) && llmhttp.CutTail(tail, r) {
				return llmhttp.CutTailError(d.provider, err)
			}
		}
		if err != nil || !ok {
			return err
		}
	}
}

// event decodes one chunk; ok is false when the consumer stopped.
func (d *streamDecoder) event(data []byte, yield func(agents.Chunk) bool) (ok bool, err error) {
	ck := &d.ck
	if !fastChunk(data, ck) {
		*ck = chunkJSON{}
		if err := json.Unmarshal(data, ck); err != nil {
			return false, d.malformed(err)
		}
	}
	if ck.Error != nil && string(*ck.Error) != "null" {
		var eb errorBody
		json.Unmarshal(data, &eb)
		return false, streamError(d.provider, &eb)
	}
	for i := range ck.Choices {
		c := &ck.Choices[i]
		if c.Index != 0 {
			continue // only the first choice is used
		}
		if r := c.Delta.ReasoningContent + c.Delta.Reasoning; r != "" {
			d.lastCall = false
			if !yield(agents.Chunk{Type: agents.ChunkReasoning, Text: r, Provider: d.provider}) {
				return false, nil
			}
		}
		if c.Delta.Content != "" {
			d.lastCall = false
			if !yield(agents.Chunk{Type: agents.ChunkText, Text: c.Delta.Content}) {
				return false, nil
			}
		}
		if c.Delta.Refusal != "" {
			d.refusal, d.lastCall = true, false
			if !yield(agents.Chunk{Type: agents.ChunkText, Text: c.Delta.Refusal}) {
				return false, nil
			}
		}
		for j := range c.Delta.ToolCalls {
			d.lastCall = true
			if !yield(agents.Chunk{Type: agents.ChunkToolCall, ToolCall: d.toolCall(&c.Delta.ToolCalls[j])}) {
				return false, nil
			}
		}
		for _, ch := range annotationChunks(d.provider, c.Delta.Annotations) {
			if !yield(ch) {
				return false, nil
			}
		}
		if c.FinishReason != "" {
			stop := StopReason(c.FinishReason)
			if d.refusal && stop == agents.StopEndTurn {
				stop = agents.StopRefusal
			}
			if (stop == agents.StopMaxTokens || stop == agents.StopContentFilter) && d.lastCall && len(d.calls) > 0 {
				// The limit or the filter cut the call being written:
				// drop it.
				last := d.calls[len(d.calls)-1]
				if !yield(agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{Index: last.index, Incomplete: true}}) {
					return false, nil
				}
			}
			if !yield(agents.Chunk{Type: agents.ChunkStop, Stop: stop}) {
				return false, nil
			}
		}
	}
	if ck.Usage != nil {
		if !yield(agents.Chunk{Type: agents.ChunkUsage, Usage: ck.Usage.usage()}) {
			return false, nil
		}
	}
	return true, nil
}

// toolCall converts one fragment, dropping a repeated name.
func (d *streamDecoder) toolCall(tc *toolCallJSON) agents.ToolCallDelta {
	idx := agents.NoIndex
	if tc.Index != nil {
		idx = *tc.Index
	}
	delta := agents.ToolCallDelta{Index: idx, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
	var st *callState
	if idx == agents.NoIndex {
		if n := len(d.calls); n > 0 {
			st = &d.calls[n-1]
		}
	} else {
		for k := len(d.calls) - 1; k >= 0; k-- {
			if d.calls[k].index == idx {
				st = &d.calls[k]
				break
			}
		}
	}
	if st != nil && tc.ID != "" && st.id != "" && tc.ID != st.id {
		st = nil // a new call reusing the index
	}
	if st == nil {
		if tc.ID == "" && tc.Function.Name == "" && tc.Function.Arguments == "" {
			return delta
		}
		d.calls = append(d.calls, callState{index: idx, id: tc.ID})
		st = &d.calls[len(d.calls)-1]
	}
	if tc.ID != "" {
		st.id = tc.ID
	}
	if delta.Name != "" {
		if st.named {
			delta.Name = ""
		}
		st.named = true
	}
	return delta
}

type completionJSON struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content          *string           `json:"content"`
			ReasoningContent string            `json:"reasoning_content"`
			Reasoning        string            `json:"reasoning"`
			Refusal          string            `json:"refusal"`
			ToolCalls        []toolCallJSON    `json:"tool_calls"`
			Annotations      []json.RawMessage `json:"annotations"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usageJSON       `json:"usage"`
	Error *json.RawMessage `json:"error"`
}

// decodeWhole reads a non-streamed chat.completion and yields it as
// chunks.
func (m *Model) decodeWhole(resp *http.Response, yield func(agents.Chunk) bool) error {
	provider := m.conn.provider
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return llmhttp.ReadError(provider, err)
	}
	var c completionJSON
	if err := json.Unmarshal(data, &c); err != nil {
		return &llmhttp.ConnError{Provider: provider, Op: "decode response", Err: fmt.Errorf("malformed response: %w", err)}
	}
	if c.Error != nil && string(*c.Error) != "null" {
		var eb errorBody
		json.Unmarshal(data, &eb)
		return streamError(provider, &eb)
	}
	var chunks []agents.Chunk
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		msg := ch.Message
		if r := msg.ReasoningContent + msg.Reasoning; r != "" {
			chunks = append(chunks, agents.Chunk{Type: agents.ChunkReasoning, Text: r, Provider: provider})
		}
		if msg.Content != nil && *msg.Content != "" {
			chunks = append(chunks, agents.TextChunk(*msg.Content))
		}
		if msg.Refusal != "" {
			chunks = append(chunks, agents.TextChunk(msg.Refusal))
		}
		for i, tc := range msg.ToolCalls {
			chunks = append(chunks, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{
				Index: i, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		}
		chunks = append(chunks, annotationChunks(provider, msg.Annotations)...)
		stop := StopReason(ch.FinishReason)
		if msg.Refusal != "" && stop == agents.StopEndTurn {
			stop = agents.StopRefusal
		}
		if (stop == agents.StopMaxTokens || stop == agents.StopContentFilter) && len(msg.ToolCalls) > 0 {
			// The limit or the filter cut the last call.
			chunks = append(chunks, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{
				Index: len(msg.ToolCalls) - 1, Incomplete: true}})
		}
		if ch.FinishReason != "" {
			chunks = append(chunks, agents.Chunk{Type: agents.ChunkStop, Stop: stop})
		}
	}
	if len(chunks) == 0 {
		return &llmhttp.ConnError{Provider: provider, Op: "decode response", Err: errors.New("the response has no choices")}
	}
	if c.Usage != nil {
		chunks = append(chunks, agents.Chunk{Type: agents.ChunkUsage, Usage: c.Usage.usage()})
	}
	for _, ch := range chunks {
		if !yield(ch) {
			return nil
		}
	}
	return nil
}
