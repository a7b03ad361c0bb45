package kb_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

// valueDatasets is syntheticDatasets with what real catalogs add: two
// synonyms per dataset, a synonym on the first field, and 20 sampled
// values (one or two words) on each of three text fields.
func valueDatasets(n int) []domain.Dataset {
	ds := syntheticDatasets(n)
	w := syntheticWords(9)
	r := rand.New(rand.NewPCG(11, 12))
	for i := range ds {
		ds[i].Synonyms = []string{w(), w() + " " + w()}
		ds[i].Fields[0].Synonyms = []string{w()}
		for j := 1; j <= 3; j++ {
			vals := make([]string, 20)
			for k := range vals {
				if r.IntN(2) == 0 {
					vals[k] = fmt.Sprintf("%s %s", w(), w())
				} else {
					vals[k] = w() + fmt.Sprint(r.IntN(100))
				}
			}
			ds[i].Fields[j].Values = vals
		}
	}
	return ds
}

// BenchmarkDiscoverValues measures Discover (K=10, hybrid, expansion)
// on 10,000 synthetic datasets, with values and synonyms indexed and,
// as the baseline, the same datasets without them: p50/p95 per call,
// build-s the Bootstrap time, heap-MB the live heap the catalog holds
// after the first search built its snapshots. "values+wordnet" adds the
// WordNet lexicon (its expander counts in heap-MB; the questions' English
// words, "total", "last", "month", expand to dozens of terms).
func BenchmarkDiscoverValues(b *testing.B) {
	b.Run("values", func(b *testing.B) { benchDiscover(b, valueDatasets(10000), true, kb.CatalogOptions{}) })
	b.Run("plain", func(b *testing.B) { benchDiscover(b, syntheticDatasets(10000), false, kb.CatalogOptions{}) })
	b.Run("values+wordnet", func(b *testing.B) {
		benchDiscover(b, valueDatasets(10000), true, kb.CatalogOptions{Lexicon: wordNet(b)})
	})
}

func benchDiscover(b *testing.B, in []domain.Dataset, values bool, opts kb.CatalogOptions) {
	ctx := context.Background()
	scope := kb.Scope{TenantID: "bench"}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	cat, err := kb.Bootstrap(ctx, scope, in, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	build := time.Since(start)
	w := syntheticWords(3)
	questions := make([]string, 64)
	for i := range questions {
		// Half the questions name a value of some dataset.
		v := ""
		if values && i%2 == 0 {
			d := in[(i*157)%len(in)]
			v = " for " + d.Fields[1].Values[i%20]
		}
		questions[i] = fmt.Sprintf("what is the total %s by %s%s last month", w(), w(), v)
	}
	if _, err := kb.Discover(ctx, cat, scope, questions[0], kb.DiscoverOptions{}); err != nil {
		b.Fatal(err)
	}
	in = nil
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	var lat []time.Duration
	i := 0
	matched := 0
	for b.Loop() {
		t0 := time.Now()
		d, err := kb.Discover(ctx, cat, scope, questions[i%len(questions)], kb.DiscoverOptions{})
		lat = append(lat, time.Since(t0))
		if err != nil || len(d.Hits) != 10 {
			b.Fatalf("discover: %v", err)
		}
		for _, h := range d.Hits {
			if len(h.MatchedValues) > 0 {
				matched++
				break
			}
		}
		i++
	}
	if values && matched == 0 {
		b.Fatal("no question matched a value")
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
	b.ReportMetric(build.Seconds(), "build-s")
	b.ReportMetric(heap/(1<<20), "heap-MB")
}
