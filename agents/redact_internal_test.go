package agents

import (
	"regexp"
	"strings"
	"testing"
)

// bearer scrubs "Bearer <token>" the way a context-based pattern does:
// the marker stays, the token goes.
var bearerRE = regexp.MustCompile(`Bearer [A-Za-z0-9._-]+`)

func scrubBearer(s string) string { return bearerRE.ReplaceAllString(s, "Bearer [R]") }

// streamThrough feeds text to a textHold in pieces of n bytes and returns
// what it sent, delta by delta.
func streamThrough(text string, n int, f func(string) string) []string {
	var h textHold
	var out []string
	for i := 0; i < len(text); i += n {
		if d := h.take(text[i:min(len(text), i+n)], f); d != "" {
			out = append(out, d)
		}
	}
	if d := h.flush(f); d != "" {
		out = append(out, d)
	}
	return out
}

func TestTextHold(t *testing.T) {
	t.Parallel()
	const token = "eyTOKEN.abc-123_xyz"
	text := "Call it with Bearer " + token + " please, then again Bearer " + token + "."
	want := scrubBearer(text)
	for n := 1; n <= len(text); n++ {
		got := strings.Join(streamThrough(text, n, scrubBearer), "")
		if got != want {
			t.Fatalf("pieces of %d: sent %q, want %q", n, got, want)
		}
		if strings.Contains(got, token) {
			t.Fatalf("pieces of %d leak the token", n)
		}
	}
}

func TestTextHoldStreamsProse(t *testing.T) {
	t.Parallel()
	// Prose and CJK go out as they arrive: only a trailing run of
	// characters a secret may contain is held.
	cjk := strings.Repeat("收入按地区增长了百分之十。", 20)
	if d := streamThrough(cjk, 3, scrubBearer); len(d) < 70 {
		t.Fatalf("CJK text went out in %d deltas, want it streamed", len(d))
	}
	prose := strings.Repeat("the revenue grew in the north ", 20)
	if d := streamThrough(prose, 4, scrubBearer); len(d) < 100 {
		t.Fatalf("prose went out in %d deltas, want it streamed", len(d))
	}
	// A run longer than maxHeldText is not held forever.
	long := strings.Repeat("x", 3*maxHeldText)
	if d := streamThrough(long, 16, scrubBearer); len(d) < 3 || strings.Join(d, "") != long {
		t.Fatalf("a long run went out in %d deltas", len(d))
	}
}
