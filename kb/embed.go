package kb

import (
	"cmp"
	"context"
	"hash/fnv"
	"math"
	"slices"
)

// HashEmbedderOptions configures NewHashEmbedder. The zero value is the
// tuned default: 512 dimensions, stemmed words, word bigrams and character
// 3- and 4-grams.
type HashEmbedderOptions struct {
	// Dimensions is the vector length; default 512.
	Dimensions int
	// MinN and MaxN bound the character n-grams taken from each word (with
	// word-boundary markers); defaults 3 and 4.
	MinN, MaxN int
	// CharWeight is the weight of the character n-gram similarity
	// relative to the word similarity (1); default 0.6. Words and n-grams
	// hash into separate halves of the vector, so the cosine of two
	// vectors is (cos_words + CharWeight·cos_ngrams)/(1+CharWeight).
	// Character n-grams let "employes" meet "employees".
	CharWeight float64
	// BigramWeight is the weight of adjacent-word pairs; default 0.5.
	BigramWeight float64
	// NoCharNGrams and NoBigrams switch those features off.
	NoCharNGrams, NoBigrams bool
}

// HashEmbedder is the offline default Embedder: no model, no download,
// deterministic. A text becomes a bag of features — stemmed words (Terms,
// so identifiers are split; English stop words dropped), adjacent-word
// pairs and character n-grams of each word — each hashed (FNV-1a, signed) into a fixed number of
// dimensions, weighted by 1+ln(tf) times its inverse document frequency,
// and the vector is L2-normalised, so a dot product is the cosine.
//
// Without Fit every feature has weight 1; Fit learns the IDF weights from a
// corpus (the catalog's definitions, say) and returns a new embedder, so
// an embedder value never changes and is safe for concurrent use. Vectors
// are only comparable between texts embedded by the same (fitted)
// embedder.
type HashEmbedder struct {
	dims         int
	minN, maxN   int
	charWeight   float64
	bigramWeight float64
	noChar       bool
	noBigram     bool
	// idf is nil before Fit; unknownIDF is the weight of a feature the
	// fitted corpus never contained.
	idf        map[uint64]float32
	unknownIDF float32
	docs       int
}

// NewHashEmbedder returns an unfitted embedder with the given options.
func NewHashEmbedder(opts HashEmbedderOptions) *HashEmbedder {
	e := &HashEmbedder{
		dims: opts.Dimensions, minN: opts.MinN, maxN: opts.MaxN,
		charWeight: opts.CharWeight, bigramWeight: opts.BigramWeight,
		noChar: opts.NoCharNGrams, noBigram: opts.NoBigrams,
	}
	if e.dims <= 0 {
		e.dims = 512
	}
	if e.minN <= 0 {
		e.minN = 3
	}
	if e.maxN < e.minN {
		e.maxN = max(e.minN, 4)
	}
	if e.charWeight <= 0 {
		e.charWeight = 0.6
	}
	if e.bigramWeight <= 0 {
		e.bigramWeight = 0.5
	}
	return e
}

// Dimensions returns the vector length.
func (e *HashEmbedder) Dimensions() int { return e.dims }

// Fitted reports how many documents the IDF weights were learned from (0
// for an unfitted embedder).
func (e *HashEmbedder) Fitted() int { return e.docs }

// Embed returns one L2-normalised vector per text (all zeros for a text
// without words). It never fails except when ctx is done.
func (e *HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = e.Vector(t)
	}
	return out, nil
}

