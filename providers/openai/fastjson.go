package openai

import (
	"encoding/json"

	"github.com/bichat-go/bichat/internal/jsonscan"
)

// A hand-written decoder for the common shape of Chat Completions stream
// chunks. encoding/json costs about 25 µs per kilobyte here, far more than
// the SSE framing; this decoder reads the few fields a chunk carries with
// internal/jsonscan and skips the rest in one pass. It never reports
// errors: on anything it does not expect (an "error" member, escapes or
// upper case in keys, a non-integer index, invalid UTF-8, deep nesting,
// malformed JSON) it declines and the caller decodes the chunk with
// encoding/json, which then decides. So the fast path changes speed, not
// results, with one leniency: the contents of strings it skips (ids, model
// names) are not validated. FuzzFastChunk checks that whatever
// encoding/json accepts decodes the same.

// interned are the strings that repeat in every stream, stored without
// allocating.
var interned = []string{"stop", "tool_calls", "length", "function"}

// str reads a string or null into *dst (null leaves it unchanged).
func str(s *jsonscan.Scanner, dst *string) bool {
	if s.Null() {
		return true
	}
	v, ok := s.TextFrom(interned)
	if ok {
		*dst = v
	}
	return ok
}

// fastChunk decodes data into ck, reusing ck's memory. false means
// "decode it with encoding/json instead".
func fastChunk(data []byte, ck *chunkJSON) bool {
	s := jsonscan.New(data)
	// Every key read is lower-case ASCII and unknown keys are skipped, so
	// keys that encoding/json would match case-insensitively are declined.
	s.RejectFoldedKeys = true
	ck.Choices = ck.Choices[:0]
	ck.Usage, ck.Error = nil, nil
	ok := s.Object(func(k []byte) bool {
		switch string(k) {
		case "choices":
			ck.Choices = ck.Choices[:0]
			return s.NullableArray(func() bool { return choice(&s, ck) })
		case "usage":
			if s.Null() {
				return true
			}
			raw, ok := s.RawView()
			if !ok {
				return false
			}
			var u usageJSON
			if json.Unmarshal(raw, &u) != nil {
				return false
			}
			ck.Usage = &u
			return true
		case "error":
			return s.Null()
		}
		return s.Skip()
	})
	return ok && s.AtEnd()
}

func choice(s *jsonscan.Scanner, ck *chunkJSON) bool {
	if len(ck.Choices) < cap(ck.Choices) {
		ck.Choices = ck.Choices[:len(ck.Choices)+1]
		calls := ck.Choices[len(ck.Choices)-1].Delta.ToolCalls[:0]
		ck.Choices[len(ck.Choices)-1] = choiceJSON{}
		ck.Choices[len(ck.Choices)-1].Delta.ToolCalls = calls
	} else {
		ck.Choices = append(ck.Choices, choiceJSON{})
	}
	c := &ck.Choices[len(ck.Choices)-1]
	return s.Object(func(k []byte) bool {
		switch string(k) {
		case "index":
			n, ok := s.Int()
			c.Index = n
			return ok
		case "finish_reason":
			return str(s, &c.FinishReason)
		case "delta":
			return s.NullableObject(func(k []byte) bool {
				switch string(k) {
				case "content":
					return str(s, &c.Delta.Content)
				case "reasoning_content":
					return str(s, &c.Delta.ReasoningContent)
				case "reasoning":
					return str(s, &c.Delta.Reasoning)
				case "refusal":
					return str(s, &c.Delta.Refusal)
				case "tool_calls":
					c.Delta.ToolCalls = c.Delta.ToolCalls[:0]
					return s.NullableArray(func() bool { return toolCall(s, &c.Delta.ToolCalls) })
				case "annotations":
					// null or [] pass; citations go to encoding/json.
					return s.NullableArray(func() bool { return false })
				}
				return s.Skip()
			})
		}
		return s.Skip()
	})
}

func toolCall(s *jsonscan.Scanner, calls *[]toolCallJSON) bool {
	*calls = append(*calls, toolCallJSON{})
	tc := &(*calls)[len(*calls)-1]
	return s.Object(func(k []byte) bool {
		switch string(k) {
		case "index":
			if s.Null() {
				return true
			}
			n, ok := s.Int()
			tc.Index = &tc.index
			tc.index = n
			return ok
		case "id":
			return str(s, &tc.ID)
		case "function":
			return s.NullableObject(func(k []byte) bool {
				switch string(k) {
				case "name":
					return str(s, &tc.Function.Name)
				case "arguments":
					return str(s, &tc.Function.Arguments)
				}
				return s.Skip()
			})
		}
		return s.Skip()
	})
}
