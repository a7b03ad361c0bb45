package anthropic

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

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
	// stopped: content_block_stop seen.
	stopped bool
	// input is a non-empty input object that arrived whole in
	// content_block_start (some proxies and older versions send it there
	// instead of as input_json_delta fragments).
	input json.RawMessage
	// other is set for blocks that are not text, thinking or a client
	// tool call (server tool use and results, compaction, newer kinds):
	// they become a provider item at content_block_stop.
	other *otherBlock
}

// otherBlock accumulates a block carried as an agents.ProviderItem.
type otherBlock struct {
	id, name, toolUseID string
	raw                 json.RawMessage // the content_block object
	partial             []byte          // input_json_delta text
	deltas              []json.RawMessage
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
		default:
			// server_tool_use, *_tool_result, compaction, fallback and
			// newer kinds: never a client tool call.
			b.other = &otherBlock{id: cb.ID, name: cb.Name, toolUseID: cb.ToolUseID, raw: rawMember(data, "content_block")}
		}
		if cb.Type == "text" {
			out = appendCitations(out, cb.Citations)
		}
	case "content_block_delta":
		if ev.Delta == nil {
			return out, &malformedError{event: ev.Type, err: fmt.Errorf("no delta")}
		}
		dl := ev.Delta
		if ev.Index >= 0 && ev.Index < len(d.blocks) && d.blocks[ev.Index].other != nil {
			d.blocks[ev.Index].other.add(dl, data)
			return out, nil
		}
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
		default:
			out = otherDelta(out, dl, data)
		}
	case "content_block_stop":
		if ev.Index >= 0 && ev.Index < len(d.blocks) {
			out = d.stopBlock(ev.Index, out)
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			d.stop = ev.Delta.StopReason
		}
		if ev.Delta != nil && ev.Delta.StopDetails != nil && string(*ev.Delta.StopDetails) != "null" {
			out = append(out, stopDetails(*ev.Delta.StopDetails))
		}
		d.addUsage(ev.Usage)
		if cuts(d.stop) {
			out = d.cutCalls(out)
		}
	case "message_stop":
		d.done = true
		for i := range d.blocks {
			if b := &d.blocks[i]; b.other != nil && !b.stopped {
				out = d.stopBlock(i, out) // a block the limit cut: still reported
			}
		}
		out = append(out, agents.Chunk{Type: agents.ChunkUsage, Usage: d.Usage()},
			agents.Chunk{Type: agents.ChunkStop, Stop: mapStop(d.stop)})
	case "error":
		return out, streamError(ev.Error)
	}
	return out, nil
}

// add folds a delta of the block in: server tool input fragments are
// concatenated, other deltas kept raw.
func (o *otherBlock) add(dl *wireDelta, data []byte) {
	if dl.Type == "input_json_delta" {
		o.partial = append(o.partial, dl.PartialJSON...)
	} else {
		o.deltas = append(o.deltas, rawMember(data, "delta"))
	}
}

// otherDelta handles the deltas of text, thinking and tool blocks beyond
// the common four: citations become citation items, unknown types
// unsupported items.
func otherDelta(out []agents.Chunk, dl *wireDelta, data []byte) []agents.Chunk {
	if dl.Type == "citations_delta" {
		if dl.Citation != nil {
			out = appendCitations(out, []json.RawMessage{*dl.Citation})
		}
		return out
	}
	return append(out, agents.Chunk{Type: agents.ChunkItem, Item: &agents.ProviderItem{Provider: providerName,
		Kind: agents.ItemUnsupported, Type: dl.Type, Raw: rawMember(data, "delta")}})
}

// stopBlock ends block i: a client tool call whose input came whole gets
// it as arguments, a block carried as a provider item is emitted.
func (d *decoder) stopBlock(i int, out []agents.Chunk) []agents.Chunk {
	b := &d.blocks[i]
	b.stopped = true
	if b.kind == "tool_use" && !b.argsSeen && b.input != nil {
		out = append(out, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{
			Index: i, Arguments: string(b.input)}})
	}
	if o := b.other; o != nil {
		b.other = nil
		out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: o.item(b.kind)})
	}
	return out
}

