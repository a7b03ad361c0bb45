package postgres

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// BenchmarkQueryWithSettings measures the per-statement cost of N
// data-scoping settings on the real server: each iteration runs the same
// small statement once on a DB without settings and once on a DB with N
// (Options.Settings), alternating, and reports both times and their ratio.
// ns/op, B/op and allocs/op cover the pair.
func BenchmarkQueryWithSettings(b *testing.B) {
	schema := newSchema(b)
	exec(b, "CREATE TABLE "+schema+".t AS SELECT g AS id, 'owner' || (g % 10) AS owner FROM generate_series(1, 100) g")
	base := readDB(b, schema, Options{})
	const stmt = "SELECT owner, count(*) FROM t GROUP BY owner ORDER BY owner"
	for _, n := range []int{1, 3, 8} {
		b.Run("settings="+strconv.Itoa(n), func(b *testing.B) {
			opts := Options{Settings: map[string]string{}}
			lim := sqldb.Limits{Attributes: map[string]string{}}
			for i := range n {
				a := "attr" + strconv.Itoa(i)
				opts.Settings[a] = "app." + a
				lim.Attributes[a] = "value-" + strconv.Itoa(i)
			}
			scopedDB := readDB(b, schema, opts)
			ctx := context.Background()
			var without, with time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				if _, err := base.Query(ctx, stmt, sqldb.Limits{}); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if _, err := scopedDB.Query(ctx, stmt, lim); err != nil {
					b.Fatal(err)
				}
				without += mid.Sub(start)
				with += time.Since(mid)
			}
			b.ReportMetric(float64(without.Nanoseconds())/float64(b.N)/1e3, "without-µs")
			b.ReportMetric(float64(with.Nanoseconds())/float64(b.N)/1e3, "with-µs")
			b.ReportMetric(float64(with)/float64(without), "ratio")
		})
	}
}
