package kb

import (
	"math"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/bichat-go/bichat/domain"
)

// ValueMatch is a column value the question mentions: Value (as the
// catalog holds it, in Field.Values) of column Field of the hit's
// dataset. The context can tell the model "city = 'Lyon' is in
// customers.city".
type ValueMatch struct {
	Field string `json:"field"`
	Value string `json:"value"`
}

// Bounds of the value index. Values beyond them are not indexed.
const (
	// DefaultMaxValuesPerField is how many of a field's values the
	// catalog indexes by default (CatalogOptions.MaxValuesPerField): the
	// first ones, in the order Field.Values holds them.
	DefaultMaxValuesPerField = 100
	// maxValueRunes is the longest value indexed (in characters); longer
	// texts are free text, not a category a question names.
	maxValueRunes = 80
	// maxValueTokens is the most words a value indexed may have.
	maxValueTokens = 8
)

// FoldValue returns the words of a value or question as the value index
// compares them: accents removed (NFD, combining marks dropped: "Zürich"
// → "zurich"), lower-cased, split on anything but letters and digits.
func FoldValue(s string) []string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteByte(' ')
		}
	}
	return strings.Fields(b.String())
}

// indexableValue reports whether a folded value is worth indexing: at
// most maxValueTokens words, and a one-word value must be two
// characters or more, contain a letter and not be an English stop word
// (a status "no" or a code "a" would match every question).
func indexableValue(toks []string) bool {
	if len(toks) == 0 || len(toks) > maxValueTokens {
		return false
	}
	if len(toks) > 1 {
		return true
	}
	t := toks[0]
	if len([]rune(t)) < 2 || stopWords[t] {
		return false
	}
	return strings.IndexFunc(t, unicode.IsLetter) >= 0
}

// valuePosting is one indexed value of one field.
type valuePosting struct {
	toks    []string
	key     string // strings.Join(toks, " ")
	dataset string
	field   string
	value   string
}

// valueIndex finds the values a question mentions. It is a snapshot of
// the scope's definitions, rebuilt on the first search after a change.
type valueIndex struct {
	postings []valuePosting
	// byFirst lists, per first word, the postings starting with it.
	byFirst map[string][]int32
	// df counts the datasets holding each value key.
	df map[string]int
	n  int
}

// buildValueIndex indexes the values of the named datasets' fields
// (names sorted, so the postings are in a deterministic order), at most
// maxPerField per field, never a Sensitive field's.
func buildValueIndex(names []string, ds func(string) domain.Dataset, maxPerField int) *valueIndex {
	vi := &valueIndex{byFirst: map[string][]int32{}, df: map[string]int{}, n: len(names)}
	for _, name := range names {
		d := ds(name)
		seen := map[string]bool{}
		for _, f := range d.Fields {
			if f.Sensitive {
				continue
			}
			for i, v := range f.Values {
				if i >= maxPerField {
					break
				}
				if len([]rune(v)) > maxValueRunes {
					continue
				}
				toks := FoldValue(v)
				if !indexableValue(toks) {
					continue
				}
				key := strings.Join(toks, " ")
				if seen[f.Name+"\x00"+key] {
					continue
				}
				if !seen[key] {
					seen[key] = true
					vi.df[key]++
				}
				seen[f.Name+"\x00"+key] = true
				vi.byFirst[toks[0]] = append(vi.byFirst[toks[0]], int32(len(vi.postings)))
				vi.postings = append(vi.postings, valuePosting{toks: toks, key: key, dataset: name, field: f.Name, value: v})
			}
		}
	}
	return vi
}

// valueHits are the values a question mentions, per dataset.
type valueHits struct {
	ranked  []Ranked
	matches map[string][]ValueMatch
}

// match finds every indexed value whose words appear, consecutive and
// in order, among the question's (FoldValue) words. A dataset scores
// the sum over the distinct values it holds of words × ln(1+N/df): long
// values and values few datasets hold count most. Datasets are ranked
// by score, ties by name; each dataset's matches keep the order in which
// the question mentions them (then the dataset's field order), each once.
func (vi *valueIndex) match(q string) valueHits {
	out := valueHits{matches: map[string][]ValueMatch{}}
	if vi == nil || len(vi.postings) == 0 {
		return out
	}
	toks := FoldValue(q)
	score := map[string]float64{}
	counted := map[string]bool{}
	var order []string
	for i, t := range toks {
		for _, pi := range vi.byFirst[t] {
			p := &vi.postings[pi]
			if len(p.toks) > len(toks)-i || !prefixOf(p.toks, toks[i:]) {
				continue
			}
			if _, ok := score[p.dataset]; !ok {
				order = append(order, p.dataset)
				score[p.dataset] = 0
			}
			if k := p.dataset + "\x00" + p.field + "\x00" + p.key; !counted[k] {
				counted[k] = true
				out.matches[p.dataset] = append(out.matches[p.dataset], ValueMatch{Field: p.field, Value: p.value})
			}
			if k := p.dataset + "\x00" + p.key; !counted[k] {
				counted[k] = true
				score[p.dataset] += float64(len(p.toks)) * math.Log(1+float64(vi.n)/float64(vi.df[p.key]))
			}
		}
	}
	for _, d := range order {
		out.ranked = append(out.ranked, Ranked{Name: d, Score: score[d]})
	}
	sort.Slice(out.ranked, func(i, j int) bool {
		if out.ranked[i].Score != out.ranked[j].Score {
			return out.ranked[i].Score > out.ranked[j].Score
		}
		return out.ranked[i].Name < out.ranked[j].Name
	})
	return out
}

func prefixOf(p, s []string) bool {
	for i := range p {
		if p[i] != s[i] {
			return false
		}
	}
	return true
}
