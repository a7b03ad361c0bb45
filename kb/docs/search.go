package docs

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/internal/bleverank"
)

// Searcher finds documents. *Index implements it; the kb_search tool
// (package tools/knowledge) takes any Searcher.
type Searcher interface {
	// Search returns the documents of scope that best match the free-text
	// query, best first. It never returns documents of another scope.
	Search(ctx context.Context, scope kb.Scope, query string, opts SearchOptions) (Results, error)
}

// Limits and defaults of SearchOptions.
const (
	DefaultLimit       = 10
	MaxLimit           = 100
	DefaultSnippets    = 2
	DefaultSnippetSize = 200
	// MaxQueryTerms bounds the distinct terms of a query; further terms
	// are ignored.
	MaxQueryTerms = 32
)

// SearchOptions tunes a search. The zero value asks for DefaultLimit
// hits with fuzzy matching and DefaultSnippets snippets each.
type SearchOptions struct {
	// Limit is the maximum number of hits, 1 to MaxLimit; 0 means
	// DefaultLimit.
	Limit int
	// Exact turns fuzzy matching off. By default a query word of four or
	// more letters that is rare in the scope (found in fewer than
	// FuzzyBelow documents, as a typo usually is) also matches words one
	// edit away ("revnue" finds "revenue"), at a lower score than an exact
	// match.
	Exact bool
	// Tags keeps only documents carrying every one of these tags.
	Tags []string
	// Snippets is the maximum number of snippets per hit: 0 means
	// DefaultSnippets, a negative value none.
	Snippets int
	// SnippetSize is the approximate length of a snippet in bytes; 0
	// means DefaultSnippetSize.
	SnippetSize int
	// IncludeContent returns each hit's full content in Hit.Document.
	IncludeContent bool
}

// Results is the outcome of a search.
type Results struct {
	// Total is the number of matching documents, of which Hits holds the
	// best Limit.
	Total uint64 `json:"total"`
	Hits  []Hit  `json:"hits"`
	// Took is the time the search took.
	Took time.Duration `json:"took"`
}

// Hit is one matching document.
type Hit struct {
	// Document is the stored document; Content is empty unless
	// SearchOptions.IncludeContent was set.
	Document Document `json:"document"`
	// Score is the BM25 relevance (higher is better); it compares hits of
	// one search, not across searches.
	Score float64 `json:"score"`
	// Snippets are the passages of the content that match best, in order
	// of relevance. When only the title or tags matched, the single
	// snippet is the start of the content, without highlights.
	Snippets []Snippet `json:"snippets,omitempty"`
}

// CitationSource is the Source of the citations Hit.Citation makes.
const CitationSource = "kb"

// Citation returns the citation a host renders for the hit: the document's
// id, title and URL, the best snippet as plain text and the score.
func (h Hit) Citation() domain.Citation {
	snippet := ""
	if len(h.Snippets) > 0 {
		snippet = h.Snippets[0].Text
	}
	d := h.Document
	return domain.Citation{Source: CitationSource, DocumentID: d.ID, Title: d.Title, URL: d.URL(), Snippet: snippet, Score: h.Score}
}

// Snippet is a passage of a document's content with the matched words
// marked. Whitespace runs are collapsed to single spaces.
type Snippet struct {
	Text string `json:"text"`
	// Highlights are the byte ranges of Text that matched the query, in
	// order and not overlapping.
	Highlights []Span `json:"highlights,omitempty"`
	// Start and End are the byte offsets of the passage in the content.
	Start int `json:"start"`
	End   int `json:"end"`
	// CutStart and CutEnd report that the content goes on before or
	// after the passage (where a host shows "…").
	CutStart bool `json:"cut_start,omitempty"`
	CutEnd   bool `json:"cut_end,omitempty"`
}

