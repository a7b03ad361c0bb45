package kb

import (
	"container/heap"
	"sort"
)

// Ranked is one entry of a ranking: a dataset name and the score that
// ranked it.
type Ranked struct {
	Name  string
	Score float64
}

// Fused is one entry of a fused ranking.
type Fused struct {
	Name string
	// Score is the weighted reciprocal-rank sum.
	Score float64
	// Scores holds, per input list, the entry's original score (0 when
	// the list did not rank it).
	Scores []float64
}

// FuseRRF merges rankings (each best first) by reciprocal-rank fusion: an
// entry's score is the sum over the lists that rank it of
// weight/(c+rank), rank starting at 1. weights[i] applies to lists[i]
// (missing weights are 1). Ties are broken by name, so the result is
// deterministic. Adapters use it to fuse a text ranking and a vector
// ranking exactly as MemoryCatalog does.
func FuseRRF(c float64, weights []float64, lists ...[]Ranked) []Fused {
	byName := map[string]*Fused{}
	var order []*Fused
	for li, list := range lists {
		w := 1.0
		if li < len(weights) {
			w = weights[li]
		}
		for rank, r := range list {
			f := byName[r.Name]
			if f == nil {
				f = &Fused{Name: r.Name, Scores: make([]float64, len(lists))}
				byName[r.Name] = f
				order = append(order, f)
			} else if f.Scores[li] != 0 {
				continue // duplicate within one list: keep the better rank
			}
			f.Scores[li] = r.Score
			f.Score += w / (c + float64(rank+1))
		}
	}
	out := make([]Fused, len(order))
	for i, f := range order {
		out[i] = *f
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// topN keeps the n best-scored entries.
type topN struct {
	n int
	h rankHeap
}

func newTopN(n int) *topN { return &topN{n: n} }

func (t *topN) push(r Ranked) {
	if len(t.h) < t.n {
		heap.Push(&t.h, r)
		return
	}
	if worse(t.h[0], r) {
		t.h[0] = r
		heap.Fix(&t.h, 0)
	}
}

// sorted returns the entries best first.
func (t *topN) sorted() []Ranked {
	out := append([]Ranked(nil), t.h...)
	sort.Slice(out, func(i, j int) bool { return worse(out[j], out[i]) })
	return out
}

// worse reports whether a ranks below b (lower score, or equal score and
// a later name).
func worse(a, b Ranked) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.Name > b.Name
}

type rankHeap []Ranked

func (h rankHeap) Len() int           { return len(h) }
func (h rankHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h rankHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rankHeap) Push(x any)        { *h = append(*h, x.(Ranked)) }
func (h *rankHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
