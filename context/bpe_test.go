package context

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// bpeCorpus mixes scripts, long runs (where the merge order matters most)
// and odd bytes.
var bpeCorpus = []string{
	"hello world", "Hello, World! It's 2025; we'll see.", "SELECT region, SUM(revenue) FROM sales.orders GROUP BY 1",
	"Zürich Łódź 東京 Москва القاهرة मुंबई 서울", "    indented\n\n\ttabs\r\n", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	strings.Repeat("東", 700), strings.Repeat("ab", 500), strings.Repeat("🙂", 100), "\x00\x01\xff\xfe invalid",
	strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20), "1234567890 3.14159 -42 1e10",
	strings.Repeat("supercalifragilisticexpialidocious", 30), "<|endoftext|> is text here",
}

func randomText(r *rand.Rand, n int) string {
	alphabets := []string{"abcdefghij ", "ÄÖÜßéè ", "東京大阪日本語 ", "0123456789.,;!? \n", "абвгд ", "😀🙂👍"}
	var b strings.Builder
	for b.Len() < n {
		a := []rune(alphabets[r.IntN(len(alphabets))])
		run := 1 + r.IntN(40)
		for range run {
			b.WriteRune(a[r.IntN(len(a))])
		}
	}
	return b.String()
}

// TestEncoderMatchesTiktokenGo checks the heap merge against tiktoken-go's
// reference merge, token by token.
func TestEncoderMatchesTiktokenGo(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	inputs := slices.Clone(bpeCorpus)
	for range 200 {
		inputs = append(inputs, randomText(r, 1+r.IntN(400)))
	}
	for _, enc := range []Encoding{O200kBase, Cl100kBase} {
		tk, err := NewTokenizer(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range inputs {
			got, want := tk.Encode(s), tk.ref.EncodeOrdinary(s)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: %q\n got %v\nwant %v", enc, s, got, want)
			}
			if n := tk.Count(s); n != len(want) {
				t.Fatalf("%s: Count(%q) = %d, want %d", enc, s, n, len(want))
			}
		}
	}
}

func FuzzEncoderMatchesTiktokenGo(f *testing.F) {
	for _, s := range bpeCorpus {
		f.Add(s)
	}
	tk, err := NewTokenizer(O200kBase)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 2000 {
			return
		}
		if got, want := tk.Encode(s), tk.ref.EncodeOrdinary(s); !slices.Equal(got, want) {
			t.Fatalf("%q\n got %v\nwant %v", s, got, want)
		}
	})
}

// BenchmarkCountLongCJK counts a 10,000-character run of CJK text, one
// pre-token: the heap merge against tiktoken-go's quadratic one.
func BenchmarkCountLongCJK(b *testing.B) {
	tk, err := NewTokenizer(O200kBase)
	if err != nil {
		b.Fatal(err)
	}
	s := strings.Repeat("東京", 5000)
	b.Run("heap", func(b *testing.B) {
		for b.Loop() {
			tk.Count(s)
		}
	})
	b.Run("tiktoken-go", func(b *testing.B) {
		for b.Loop() {
			_ = len(tk.ref.EncodeOrdinary(s))
		}
	})
}