// Span is a byte range [Start, End).
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Mark returns the snippet text with pre and post around every highlight,
// e.g. Mark("**", "**") for Markdown or Mark("<mark>", "</mark>") after
// escaping (Mark does not escape the text).
func (s Snippet) Mark(pre, post string) string {
	var b strings.Builder
	b.Grow(len(s.Text) + len(s.Highlights)*(len(pre)+len(post)))
	at := 0
	for _, h := range s.Highlights {
		if h.Start < at || h.End > len(s.Text) || h.Start >= h.End {
			continue
		}
		b.WriteString(s.Text[at:h.Start])
		b.WriteString(pre)
		b.WriteString(s.Text[h.Start:h.End])
		b.WriteString(post)
		at = h.End
	}
	b.WriteString(s.Text[at:])
	return b.String()
}

var storedFields = []string{fieldTitle, fieldContent, fieldTags, fieldSource, fieldMetadata}

// Search implements Searcher: BM25 over title (boosted), content and tags
// with English stemming, fuzzy matching unless opts.Exact, tag filtering
// and snippets. A scope without documents yields no hits. The query is
// free text: operators and field syntax have no special meaning.
func (x *Index) Search(ctx context.Context, scope kb.Scope, q string, opts SearchOptions) (Results, error) {
	start := time.Now()
	if err := scope.Validate(); err != nil {
		return Results{}, err
	}
	if opts.Limit < 0 || opts.Limit > MaxLimit {
		return Results{}, fmt.Errorf("docs: search limit %d is outside 1..%d", opts.Limit, MaxLimit)
	}
	if opts.Limit == 0 {
		opts.Limit = DefaultLimit
	}
	if opts.Snippets == 0 {
		opts.Snippets = DefaultSnippets
	}
	if opts.SnippetSize <= 0 {
		opts.SnippetSize = DefaultSnippetSize
	}
	terms := x.queryTerms(q)
	if len(terms) == 0 {
		return Results{Hits: []Hit{}, Took: time.Since(start)}, ctx.Err()
	}
	res := Results{Hits: []Hit{}}
	err := x.read(scope, false, func(idx bleve.Index) error {
		var fuzzy map[string]bool
		if !opts.Exact {
			var err error
			if fuzzy, err = rareTerms(ctx, idx, terms); err != nil {
				return fmt.Errorf("docs: search scope %s: %w", scope, err)
			}
		}
		q := buildQuery(terms, fuzzy, opts.Tags)
		// Phase one ranks without term locations, which would be read
		// for every matching document; phase two reads them for the hits
		// only.
		// Ranked by score at float32 precision, ties by document ID, so
		// two builds of the same documents (whose internal order Bleve
		// does not keep) return the same hits in the same order.
		req := bleve.NewSearchRequestOptions(q, opts.Limit, 0, false)
		req.Fields = storedFields
		sr, err := bleverank.Search(ctx, idx, req)
		if err != nil {
			return fmt.Errorf("docs: search scope %s: %w", scope, err)
		}
		res.Total = sr.Total
		var locs map[string]search.TermLocationMap
		if opts.Snippets > 0 && len(sr.Hits) > 0 {
			if locs, err = locations(ctx, idx, q, sr.Hits); err != nil {
				return fmt.Errorf("docs: search scope %s: %w", scope, err)
			}
		}
		for _, h := range sr.Hits {
			doc := documentFromFields(h.ID, h.Fields, true)
			hit := Hit{Score: h.Score}
			if opts.Snippets > 0 {
				hit.Snippets = snippets(doc.Content, locs[h.ID], opts.Snippets, opts.SnippetSize)
			}
			if !opts.IncludeContent {
				doc.Content = ""
			}
			hit.Document = doc
			res.Hits = append(res.Hits, hit)
		}
		return nil
	})
	if err != nil {
		return Results{}, err
	}
	if ctx.Err() != nil {
		return Results{}, ctx.Err()
	}
	res.Took = time.Since(start)
	return res, nil
}

// queryTerms analyses q like the indexed text (lower case, stop words
// removed, stemmed) and returns its distinct terms in order.
func (x *Index) queryTerms(q string) []string {
	if len(q) > 4096 {
		q = q[:4096]
	}
	a := x.mapping.AnalyzerNamed(en.AnalyzerName)
	if a == nil {
		return nil
	}
	var terms []string
	seen := map[string]bool{}
	for _, tok := range a.Analyze([]byte(strings.ToValidUTF8(q, " "))) {
		t := string(tok.Term)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		terms = append(terms, t)
		if len(terms) == MaxQueryTerms {
			break
		}
	}
	return terms
}

