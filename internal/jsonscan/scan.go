package jsonscan

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting Skip passes over before it declines.
const MaxDepth = 64

// Scanner reads one JSON document. Every method reports false when the
// input is not what it expects; after a false the position is unspecified
// and the caller should give the whole document to encoding/json.
type Scanner struct {
	b     []byte
	i     int
	depth int

	// RejectFoldedKeys makes Object and Skip decline keys with upper-case
	// or non-ASCII bytes, for decoders whose expected keys are all
	// lower-case ASCII and which skip unknown keys without checking
	// whether encoding/json would match them case-insensitively.
	RejectFoldedKeys bool
}

// New returns a scanner positioned at the start of b.
func New(b []byte) Scanner { return Scanner{b: b} }

// WS skips whitespace.
func (s *Scanner) WS() {
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

// Next skips whitespace and returns the next byte without consuming it
// (0 at the end).
func (s *Scanner) Next() byte {
	s.WS()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// Eat skips whitespace and consumes c if it is the next byte.
func (s *Scanner) Eat(c byte) bool {
	if s.Next() == c {
		s.i++
		return true
	}
	return false
}

// AtEnd skips whitespace and reports whether the input is exhausted.
func (s *Scanner) AtEnd() bool {
	s.WS()
	return s.i == len(s.b)
}

// lit consumes word if the input continues with it.
func (s *Scanner) lit(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// Null consumes a null literal if one comes next. A value starting with
// 'n' that is not null is left for the next read to decline.
func (s *Scanner) Null() bool {
	return s.Next() == 'n' && s.lit("null")
}

// RawString reads a string and returns its contents between the quotes,
// unvalidated and still escaped, and whether they contain escapes.
func (s *Scanner) RawString() (raw []byte, esc, ok bool) {
	if s.Next() != '"' {
		return nil, false, false
	}
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

// Key reads an object key and the colon after it. Keys with escapes are
// declined, and so are folded keys when RejectFoldedKeys is set.
func (s *Scanner) Key() ([]byte, bool) {
	raw, esc, ok := s.RawString()
	if !ok || esc || !s.Eat(':') {
		return nil, false
	}
	if s.RejectFoldedKeys {
		for _, c := range raw {
			if (c >= 'A' && c <= 'Z') || c >= 0x80 {
				return nil, false
			}
		}
	}
	return raw, true
}

// Text reads a string as encoding/json would decode it into a Go string,
// declining control characters and invalid UTF-8 (where encoding/json
// either fails or substitutes U+FFFD).
func (s *Scanner) Text() (string, bool) {
	return s.TextFrom(nil)
}

// TextInto reads a string into *dst (see Text). On failure *dst is left
// unchanged.
func (s *Scanner) TextInto(dst *string) bool {
	v, ok := s.TextFrom(nil)
	if ok {
		*dst = v
	}
	return ok
}

// TextFrom is Text returning the element of known equal to the string,
// when there is one, instead of allocating a copy: for values such as type
// names and finish reasons that repeat in every stream.
func (s *Scanner) TextFrom(known []string) (string, bool) {
	raw, esc, ok := s.RawString()
	if !ok {
		return "", false
	}
	if esc {
		return Unescape(raw)
	}
	// One pass: control characters are invalid, non-ASCII needs a UTF-8
	// check from there on.
	for i, c := range raw {
		if c < 0x20 {
			return "", false
		}
		if c >= 0x80 {
			if !utf8.Valid(raw[i:]) {
				return "", false
			}
			for _, c := range raw[i:] {
				if c < 0x20 {
					return "", false
				}
			}
			break
		}
	}
	for _, k := range known {
		if string(raw) == k {
			return k, true
		}
	}
	return string(raw), true
}

// Unescape decodes the contents of a JSON string (between the quotes) as
// encoding/json does, declining control characters, invalid escapes and
// invalid UTF-8. Lone surrogates become U+FFFD, as in encoding/json.
func Unescape(raw []byte) (string, bool) {
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

// Int reads an integer of at most 18 digits, optionally negative, and
// declines fractions, exponents and leading zeros.
func (s *Scanner) Int() (int, bool) {
	s.WS()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	n, start := 0, s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' && s.i-start < 18 {
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
	if neg {
		n = -n
	}
	return n, true
}

// Bool reads true or false.
func (s *Scanner) Bool() (v, ok bool) {
	switch s.Next() {
	case 't':
		return true, s.lit("true")
	case 'f':
		return false, s.lit("false")
	}
	return false, false
}

// Skip passes over one value, checking its structure (but not the
// contents of its strings).
func (s *Scanner) Skip() bool {
	switch c := s.Next(); c {
	case '"':
		_, _, ok := s.RawString()
		return ok
	case '{', '[':
		s.depth++
		if s.depth > MaxDepth {
			return false
		}
		s.i++
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		if s.Eat(closer) {
			s.depth--
			return true
		}
		for {
			if c == '{' {
				if _, ok := s.Key(); !ok {
					return false
				}
			}
			if !s.Skip() {
				return false
			}
			if s.Eat(',') {
				continue
			}
			if s.Eat(closer) {
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

// Raw passes over one value (see Skip) and returns a copy of its bytes.
func (s *Scanner) Raw() ([]byte, bool) {
	s.WS()
	start := s.i
	if !s.Skip() {
		return nil, false
	}
	return bytes.Clone(s.b[start:s.i]), true
}

// RawView is Raw without the copy: the bytes alias the input.
func (s *Scanner) RawView() ([]byte, bool) {
	s.WS()
	start := s.i
	if !s.Skip() {
		return nil, false
	}
	return s.b[start:s.i], true
}

// number passes over a JSON number.
func (s *Scanner) number() bool {
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

// Object reads an object, calling member for each key with the scanner
// positioned at the value; member must consume the value and report
// success.
func (s *Scanner) Object(member func(key []byte) bool) bool {
	return s.Eat('{') && s.members(member)
}

// NullableObject is Object that also accepts null (calling member for
// nothing).
func (s *Scanner) NullableObject(member func(key []byte) bool) bool {
	null, ok := s.open('{')
	return ok && (null || s.members(member))
}

// open consumes null or the opening bracket c.
func (s *Scanner) open(c byte) (null, ok bool) {
	switch s.Next() {
	case 'n':
		return true, s.lit("null")
	case c:
		s.i++
		return false, true
	}
	return false, false
}

func (s *Scanner) members(member func(key []byte) bool) bool {
	if s.Eat('}') {
		return true
	}
	for {
		k, ok := s.Key()
		if !ok || !member(k) {
			return false
		}
		if s.Eat(',') {
			continue
		}
		return s.Eat('}')
	}
}

// Array reads an array, calling elem for each element with the scanner
// positioned at it; elem must consume the element and report success.
func (s *Scanner) Array(elem func() bool) bool {
	return s.Eat('[') && s.elems(elem)
}

// NullableArray is Array that also accepts null (calling elem for
// nothing).
func (s *Scanner) NullableArray(elem func() bool) bool {
	null, ok := s.open('[')
	return ok && (null || s.elems(elem))
}

func (s *Scanner) elems(elem func() bool) bool {
	if s.Eat(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.Eat(',') {
			continue
		}
		return s.Eat(']')
	}
}

// FoldsTo reports whether key equals one of names under Unicode case
// folding, as encoding/json matches field names. A member callback uses
// it to decline keys that encoding/json would match to a field it reads.
func FoldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}
