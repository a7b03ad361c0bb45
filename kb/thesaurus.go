package kb

import (
	_ "embed"
	"slices"
	"strings"
)

//go:embed thesaurus.txt
var thesaurusText string

// Thesaurus returns the built-in business thesaurus: a few dozen
// curated groups of words a question may use for the same thing
// (revenue ~ sales ~ turnover ~ income, customer ~ client ~ buyer,
// employee ~ staff ~ worker, product ~ item ~ sku, ...). The catalog
// expands a question's words with their group's other words at
// CatalogOptions.ExpansionWeight unless NoThesaurus is set; hosts add
// their own groups with CatalogOptions.Synonyms. The result is a fresh
// copy.
func Thesaurus() [][]string {
	var out [][]string
	for _, line := range strings.Split(thesaurusText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var g []string
		for _, w := range strings.Split(line, ",") {
			if w = strings.TrimSpace(w); w != "" {
				g = append(g, w)
			}
		}
		out = append(out, g)
	}
	return out
}

// Expander maps a question term (stemmed, as Terms returns it) to the
// terms of the other words of its synonym groups. MemoryCatalog and
// kb/neo4j expand a question's terms with it.
type Expander map[string][]string

// NewExpander indexes synonym groups: each member's terms (stop words
// left out) expand to the terms of every other member of the group. A
// multi-word member ("point of sale") contributes each of its terms.
// Expansions are in group order, each once, never the term itself.
func NewExpander(groups [][]string) Expander {
	x := Expander{}
	for _, g := range groups {
		terms := make([][]string, len(g))
		for i, m := range g {
			for _, w := range Words(m) {
				if !stopWords[w] {
					terms[i] = append(terms[i], Stem(w))
				}
			}
		}
		for i := range g {
			if len(terms[i]) != 1 {
				continue // a phrase expands others but is not looked up word by word
			}
			src := terms[i][0]
			for j := range g {
				if j == i {
					continue
				}
				for _, t := range terms[j] {
					if t != src && !slices.Contains(x[src], t) {
						x[src] = append(x[src], t)
					}
				}
			}
		}
	}
	return x
}

// Expand returns the expansion terms of terms: their synonyms not
// already among terms, in a deterministic order, each once.
func (x Expander) Expand(terms []string) []string {
	var out []string
	for _, t := range terms {
		for _, e := range x[t] {
			if !slices.Contains(terms, e) && !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}