// Field boosts: a word in the title says more than one in the body.
const (
	boostTitle = 2.0
	boostTags  = 1.5
	boostFuzzy = 0.4 // relative to the exact match of the same field
)

// FuzzyBelow is the document frequency under which a query word is
// treated as a possible typo: a word found in fewer than FuzzyBelow
// documents (title or content) also matches words one edit away. Common
// words are taken as spelled, which keeps searches fast.
const FuzzyBelow = 3

// rareTerms returns the terms of at least four letters that occur in
// fewer than FuzzyBelow documents' titles or contents.
func rareTerms(ctx context.Context, idx bleve.Index, terms []string) (map[string]bool, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := map[string]bool{}
	for _, t := range terms {
		if utf8.RuneCountInString(t) < 4 {
			continue
		}
		var df uint64
		for _, f := range []string{fieldContent, fieldTitle} {
			tfr, err := r.TermFieldReader(ctx, []byte(t), f, false, false, false)
			if err != nil {
				return nil, err
			}
			df += tfr.Count()
			_ = tfr.Close()
		}
		if df < FuzzyBelow {
			out[t] = true
		}
	}
	return out, nil
}

// locations returns the term locations of q in the given hits.
func locations(ctx context.Context, idx bleve.Index, q query.Query, hits search.DocumentMatchCollection) (map[string]search.TermLocationMap, error) {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(bleve.NewDocIDQuery(ids), q), len(ids), 0, false)
	req.IncludeLocations = true
	sr, err := idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make(map[string]search.TermLocationMap, len(sr.Hits))
	for _, h := range sr.Hits {
		out[h.ID] = h.Locations[fieldContent]
	}
	return out, nil
}

// buildQuery ORs, for every term, exact matches in title, content and tags
// and, for the terms in fuzzy, matches one edit away in title and
// content; tags filter with AND.
func buildQuery(terms []string, fuzzy map[string]bool, tags []string) query.Query {
	var any []query.Query
	term := func(t, field string, boost float64) {
		q := bleve.NewTermQuery(t)
		q.SetField(field)
		q.SetBoost(boost)
		any = append(any, q)
	}
	fuzz := func(t, field string, boost float64) {
		q := bleve.NewFuzzyQuery(t)
		q.SetField(field)
		q.SetFuzziness(1)
		q.SetPrefix(1)
		q.SetBoost(boost)
		any = append(any, q)
	}
	for _, t := range terms {
		term(t, fieldTitle, boostTitle)
		term(t, fieldContent, 1)
		term(t, fieldTagText, boostTags)
		if fuzzy[t] {
			fuzz(t, fieldTitle, boostTitle*boostFuzzy)
			fuzz(t, fieldContent, boostFuzzy)
		}
	}
	var q query.Query = bleve.NewDisjunctionQuery(any...)
	if len(tags) > 0 {
		all := []query.Query{q}
		for _, tag := range tags {
			tq := bleve.NewTermQuery(tag)
			tq.SetField(fieldTags)
			all = append(all, tq)
		}
		q = bleve.NewConjunctionQuery(all...)
	}
	return q
}

// documentFromFields rebuilds a Document from Bleve's stored fields.
func documentFromFields(id string, f map[string]any, content bool) Document {
	d := Document{ID: id}
	d.Title, _ = f[fieldTitle].(string)
	if content {
		d.Content, _ = f[fieldContent].(string)
	}
	d.Source, _ = f[fieldSource].(string)
	switch v := f[fieldTags].(type) {
	case string:
		d.Tags = []string{v}
	case []any:
		for _, t := range v {
			if s, ok := t.(string); ok {
				d.Tags = append(d.Tags, s)
			}
		}
	}
	if s, ok := f[fieldMetadata].(string); ok && s != "" {
		_ = json.Unmarshal([]byte(s), &d.Metadata)
	}
	return d
}

