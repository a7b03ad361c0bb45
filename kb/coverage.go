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
// name, description and fields, English stop words left out. Put
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
	for _, f := range d.Fields {
		add(f.Name)
		add(f.Description)
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
	for name := range s.entries {
		for _, r := range s.rels[name] {
			o := r.To
			if o == name {
				o = r.From
			}
			if o != name && s.entries[o] != nil && !slices.Contains(c.adj[name], o) {
				c.adj[name] = append(c.adj[name], o)
			}
		}
	}
	return c
}

// rank orders the candidates of lists by the IDF-weighted share of the
// question's terms their definition contains anywhere — no length
// normalisation, so a wide table that holds every column the question
// names ranks as high as a narrow one — plus relatedCoverageShare of the
// terms only their best-covering related dataset contains; ties by first
// appearance. Candidates that contain none are left out.
func (c *coverage) rank(q string, lists ...[]Ranked) []Ranked {
	idf := map[string]float64{}
	total := 0.0
	for _, w := range Words(q) {
		if stopWords[w] {
			continue
		}
		t := Stem(w)
		if _, dup := idf[t]; dup {
			continue
		}
		df := c.df[t]
		if df == 0 {
			idf[t] = 0 // no dataset has it: it cannot tell candidates apart
			continue
		}
		idf[t] = math.Log(1 + float64(c.n)/float64(df))
		total += idf[t]
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
			for t, w := range idf {
				if slices.Contains(ts, t) {
					got += w
				}
			}
			for _, o := range c.adj[r.Name] {
				ots := c.terms[o]
				e := 0.0
				for t, w := range idf {
					if !slices.Contains(ts, t) && slices.Contains(ots, t) {
						e += w
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
