package kb

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	porterstemmer "github.com/blevesearch/go-porterstemmer"
)

// Words splits text into lower-cased words, breaking identifiers apart:
// snake_case, kebab-case, dotted.names, camelCase and PascalCase, and
// letter/digit boundaries ("customerID2" → customer, id, 2;
// "HTTPServer" → http, server). Punctuation and spaces separate words.
// Words does not stem; see Terms.
func Words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	runes := []rune(text)
	for i, r := range runes {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 {
			prev := cur[len(cur)-1]
			switch {
			case unicode.IsDigit(r) != unicode.IsDigit(prev):
				flush() // letter/digit boundary
			case unicode.IsUpper(r) && unicode.IsLower(prev):
				flush() // camelCase
			case unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(runes) && unicode.IsLower(runes[i+1]):
				flush() // "HTTPServer": the S starts a new word
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// Terms returns the search terms of text: Words, each reduced to its stem
// by the Porter stemmer (English; "orders" and "ordering" both become
// "order"). Words of one or two letters are kept as they are. The catalog
// index, the offline embedder and the recipe memory all use Terms, so a
// question and a definition meet on the same terms.
func Terms(text string) []string {
	words := Words(text)
	for i, w := range words {
		words[i] = Stem(w)
	}
	return words
}

// Stem returns the Porter stem of a lower-case word; words shorter than
// three letters and words with digits or non-ASCII letters are returned
// unchanged.
func Stem(w string) string {
	if len(w) < 3 || utf8.RuneCountInString(w) != len(w) {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	return porterstemmer.StemString(w)
}

// stopWords are English function words; the embedder ignores them (they
// say nothing about which table is meant) and so does the catalog's BM25
// analyzer (Bleve's English stop list).
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been
before being below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should so some such
than that the their theirs them themselves then there these they this those through to too under until up very
was we were what when where which while who whom why will with would you your yours yourself yourselves
s t don also us get got give list show tell find return many much`) {
		m[w] = true
	}
	return m
}()

// IsStopWord reports whether the lower-case word is an English function
// word (or a question verb such as "show" or "list") that carries no
// meaning for finding a dataset.
func IsStopWord(w string) bool { return stopWords[w] }

// orderingWords are the verbs and nouns that ask for a sort order.
var orderingWords = map[string]bool{"order": true, "ordered": true, "ordering": true, "sort": true, "sorted": true, "sorting": true}

// orderingContext are the words next to which orderingWords ask for a sort
// order ("ordered by", "in descending order") rather than name a subject
// ("orders of each customer").
var orderingContext = map[string]bool{"by": true, "in": true, "ascending": true, "descending": true, "asc": true, "desc": true,
	"alphabetical": true, "alphabetically": true, "alphabetic": true, "reverse": true, "reversed": true, "lexicographical": true,
	"lexicographic": true, "increasing": true, "decreasing": true, "chronological": true, "numerical": true, "them": true, "results": true}

// QuestionText returns q without the words that ask for a presentation
// rather than name data: a sort request ("ordered by", "in descending
// order", "sorted alphabetically") says nothing about which dataset is
// meant, but "order" would otherwise match every orders table. Other
// words are kept as written.
func QuestionText(q string) string {
	words := Words(q)
	drop := false
	for i, w := range words {
		if !orderingWords[w] {
			continue
		}
		if (i+1 < len(words) && orderingContext[words[i+1]]) || (i > 0 && orderingContext[words[i-1]]) {
			words[i] = ""
			drop = true
		}
	}
	if !drop {
		return q
	}
	return strings.Join(slices.DeleteFunc(words, func(w string) bool { return w == "" }), " ")
}
