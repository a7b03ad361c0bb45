package textutil

import (
	"fmt"
	"unicode/utf8"
)

// Truncate cuts s to at most max bytes without splitting a UTF-8 sequence
// and, when it cut, appends a note saying how many bytes were left out. The
// note is not counted in max. It reports whether s was cut. max <= 0 means
// no limit.
func Truncate(s string, max int) (string, bool) {
	if max <= 0 || len(s) <= max {
		return s, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[truncated: %d of %d bytes omitted]", len(s)-cut, len(s)), true
}

// TruncateRunes cuts s to at most max runes, appending "…" when it cut.
func TruncateRunes(s string, max int) (string, bool) {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s, false
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + "…", true
		}
		n++
	}
	return s, false
}
