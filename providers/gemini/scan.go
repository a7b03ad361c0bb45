package gemini

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A minimal JSON scanner for the hot path: streamed
// GenerateContentResponse chunks with text, thought and functionCall parts.
// It reads exactly the fields the decoder needs and reports failure (ok
// false) on anything unusual, in which case the chunk is decoded again
// with encoding/json, which also produces the error message for malformed
// input. (The same scanner is in providers/anthropic.)

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) consume(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a JSON string and returns its raw bytes (between the quotes)
// and whether they contain escapes. Control characters are tolerated.
func (s *scanner) str() (raw []byte, escaped, ok bool) {
	if !s.consume('"') {
		return nil, false, false
	}
	start := s.i
	for {
		q := bytes.IndexByte(s.b[s.i:], '"')
		if q < 0 {
			return nil, false, false
		}
		end := s.i + q
		bs := bytes.IndexByte(s.b[s.i:end], '\\')
		if bs < 0 {
			s.i = end + 1
			return s.b[start:end], escaped, true
		}
		escaped = true
		s.i += bs + 2 // skip the escape and the escaped byte (maybe a quote)
		if s.i > len(s.b) {
			return nil, false, false
		}
	}
}

// text reads a JSON string value as a Go string.
func (s *scanner) text() (string, bool) {
	raw, esc, ok := s.str()
	if !ok {
		return "", false
	}
	if !esc {
		if !utf8.Valid(raw) {
			return "", false // let encoding/json apply its replacement rules
		}
		return string(raw), true
	}
	return unescape(raw)
}

func (s *scanner) integer() (int, bool) {
	s.ws()
	start := s.i
	for s.i < len(s.b) && (s.b[s.i] == '-' || (s.b[s.i] >= '0' && s.b[s.i] <= '9')) {
		s.i++
	}
	n, err := strconv.Atoi(string(s.b[start:s.i]))
	return n, err == nil
}

// skip skips any JSON value.
func (s *scanner) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"':
		_, _, ok := s.str()
		return ok
	case '{', '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		s.i++
		if s.consume(closer) {
			return true
		}
		for {
			if c == '{' {
				if _, _, ok := s.str(); !ok || !s.consume(':') {
					return false
				}
			}
			if !s.skip() {
				return false
			}
			if s.consume(',') {
				continue
			}
			return s.consume(closer)
		}
	default:
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}

// object calls field for each key of an object; field must consume the
// value and report success.
func (s *scanner) object(field func(key []byte) bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		key, esc, ok := s.str()
		if !ok || esc || !s.consume(':') || !field(key) {
			return false
		}
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}

