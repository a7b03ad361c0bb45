package llmhttp_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/internal/sse"
)

// BenchmarkTailReader measures what the TailReader adds to the SSE reader
// on a 1 MB stream of small events.
func BenchmarkTailReader(b *testing.B) {
	data := []byte(strings.Repeat("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"word \"}}\n\n", 8000))
	for _, tc := range []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"plain", func(r io.Reader) io.Reader { return r }},
		{"tail", func(r io.Reader) io.Reader { return llmhttp.NewTailReader(r, false) }},
		{"tail_stray", func(r io.Reader) io.Reader { return llmhttp.NewTailReader(r, true) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				r := sse.NewReader(tc.wrap(bytes.NewReader(data)))
				for {
					if _, err := r.Next(); err != nil {
						if !errors.Is(err, io.EOF) {
							b.Fatal(err)
						}
						break
					}
				}
			}
		})
	}
}
