package bleverank_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"github.com/bichat-go/bichat/kb/internal/bleverank"
)

// newIndex indexes docs (id → text) in memory, in the given id order
// and batch size.
func newIndex(t *testing.T, ids []string, text map[string]string, batch int) bleve.Index {
	t.Helper()
	idx, err := bleve.NewMemOnly(bleve.NewIndexMapping())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idx.Close() })
	for i := 0; i < len(ids); i += batch {
		b := idx.NewBatch()
		for _, id := range ids[i:min(i+batch, len(ids))] {
			if err := b.Index(id, map[string]any{"text": text[id]}); err != nil {
				t.Fatal(err)
			}
		}
		if err := idx.Batch(b); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

// TestSearchTiesByID: a tie group far larger than the hits asked for
// (so Search must fetch more than once) comes back ordered by ID, the
// same from two indexes of the same documents added in other orders, and
// a shorter search is a prefix of a longer one.
func TestSearchTiesByID(t *testing.T) {
	t.Parallel()
	text := map[string]string{}
	var ids []string
	for i := range 400 {
		id := fmt.Sprintf("doc%03d", i)
		switch {
		case i%10 == 0:
			text[id] = "alpha alpha beta" // the best, 40 of them tied
		case i%2 == 0:
			text[id] = "alpha gamma delta" // 160 tied below
		default:
			text[id] = "beta gamma epsilon zeta"
		}
		ids = append(ids, id)
	}
	shuffled := append([]string(nil), ids...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	a, b := newIndex(t, ids, text, 400), newIndex(t, shuffled, text, 37)
	run := func(idx bleve.Index, n int) string {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchQuery("alpha beta"), n, 0, false)
		res, err := bleverank.Search(t.Context(), idx, req)
		if err != nil {
			t.Fatal(err)
		}
		if req.Size != n {
			t.Errorf("request size %d after Search, want %d restored", req.Size, n)
		}
		var sb strings.Builder
		for _, h := range res.Hits {
			fmt.Fprintf(&sb, "%s %v\n", h.ID, h.Score)
		}
		return sb.String()
	}
	long := run(a, 120)
	lines := strings.Split(strings.TrimSuffix(long, "\n"), "\n")
	if len(lines) != 120 || !strings.HasPrefix(lines[0], "doc000 ") || !strings.HasPrefix(lines[39], "doc390 ") || !strings.HasPrefix(lines[40], "doc002 ") {
		t.Fatalf("hits not ranked by score then id:\n%s", long)
	}
	for _, n := range []int{1, 5, 39, 40, 41, 120} {
		want := strings.Join(lines[:n], "\n") + "\n"
		for i, idx := range []bleve.Index{a, b} {
			if got := run(idx, n); got != want {
				t.Errorf("index %d, %d hits:\n%s\nwant:\n%s", i+1, n, got, want)
			}
		}
	}
}
