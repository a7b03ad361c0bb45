package textutil

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		in      string
		max     int
		want    string
		wantCut bool
	}{
		{"short", "hello", 10, "hello", false},
		{"exact", "hello", 5, "hello", false},
		{"nolimit", "hello", 0, "hello", false},
		{"cut", "hello world", 5, "hello\n[truncated: 6 of 11 bytes omitted]", true},
		{"utf8 boundary", "Zürich", 2, "Z\n[truncated: 6 of 7 bytes omitted]", true},
	}
	for _, c := range cases {
		got, cut := Truncate(c.in, c.max)
		if got != c.want || cut != c.wantCut {
			t.Errorf("%s: Truncate(%q, %d) = %q, %v; want %q, %v", c.name, c.in, c.max, got, cut, c.want, c.wantCut)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: result is not valid UTF-8", c.name)
		}
	}
}

func TestTruncateNeverSplitsRunes(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("東京Łódź", 20)
	for max := 1; max < len(s); max++ {
		got, _ := Truncate(s, max)
		if !utf8.ValidString(got) {
			t.Fatalf("max %d: invalid UTF-8 %q", max, got)
		}
	}
}

func TestTruncateRunes(t *testing.T) {
	t.Parallel()
	if got, cut := TruncateRunes("東京都庁", 2); got != "東京…" || !cut {
		t.Fatalf("TruncateRunes = %q, %v", got, cut)
	}
	if got, cut := TruncateRunes("abc", 3); got != "abc" || cut {
		t.Fatalf("TruncateRunes = %q, %v", got, cut)
	}
}
