package kb

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bichat-go/bichat/domain"
)

// DiscoverOptions configures Discover. The zero value is the tuned
// default: 10 hits with join-hint expansion from the 4 strongest.
//
// Only K changes between two calls that differ in K alone, and the pool
// does not depend on it (below Pool): Discover with K = 5 returns the
// first five hits of Discover with K = 10, scores included.
type DiscoverOptions struct {
	// K is the number of datasets returned; default 10.
	K int
	// NoExpand switches join-hint expansion off.
	NoExpand bool
	// Strong is how many top hits pull their related datasets up;
	// default 4.
	Strong int
	// Lift is the share of a strong hit's score a related dataset gains
	// (summed over the strong hits it joins); default 0.5.
	Lift float64
	// Pool is how many search hits are considered before expansion and
	// re-ranking; default DefaultDiscoverPool, and at least K.
	Pool int
	// Hints are what the host knows about this question — business
	// definitions ("active customer = ordered in the last 90 days"),
	// evidence, the dashboard it was asked from. They are searched
	// separately, never glued onto the question: each dataset the hint
	// search ranks gains HintWeight times its hint score (entering the
	// pool if the question did not find it) and is marked Hint. Empty
	// hints are ignored.
	Hints []string
	// HintWeight is the share of the hint search's score a dataset
	// gains; default DefaultHintWeight.
	HintWeight float64
}

// DefaultHintWeight is DiscoverOptions.HintWeight's default: hints count
// half as much as the question.
const DefaultHintWeight = 0.5

// DefaultDiscoverPool is Discover's default pool: the search hits
// considered before join-hint expansion. It is fixed rather than a
// multiple of K so that a smaller K returns a prefix of a larger one.
const DefaultDiscoverPool = 30

// Discovery is what the service hands the context builder before a
// question: the datasets most likely needed and the join hints among them.
type Discovery struct {
	// Hits are the datasets, best first.
	Hits []DatasetHit
	// JoinHints are the relationships whose two ends are both among Hits.
	JoinHints []domain.Relationship
}

// Names returns the hits' dataset names in order.
func (d *Discovery) Names() []string {
	out := make([]string, len(d.Hits))
	for i, h := range d.Hits {
		out[i] = h.Dataset.Name
	}
	return out
}

// Discover runs the per-question discovery step on any Catalog: search,
// then join-hint expansion — datasets related to the strongest hits gain
// a share of those hits' scores, so the bridge table between two hits or
// the dimension a fact table joins to moves up (or in, marked Via) — and
// finally the join hints among the chosen datasets. The host's hints
// (DiscoverOptions.Hints) are a second search whose hits add a weighted
// share of their scores before expansion. A question that matches
// nothing (and hints that match nothing) returns the fallback list the
// catalog gives.
func Discover(ctx context.Context, cat Catalog, scope Scope, question string, opts DiscoverOptions) (*Discovery, error) {
	k := opts.K
	if k <= 0 {
		k = 10
	}
	strong := opts.Strong
	if strong <= 0 {
		strong = 4
	}
	lift := opts.Lift
	if lift <= 0 {
		lift = 0.5
	}
	pool := opts.Pool
	if pool <= 0 {
		pool = DefaultDiscoverPool
	}
	pool = max(pool, k)
	if opts.NoExpand {
		pool = k
	}
	hits, err := cat.Search(ctx, scope, question, pool)
	if err != nil {
		return nil, fmt.Errorf("kb: discover: %w", err)
	}
	if hint := hintText(opts.Hints); hint != "" {
		w := opts.HintWeight
		if w <= 0 {
			w = DefaultHintWeight
		}
		hh, err := cat.Search(ctx, scope, hint, pool)
		if err != nil {
			return nil, fmt.Errorf("kb: discover: hints: %w", err)
		}
		hits = mergeHints(hits, hh, w)
	}
	if !opts.NoExpand && len(hits) > 0 && !hits[0].Fallback {
		if hits, err = expand(ctx, cat, scope, hits, strong, lift); err != nil {
			return nil, fmt.Errorf("kb: discover: %w", err)
		}
	}
	if len(hits) > k {
		hits = hits[:k]
	}
	d := &Discovery{Hits: hits}
	names := d.Names()
	rels, err := cat.Relationships(ctx, scope, names...)
	if err != nil {
		return nil, fmt.Errorf("kb: discover: %w", err)
	}
	in := make(map[string]bool, len(names))
	for _, n := range names {
		in[n] = true
	}
	for _, r := range rels {
		if in[r.From] && in[r.To] {
			d.JoinHints = append(d.JoinHints, r)
		}
	}
	return d, nil
}