// unescape decodes the escapes of a JSON string body.
func unescape(raw []byte) (string, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			out = append(out, raw[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := hex4(raw[i+2:])
			if n < 0 {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2, n2 := rune(-1), -1
				if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2, n2 = hex4(raw[i+2:])
				}
				if dec := utf16.DecodeRune(r, r2); n2 >= 0 && dec != utf8.RuneError {
					i += 6
					r = dec
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	if !utf8.Valid(out) {
		return "", false
	}
	return string(out), true
}

func hex4(b []byte) (rune, int) {
	if len(b) < 4 {
		return 0, -1
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, -1
		}
	}
	return r, 4
}

// foldsTo reports whether key equals one of names ignoring case.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

func (s *scanner) boolean() (bool, bool) {
	s.ws()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true, true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false, true
	}
	return false, false
}

// array calls elem for each element of an array.
func (s *scanner) array(elem func() bool) bool {
	if !s.consume('[') {
		return false
	}
	if s.consume(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.consume(',') {
			continue
		}
		return s.consume(']')
	}
}

// raw returns the bytes of the next value, copied.
func (s *scanner) raw() ([]byte, bool) {
	s.ws()
	start := s.i
	if !s.skip() {
		return nil, false
	}
	return bytes.Clone(s.b[start:s.i]), true
}

func (s *scanner) textInto(dst *string) bool {
	v, ok := s.text()
	*dst = v
	return ok
}

// scratch is storage the scanner reuses from chunk to chunk.
type scratch struct {
	cand    [1]wireCandidate
	content wireContent
	parts   []wirePart
	texts   []string
	usage   wireUsage
	// id is the last responseId, reused while chunks repeat it.
	id string
}

// scanResponse reads a GenerateContentResponse into r, filling only what
// the decoder uses: the first candidate (its parts, finishReason and
// finishMessage), usageMetadata and responseId; role, modelVersion, other
// candidates and unknown fields are skipped. r's slices and pointers point
// into sc, valid until the next call. It reports false for anything
// beyond text, thought and function-call parts (errors, prompt feedback,
// other part kinds, case-folded keys), which encoding/json then decodes.
func scanResponse(data []byte, r *wireResponse, sc *scratch) bool {
	s := scanner{b: data}
	sc.parts, sc.texts = sc.parts[:0], sc.texts[:0]
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "candidates":
			r.Candidates = sc.cand[:0]
			n := 0
			return s.array(func() bool {
				n++
				if n > 1 {
					return s.skip() // only the first candidate is used
				}
				r.Candidates = sc.cand[:1]
				c := &sc.cand[0]
				*c = wireCandidate{}
				return s.object(func(k []byte) bool {
					switch string(k) {
					case "content":
						sc.content = wireContent{}
						c.Content = &sc.content
						return s.object(func(k []byte) bool {
							if string(k) == "parts" {
								ok := s.array(func() bool {
									sc.parts = append(sc.parts, wirePart{})
									return scanPart(&s, &sc.parts[len(sc.parts)-1], sc)
								})
								c.Content.Parts = sc.parts
								return ok
							}
							return !foldsTo(k, "parts") && s.skip()
						})
					case "finishReason":
						return s.textInto(&c.FinishReason)
					case "finishMessage":
						return s.textInto(&c.FinishMessage)
					}
					return !foldsTo(k, "content", "finishReason", "finishMessage") && s.skip()
				})
			})
		case "usageMetadata":
			u := &sc.usage
			*u = wireUsage{}
			r.UsageMetadata = u
			return s.object(func(k []byte) bool {
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
					return !foldsTo(k, "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount",
						"cachedContentTokenCount", "toolUsePromptTokenCount", "totalTokenCount") && s.skip()
				}
				n, ok := s.integer()
				*dst = n
				return ok
			})
		case "responseId":
			raw, esc, ok := s.str()
			if !ok || esc {
				return false
			}
			if string(raw) != sc.id {
				sc.id = string(raw)
			}
			r.ResponseID = sc.id
			return true
		}
		return !foldsTo(key, "candidates", "promptFeedback", "usageMetadata", "responseId", "error") && s.skip()
	})
	s.ws()
	return ok && s.i == len(data)
}

func scanPart(s *scanner, p *wirePart, sc *scratch) bool {
	return s.object(func(k []byte) bool {
		switch string(k) {
		case "text":
			v, ok := s.text()
			sc.texts = append(sc.texts, v)
			p.Text = &sc.texts[len(sc.texts)-1]
			return ok
		case "thought":
			b, ok := s.boolean()
			p.Thought = b
			return ok
		case "thoughtSignature":
			return s.textInto(&p.ThoughtSignature)
		case "functionCall":
			fc := &wireFunctionCall{}
			p.FunctionCall = fc
			return s.object(func(k []byte) bool {
				switch string(k) {
				case "id":
					return s.textInto(&fc.ID)
				case "name":
					return s.textInto(&fc.Name)
				case "args":
					raw, ok := s.raw()
					fc.Args = raw
					return ok
				}
				return !foldsTo(k, "id", "name", "args") && s.skip()
			})
		}
		// Any other part kind (inline data, code execution, ...) goes to
		// encoding/json.
		return false
	})
}
