package kb_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

var benchVocab = []string{"customer", "order", "invoice", "payment", "product", "store", "region", "employee",
	"salary", "shipment", "warehouse", "supplier", "campaign", "lead", "account", "ledger", "refund", "ticket",
	"session", "device", "contract", "budget", "forecast", "inventory", "claim", "policy", "vehicle", "route",
	"booking", "review", "coupon", "subscription", "plan", "usage", "event", "click", "visit", "page"}

// syntheticVocab is benchVocab plus 2,000 pronounceable made-up words: a
// real 10,000-table catalog has thousands of distinct words, and a
// 38-word vocabulary would put every word in half the datasets.
func syntheticVocab() []string {
	r := rand.New(rand.NewPCG(5, 6))
	cons, vow := "bcdfghklmnprstvz", "aeiou"
	seen := map[string]bool{}
	out := append([]string(nil), benchVocab...)
	for len(out) < len(benchVocab)+2000 {
		var b []byte
		for range 2 + r.IntN(3) {
			b = append(b, cons[r.IntN(len(cons))], vow[r.IntN(len(vow))])
		}
		if w := string(b); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// syntheticWords draws words from syntheticVocab with Zipf frequencies
// (s = 1.1): a few words are everywhere, most are rare.
func syntheticWords(seed uint64) func() string {
	r := rand.New(rand.NewPCG(seed, 2))
	vocab := syntheticVocab()
	zipf := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	return func() string { return vocab[zipf.Uint64()] }
}

// syntheticDatasets returns n datasets named schemaN.word_word with 8
// fields, descriptions and a relationship to the previous dataset; words
// follow a Zipf-like distribution over syntheticVocab.
func syntheticDatasets(n int) []domain.Dataset {
	w := syntheticWords(1)
	out := make([]domain.Dataset, n)
	for i := range out {
		name := fmt.Sprintf("s%d.%s_%s_%d", i%50, w(), w(), i)
		d := domain.Dataset{Name: name, Source: name, Kind: "table", Description: fmt.Sprintf("The %s of each %s per %s.", w(), w(), w())}
		for j := range 8 {
			d.Fields = append(d.Fields, domain.Field{Name: fmt.Sprintf("%s_%s%d", w(), w(), j), Type: "text", Description: "The " + w() + "."})
		}
		if i > 0 {
			d.Relationships = []domain.Relationship{{From: name, FromColumns: []string{d.Fields[0].Name}, To: out[i-1].Name, ToColumns: []string{out[i-1].Fields[0].Name}}}
		}
		out[i] = d
	}
	return out
}

// BenchmarkCatalogSearch measures one hybrid Search (k=10) on 10,000
// synthetic datasets (8 fields each, Zipf-distributed words), with
// BM25-only and vector-only searches of the same catalog as baselines;
// p50/p95 are per-search wall-clock latencies, cpu-ms/op the process CPU
// time per search (wall time on a shared machine includes waiting).
func BenchmarkCatalogSearch(b *testing.B) {
	ctx := context.Background()
	scope := kb.Scope{TenantID: "bench"}
	start := time.Now()
	cat, err := kb.Bootstrap(ctx, scope, syntheticDatasets(10000), kb.CatalogOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	build := time.Since(start)
	// Questions use the catalog's words with the catalog's frequencies.
	w := syntheticWords(3)
	questions := make([]string, 64)
	for i := range questions {
		questions[i] = fmt.Sprintf("what is the total %s by %s for each %s last month", w(), w(), w())
	}
	for _, mode := range []kb.SearchMode{kb.Hybrid, kb.BM25Only, kb.VectorOnly} {
		b.Run(mode.String(), func(b *testing.B) {
			var lat []time.Duration
			i := 0
			cpu0 := cpuTime()
			for b.Loop() {
				t0 := time.Now()
				hits, err := cat.SearchWith(ctx, scope, questions[i%len(questions)], kb.SearchOptions{K: 10, Mode: mode})
				lat = append(lat, time.Since(t0))
				if err != nil || len(hits) != 10 {
					b.Fatalf("search: %d hits, %v", len(hits), err)
				}
				i++
			}
			cpu := cpuTime() - cpu0
			slices.Sort(lat)
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu-ms/op")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
			b.ReportMetric(build.Seconds(), "build-s")
		})
	}
}
