package anthropic

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A minimal JSON scanner for the hot path: the content_block_delta events
// that make up nearly all of a stream. It reads exactly the fields the
// decoder needs and reports failure (ok false) on anything unusual, in
// which case the event is decoded again with encoding/json, which also
// produces the error message for malformed input.

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

// scanEvent reads the events that make up nearly all of a stream
// (content_block_delta, content_block_start, content_block_stop, ping,
// message_stop) into ev, using delta and block as storage. It reports
// false for any other event (message_start, message_delta, error, unknown
// types) and for any input it does not fully understand.
func scanEvent(data []byte, ev *wireEvent, delta *wireDelta, block *wireEventBlock) bool {
	s := scanner{b: data}
	var typ []byte
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			t, esc, ok := s.str()
			typ = t
			return ok && !esc
		case "index":
			n, ok := s.integer()
			ev.Index = n
			return ok
		case "delta":
			ev.Delta = delta
			return s.object(func(k []byte) bool {
				var dst *string
				switch string(k) {
				case "type":
					return s.kind(&delta.Type)
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
					return !foldsTo(k, "type", "text", "partial_json", "thinking", "signature", "stop_reason") && s.skip()
				}
				v, ok := s.text()
				*dst = v
				return ok
			})
		case "content_block":
			ev.ContentBlock = block
			return s.object(func(k []byte) bool {
				var dst *string
				switch string(k) {
				case "type":
					return s.kind(&block.Type)
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
					s.ws()
					start := s.i
					if !s.skip() {
						return false
					}
					block.Input = bytes.Clone(s.b[start:s.i])
					return true
				default:
					return !foldsTo(k, "type", "text", "thinking", "signature", "data", "id", "name", "input") && s.skip()
				}
				v, ok := s.text()
				*dst = v
				return ok
			})
		default:
			return !foldsTo(key, "type", "index", "delta", "message", "content_block", "usage", "error") && s.skip()
		}
	})
	s.ws()
	if !ok || s.i != len(data) {
		return false
	}
	switch t := string(typ); t {
	case "content_block_delta", "content_block_start", "content_block_stop", "ping", "message_stop":
		ev.Type = t
		return true
	}
	return false
}

// kinds are the type names events repeat, stored without allocating.
var kinds = []string{"text_delta", "input_json_delta", "thinking_delta", "signature_delta", "citations_delta",
	"text", "thinking", "redacted_thinking", "tool_use"}

// kind reads a type name into dst, reusing the strings in kinds.
func (s *scanner) kind(dst *string) bool {
	raw, esc, ok := s.str()
	if !ok || esc {
		return false
	}
	for _, k := range kinds {
		if string(raw) == k {
			*dst = k
			return true
		}
	}
	if !utf8.Valid(raw) {
		return false
	}
	*dst = string(raw)
	return true
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
