package docs_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/docs"
)

const benchDocs = 100_000

// bench holds the 100,000-document index, built once per test process.
var bench struct {
	once    sync.Once
	idx     *docs.Index
	dir     string
	build   time.Duration
	compact time.Duration
	stats   docs.Stats
	err     error
}

var benchScope = kb.Scope{TenantID: "bench"}

// benchIndex builds the benchmark corpus into an on-disk index in a
// temporary directory (BICHAT_KB_BENCH_MEMORY=1 keeps it in memory
// instead): batches of 5,000 documents, then one Compact.
func benchIndex(b *testing.B) *docs.Index {
	bench.once.Do(func() {
		c := newCorpus(42)
		all := make([]docs.Document, benchDocs)
		for i := range all {
			all[i] = c.document(i)
		}
		dir := ""
		if os.Getenv("BICHAT_KB_BENCH_MEMORY") == "" {
			if dir, bench.err = os.MkdirTemp("", "kbbench"); bench.err != nil {
				return
			}
			bench.dir = dir
		}
		if bench.idx, bench.err = docs.New(docs.Options{Dir: dir, BatchSize: 5000}); bench.err != nil {
			return
		}
		ctx := context.Background()
		start := time.Now()
		if bench.err = bench.idx.AddBatch(ctx, benchScope, all); bench.err != nil {
			return
		}
		bench.build = time.Since(start)
		start = time.Now()
		if bench.err = bench.idx.Compact(ctx, benchScope); bench.err != nil {
			return
		}
		bench.compact = time.Since(start)
		bench.stats, bench.err = bench.idx.Stats(ctx, benchScope)
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.idx
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.idx != nil {
		_ = bench.idx.Close()
	}
	if bench.dir != "" {
		_ = os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// BenchmarkKBSearch searches 100,000 synthetic documents with the
// defaults (fuzzy matching for rare words, two snippets per hit, 10 hits)
// and reports latency percentiles, the index build and compaction time
// and the index size. The baseline is the same queries as a plain Bleve
// BM25 search on the same index (Exact, no snippets), measured after the
// loop; p95-ratio is ours over the baseline's.
func BenchmarkKBSearch(b *testing.B) {
	idx := benchIndex(b)
	qs := newCorpus(7).queries(500)
	ctx := context.Background()
	// Warm the page cache and the query path once.
	for _, q := range qs {
		if _, err := idx.Search(ctx, benchScope, q, docs.SearchOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	lat := make([]time.Duration, 0, 1024)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t := time.Now()
		if _, err := idx.Search(ctx, benchScope, qs[i%len(qs)], docs.SearchOptions{Limit: 10}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	base := make([]time.Duration, 0, len(lat))
	for i := range len(lat) {
		t := time.Now()
		if _, err := idx.Search(ctx, benchScope, qs[i%len(qs)], docs.SearchOptions{Limit: 10, Exact: true, Snippets: -1}); err != nil {
			b.Fatal(err)
		}
		base = append(base, time.Since(t))
	}
	p50, p95 := percentiles(lat)
	b50, b95 := percentiles(base)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p95), "p95-ms")
	b.ReportMetric(ms(b50), "base-p50-ms")
	b.ReportMetric(ms(b95), "base-p95-ms")
	b.ReportMetric(float64(p95)/float64(b95), "p95-ratio")
	b.ReportMetric(bench.build.Seconds(), "build-s")
	b.ReportMetric(bench.compact.Seconds(), "compact-s")
	b.ReportMetric(float64(bench.stats.DiskBytes)/(1<<20), "disk-MB")
	b.ReportMetric(float64(bench.stats.MemoryBytes)/(1<<20), "mem-MB")
	b.ReportMetric(float64(bench.stats.Documents), "docs")
}

func percentiles(lat []time.Duration) (p50, p95 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*95/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
