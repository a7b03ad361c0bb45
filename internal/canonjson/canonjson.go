package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrDuplicateKey reports an object with the same key twice: its meaning is
// ambiguous, so it has no canonical form.
var ErrDuplicateKey = errors.New("canonjson: duplicate object key")

// ErrSyntax reports input that is not one JSON value.
var ErrSyntax = errors.New("canonjson: invalid JSON")

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 10000

// Marshal encodes v with encoding/json (so struct tags, MarshalJSON and
// omitempty apply) and returns the canonical form of the result.
func Marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	return Canonicalize(raw)
}

// Canonicalize returns the canonical form of the JSON value in data:
// object keys sorted by their UTF-16 code units, no insignificant
// whitespace, strings escaped minimally (only '"', '\\' and control
// characters; invalid UTF-8 becomes U+FFFD as encoding/json does), and
// numbers formatted stably: integer literals keep their exact digits ("-0"
// becomes "0"); literals with a fraction or exponent are read as float64
// and written the way ECMAScript does (1.50 → 1.5, 1e2 → 100, 1e21 →
// 1e+21, 1e-7 → 1e-7). Canonicalize(Canonicalize(x)) == Canonicalize(x).
func Canonicalize(data []byte) ([]byte, error) {
	p := parser{in: data}
	p.skipSpace()
	out := make([]byte, 0, len(data))
	out, err := p.value(out, 0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.in) {
		return nil, p.errorf("unexpected data after the value")
	}
	return out, nil
}

type parser struct {
	in  []byte
	pos int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSyntax, p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) skipSpace() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(out []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, p.errorf("nesting deeper than %d", maxDepth)
	}
	if p.pos >= len(p.in) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object(out, depth)
	case c == '[':
		return p.array(out, depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return appendString(out, s), nil
	case c == 't':
		return p.literal(out, "true")
	case c == 'f':
		return p.literal(out, "false")
	case c == 'n':
		return p.literal(out, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(out)
	default:
		return nil, p.errorf("unexpected character %q", c)
	}
}

func (p *parser) literal(out []byte, lit string) ([]byte, error) {
	if !bytes.HasPrefix(p.in[p.pos:], []byte(lit)) {
		return nil, p.errorf("invalid literal")
	}
	p.pos += len(lit)
	return append(out, lit...), nil
}

type member struct {
	key   string
	key16 []uint16
	val   []byte
}

func (p *parser) object(out []byte, depth int) ([]byte, error) {
	p.pos++ // {
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		return append(out, '{', '}'), nil
	}
	var members []member
	for {
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return nil, p.errorf("expected an object key")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return nil, p.errorf("expected ':'")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(nil, depth+1)
		if err != nil {
			return nil, err
		}
		members = append(members, member{key: k, val: v})
		p.skipSpace()
		if p.pos >= len(p.in) {
			return nil, p.errorf("unexpected end of input in object")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] == '}' {
			p.pos++
			break
		}
		return nil, p.errorf("expected ',' or '}'")
	}
	needs16 := false
	for i := range members {
		for j := 0; j < len(members[i].key); j++ {
			if members[i].key[j] >= 0xEE { // U+E000 and above: UTF-8 order may differ from UTF-16
				needs16 = true
			}
		}
	}
	if needs16 {
		for i := range members {
			members[i].key16 = utf16.Encode([]rune(members[i].key))
		}
		slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.key16, b.key16) })
	} else {
		slices.SortFunc(members, func(a, b member) int { return compareStrings(a.key, b.key) })
	}
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			if members[i-1].key == m.key {
				return nil, fmt.Errorf("%w: %q", ErrDuplicateKey, m.key)
			}
			out = append(out, ',')
		}
		out = appendString(out, m.key)
		out = append(out, ':')
		out = append(out, m.val...)
	}
	return append(out, '}'), nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (p *parser) array(out []byte, depth int) ([]byte, error) {
	p.pos++ // [
	out = append(out, '[')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		return append(out, ']'), nil
	}
	for first := true; ; first = false {
		if !first {
			out = append(out, ',')
		}
		p.skipSpace()
		var err error
		out, err = p.value(out, depth+1)
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return nil, p.errorf("unexpected end of input in array")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] == ']' {
			p.pos++
			return append(out, ']'), nil
		}
		return nil, p.errorf("expected ',' or ']'")
	}
}