// Vector embeds one text.
func (e *HashEmbedder) Vector(text string) []float32 {
	vec := make([]float32, e.dims)
	words, chars := vec, []float32(nil)
	if !e.noChar {
		// Words and character n-grams hash into separate halves, so a
		// rare word cannot collide with a frequent n-gram: the cosine is
		// a weighted sum of a word cosine and an n-gram cosine.
		words, chars = vec[:e.dims/2], vec[e.dims/2:]
	}
	// Features that hash to the same dimension are summed in float32,
	// so they are added in a fixed order (by hash), never in map order:
	// otherwise the same text could embed to vectors differing in their
	// last bits, and near-tied similarities would swap between runs.
	feats := e.features(text)
	keys := make([]feature, 0, len(feats))
	for f := range feats {
		keys = append(keys, f)
	}
	slices.SortFunc(keys, func(a, b feature) int {
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		switch {
		case a.char == b.char:
			return 0
		case b.char:
			return -1
		}
		return 1
	})
	for _, f := range keys {
		w := feats[f]
		idf := float32(1)
		if e.idf != nil {
			var ok bool
			if idf, ok = e.idf[f.h]; !ok {
				idf = e.unknownIDF
			}
		}
		v := float32(w) * idf
		if f.h>>63 == 1 {
			v = -v
		}
		part := words
		if f.char {
			part = chars
		}
		part[f.h%uint64(len(part))] += v
	}
	normalize(words)
	if chars != nil {
		normalize(chars)
		cw := float32(math.Sqrt(e.charWeight / (1 + e.charWeight)))
		ww := float32(math.Sqrt(1 / (1 + e.charWeight)))
		for i := range words {
			words[i] *= ww
		}
		for i := range chars {
			chars[i] *= cw
		}
	}
	normalize(vec)
	return vec
}

// Fit returns a copy of e whose feature weights are the inverse document
// frequencies learned from corpus: ln((N+1)/(df+1)) + 1, so features that
// occur in every document ("id", "name") count least. Features absent from
// the corpus get weight 0: they cannot match any document of it and would
// only add hash-collision noise ("how many" in a question).
func (e *HashEmbedder) Fit(corpus []string) *HashEmbedder {
	df := make(map[uint64]int)
	for _, doc := range corpus {
		for f := range e.features(doc) {
			df[f.h]++
		}
	}
	n := float64(len(corpus))
	f := *e
	f.docs = len(corpus)
	f.idf = make(map[uint64]float32, len(df))
	for h, d := range df {
		f.idf[h] = float32(math.Log((n+1)/(float64(d)+1)) + 1)
	}
	f.unknownIDF = 0
	return &f
}

// FitCorpus is Fit behind the CorpusFitter interface.
func (e *HashEmbedder) FitCorpus(corpus []string) Embedder { return e.Fit(corpus) }

// CorpusFitter is an Embedder that learns weights from the texts it will
// compare (the offline HashEmbedder does). The catalog fits such an
// embedder per scope on the scope's definitions and re-embeds when the
// scope has grown markedly since the last fit.
type CorpusFitter interface {
	Embedder
	FitCorpus(corpus []string) Embedder
}

// feature is one hashed feature; char marks character n-grams.
type feature struct {
	h    uint64
	char bool
}

// features returns the weighted, hashed features of text: per feature,
// 1+ln(count) times the feature's weight.
func (e *HashEmbedder) features(text string) map[feature]float64 {
	h := fnv.New64a()
	hash := func(kind byte, parts ...string) uint64 {
		h.Reset()
		h.Write([]byte{kind})
		for i, p := range parts {
			if i > 0 {
				h.Write([]byte{' '})
			}
			h.Write([]byte(p))
		}
		return h.Sum64()
	}
	tf := map[feature]float64{}
	wt := map[feature]float64{}
	add := func(f feature, w float64) {
		tf[f]++
		wt[f] = w
	}
	prev := ""
	for _, w := range Words(text) {
		if stopWords[w] {
			continue
		}
		stem := Stem(w)
		add(feature{h: hash('w', stem)}, 1)
		if !e.noBigram && prev != "" {
			add(feature{h: hash('b', prev, stem)}, e.bigramWeight)
		}
		prev = stem
		if e.noChar {
			continue
		}
		padded := []rune("<" + w + ">")
		for n := e.minN; n <= e.maxN; n++ {
			for i := 0; i+n <= len(padded); i++ {
				add(feature{h: hash('c', string(padded[i:i+n])), char: true}, 1)
			}
		}
	}
	out := make(map[feature]float64, len(tf))
	for f, n := range tf {
		out[f] = (1 + math.Log(n)) * wt[f]
	}
	return out
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}

// Cosine returns the cosine similarity of a and b (0 when either is zero
// or their lengths differ).
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
