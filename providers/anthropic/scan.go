package anthropic

import (
	"github.com/bichat-go/bichat/internal/jsonscan"
)

// A minimal decoder for the hot path: the content_block_delta events that
// make up nearly all of a stream. It reads exactly the fields the decoder
// needs with internal/jsonscan and reports failure on anything unusual, in
// which case the event is decoded again with encoding/json, which also
// produces the error message for malformed input.

// scanEvent reads the events that make up nearly all of a stream
// (content_block_delta, content_block_start, content_block_stop, ping,
// message_stop) into ev, using delta and block as storage. It reports
// false for any other event (message_start, message_delta, error, unknown
// types) and for any input it does not fully understand.
func scanEvent(data []byte, ev *wireEvent, delta *wireDelta, block *wireEventBlock) bool {
	s := jsonscan.New(data)
	var typ string
	ok := s.Object(func(key []byte) bool {
		switch string(key) {
		case "type":
			t, ok := s.TextFrom(eventTypes)
			typ = t
			return ok
		case "index":
			n, ok := s.Int()
			ev.Index = n
			return ok
		case "delta":
			ev.Delta = delta
			return s.Object(func(k []byte) bool {
				var dst *string
				switch string(k) {
				case "type":
					return kind(&s, &delta.Type)
				case "text":
					dst = &delta.Text
				case "partial_json":
					dst = &delta.PartialJSON
				case "thinking":
					dst = &delta.Thinking
				case "signature":
					dst = &delta.Signature
				default:
					// encoding/json matches keys case-insensitively: leave
					// such oddities to it.
					return !jsonscan.FoldsTo(k, "type", "text", "partial_json", "thinking", "signature", "stop_reason") && s.Skip()
				}
				return s.TextInto(dst)
			})
		case "content_block":
			ev.ContentBlock = block
			return s.Object(func(k []byte) bool {
				var dst *string
				switch string(k) {
				case "type":
					return kind(&s, &block.Type)
				case "text":
					dst = &block.Text
				case "thinking":
					dst = &block.Thinking
				case "signature":
					dst = &block.Signature
				case "data":
					dst = &block.Data
				case "id":
					dst = &block.ID
				case "name":
					dst = &block.Name
				case "input":
					raw, ok := s.Raw()
					block.Input = raw
					return ok
				case "citations":
					return s.Null() // citations go to encoding/json
				default:
					return !jsonscan.FoldsTo(k, "type", "text", "thinking", "signature", "data", "id", "name", "input", "citations") && s.Skip()
				}
				return s.TextInto(dst)
			})
		default:
			return !jsonscan.FoldsTo(key, "type", "index", "delta", "message", "content_block", "usage", "error") && s.Skip()
		}
	})
	if !ok || !s.AtEnd() {
		return false
	}
	// Blocks and deltas other than text, thinking and client tool use
	// (server tools, citations, compaction, newer kinds) are carried as
	// provider items with their raw JSON: encoding/json reads those.
	if ev.ContentBlock != nil {
		switch block.Type {
		case "text", "thinking", "redacted_thinking", "tool_use":
		default:
			return false
		}
	}
	if ev.Delta != nil {
		switch delta.Type {
		case "text_delta", "input_json_delta", "thinking_delta", "signature_delta":
		default:
			return false
		}
	}
	switch typ {
	case "content_block_delta", "content_block_start", "content_block_stop", "ping", "message_stop":
		ev.Type = typ
		return true
	}
	return false
}

// eventTypes are the event type names scanEvent accepts, stored without
// allocating.
var eventTypes = []string{"content_block_delta", "content_block_start", "content_block_stop", "ping", "message_stop"}

// kinds are the type names events repeat, stored without allocating.
var kinds = []string{"text_delta", "input_json_delta", "thinking_delta", "signature_delta", "citations_delta",
	"text", "thinking", "redacted_thinking", "tool_use"}

// kind reads a type name into dst, reusing the strings in kinds.
func kind(s *jsonscan.Scanner, dst *string) bool {
	v, ok := s.TextFrom(kinds)
	*dst = v
	return ok
}