// cuts reports whether a stop reason interrupts the model mid-output, so
// that a tool call being written is incomplete: the token or context
// limit, or a refusal that stopped the stream.
func cuts(stop string) bool {
	switch stop {
	case "max_tokens", "model_context_window_exceeded", "refusal":
		return true
	}
	return false
}

// cutCalls reports the client tool calls an interrupted answer (see cuts)
// left unfinished: the ones whose block never stopped and the last block
// when it is a tool call (the model was still writing it). They are
// marked incomplete so that agents.Accumulator drops them instead of
// running broken arguments.
func (d *decoder) cutCalls(out []agents.Chunk) []agents.Chunk {
	for i := range d.blocks {
		b := &d.blocks[i]
		if b.kind == "tool_use" && (!b.stopped || i == len(d.blocks)-1) {
			out = append(out, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{
				Index: i, Incomplete: true}})
		}
	}
	return out
}

// item turns an accumulated block into a provider item. Server tool
// calls get their streamed input; a block whose content came in other
// deltas keeps them: Raw is then a JSON array of the content_block and
// each delta, in order.
func (o *otherBlock) item(kind string) *agents.ProviderItem {
	it := &agents.ProviderItem{Provider: providerName, Type: kind, Raw: o.raw}
	switch {
	case kind == "server_tool_use" || kind == "mcp_tool_use":
		it.Kind, it.ID, it.Name = agents.ItemServerToolCall, o.id, o.name
		in := bytes.TrimSpace(o.partial)
		if len(in) > 0 && json.Valid(in) {
			it.Input = json.RawMessage(bytes.Clone(in))
		} else {
			var blk struct {
				Input json.RawMessage `json:"input"`
			}
			if json.Unmarshal(o.raw, &blk) == nil && len(blk.Input) > 0 {
				it.Input = blk.Input
			}
		}
	case strings.HasSuffix(kind, "_tool_result"):
		it.Kind, it.ID = agents.ItemServerToolResult, o.toolUseID
	default: // compaction, fallback, container_upload and newer kinds
		it.Kind = agents.ItemUnsupported
	}
	if len(o.deltas) > 0 {
		all := append([]json.RawMessage{o.raw}, o.deltas...)
		it.Raw, _ = json.Marshal(all)
	}
	return it
}

// stopDetails reports the stop_details of a refusal as a notice: the
// explanation (or category) as text, the object raw.
func stopDetails(raw json.RawMessage) agents.Chunk {
	var sd struct {
		Type        string `json:"type"`
		Category    string `json:"category"`
		Explanation string `json:"explanation"`
	}
	_ = json.Unmarshal(raw, &sd) // unreadable: carried raw
	text := sd.Explanation
	if text == "" && sd.Category != "" {
		text = sd.Type + ": " + sd.Category
	}
	return agents.Chunk{Type: agents.ChunkItem, Item: &agents.ProviderItem{Provider: providerName,
		Kind: agents.ItemNotice, Type: "stop_details", Text: llmhttp.Redact(text), Raw: bytes.Clone(raw)}}
}

// appendCitations appends one citation item per raw citation object.
func appendCitations(out []agents.Chunk, cits []json.RawMessage) []agents.Chunk {
	for _, raw := range cits {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var c wireCitation
		_ = json.Unmarshal(raw, &c) // an unreadable citation is still carried raw
		src := "document"
		if c.URL != "" {
			src = "web"
		}
		out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: &agents.ProviderItem{
			Provider: providerName, Kind: agents.ItemCitation, Type: c.Type, Text: c.CitedText,
			Citation: &domain.Citation{Source: src, DocumentID: c.FileID, Title: cmp.Or(c.Title, c.DocumentTitle),
				URL: c.URL, Snippet: c.CitedText},
			Raw: bytes.Clone(raw)}})
	}
	return out
}

// rawMember returns a copy of the raw JSON of data's top-level member key
// (nil when absent), for items kept verbatim.
func rawMember(data []byte, key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	return bytes.Clone(m[key])
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
