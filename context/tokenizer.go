package context

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// Encoding names a tiktoken encoding.
type Encoding string

// Encodings with embedded BPE ranks.
const (
	// O200kBase is the encoding of gpt-4o, gpt-4.1, gpt-5 and the o-series.
	O200kBase Encoding = "o200k_base"
	// Cl100kBase is the encoding of gpt-4 and gpt-3.5-turbo.
	Cl100kBase Encoding = "cl100k_base"
)

// Regular expressions splitting text into pieces before byte-pair merging;
// identical to tiktoken's (a test checks them against tiktoken-go).
const (
	o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// Tokenizer counts tokens exactly as OpenAI's tiktoken does. The BPE ranks
// are embedded in the binary (the assets of
// github.com/pkoukk/tiktoken-go-loader): nothing is downloaded or read from
// disk, ever. A Tokenizer is safe for concurrent
// use.
type Tokenizer struct {
	enc  Encoding
	core *encoder
	// ref is tiktoken-go's encoder over the same ranks, kept for the tests
	// that compare the two.
	ref *tiktoken.Tiktoken
	sep int // tokens of SystemSeparator
	// heading counts contextTitle.
	heading int
	ranks   map[string]int
}

type loadedEncoding struct {
	once sync.Once
	tok  *Tokenizer
	err  error
}

var encodings = map[Encoding]*loadedEncoding{O200kBase: {}, Cl100kBase: {}}

// NewTokenizer returns the tokenizer for enc. The ranks are decoded once
// per process (about 0.1–0.3 s for o200k_base) on first use; later calls
// return the same Tokenizer.
//
// It builds the encoder directly from the embedded ranks instead of
// registering a loader with tiktoken.SetBpeLoader, so it changes no global
// state of tiktoken-go and cannot race with other users of that package.
func NewTokenizer(enc Encoding) (*Tokenizer, error) {
	l, ok := encodings[enc]
	if !ok {
		return nil, fmt.Errorf("context: unknown encoding %q (have o200k_base and cl100k_base)", enc)
	}
	l.once.Do(func() { l.tok, l.err = load(enc) })
	return l.tok, l.err
}

func load(enc Encoding) (*Tokenizer, error) {
	var pattern string
	var special map[string]int
	switch enc {
	case O200kBase:
		pattern = o200kPattern
		special = map[string]int{tiktoken.ENDOFTEXT: 199999, tiktoken.ENDOFPROMPT: 200018}
	case Cl100kBase:
		pattern = cl100kPattern
		special = map[string]int{tiktoken.ENDOFTEXT: 100257, tiktoken.FIM_PREFIX: 100258,
			tiktoken.FIM_MIDDLE: 100259, tiktoken.FIM_SUFFIX: 100260, tiktoken.ENDOFPROMPT: 100276}
	}
	ranks, err := loadRanks(string(enc) + ".tiktoken")
	if err != nil {
		return nil, fmt.Errorf("context: load embedded %s ranks: %w", enc, err)
	}
	bpe, err := tiktoken.NewCoreBPE(ranks, special, pattern)
	if err != nil {
		return nil, fmt.Errorf("context: build %s encoder: %w", enc, err)
	}
	set := make(map[string]any, len(special))
	for k := range special {
		set[k] = true
	}
	e := &tiktoken.Encoding{Name: string(enc), PatStr: pattern, MergeableRanks: ranks, SpecialTokens: special}
	core, err := newEncoder(pattern, ranks)
	if err != nil {
		return nil, fmt.Errorf("context: build %s encoder: %w", enc, err)
	}
	t := &Tokenizer{enc: enc, core: core, ref: tiktoken.NewTiktoken(bpe, e, set), ranks: ranks}
	t.sep = t.Count(SystemSeparator)
	t.heading = t.Count(contextTitle)
	return t, nil
}

// loadRanks parses an embedded .tiktoken file of tiktoken-go-loader
// ("base64-token rank" per line) without copying the file into strings.
func loadRanks(name string) (map[string]int, error) {
	data, err := assets.Assets.ReadFile(name)
	if err != nil {
		return nil, err
	}
	ranks := make(map[string]int, bytes.Count(data, []byte{'\n'})+1)
	buf := make([]byte, 0, 64)
	for line := range bytes.Lines(data) {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			continue
		}
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("%s: malformed line %q", name, line)
		}
		buf = slices.Grow(buf[:0], base64.StdEncoding.DecodedLen(sp))[:base64.StdEncoding.DecodedLen(sp)]
		n, err := base64.StdEncoding.Decode(buf, line[:sp])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rank := 0
		for _, c := range line[sp+1:] {
			if c < '0' || c > '9' {
				return nil, fmt.Errorf("%s: malformed rank in %q", name, line)
			}
			rank = rank*10 + int(c-'0')
		}
		ranks[string(buf[:n])] = rank
	}
	return ranks, nil
}

// Encoding returns the tokenizer's encoding.
func (t *Tokenizer) Encoding() Encoding { return t.enc }

// Count returns the number of tokens of s. Special-token text such as
// "<|endoftext|>" is counted as ordinary text, as providers do for user
// content.
func (t *Tokenizer) Count(s string) int {
	if s == "" {
		return 0
	}
	return t.core.count(s)
}

// Encode returns the token ids of s (special-token text is ordinary text).
func (t *Tokenizer) Encode(s string) []int { return t.core.encode(s, nil) }

// EncodingForModel returns the encoding of an OpenAI model name: o200k_base
// for gpt-4o, gpt-4.1, gpt-4.5, gpt-5, chatgpt-4o and the o-series (o1, o3,
// o4-mini, ...), cl100k_base for gpt-4, gpt-3.5-turbo and anything older or
// unknown that starts with "gpt-"; o200k_base otherwise (new models use it).
func EncodingForModel(model string) Encoding {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // "openai/gpt-4o" style names
	}
	switch {
	case strings.HasPrefix(m, "gpt-4o"), strings.HasPrefix(m, "gpt-4.1"), strings.HasPrefix(m, "gpt-4.5"),
		strings.HasPrefix(m, "chatgpt-4o"), strings.HasPrefix(m, "gpt-5"), strings.HasPrefix(m, "gpt-oss"):
		return O200kBase
	case len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9':
		return O200kBase
	case strings.HasPrefix(m, "gpt-4"), strings.HasPrefix(m, "gpt-3.5"), strings.HasPrefix(m, "gpt-35"),
		strings.HasPrefix(m, "text-embedding-"):
		return Cl100kBase
	}
	return O200kBase
}
