package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/bichat-go/bichat/internal/llmhttp"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/opaque"
)

// wireOpaque converts the base64 strings the API sends as opaque reasoning
// state to the bytes kept in domain values and back.
var wireOpaque = opaque.For(providerName)

const providerName = "anthropic"

// maxBlocks bounds content block indexes, so a misbehaving server cannot
// make the decoder allocate without limit.
const maxBlocks = 1 << 16

// blockState is what the decoder remembers about one content block.
type blockState struct {
	kind     string
	argsSeen bool
	// input is a non-empty input object that arrived whole in
	// content_block_start (some proxies and older versions send it there
	// instead of as input_json_delta fragments).
	input json.RawMessage
}

// decoder turns the data of streaming events into chunks. It is not safe
// for concurrent use.
type decoder struct {
	blocks []blockState // by content block index
	usage  struct{ input, output, cacheWrite, cacheRead int }
	stop   string
	// started: message_start seen; done: message_stop seen.
	started, done bool
	ev            wireEvent
	delta         wireDelta
	cblock        wireEventBlock
}

// malformedError reports an event the decoder cannot read.
type malformedError struct {
	event string
	err   error
}

func (e *malformedError) Error() string {
	return fmt.Sprintf("anthropic: malformed %s event: %v", e.event, e.err)
}

func (e *malformedError) Unwrap() error { return agents.ErrMalformedStream }

// decode folds the data of one event into the state and appends the
// resulting chunks to out.
func (d *decoder) decode(name string, data []byte, out []agents.Chunk) ([]agents.Chunk, error) {
	if d.done {
		return out, nil // nothing follows message_stop
	}
	ev := &d.ev
	*ev = wireEvent{}
	d.delta, d.cblock = wireDelta{}, wireEventBlock{}
	if !scanEvent(data, ev, &d.delta, &d.cblock) {
		*ev = wireEvent{}
		if err := json.Unmarshal(data, ev); err != nil {
			if name == "" {
				name = "stream"
			}
			return out, &malformedError{event: name, err: err}
		}
	}
	switch ev.Type {
	case "ping":
	case "message_start":
		d.started = true
		if ev.Message != nil {
			d.addUsage(ev.Message.Usage)
		}
	case "content_block_start":
		if ev.ContentBlock == nil || ev.Index < 0 || ev.Index >= maxBlocks {
			return out, &malformedError{event: ev.Type, err: fmt.Errorf("no content block or index %d out of range", ev.Index)}
		}
		b := d.block(ev.Index)
		cb := ev.ContentBlock
		b.kind = cb.Type
		switch cb.Type {
		case "text":
			if cb.Text != "" {
				out = append(out, agents.Chunk{Type: agents.ChunkText, Text: cb.Text})
			}
		case "thinking":
			out = append(out, agents.Chunk{Type: agents.ChunkReasoning, Index: ev.Index, Text: cb.Thinking,
				Signature: cb.Signature, Provider: providerName})
		case "redacted_thinking":
			state, prov := wireOpaque.FromWire(cb.Data)
			out = append(out, agents.Chunk{Type: agents.ChunkReasoning, Index: ev.Index,
				Opaque: state, Provider: prov})
		case "tool_use":
			in := bytes.TrimSpace(cb.Input)
			if len(in) > 0 && !bytes.Equal(in, []byte("{}")) && !bytes.Equal(in, []byte("null")) {
				b.input = bytes.Clone(in)
			}
			out = append(out, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{
				Index: ev.Index, ID: cb.ID, Name: cb.Name, Provider: providerName}})
		}
	case "content_block_delta":
		if ev.Delta == nil {
			return out, &malformedError{event: ev.Type, err: fmt.Errorf("no delta")}
		}
		dl := ev.Delta
		switch dl.Type {
		case "text_delta":
			if dl.Text != "" {
				out = append(out, agents.Chunk{Type: agents.ChunkText, Text: dl.Text})
			}
		case "input_json_delta":
			if dl.PartialJSON != "" {
				if ev.Index < 0 || ev.Index >= maxBlocks {
					return out, &malformedError{event: ev.Type, err: fmt.Errorf("index %d out of range", ev.Index)}
				}
				d.block(ev.Index).argsSeen = true
				out = append(out, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{
					Index: ev.Index, Arguments: dl.PartialJSON}})
			}
		case "thinking_delta":
			out = append(out, agents.Chunk{Type: agents.ChunkReasoning, Index: ev.Index, Text: dl.Thinking,
				Provider: providerName})
		case "signature_delta":
			out = append(out, agents.Chunk{Type: agents.ChunkReasoning, Index: ev.Index, Signature: dl.Signature,
				Provider: providerName})
		}
	case "content_block_stop":
		if ev.Index >= 0 && ev.Index < len(d.blocks) {
			b := &d.blocks[ev.Index]
			if b.kind == "tool_use" && !b.argsSeen && b.input != nil {
				out = append(out, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{
					Index: ev.Index, Arguments: string(b.input)}})
			}
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			d.stop = ev.Delta.StopReason
		}
		d.addUsage(ev.Usage)
	case "message_stop":
		d.done = true
		out = append(out, agents.Chunk{Type: agents.ChunkUsage, Usage: d.Usage()},
			agents.Chunk{Type: agents.ChunkStop, Stop: mapStop(d.stop)})
	case "error":
		return out, streamError(ev.Error)
	}
	return out, nil
}

