package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// jsonSafe marks the ASCII bytes encoding/json copies unescaped (with its
// default HTML escaping of <, > and &).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

const (
	lo7 = 0x0101010101010101
	hi7 = 0x8080808080808080
)

// safeWord reports whether the 8 bytes of w are all ASCII that
// AppendString copies unescaped: none is 0x80 or above, below 0x20, or
// one of " \\ < > &. It lets long plain text skip the byte loop.
func safeWord(w string) bool {
	_ = w[7]
	x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
	if x&hi7 != 0 || (x-lo7*0x20)&^x&hi7 != 0 {
		return false // non-ASCII or a control byte
	}
	return !hasByte(x, '"') && !hasByte(x, '\\') && !hasByte(x, '<') && !hasByte(x, '>') && !hasByte(x, '&')
}

// hasByte reports whether any byte of x (all below 0x80) equals c.
func hasByte(x uint64, c byte) bool {
	y := x ^ (lo7 * uint64(c))
	return (y-lo7)&^y&hi7 != 0
}

// AppendString appends s as a JSON string exactly as encoding/json
// (with its default HTML escaping) writes it: short escapes for \b \f \n \r \t " and \\, \u00XX for other
// control bytes and <, > and &, \ufffd for each invalid UTF-8 byte, and
// \u2028, \u2029 escaped.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && safeWord(s[i:i+8]) {
			i += 8
			continue
		}
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
