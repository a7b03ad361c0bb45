package gemini

import (
	"bytes"

	"github.com/bichat-go/bichat/internal/jsonscan"
)

// A minimal decoder for the hot path: streamed GenerateContentResponse
// chunks with text, thought and functionCall parts. It reads exactly the
// fields the decoder needs with internal/jsonscan and reports failure on
// anything unusual, in which case the chunk is decoded again with
// encoding/json, which also produces the error message for malformed
// input.

// scratch is storage the scanner reuses from chunk to chunk.
type scratch struct {
	cand    [1]wireCandidate
	content wireContent
	parts   []wirePart
	texts   []string
	usage   wireUsage
	// id is the last responseId, reused while chunks repeat it.
	id  string
	ids [1]string
}

// scanResponse reads a GenerateContentResponse into r, filling only what
// the decoder uses: the first candidate (its parts, finishReason and
// finishMessage), usageMetadata and responseId; role, modelVersion, other
// candidates and unknown fields are skipped. r's slices and pointers point
// into sc, valid until the next call. It reports false for anything
// beyond text, thought and function-call parts (errors, prompt feedback,
// other part kinds, case-folded keys), which encoding/json then decodes.
func scanResponse(data []byte, r *wireResponse, sc *scratch) bool {
	s := jsonscan.New(data)
	sc.parts, sc.texts = sc.parts[:0], sc.texts[:0]
	ok := s.Object(func(key []byte) bool {
		switch string(key) {
		case "candidates":
			r.Candidates = sc.cand[:0]
			n := 0
			return s.Array(func() bool {
				n++
				if n > 1 {
					return s.Skip() // only the first candidate is used
				}
				r.Candidates = sc.cand[:1]
				c := &sc.cand[0]
				*c = wireCandidate{}
				return s.Object(func(k []byte) bool {
					switch string(k) {
					case "content":
						sc.content = wireContent{}
						c.Content = &sc.content
						return s.Object(func(k []byte) bool {
							if string(k) == "parts" {
								ok := s.Array(func() bool {
									sc.parts = append(sc.parts, wirePart{})
									return scanPart(&s, &sc.parts[len(sc.parts)-1], sc)
								})
								c.Content.Parts = sc.parts
								return ok
							}
							return !jsonscan.FoldsTo(k, "parts") && s.Skip()
						})
					case "finishReason":
						return s.TextInto(&c.FinishReason)
					case "finishMessage":
						return s.TextInto(&c.FinishMessage)
					case "safetyRatings":
						// Ratings with a "blocked" member go to
						// encoding/json, to be reported.
						raw, ok := s.RawView()
						return ok && !hasBlocked(raw)
					case "citationMetadata", "groundingMetadata", "urlContextMetadata":
						return false
					case "index", "avgLogprobs":
						return s.Skip() // common keys, spared the case-folding check
					}
					return !jsonscan.FoldsTo(k, "content", "finishReason", "finishMessage", "safetyRatings",
						"citationMetadata", "groundingMetadata", "urlContextMetadata") && s.Skip()
				})
			})
		case "usageMetadata":
			u := &sc.usage
			*u = wireUsage{}
			r.UsageMetadata = u
			return s.Object(func(k []byte) bool {
				var dst *int
				switch string(k) {
				case "promptTokenCount":
					dst = &u.PromptTokenCount
				case "candidatesTokenCount":
					dst = &u.CandidatesTokenCount
				case "thoughtsTokenCount":
					dst = &u.ThoughtsTokenCount
				case "cachedContentTokenCount":
					dst = &u.CachedContentTokenCount
				case "toolUsePromptTokenCount":
					dst = &u.ToolUsePromptTokenCount
				case "totalTokenCount":
					dst = &u.TotalTokenCount
				default:
					return !jsonscan.FoldsTo(k, "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount",
						"cachedContentTokenCount", "toolUsePromptTokenCount", "totalTokenCount") && s.Skip()
				}
				n, ok := s.Int()
				*dst = n
				return ok
			})
		case "responseId":
			sc.ids[0] = sc.id
			id, ok := s.TextFrom(sc.ids[:])
			if ok {
				sc.id = id
			}
			r.ResponseID = id
			return ok
		}
		return !jsonscan.FoldsTo(key, "candidates", "promptFeedback", "usageMetadata", "responseId", "error") && s.Skip()
	})
	return ok && s.AtEnd()
}

func scanPart(s *jsonscan.Scanner, p *wirePart, sc *scratch) bool {
	return s.Object(func(k []byte) bool {
		switch string(k) {
		case "text":
			v, ok := s.Text()
			sc.texts = append(sc.texts, v)
			p.Text = &sc.texts[len(sc.texts)-1]
			return ok
		case "thought":
			b, ok := s.Bool()
			p.Thought = b
			return ok
		case "thoughtSignature":
			return s.TextInto(&p.ThoughtSignature)
		case "functionCall":
			fc := &wireFunctionCall{}
			p.FunctionCall = fc
			return s.Object(func(k []byte) bool {
				switch string(k) {
				case "id":
					return s.TextInto(&fc.ID)
				case "name":
					return s.TextInto(&fc.Name)
				case "args":
					raw, ok := s.Raw()
					fc.Args = raw
					return ok
				}
				return !jsonscan.FoldsTo(k, "id", "name", "args") && s.Skip()
			})
		}
		// Any other part kind (inline data, code execution, ...) goes to
		// encoding/json.
		return false
	})
}

// hasBlocked reports whether raw has a "blocked" member (any case) that is
// not false: a safety rating that blocked content.
func hasBlocked(raw []byte) bool {
	const name = "blocked"
	for i := 0; ; {
		j := bytes.IndexByte(raw[i:], '"')
		if j < 0 {
			return false
		}
		i += j + 1
		if len(raw)-i > len(name) && raw[i+len(name)] == '"' && bytes.EqualFold(raw[i:i+len(name)], []byte(name)) {
			rest := bytes.TrimLeft(raw[i+len(name)+1:], " \t\r\n:")
			if !bytes.HasPrefix(rest, []byte("false")) {
				return true
			}
		}
	}
}
