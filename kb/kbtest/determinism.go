package kbtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

// nearTieSchemas, nearTieTables and nearTieColumns are the words of the
// NearTies catalog: few, so that many datasets share them.
var (
	nearTieSchemas = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
		"kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"}
	nearTieTables = []string{"customer", "order", "invoice", "payment", "product", "store", "region", "employee",
		"shipment", "supplier", "account", "ledger", "refund", "ticket", "contract", "budget"}
	nearTieColumns = []string{"id", "name", "amount", "total", "created_at", "status", "country", "city", "price",
		"quantity", "salary", "due_date", "code", "category", "rating", "balance"}
)

// NearTies returns n datasets (n <= 5120) built to produce ties and
// near-ties in every ranking: the same table names and column lists
// repeated across schemas (exact ties in the text and term rankings,
// vectors that differ only by the schema word), two-word names sharing
// their words, and relationships within each schema. The list is the
// same on every call and is sorted by name.
func NearTies(n int) []domain.Dataset {
	r := rand.New(rand.NewPCG(11, 13))
	out := make([]domain.Dataset, 0, n)
	seen := map[string]bool{}
	for len(out) < n {
		i := len(out)
		schema := nearTieSchemas[i%len(nearTieSchemas)]
		// Table shapes repeat across schemas: shape k has the same name
		// and columns in every schema that draws it.
		shape := r.IntN(24)
		sr := rand.New(rand.NewPCG(uint64(shape), 17))
		table := nearTieTables[sr.IntN(len(nearTieTables))]
		if shape%3 != 0 {
			table += "_" + nearTieTables[sr.IntN(len(nearTieTables))]
		}
		name := schema + "." + table
		if seen[name] {
			name = fmt.Sprintf("%s.%s_%d", schema, table, i)
		}
		seen[name] = true
		d := domain.Dataset{Name: name, Source: name, Kind: "table", Description: "Rows of " + strings.ReplaceAll(table, "_", " ") + "."}
		for _, c := range sr.Perm(len(nearTieColumns))[:3+sr.IntN(4)] {
			d.Fields = append(d.Fields, domain.Field{Name: nearTieColumns[c], Type: "text"})
		}
		out = append(out, d)
	}
	// Each dataset joins the previous one of its schema.
	last := map[string]int{}
	for i := range out {
		schema := strings.SplitN(out[i].Name, ".", 2)[0]
		if j, ok := last[schema]; ok {
			out[i].Relationships = []domain.Relationship{{From: out[i].Name, FromColumns: []string{"id"}, To: out[j].Name, ToColumns: []string{"id"}}}
		}
		last[schema] = i
	}
	slices.SortFunc(out, func(a, b domain.Dataset) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// NearTieQuestions returns n questions over the NearTies vocabulary,
// the same on every call.
func NearTieQuestions(n int) []string {
	r := rand.New(rand.NewPCG(19, 23))
	pick := func(ws []string) string { return strings.ReplaceAll(ws[r.IntN(len(ws))], "_", " ") }
	templates := []func() string{
		func() string { return "total " + pick(nearTieColumns) + " per " + pick(nearTieTables) },
		func() string { return pick(nearTieTables) + " " + pick(nearTieTables) + " by " + pick(nearTieColumns) },
		func() string {
			return "which " + pick(nearTieTables) + " has the highest " + pick(nearTieColumns) + " and " + pick(nearTieColumns)
		},
		func() string {
			return pick(nearTieColumns) + " of each " + pick(nearTieTables) + " in " + pick(nearTieSchemas)
		},
		func() string { return pick(nearTieTables) },
	}
	out := make([]string, n)
	for i := range out {
		out[i] = templates[r.IntN(len(templates))]()
	}
	return out
}

// RankingOptions tunes CheckRankings.
type RankingOptions struct {
	// Repeats is how many times a question is asked again of each
	// catalog (concurrently); default 100.
	Repeats int
	// RepeatEvery repeats only every RepeatEvery-th question (the others
	// are asked once of each catalog); default 1, every question.
	RepeatEvery int
	// K is the larger k compared with K/2 (Search and Discover); default
	// 10.
	K int
}

// CheckRankings checks that two builds a and b of the same datasets in
// scope rank every question identically: Search and kb.Discover return
// the same names with the same scores on both catalogs and on every
// repeat (see RankingOptions), and the first K/2 hits of Search and Discover with k = K/2
// are the first K/2 of those with k = K. Failures name the question
// and the two lists.
func CheckRankings(t *testing.T, a, b kb.Catalog, scope kb.Scope, questions []string, opts RankingOptions) {
	t.Helper()
	if opts.Repeats <= 0 {
		opts.Repeats = 100
	}
	if opts.RepeatEvery <= 0 {
		opts.RepeatEvery = 1
	}
	if opts.K <= 1 {
		opts.K = 10
	}
	ctx := context.Background()
	search := func(c kb.Catalog, q string, k int) (string, error) {
		hits, err := c.Search(ctx, scope, q, k)
		return renderHits(hits), err
	}
	discover := func(c kb.Catalog, q string, k int) (string, error) {
		d, err := kb.Discover(ctx, c, scope, q, kb.DiscoverOptions{K: k})
		if err != nil {
			return "", err
		}
		return renderHits(d.Hits), nil
	}
	failures := 0
	fail := func(format string, args ...any) {
		t.Helper()
		failures++
		if failures <= 10 {
			t.Errorf(format, args...)
		}
	}
	for qi, q := range questions {
		for _, op := range []struct {
			name string
			run  func(kb.Catalog, string, int) (string, error)
		}{{"Search", search}, {"Discover", discover}} {
			want, err := op.run(a, q, opts.K)
			if err != nil {
				t.Fatalf("%s(%q): %v", op.name, q, err)
			}
			if got, err := op.run(b, q, opts.K); err != nil {
				t.Fatalf("%s(%q): %v", op.name, q, err)
			} else if got != want {
				fail("%s(%q, k=%d) differs between the two builds:\n%s\nwant (build 1):\n%s", op.name, q, opts.K, got, want)
			}
			if qi%opts.RepeatEvery == 0 {
				for ci, c := range []kb.Catalog{a, b} {
					got := make([]string, opts.Repeats)
					errs := make([]error, opts.Repeats)
					var wg sync.WaitGroup
					for i := range opts.Repeats {
						wg.Go(func() { got[i], errs[i] = op.run(c, q, opts.K) })
					}
					wg.Wait()
					for i := range opts.Repeats {
						if errs[i] != nil {
							t.Fatalf("%s(%q): %v", op.name, q, errs[i])
						}
						if got[i] != want {
							fail("%s(%q, k=%d) on build %d, run %d of %d:\n%s\nwant (build 1, first run):\n%s", op.name, q, opts.K, ci+1, i+1, opts.Repeats, got[i], want)
							break
						}
					}
				}
			}
			small, err := op.run(a, q, opts.K/2)
			if err != nil {
				t.Fatalf("%s(%q): %v", op.name, q, err)
			}
			if prefix := firstLines(want, opts.K/2); small != prefix {
				fail("%s(%q, k=%d) is not the first %d of k=%d:\n%s\nwant:\n%s", op.name, q, opts.K/2, opts.K/2, opts.K, small, prefix)
			}
		}
	}
	if failures > 10 {
		t.Errorf("... %d ranking differences in all", failures)
	}
}

// renderHits is a hit list as one comparable text: name, exact score,
// and the marks, one hit a line.
func renderHits(hits []kb.DatasetHit) string {
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "%s %v bm25=%v vec=%v fallback=%v via=%s\n", h.Dataset.Name, h.Score, h.BM25, h.Vector, h.Fallback, h.Via)
	}
	return b.String()
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "")
}

func testDeterministic(t *testing.T, newCatalog func(t *testing.T) kb.Catalog) {
	ds := NearTies(60)
	shuffled := slices.Clone(ds)
	rand.New(rand.NewPCG(29, 31)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	a, b := newCatalog(t), newCatalog(t)
	put(t, a, scopeA, ds...)
	put(t, b, scopeA, shuffled...)
	CheckRankings(t, a, b, scopeA, NearTieQuestions(20), RankingOptions{Repeats: 10, RepeatEvery: 5})
}
