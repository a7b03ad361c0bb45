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

// ValuePosting is one value the value index holds: Value (as
// Field.Values holds it) of field Field of dataset Dataset; Key is its
// FoldValue words joined by one space.
type ValuePosting struct {
	Dataset string
	Field   string
	Value   string
	Key     string
}

// IndexedValues returns the values of d a value index holds, in field
// then value order: the first maxPerField of each field's Values, never
// a Sensitive field's, only values of at most 80 characters and 8 words
// (a one-word value needs two characters or more, a letter, and must not
// be a stop word), each (field, key) once. MemoryCatalog and kb/neo4j
// index exactly these.
func IndexedValues(d domain.Dataset, maxPerField int) []ValuePosting {
	var out []ValuePosting
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
			seen[f.Name+"\x00"+key] = true
			out = append(out, ValuePosting{Dataset: d.Name, Field: f.Name, Value: v, Key: key})
		}
	}
	return out
}

// ValueIndex finds the values a question mentions (Match). MemoryCatalog
// keeps one per scope, rebuilt on the first search after a change;
// kb/neo4j builds one per search from the postings its database returns.
type ValueIndex struct {
	postings []ValuePosting
	toks     [][]string
	// byFirst lists, per first word, the postings starting with it.
	byFirst map[string][]int32
	holding func(key string) int
	n       int
}

// NewValueIndex indexes postings, ordered by dataset name then in
// IndexedValues order (any superset of the postings whose first word a
// question uses gives that question's full result). datasets is how many
// datasets the scope holds and holding(key) how many of them hold key:
// they weigh a match (see Match).
func NewValueIndex(postings []ValuePosting, datasets int, holding func(key string) int) *ValueIndex {
	vi := &ValueIndex{postings: postings, toks: make([][]string, len(postings)), byFirst: map[string][]int32{}, holding: holding, n: datasets}
	for i, p := range postings {
		vi.toks[i] = strings.Fields(p.Key)
		if len(vi.toks[i]) > 0 {
			vi.byFirst[vi.toks[i][0]] = append(vi.byFirst[vi.toks[i][0]], int32(i))
		}
	}
	return vi
}

// buildValueIndex indexes the values of the named datasets' fields
// (names sorted, so the postings are in a deterministic order), at most
// maxPerField per field, never a Sensitive field's.
func buildValueIndex(names []string, ds func(string) domain.Dataset, maxPerField int) *ValueIndex {
	var postings []ValuePosting
	df := map[string]int{}
	for _, name := range names {
		vs := IndexedValues(ds(name), maxPerField)
		seen := map[string]bool{}
		for _, p := range vs {
			if !seen[p.Key] {
				seen[p.Key] = true
				df[p.Key]++
			}
		}
		postings = append(postings, vs...)
	}
	return NewValueIndex(postings, len(names), func(key string) int { return df[key] })
}

// Match finds every indexed value whose words appear, consecutive and
// in order, among the question's (FoldValue) words. A dataset scores
// the sum over the distinct values it holds of words × ln(1+N/df) (N
// datasets, df holding the value): long values and values few datasets
// hold count most. ranked lists the datasets by score, ties by name;
// matches[dataset] keeps the order in which the question mentions them
// (then the dataset's field order), each once.
func (vi *ValueIndex) Match(q string) (ranked []Ranked, matches map[string][]ValueMatch) {
	matches = map[string][]ValueMatch{}
	if vi == nil || len(vi.postings) == 0 {
		return nil, matches
	}
	toks := FoldValue(q)
	score := map[string]float64{}
	counted := map[string]bool{}
	var order []string
	for i, t := range toks {
		for _, pi := range vi.byFirst[t] {
			p, pt := &vi.postings[pi], vi.toks[pi]
			if len(pt) > len(toks)-i || !prefixOf(pt, toks[i:]) {
				continue
			}
			if _, ok := score[p.Dataset]; !ok {
				order = append(order, p.Dataset)
				score[p.Dataset] = 0
			}
			if k := p.Dataset + "\x00" + p.Field + "\x00" + p.Key; !counted[k] {
				counted[k] = true
				matches[p.Dataset] = append(matches[p.Dataset], ValueMatch{Field: p.Field, Value: p.Value})
			}
			if k := p.Dataset + "\x00" + p.Key; !counted[k] {
				counted[k] = true
				score[p.Dataset] += float64(len(pt)) * math.Log(1+float64(vi.n)/float64(max(vi.holding(p.Key), 1)))
			}
		}
	}
	for _, d := range order {
		ranked = append(ranked, Ranked{Name: d, Score: score[d]})
	}
	sort.Slice(ranked, func(i, j int) bool {
		if ranked[i].Score != ranked[j].Score {
			return ranked[i].Score > ranked[j].Score
		}
		return ranked[i].Name < ranked[j].Name
	})
	return ranked, matches
}

func prefixOf(p, s []string) bool {
	for i := range p {
		if p[i] != s[i] {
			return false
		}
	}
	return true
}