// snippets picks up to n passages of about size bytes from content,
// preferring those with the most distinct matched terms.
func snippets(content string, locs search.TermLocationMap, n, size int) []Snippet {
	if content == "" {
		return nil
	}
	type match struct {
		start, end int
		term       string
	}
	var ms []match
	for t, ls := range locs {
		for _, l := range ls {
			s, e := int(l.Start), int(l.End)
			if s < 0 || e > len(content) || s >= e {
				continue
			}
			ms = append(ms, match{s, e, t})
		}
	}
	slices.SortFunc(ms, func(a, b match) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end))
	})
	// Drop matches that overlap an earlier one.
	keep := ms[:0]
	for _, m := range ms {
		if len(keep) > 0 && m.start < keep[len(keep)-1].end {
			continue
		}
		keep = append(keep, m)
	}
	ms = keep
	if len(ms) == 0 {
		end := cutAfter(content, min(size, len(content)))
		return []Snippet{makeSnippet(content, 0, end, nil)}
	}
	type window struct {
		first, last int // indexes into ms
		score       float64
	}
	used := make([]bool, len(ms))
	var picked []window
	for len(picked) < n {
		best := window{first: -1}
		for i := range ms {
			if used[i] {
				continue
			}
			distinct := map[string]bool{}
			count, last := 0, i
			for j := i; j < len(ms) && !used[j] && ms[j].end-ms[i].start <= size; j++ {
				distinct[ms[j].term] = true
				count++
				last = j
			}
			score := float64(len(distinct)) + 0.1*float64(count)
			if score > best.score {
				best = window{first: i, last: last, score: score}
			}
		}
		if best.first < 0 {
			break
		}
		for j := best.first; j <= best.last; j++ {
			used[j] = true
		}
		// A passage must not swallow matches another passage shows.
		picked = append(picked, best)
	}
	out := make([]Snippet, 0, len(picked))
	for _, w := range picked {
		first, last := ms[w.first], ms[w.last]
		slack := size - (last.end - first.start)
		start := max(0, first.start-slack/2)
		end := min(len(content), last.end+(slack-(first.start-start)))
		start = cutBefore(content, start, first.start)
		end = max(cutAfter(content, end), last.end)
		var hs []Span
		for _, m := range ms {
			if m.start >= start && m.end <= end {
				hs = append(hs, Span{m.start, m.end})
			}
		}
		out = append(out, makeSnippet(content, start, end, hs))
	}
	return out
}

// cutBefore moves a passage start forward to the beginning of a word (at
// most up to limit) so the passage does not open mid-word.
func cutBefore(s string, start, limit int) int {
	if start == 0 {
		return 0
	}
	for i := start; i < limit; i++ {
		if s[i] == ' ' || s[i] == '\n' || s[i] == '\t' {
			return i + 1
		}
	}
	for !utf8.RuneStart(s[start]) {
		start++
	}
	return start
}

// cutAfter moves a passage end back to the end of a word (at most 40
// bytes back; a longer word is cut at a character boundary).
func cutAfter(s string, end int) int {
	if end >= len(s) {
		return len(s)
	}
	for i := end; i > max(0, end-40); i-- {
		if s[i] == ' ' || s[i] == '\n' || s[i] == '\t' {
			return i
		}
	}
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return end
}

// makeSnippet cuts content[start:end], collapses its whitespace and maps
// the highlights (content offsets) into the new text.
func makeSnippet(content string, start, end int, hs []Span) Snippet {
	raw := content[start:end]
	pos := make([]int, len(raw)+1) // raw offset -> text offset
	var b strings.Builder
	b.Grow(len(raw))
	space := true // drop leading whitespace
	for i, r := range raw {
		w := utf8.RuneLen(r)
		if r == utf8.RuneError {
			w = 1
		}
		for k := 0; k < w && i+k < len(raw); k++ {
			pos[i+k] = b.Len()
		}
		if unicode.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
				space = true
			}
			continue
		}
		space = false
		b.WriteRune(r)
	}
	pos[len(raw)] = b.Len()
	text := strings.TrimRight(b.String(), " ")
	sn := Snippet{Text: text, Start: start, End: end, CutStart: start > 0, CutEnd: end < len(content)}
	for _, h := range hs {
		s, e := pos[h.Start-start], min(pos[h.End-start], len(text))
		if s < e {
			sn.Highlights = append(sn.Highlights, Span{s, e})
		}
	}
	return sn
}
