package context

import (
	"container/heap"
	"math"

	"github.com/dlclark/regexp2"
)

// encoder is tiktoken's ordinary encoding (pieces by the pattern, then
// byte-pair merging by rank), with a merge that stays O(n log n) on long
// pieces. tiktoken-go merges by rescanning every pair after each merge,
// which is quadratic: a 10,000-character run of CJK text took over a
// second. The result is the same: the lowest-ranked adjacent pair is
// merged first, the leftmost among equals.
type encoder struct {
	re    *regexp2.Regexp
	ranks map[string]int
}

func newEncoder(pattern string, ranks map[string]int) (*encoder, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, err
	}
	return &encoder{re: re, ranks: ranks}, nil
}

// encode appends the tokens of s to out.
func (e *encoder) encode(s string, out []int) []int {
	m, _ := e.re.FindStringMatch(s)
	for m != nil {
		piece := m.String()
		if r, ok := e.ranks[piece]; ok {
			out = append(out, r)
		} else {
			out = e.merge([]byte(piece), out)
		}
		m, _ = e.re.FindNextMatch(m)
	}
	return out
}

// count returns the number of tokens of s without keeping them.
func (e *encoder) count(s string) int {
	n := 0
	var buf []int
	m, _ := e.re.FindStringMatch(s)
	for m != nil {
		piece := m.String()
		if _, ok := e.ranks[piece]; ok {
			n++
		} else {
			buf = e.merge([]byte(piece), buf[:0])
			n += len(buf)
		}
		m, _ = e.re.FindNextMatch(m)
	}
	return n
}

// merge byte-pair encodes one piece. Segments form a linked list over the
// piece's bytes; candidate merges of adjacent segments wait in a heap
// ordered by (rank, start). A heap entry is stale when either segment
// changed since it was pushed.
func (e *encoder) merge(piece []byte, out []int) []int {
	n := len(piece)
	if n == 1 {
		return append(out, e.ranks[string(piece)])
	}
	end := make([]int, n)  // end[i]: end of the segment starting at i
	prev := make([]int, n) // start of the previous segment, -1 for none
	gen := make([]int, n)  // bumped when the segment starting at i changes
	alive := make([]bool, n)
	for i := range n {
		end[i], prev[i], alive[i] = i+1, i-1, true
	}
	h := &pairHeap{}
	push := func(i int) {
		j := end[i]
		if j >= n {
			return
		}
		if r, ok := e.ranks[string(piece[i:end[j]])]; ok {
			heap.Push(h, pair{rank: r, start: i, gi: gen[i], gj: gen[j], next: j})
		}
	}
	for i := 0; i < n-1; i++ {
		push(i)
	}
	for h.Len() > 0 {
		p := heap.Pop(h).(pair)
		i, j := p.start, p.next
		if !alive[i] || !alive[j] || gen[i] != p.gi || gen[j] != p.gj || end[i] != j {
			continue
		}
		// Merge j into i.
		end[i] = end[j]
		alive[j] = false
		gen[i]++
		if end[i] < n {
			prev[end[i]] = i
		}
		if prev[i] >= 0 {
			push(prev[i])
		}
		push(i)
	}
	for i := 0; i < n; i = end[i] {
		r, ok := e.ranks[string(piece[i:end[i]])]
		if !ok {
			r = math.MaxInt // cannot happen with a complete byte-level vocabulary
		}
		out = append(out, r)
	}
	return out
}

type pair struct {
	rank, start, next int
	gi, gj            int
}

type pairHeap []pair

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].start < h[b].start
}
func (h pairHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pair)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
