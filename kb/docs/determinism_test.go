package docs_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/kb/docs"
)

// tieDocs returns documents built to tie: groups of documents with the
// same title and content (equal scores for every query), and documents
// whose words overlap in many combinations (near-ties whose scores Bleve
// sums in an order that depends on its internal document numbers).
func tieDocs() []docs.Document {
	words := []string{"revenue", "refund", "churn", "order", "invoice", "customer", "warehouse", "policy", "metric", "region"}
	r := rand.New(rand.NewPCG(41, 43))
	var out []docs.Document
	for i := range 300 {
		var content []string
		if i%3 == 0 {
			content = []string{words[i%4], words[(i/4)%4], "report"} // many identical documents
		} else {
			for range 6 + r.IntN(10) {
				content = append(content, words[r.IntN(len(words))])
			}
		}
		out = append(out, docs.Document{ID: fmt.Sprintf("doc-%03d.md", i), Title: "Note " + content[0], Content: strings.Join(content, " ")})
	}
	return out
}

// TestSearchRankingDeterministic: two indexes of the same documents, the
// second added in another order and in several batches, return the same
// hits in the same order with the same scores, every time; equal scores
// are ordered by document id, and a shorter limit returns a prefix.
func TestSearchRankingDeterministic(t *testing.T) {
	t.Parallel()
	ds := tieDocs()
	shuffled := slices.Clone(ds)
	rand.New(rand.NewPCG(47, 53)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	a, b := newIndex(t, docs.Options{}), newIndex(t, docs.Options{})
	if err := a.AddBatch(t.Context(), tenantA, ds); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(shuffled); i += 70 {
		if err := b.AddBatch(t.Context(), tenantA, shuffled[i:min(i+70, len(shuffled))]); err != nil {
			t.Fatal(err)
		}
	}
	render := func(r docs.Results) string {
		var sb strings.Builder
		for _, h := range r.Hits {
			fmt.Fprintf(&sb, "%s %v\n", h.Document.ID, h.Score)
		}
		return sb.String()
	}
	queries := []string{"revenue report", "refund", "churn order report", "invoice customer warehouse", "policy metric region revenue refund churn order", "reveneu"}
	for _, q := range queries {
		for _, limit := range []int{3, 10, 25} {
			opts := docs.SearchOptions{Limit: limit, Snippets: -1}
			want := search(t, a, tenantA, q, opts)
			if len(want.Hits) == 0 {
				t.Fatalf("search %q found nothing", q)
			}
			for i := 1; i < len(want.Hits); i++ {
				p, h := want.Hits[i-1], want.Hits[i]
				if p.Score < h.Score || (p.Score == h.Score && p.Document.ID > h.Document.ID) {
					t.Errorf("search %q: hit %d (%s %v) out of order after %s %v", q, i, h.Document.ID, h.Score, p.Document.ID, p.Score)
				}
			}
			for run := range 20 {
				for bi, idx := range []*docs.Index{a, b} {
					if got := search(t, idx, tenantA, q, opts); render(got) != render(want) {
						t.Fatalf("search %q limit %d, index %d run %d:\n%s\nwant:\n%s", q, limit, bi+1, run+1, render(got), render(want))
					}
				}
			}
			if limit > 3 {
				short := search(t, a, tenantA, q, docs.SearchOptions{Limit: 3, Snippets: -1})
				if got, want := render(short), render(docs.Results{Hits: want.Hits[:min(3, len(want.Hits))]}); got != want {
					t.Errorf("search %q limit 3 is not the first 3 of limit %d:\n%s\nwant:\n%s", q, limit, got, want)
				}
			}
		}
	}
}
