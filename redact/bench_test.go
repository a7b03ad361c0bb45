package redact_test

import (
	"strings"
	"testing"

	"github.com/bichat-go/bichat/redact"
)

// BenchmarkStringClean scrubs 4 KB of prose and log text without secrets
// (but with words that pass the prefilter: key, token, secret, bearer,
// password, ://): String must return it without allocating.
func BenchmarkStringClean(b *testing.B) {
	r := redact.Default()
	s := cleanText(4096)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		if r.String(s) != s {
			b.Fatal("clean text changed")
		}
	}
}

// BenchmarkStringDirty scrubs 4 KB of the same text with six secrets of
// different families spread through it.
func BenchmarkStringDirty(b *testing.B) {
	r := redact.Default()
	clean := cleanText(4096)
	secrets := []string{
		"postgres://bi:S3cret!pw@db/bi", "Authorization: Bearer " + bearerTok, openaiProj,
		googleKey, "password=hunter22", awsAKIA,
	}
	var sb strings.Builder
	step := len(clean) / len(secrets)
	for i, sec := range secrets {
		sb.WriteString(clean[i*step : (i+1)*step])
		sb.WriteString(" " + sec + " ")
	}
	s := sb.String()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		if r.String(s) == s {
			b.Fatal("nothing scrubbed")
		}
	}
}