// expand re-ranks hits with join-hint expansion.
func expand(ctx context.Context, cat Catalog, scope Scope, hits []DatasetHit, strong int, lift float64) ([]DatasetHit, error) {
	strong = min(strong, len(hits))
	top := make([]string, strong)
	strongScore := make(map[string]float64, strong)
	for i := range strong {
		top[i] = hits[i].Dataset.Name
		strongScore[top[i]] = hits[i].Score
	}
	rels, err := cat.Relationships(ctx, scope, top...)
	if err != nil {
		return nil, err
	}
	gain := map[string]float64{}
	via := map[string]string{}
	seenPair := map[[2]string]bool{}
	for _, r := range rels {
		for _, p := range [][2]string{{r.From, r.To}, {r.To, r.From}} {
			s, ok := strongScore[p[0]]
			if !ok || p[0] == p[1] || seenPair[p] {
				continue
			}
			seenPair[p] = true // several relationships between two datasets count once
			gain[p[1]] += lift * s
			if via[p[1]] == "" {
				via[p[1]] = p[0]
			}
		}
	}
	byName := make(map[string]int, len(hits))
	for i, h := range hits {
		byName[h.Dataset.Name] = i
	}
	var missing []string
	for n := range gain {
		if _, ok := byName[n]; !ok {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		ds, err := cat.Datasets(ctx, scope, missing...)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			byName[d.Name] = len(hits)
			hits = append(hits, DatasetHit{Dataset: d, YAML: d.YAML(), Via: via[d.Name]})
		}
	}
	for n, g := range gain {
		if i, ok := byName[n]; ok {
			hits[i].Score += g
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Dataset.Name < hits[j].Dataset.Name
	})
	return hits, nil
}

// hintText joins the non-empty hints, one per line.
func hintText(hints []string) string {
	var parts []string
	for _, h := range hints {
		if h = strings.TrimSpace(h); h != "" {
			parts = append(parts, h)
		}
	}
	return strings.Join(parts, "\n")
}

// mergeHints adds the hint search's hits to the question's: each gains
// w times its hint score and is marked Hint, its matched values merged.
// Fallback lists (nothing matched) count as empty. The result is sorted
// by score, ties by name.
func mergeHints(hits, hints []DatasetHit, w float64) []DatasetHit {
	if len(hints) == 0 || hints[0].Fallback {
		return hits
	}
	if len(hits) > 0 && hits[0].Fallback {
		hits = nil
	}
	byName := make(map[string]int, len(hits))
	for i, h := range hits {
		byName[h.Dataset.Name] = i
	}
	for _, h := range hints {
		i, ok := byName[h.Dataset.Name]
		if !ok {
			i = len(hits)
			byName[h.Dataset.Name] = i
			hits = append(hits, DatasetHit{Dataset: h.Dataset, YAML: h.YAML})
		}
		hits[i].Score += w * h.Score
		hits[i].Hint = true
		for _, m := range h.MatchedValues {
			if !slices.Contains(hits[i].MatchedValues, m) {
				hits[i].MatchedValues = append(hits[i].MatchedValues, m)
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Dataset.Name < hits[j].Dataset.Name
	})
	return hits
}
