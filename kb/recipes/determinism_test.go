package recipes_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
)

// TestRecallTiesByContent: two memories holding the same recipes, saved
// in opposite orders (so under different random ids), recall them in the
// same order when their similarities, counts and times tie, with the
// word-overlap similarity (exact ties) and with the offline embedder.
func TestRecallTiesByContent(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fixed := func() time.Time { return at }
	words := []string{"revenue", "region", "quarter", "customer", "month"}
	var qs []string
	for i := range words {
		// Rotations of the same words: every pair ties on word overlap.
		qs = append(qs, strings.Join(append(slices.Clone(words[i:]), words[:i]...), " "))
	}
	for i := range 20 {
		qs = append(qs, fmt.Sprintf("%s by %s %d", words[i%5], words[(i/5)%5], i%3))
	}
	dsets := [][]domain.Dataset{{orders()}, {customers()}, {orders(), customers()}}
	for _, e := range []kb.Embedder{nil, kb.NewHashEmbedder(kb.HashEmbedderOptions{Dimensions: 32})} {
		var mems [2]*recipes.Memory
		for mi := range mems {
			mems[mi] = recipes.New(e, recipes.Options{Now: fixed})
			order := slices.Clone(qs)
			if mi == 1 {
				slices.Reverse(order)
			}
			for _, q := range order {
				for di, ds := range dsets {
					if _, err := mems[mi].SaveRecipe(t.Context(), scopeA, recipes.NewRecipe{Question: q, SQL: []string{fmt.Sprintf("SELECT %d", di)}, Datasets: ds}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		render := func(ms []recipes.Match) string {
			var b strings.Builder
			for _, m := range ms {
				fmt.Fprintf(&b, "%q %s %v\n", m.Recipe.Question, m.Recipe.Datasets, m.Similarity)
			}
			return b.String()
		}
		for _, q := range append([]string{"revenue region", "customer month quarter"}, qs[:6]...) {
			query := recipes.Query{Question: q, K: 12, Datasets: []domain.Dataset{orders(), customers()}}
			want, err := mems[0].Recall(t.Context(), scopeA, query)
			if err != nil {
				t.Fatal(err)
			}
			for run := range 10 {
				for mi, m := range mems {
					got, err := m.Recall(t.Context(), scopeA, query)
					if err != nil {
						t.Fatal(err)
					}
					if render(got) != render(want) {
						t.Fatalf("embedder %T, recall %q on memory %d, run %d:\n%s\nwant:\n%s", e, q, mi+1, run+1, render(got), render(want))
					}
				}
			}
		}
	}
}
