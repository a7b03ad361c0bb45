package postgres

import (
	"context"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/bichat-go/bichat/tools/sqldb"
)

const analyticalSQL = `WITH monthly AS (
	SELECT c.region_id, date_trunc('month', o.ordered_at) AS month,
	       sum(oi.quantity * oi.unit_price) AS revenue, count(DISTINCT o.id) AS orders
	FROM retail.orders o
	JOIN retail.order_items oi ON oi.order_id = o.id
	JOIN retail.customers c ON c.id = o.customer_id
	WHERE o.status = 'completed' AND o.ordered_at >= DATE '2024-01-01'
	GROUP BY 1, 2
)
SELECT r.name AS region, m.month, m.revenue, m.orders,
       m.revenue - lag(m.revenue) OVER (PARTITION BY m.region_id ORDER BY m.month) AS change,
       rank() OVER (PARTITION BY m.month ORDER BY m.revenue DESC) AS rank_in_month,
       avg(m.revenue) OVER (PARTITION BY m.region_id ORDER BY m.month ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS moving_avg
FROM monthly m
JOIN retail.regions r ON r.id = m.region_id
WHERE m.revenue > (SELECT avg(revenue) / 2 FROM monthly)
ORDER BY m.month, rank_in_month
LIMIT 100`

// BenchmarkValidate measures the parser-based check of a typical
// analytical SELECT (CTE, joins, window functions, subquery) and reports
// the median (goal: p50 < 100 µs).
func BenchmarkValidate(b *testing.B) {
	v := NewValidator(Policy{})
	allow := []string{"retail.orders", "retail.order_items", "retail.customers", "retail.regions"}
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if _, err := v.Validate(analyticalSQL, allow); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// bigTable creates bench_big.t with 1,000,000 rows once (kept between
// runs) and returns its name.
func bigTable(b *testing.B) string {
	ctx := context.Background()
	pool := admin(b)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext('bench_big'))"); err != nil {
		b.Fatal(err)
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtext('bench_big'))")
	var n int64
	err = conn.QueryRow(ctx, "SELECT reltuples::int8 FROM pg_class WHERE oid = to_regclass('bench_big.t')").Scan(&n)
	if err == nil && n == 1_000_000 {
		return "bench_big.t"
	}
	for _, s := range []string{
		"DROP SCHEMA IF EXISTS bench_big CASCADE",
		"CREATE SCHEMA bench_big",
		`CREATE TABLE bench_big.t AS SELECT g AS id, g % 1000 AS grp, md5(g::text) AS label,
			(g % 9973) * 1.25 AS amount, TIMESTAMP '2024-01-01' + g * interval '1 minute' AS at
			FROM generate_series(1, 1000000) g`,
		"ALTER TABLE bench_big.t ADD PRIMARY KEY (id)",
		"ANALYZE bench_big.t",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	return "bench_big.t"
}

// heapNow reads the live heap without stopping the world.
func heapNow(s []metrics.Sample) uint64 {
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkCappedQuery runs SELECT * over a 1,000,000-row table through
// DB.Query with MaxRows=500 (validator, READ ONLY transaction, cursor) and,
// in the same loop, the same query with a hand-written LIMIT 500 through
// pgx, and reports the time ratio (goal ≤ 1.2) and the peak extra heap of
// the capped query (goal < 10 MB).
func BenchmarkCappedQuery(b *testing.B) {
	for _, q := range []struct{ name, sql string }{
		{"scan", "SELECT * FROM bench_big.t"},
		{"ordered", "SELECT * FROM bench_big.t ORDER BY id"},
	} {
		b.Run(q.name, func(b *testing.B) {
			table := bigTable(b)
			_ = table
			ctx := context.Background()
			db, err := New(admin(b), Options{AllowPrivilegedRole: true})
			if err != nil {
				b.Fatal(err)
			}
			lim := sqldb.Limits{MaxRows: 500}
			baseline := func(opts ...any) int {
				rows, err := admin(b).Query(ctx, q.sql+" LIMIT 500", opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer rows.Close()
				var out [][]any
				for rows.Next() {
					v, err := rows.Values()
					if err != nil {
						b.Fatal(err)
					}
					out = append(out, v)
				}
				if rows.Err() != nil {
					b.Fatal(rows.Err())
				}
				return len(out)
			}
			capped := func() int {
				res, err := db.Query(ctx, q.sql, lim)
				if err != nil {
					b.Fatal(err)
				}
				if !res.Truncated {
					b.Fatal("not truncated")
				}
				return len(res.Rows)
			}
			if capped() != 500 || baseline() != 500 {
				b.Fatal("row counts")
			}

			// Peak extra heap of the capped query, sampled while it runs.
			s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			var peak uint64
			for range 5 {
				runtime.GC()
				base := heapNow(s)
				var hi atomic.Uint64
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
					for {
						if h := heapNow(ms); h > hi.Load() {
							hi.Store(h)
						}
						select {
						case <-stop:
							return
						default:
							time.Sleep(20 * time.Microsecond)
						}
					}
				}()
				capped()
				close(stop)
				wg.Wait()
				if h := hi.Load(); h > base && h-base > peak {
					peak = h - base
				}
			}

			// The baseline is pgx's default (a prepared statement cached
			// across calls, so planned once); the agent's statements are new
			// every time, so the uncached extended-protocol run
			// (QueryExecModeExec) is reported too.
			var tc, tb, tx time.Duration
			for b.Loop() {
				start := time.Now()
				capped()
				tc += time.Since(start)
				start = time.Now()
				baseline()
				tb += time.Since(start)
				start = time.Now()
				baseline(pgx.QueryExecModeExec)
				tx += time.Since(start)
			}
			n := float64(b.N)
			b.ReportMetric(float64(tc.Nanoseconds())/n/1e3, "capped-µs/op")
			b.ReportMetric(float64(tb.Nanoseconds())/n/1e3, "limit-µs/op")
			b.ReportMetric(float64(tc)/float64(tb), "ratio")
			b.ReportMetric(float64(tc)/float64(tx), "ratio-vs-uncached")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}

// BenchmarkParseBaseline is the floor under BenchmarkValidate: the same
// statement through pg_query.Parse alone (C parser and protobuf decoding),
// without the checks.
func BenchmarkParseBaseline(b *testing.B) {
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if _, err := pg_query.Parse(analyticalSQL); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1e3, "p50-µs")
}
