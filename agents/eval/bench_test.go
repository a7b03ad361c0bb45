package eval_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bichat-go/bichat/agents/eval"
)

// benchTables returns a gold table of n rows (an id, a name, two amounts,
// a flag) and a copy with the same rows, columns permuted and renamed when
// permute is set, and rows shuffled when shuffle is set.
func benchTables(n int, permute, shuffle bool) (gold, got eval.Table) {
	rng := rand.New(rand.NewPCG(1, 2))
	gold.Columns = []string{"id", "name", "revenue", "cost", "active"}
	for i := range n {
		gold.Rows = append(gold.Rows, []any{int64(i), fmt.Sprintf("customer %d", i%97), float64(rng.IntN(100000)) / 100,
			float64(rng.IntN(50000)) / 100, i%3 == 0})
	}
	order := []int{0, 1, 2, 3, 4}
	got.Columns = []string{"id", "name", "revenue", "cost", "active"}
	if permute {
		order = []int{3, 0, 4, 2, 1}
		got.Columns = []string{"c1", "c2", "c3", "c4", "c5"}
	}
	for _, r := range gold.Rows {
		row := make([]any, len(order))
		for j, k := range order {
			row[j] = r[k]
		}
		got.Rows = append(got.Rows, row)
	}
	if shuffle {
		rng.Shuffle(len(got.Rows), func(i, j int) { got.Rows[i], got.Rows[j] = got.Rows[j], got.Rows[i] })
	}
	return gold, got
}

// BenchmarkCompare measures Compare on 10,000 rows: the baseline is an
// ordered comparison of identical tables; the others pay for the column
// mapping (permuted, renamed columns) and for the multiset match (shuffled
// rows).
func BenchmarkCompare(b *testing.B) {
	for _, c := range []struct {
		name             string
		ordered          bool
		permute, shuffle bool
	}{
		{"ordered_same_columns", true, false, false},
		{"ordered_permuted_columns", true, true, false},
		{"unordered_shuffled_rows", false, false, true},
		{"unordered_permuted_shuffled", false, true, true},
	} {
		gold, got := benchTables(10_000, c.permute, c.shuffle)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if ok, reason := eval.Compare(gold, got, eval.CompareOptions{Ordered: c.ordered}); !ok {
					b.Fatal(reason)
				}
			}
		})
	}
}
