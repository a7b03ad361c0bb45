package kb

import (
	"math"
	"slices"
	"sort"

	"github.com/bichat-go/bichat/domain"
)

// coverage holds what the term-coverage ranking needs: each dataset's
// distinct terms (name, description, fields) and every term's document
// frequency in the scope.
type coverage struct {
	terms map[string][]string
	df    map[string]int
	n     int
	// adj lists each dataset's related datasets (either direction).
	adj map[string][]string
}

// relatedCoverageShare is the share of the question terms a candidate's
// best-covering related dataset adds that counts towards the
// candidate's coverage: a table that answers the question together with
// the table it joins to ranks above one that covers the same terms
// alone. Tuned on the Spider development set (0.3 to 1 all help).
const relatedCoverageShare = 0.6

// definitionTerms returns the distinct stemmed terms of a dataset's
// name, description, synonyms and fields (names, descriptions,
// synonyms), English stop words left out. Put
// computes them once per definition.
func definitionTerms(d domain.Dataset) []string {
	var out []string
	add := func(text string) {
		for _, w := range Words(text) {
			if t := Stem(w); !stopWords[w] && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	add(d.Name)
	add(d.Description)
	for _, w := range d.Synonyms {
		add(w)
	}
	for _, f := range d.Fields {
		add(f.Name)
		add(f.Description)
		for _, w := range f.Synonyms {
			add(w)
		}
	}
	return out
}

// buildCoverageLocked snapshots the scope's definition terms (plus the
// parts of compound words in dataset names) and their document
// frequencies; the caller holds s.mu.
func (s *scopeState) buildCoverageLocked() *coverage {
	c := &coverage{terms: make(map[string][]string, len(s.entries)), df: map[string]int{}, n: len(s.entries)}
	for name, e := range s.entries {
		ts := e.terms
		if parts := Words(decompound(name, s.vocab)); len(parts) > 0 {
			ts = slices.Clone(ts)
			for _, w := range parts {
				if t := Stem(w); !slices.Contains(ts, t) {
					ts = append(ts, t)
				}
			}
		}
		c.terms[name] = ts
		for _, t := range ts {
			c.df[t]++
		}
	}
	c.adj = map[string][]string{}
	for _, name := range s.names {
		for _, r := range s.rels[name] {
			o := r.To
			if o == name {
				o = r.From
			}
			if o != name && s.entries[o] != nil && !slices.Contains(c.adj[name], o) {
				c.adj[name] = append(c.adj[name], o)
			}
		}
		slices.Sort(c.adj[name])
	}
	return c
}

// rank orders the candidates of lists by the IDF-weighted share of the
// question's terms their definition contains anywhere — no length
// normalisation, so a wide table that holds every column the question
// names ranks as high as a narrow one — plus relatedCoverageShare of the
// terms only their best-covering related dataset contains. Candidates
// that contain none are left out.
//
// The ranking is deterministic: weights are summed in the question's
// term order (never in map order, which would change the last bits of a
// sum from one call to the next), and equal scores keep the candidates'
// order of first appearance in lists, which is itself deterministic (and
// carries the other rankings' evidence, which breaking these ties by
// name would throw away: recall@5 on Spider dropped by 0.9 points).
func (c *coverage) rank(q string, lists ...[]Ranked) []Ranked {
	type qterm struct {
		t string
		w float64
	}
	var qts []qterm
	total := 0.0
	for _, w := range Words(q) {
		if stopWords[w] {
			continue
		}
		t := Stem(w)
		if slices.ContainsFunc(qts, func(x qterm) bool { return x.t == t }) {
			continue
		}
		df := c.df[t]
		if df == 0 {
			continue // no dataset has it: it cannot tell candidates apart
		}
		qts = append(qts, qterm{t, math.Log(1 + float64(c.n)/float64(df))})
		total += qts[len(qts)-1].w
	}
	if total == 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []Ranked
	for _, l := range lists {
		for _, r := range l {
			ts := c.terms[r.Name]
			if seen[r.Name] || ts == nil {
				continue
			}
			seen[r.Name] = true
			got, extra := 0.0, 0.0
			for _, qt := range qts {
				if slices.Contains(ts, qt.t) {
					got += qt.w
				}
			}
			for _, o := range c.adj[r.Name] {
				ots := c.terms[o]
				e := 0.0
				for _, qt := range qts {
					if !slices.Contains(ts, qt.t) && slices.Contains(ots, qt.t) {
						e += qt.w
					}
				}
				extra = max(extra, e)
			}
			got += relatedCoverageShare * extra
			if got > 0 {
				out = append(out, Ranked{Name: r.Name, Score: got / total})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}
