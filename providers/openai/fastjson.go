package openai

import (
	"bytes"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
)

// A hand-written decoder for the common shape of Chat Completions stream
// chunks. encoding/json costs about 25 µs per kilobyte here, far more than
// the SSE framing; this scanner reads the few fields a chunk carries and
// skips the rest in one pass. It never reports errors: on anything it does
// not expect (an "error" member, escapes in keys, a non-integer index,
// invalid UTF-8, deep nesting, malformed JSON) it declines and the caller
// decodes the chunk with encoding/json, which then decides. So the fast
// path changes speed, not results, with one leniency: the contents of
// strings it skips (ids, model names) are not validated. FuzzFastChunk
// checks that whatever encoding/json accepts decodes the same.

type fastScanner struct {
	b     []byte
	i     int
	depth int
}

const maxSkipDepth = 64

func (s *fastScanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\n', '\r', '\t':
			s.i++
		default:
			return
		}
	}
}

// next skips whitespace and returns the next byte (0 at the end).
func (s *fastScanner) next() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *fastScanner) eat(c byte) bool {
	if s.next() == c {
		s.i++
		return true
	}
	return false
}

// rawString reads a string at s.i (which must be '"') and returns its raw
// contents and whether they contain escapes.
func (s *fastScanner) rawString() (raw []byte, esc, ok bool) {
	b := s.b
	start := s.i + 1
	// Short strings (keys, ids) are scanned byte by byte, which beats a
	// vectorised search's call overhead; long ones switch to IndexByte.
	j := start
	for limit := min(len(b), start+32); j < limit; j++ {
		switch b[j] {
		case '"':
			s.i = j + 1
			return b[start:j], esc, true
		case '\\':
			esc = true
			j++
		}
	}
	if j > len(b) {
		return nil, false, false
	}
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return nil, false, false
		}
		end := j + k
		if !esc && bytes.IndexByte(b[j:end], '\\') >= 0 {
			esc = true
		}
		if !esc {
			s.i = end + 1
			return b[start:end], false, true
		}
		n := 0
		for p := end - 1; p >= start && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			s.i = end + 1
			return b[start:end], true, true
		}
		j = end + 1
	}
}

// key reads an object key and the colon after it. Keys with escapes,
// upper case or non-ASCII letters are declined: encoding/json matches
// field names case-insensitively (with Unicode folding), so "Choices"
// would fill the choices field.
func (s *fastScanner) key() ([]byte, bool) {
	if s.next() != '"' {
		return nil, false
	}
	raw, esc, ok := s.rawString()
	if !ok || esc || !s.eat(':') {
		return nil, false
	}
	for _, c := range raw {
		if (c >= 'A' && c <= 'Z') || c >= 0x80 {
			return nil, false
		}
	}
	return raw, true
}

// str reads a string or null into *dst (null leaves "").
func (s *fastScanner) str(dst *string) bool {
	switch s.next() {
	case 'n':
		return s.lit("null")
	case '"':
	default:
		return false
	}
	raw, esc, ok := s.rawString()
	if !ok {
		return false
	}
	if !esc {
		// One pass: control characters are invalid, non-ASCII needs a
		// UTF-8 check from there on.
		for i, c := range raw {
			if c < 0x20 {
				return false
			}
			if c >= 0x80 {
				if !utf8.Valid(raw[i:]) {
					return false
				}
				for _, c := range raw[i:] {
					if c < 0x20 {
						return false
					}
				}
				break
			}
		}
		*dst = intern(raw)
		return true
	}
	v, ok := unescape(raw)
	if ok {
		*dst = v
	}
	return ok
}

// intern avoids allocating the strings that repeat in every stream.
func intern(raw []byte) string {
	switch string(raw) {
	case "":
		return ""
	case "stop":
		return "stop"
	case "tool_calls":
		return "tool_calls"
	case "length":
		return "length"
	case "function":
		return "function"
	}
	return string(raw)
}

// unescape decodes JSON string contents with escapes.
func unescape(raw []byte) (string, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c < 0x20 {
			return "", false
		}
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
			r, ok := hex4(raw[i+2:])
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2, ok := hex4(raw[i+2:]); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							out = utf8.AppendRune(out, d)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
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

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
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
			return 0, false
		}
	}
	return r, true
}

func (s *fastScanner) lit(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// integer reads a small non-negative integer.
func (s *fastScanner) integer() (int, bool) {
	s.ws()
	n, start := 0, s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' && s.i-start < 9 {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	if s.i == start || (s.b[start] == '0' && s.i-start > 1) {
		return 0, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return 0, false
		}
	}
	return n, true
}

