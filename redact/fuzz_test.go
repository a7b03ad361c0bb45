package redact_test

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/redact"
)

// fuzzSecrets are the literal secrets of the fuzzed redactor; the seeds
// splice them into surrounding text.
var fuzzSecrets = []string{"hunter2-prod", "Pa55word!", "zzzzzz"}

func FuzzString(f *testing.F) {
	seeds := []string{
		"",
		"plain text with a key metric",
		"password=hunter2-prod user=bi",
		"postgres://bi:Pa55word!@db/bi and Bearer " + bearerTok,
		openaiProj + " " + anthropicAPI + " " + googleKey + " " + jwt,
		`{"password":"x","q":"sk-learn"}`,
		"zzzzzzzzzzzz",
		"hunter2-prodhunter2-prod",
		"[REDACTED]hunter2-prod[REDACTED]",
		"Authorization: Bearer Bearer abc123def456",
		"password='it\\'s' secret: Xk9!mq2z token:=\"q\"",
		"app:pw1234@tcp(db:3306)/x AKIA" + fake(20, 16, upperNo),
		"acct-12345678 acct-",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	r, err := redact.New(redact.Options{
		Secrets:  fuzzSecrets,
		Patterns: []*regexp.Regexp{regexp.MustCompile(`acct-(?P<secret>\d{8})`), regexp.MustCompile(`(?i)internal-[a-z0-9]+`)},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := r.String(s)
		for _, lit := range fuzzSecrets {
			if strings.Contains(s, lit) && strings.Contains(out, lit) {
				t.Fatalf("String(%q) = %q still holds %q", s, out, lit)
			}
		}
		if again := r.String(out); again != out {
			t.Fatalf("not idempotent: String(%q) = %q, then %q", s, out, again)
		}
		if r.Contains(out) {
			t.Fatalf("Contains(String(%q)) = true: %q", s, out)
		}
		if (out != s) != r.Contains(s) {
			t.Fatalf("Contains(%q) = %v but String changed it: %v", s, r.Contains(s), out != s)
		}
		if b := r.Bytes([]byte(s)); string(b) != out {
			t.Fatalf("Bytes(%q) = %q, String = %q", s, b, out)
		}
		if raw, err := json.Marshal(s); err == nil {
			j := r.JSON(raw)
			if !json.Valid(j) {
				t.Fatalf("JSON(%s) = %s: invalid", raw, j)
			}
		}
	})
}

// TestFragmentMixes runs the fuzz properties over deterministic mixes of
// the fragments the patterns care about (anchors, separators, quotes,
// replacements, secrets), where overlaps and rescans are most likely.
func TestFragmentMixes(t *testing.T) {
	t.Parallel()
	r, err := redact.New(redact.Options{
		Secrets:  fuzzSecrets,
		Patterns: []*regexp.Regexp{regexp.MustCompile(`acct-(?P<secret>\d{8})`), regexp.MustCompile(`(?i)internal-[a-z0-9]+`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	frags := []string{"sk-", "ant-", "AIza", "ya29.", "eyJ", ".", "AKIA", "bearer ", "Bearer", "authorization:", "://", "@",
		":", "@tcp(", "password", "=", "'", "\"", "\\", "token", "secret", "api_key", "[REDACTED]", "hunter2-prod", "zzz",
		"Pa55word!", " ", "\n", "abcDEF123", "x", "acct-1234", "5678", "internal-", "_", "-", "{", "}"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 4000 {
		var b strings.Builder
		for range rng.IntN(30) {
			b.WriteString(frags[rng.IntN(len(frags))])
		}
		s := b.String()
		out := r.String(s)
		for _, lit := range fuzzSecrets {
			if strings.Contains(s, lit) && strings.Contains(out, lit) {
				t.Fatalf("String(%q) = %q still holds %q", s, out, lit)
			}
		}
		if again := r.String(out); again != out {
			t.Fatalf("not idempotent: String(%q) = %q, then %q", s, out, again)
		}
		if r.Contains(out) {
			t.Fatalf("Contains(String(%q)) = true", s)
		}
	}
}
