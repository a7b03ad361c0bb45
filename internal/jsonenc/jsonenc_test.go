package jsonenc_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/internal/jsonenc"
)

var cases = []string{
	"", "plain ascii text that is long enough for the word loop",
	`quotes " and \ backslashes`, "<script>&amp;</script>", "line\nbreak\r\ttab\b\f",
	"\x00\x01\x1f\x7f", "héllo wörld 日本語 🎉", "bad \xff\xfe utf8", "\u2028 and \u2029",
	strings.Repeat("abcdefgh", 20) + "<", "1234567\"", "12345678\x00",
}

// TestAppendStringMatchesEncodingJSON: the bytes are encoding/json's.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := jsonenc.AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

// TestAppendStringAllocatesNothing with room in dst.
func TestAppendStringAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { _ = jsonenc.AppendString(buf[:0], cases[5]+cases[6]) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range cases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := jsonenc.AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}