// skip skips one value, checking its structure.
func (s *fastScanner) skip() bool {
	switch c := s.next(); c {
	case '"':
		// The contents of skipped strings are not validated: they are
		// ignored either way.
		_, _, ok := s.rawString()
		return ok
	case '{', '[':
		s.depth++
		if s.depth > maxSkipDepth {
			return false
		}
		s.i++
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		if s.eat(closer) {
			s.depth--
			return true
		}
		for {
			if c == '{' {
				if _, ok := s.key(); !ok {
					return false
				}
			}
			if !s.skip() {
				return false
			}
			if s.eat(',') {
				continue
			}
			if s.eat(closer) {
				s.depth--
				return true
			}
			return false
		}
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	case 0:
		return false
	default:
		return s.number()
	}
}

// number checks a JSON number.
func (s *fastScanner) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		st := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == st {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		st := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == st {
			return false
		}
	}
	s.i = i
	return true
}

// object iterates over an object's members, calling member for each key
// with the scanner positioned at the value. null is an empty object when
// nullOK.
func (s *fastScanner) object(nullOK bool, member func(key []byte) bool) bool {
	switch s.next() {
	case 'n':
		return nullOK && s.lit("null")
	case '{':
		s.i++
	default:
		return false
	}
	if s.eat('}') {
		return true
	}
	for {
		k, ok := s.key()
		if !ok || !member(k) {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat('}')
	}
}

// array iterates over an array's elements; null is an empty array.
func (s *fastScanner) array(elem func() bool) bool {
	switch s.next() {
	case 'n':
		return s.lit("null")
	case '[':
		s.i++
	default:
		return false
	}
	if s.eat(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat(']')
	}
}

// fastChunk decodes data into ck, reusing ck's memory. false means
// "decode it with encoding/json instead".
func fastChunk(data []byte, ck *chunkJSON) bool {
	s := fastScanner{b: data}
	ck.Choices = ck.Choices[:0]
	ck.Usage, ck.Error = nil, nil
	ok := s.object(false, func(k []byte) bool {
		switch string(k) {
		case "choices":
			ck.Choices = ck.Choices[:0]
			return s.array(func() bool { return s.choice(ck) })
		case "usage":
			if s.next() == 'n' {
				return s.lit("null")
			}
			start := s.i
			if !s.skip() {
				return false
			}
			var u usageJSON
			if json.Unmarshal(s.b[start:s.i], &u) != nil {
				return false
			}
			ck.Usage = &u
			return true
		case "error":
			if s.next() == 'n' {
				return s.lit("null")
			}
			return false
		}
		return s.skip()
	})
	if !ok {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

func (s *fastScanner) choice(ck *chunkJSON) bool {
	if len(ck.Choices) < cap(ck.Choices) {
		ck.Choices = ck.Choices[:len(ck.Choices)+1]
		calls := ck.Choices[len(ck.Choices)-1].Delta.ToolCalls[:0]
		ck.Choices[len(ck.Choices)-1] = choiceJSON{}
		ck.Choices[len(ck.Choices)-1].Delta.ToolCalls = calls
	} else {
		ck.Choices = append(ck.Choices, choiceJSON{})
	}
	c := &ck.Choices[len(ck.Choices)-1]
	return s.object(false, func(k []byte) bool {
		switch string(k) {
		case "index":
			n, ok := s.integer()
			c.Index = n
			return ok
		case "finish_reason":
			return s.str(&c.FinishReason)
		case "delta":
			return s.object(true, func(k []byte) bool {
				switch string(k) {
				case "content":
					return s.str(&c.Delta.Content)
				case "reasoning_content":
					return s.str(&c.Delta.ReasoningContent)
				case "reasoning":
					return s.str(&c.Delta.Reasoning)
				case "refusal":
					return s.str(&c.Delta.Refusal)
				case "tool_calls":
					c.Delta.ToolCalls = c.Delta.ToolCalls[:0]
					return s.array(func() bool { return s.toolCall(&c.Delta.ToolCalls) })
				}
				return s.skip()
			})
		}
		return s.skip()
	})
}

func (s *fastScanner) toolCall(calls *[]toolCallJSON) bool {
	*calls = append(*calls, toolCallJSON{})
	tc := &(*calls)[len(*calls)-1]
	return s.object(false, func(k []byte) bool {
		switch string(k) {
		case "index":
			if s.next() == 'n' {
				return s.lit("null")
			}
			n, ok := s.integer()
			tc.Index = &tc.index
			tc.index = n
			return ok
		case "id":
			return s.str(&tc.ID)
		case "function":
			return s.object(true, func(k []byte) bool {
				switch string(k) {
				case "name":
					return s.str(&tc.Function.Name)
				case "arguments":
					return s.str(&tc.Function.Arguments)
				}
				return s.skip()
			})
		}
		return s.skip()
	})
}