// str reads a JSON string and returns its decoded value.
func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes, valid UTF-8, no control characters.
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		if c == '"' {
			s := p.in[start:p.pos]
			p.pos++
			if utf8.Valid(s) {
				return string(s), nil
			}
			return validUTF8(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	p.pos = start
	var b []byte
	for {
		if p.pos >= len(p.in) {
			return "", p.errorf("unterminated string")
		}
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			if !utf8.Valid(b) {
				return validUTF8(b), nil
			}
			return string(b), nil
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c == '\\':
			if p.pos+1 >= len(p.in) {
				return "", p.errorf("unterminated escape")
			}
			e := p.in[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.errorf("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if p.pos+1 < len(p.in) && p.in[p.pos] == '\\' && p.in[p.pos+1] == 'u' {
						save := p.pos
						p.pos += 2
						var ok2 bool
						r2, ok2 = p.hex4()
						if !ok2 {
							return "", p.errorf("invalid \\u escape")
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							continue
						}
						p.pos = save // lone surrogate followed by another escape
					}
					b = utf8.AppendRune(b, utf8.RuneError)
					continue
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", p.errorf("invalid escape \\%c", e)
			}
		default:
			b = append(b, c)
			p.pos++
		}
	}
}

// validUTF8 replaces each byte of an invalid UTF-8 sequence with U+FFFD,
// as encoding/json does.
func validUTF8(s []byte) string {
	out := make([]byte, 0, len(s)+8)
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, s[:n]...)
		}
		s = s[n:]
	}
	return string(out)
}

func (p *parser) hex4() (rune, bool) {
	if p.pos+4 > len(p.in) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.in[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(v), true
}

func (p *parser) number(out []byte) ([]byte, error) {
	start := p.pos
	integer := true
	if p.in[p.pos] == '-' {
		p.pos++
	}
	if p.pos >= len(p.in) {
		return nil, p.errorf("invalid number")
	}
	switch c := p.in[p.pos]; {
	case c == '0':
		p.pos++
	case c >= '1' && c <= '9':
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
		}
	default:
		return nil, p.errorf("invalid number")
	}
	if p.pos < len(p.in) && p.in[p.pos] == '.' {
		integer = false
		p.pos++
		d := p.pos
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == d {
			return nil, p.errorf("invalid number")
		}
	}
	if p.pos < len(p.in) && (p.in[p.pos] == 'e' || p.in[p.pos] == 'E') {
		integer = false
		p.pos++
		if p.pos < len(p.in) && (p.in[p.pos] == '+' || p.in[p.pos] == '-') {
			p.pos++
		}
		d := p.pos
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == d {
			return nil, p.errorf("invalid number")
		}
	}
	lit := p.in[start:p.pos]
	if integer {
		if string(lit) == "-0" {
			return append(out, '0'), nil
		}
		return append(out, lit...), nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, p.errorf("invalid number")
	}
	if math.IsInf(f, 0) {
		return nil, p.errorf("number %s is out of the float64 range", lit)
	}
	return AppendFloat(out, f), nil
}

// AppendFloat appends f formatted the way ECMAScript's Number.prototype
// .toString does (the number format of RFC 8785): the shortest
// representation that round-trips, in plain notation for magnitudes in
// [1e-6, 1e21) and in exponent notation ("1e+21", "1.5e-8") otherwise.
// Negative zero is written as 0. f must be finite.
func AppendFloat(out []byte, f float64) []byte {
	if f == 0 {
		return append(out, '0')
	}
	a := math.Abs(f)
	if a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(out, f, 'f', -1, 64)
	}
	s := strconv.AppendFloat(nil, f, 'e', -1, 64) // d.ddde±XX
	i := bytes.IndexByte(s, 'e')
	mant, exp := s[:i], s[i+1:]
	sign := exp[0]
	digits := bytes.TrimLeft(exp[1:], "0")
	out = append(out, mant...)
	out = append(out, 'e', sign)
	return append(out, digits...)
}

// appendString appends s as a JSON string with the minimal escaping of
// RFC 8785.
func appendString(out []byte, s string) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"':
			out = append(out, '\\', '"')
		case '\\':
			out = append(out, '\\', '\\')
		case '\b':
			out = append(out, '\\', 'b')
		case '\f':
			out = append(out, '\\', 'f')
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hexDigit(c>>4), hexDigit(c&0xF))
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

func hexDigit(b byte) byte {
	return "0123456789abcdef"[b]
}