func (d *decoder) block(i int) *blockState {
	for len(d.blocks) <= i {
		d.blocks = append(d.blocks, blockState{})
	}
	return &d.blocks[i]
}

// addUsage folds a usage object in: output_tokens is cumulative (the last
// value wins) and input/cache counts prefer later non-zero values.
func (d *decoder) addUsage(u *wireUsage) {
	if u == nil {
		return
	}
	set := func(dst *int, v *int, allowZero bool) {
		if v != nil && (*v != 0 || allowZero) {
			*dst = *v
		}
	}
	set(&d.usage.input, u.InputTokens, false)
	set(&d.usage.cacheWrite, u.CacheCreationInputTokens, false)
	set(&d.usage.cacheRead, u.CacheReadInputTokens, false)
	set(&d.usage.output, u.OutputTokens, true)
}

// Usage returns the usage seen so far in domain terms: the prompt is
// uncached input plus cache writes plus cache reads.
func (d *decoder) Usage() domain.Usage {
	u := d.usage
	prompt := u.input + u.cacheWrite + u.cacheRead
	return domain.Usage{PromptTokens: prompt, CompletionTokens: u.output, CachedTokens: u.cacheRead,
		CacheWriteTokens: u.cacheWrite, TotalTokens: prompt + u.output}
}

// mapStop maps Anthropic's stop_reason to the neutral stop reasons.
func mapStop(s string) agents.StopReason {
	switch s {
	case "end_turn", "stop_sequence", "":
		return agents.StopEndTurn
	case "tool_use":
		return agents.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return agents.StopMaxTokens
	case "refusal":
		return agents.StopRefusal
	default: // pause_turn and anything newer
		return agents.StopOther
	}
}

// streamError turns an in-stream error event (received after the HTTP 200)
// into an *llmhttp.APIError with StatusCode 0; overload, rate-limit,
// timeout and internal errors are transient.
func streamError(we *wireError) *llmhttp.APIError {
	e := &llmhttp.APIError{Provider: providerName, Type: "api_error", Message: "unknown error"}
	if we != nil {
		if we.Type != "" {
			e.Type = we.Type
		}
		if we.Message != "" {
			e.Message = llmhttp.Redact(we.Message)
		}
	}
	e.Transient = transientType(e.Type)
	return e
}

// transientType reports whether an Anthropic error type is worth retrying.
func transientType(t string) bool {
	switch t {
	case "overloaded_error", "api_error", "rate_limit_error", "timeout_error":
		return true
	}
	return false
}

// parseError reads an Anthropic error body into e (llmhttp.Client.ParseError):
// {"type":"error","error":{"type":...,"message":...},"request_id":...}.
// A 429 caused by an enforced spend limit is not retried.
func parseError(e *llmhttp.APIError, body []byte) {
	var b wireErrorBody
	if json.Unmarshal(body, &b) != nil || b.Error == nil {
		return
	}
	e.Type = b.Error.Type
	if b.Error.Message != "" {
		e.Message = b.Error.Message
	}
	if e.RequestID == "" {
		e.RequestID = b.RequestID
	}
	if d := b.Error.Details; d != nil && d.ErrorCode != "" {
		e.Code = d.ErrorCode
		if d.ErrorCode == "enforced_spend_limit_reached" {
			e.Transient = false
		}
	}
	switch e.Type {
	case "invalid_request_error", "authentication_error", "billing_error", "permission_error",
		"not_found_error", "request_too_large":
		e.Transient = false
	}
}
