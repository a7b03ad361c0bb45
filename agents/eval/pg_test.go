package eval

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/bichat-go/bichat/tools/sqldb/postgres"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

// TestRunOnPostgres runs gold and answer SQL read-only against the retail
// sample in PostgreSQL: numeric results, schema-qualified gold tables, and
// an answer that writes is refused on re-execution.
func TestRunOnPostgres(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	schema := pgtest.Schema(t, pool)
	if _, err := pool.Exec(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	if err := sampledata.Load(t.Context(), "postgres", sampledata.Options{Schema: schema}, func(ctx context.Context, s string) error {
		_, err := pool.Exec(ctx, s)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.New(pool, postgres.Options{Policy: postgres.Policy{SearchPath: []string{schema}}, AllowPrivilegedRole: true})
	if err != nil {
		t.Fatal(err)
	}
	set := &Set{Name: "pg", Questions: []Question{
		{ID: "revenue", Question: "Revenue per category in 2025, highest first?",
			SQL: `SELECT p.category, ROUND(SUM(i.quantity * i.unit_price), 2) AS revenue
FROM order_items i JOIN products p ON p.id = i.product_id JOIN orders o ON o.id = i.order_id
WHERE o.ordered_at >= '2025-01-01' AND o.ordered_at < '2026-01-01'
GROUP BY p.category ORDER BY revenue DESC`},
		{ID: "drop", Question: "Remove the regions", SQL: "SELECT count(*) FROM regions"},
	}}
	sc := &script{runs: map[string][]step{
		// Unrounded float sums, columns swapped, same order: equal within
		// a cent's tolerance.
		"revenue": {{sql: `SELECT SUM(i.quantity * i.unit_price)::float8 AS total, p.category
FROM order_items i JOIN products p ON p.id = i.product_id JOIN orders o ON o.id = i.order_id
WHERE o.ordered_at >= '2025-01-01' AND o.ordered_at < '2026-01-01'
GROUP BY p.category ORDER BY 1 DESC`}},
		"drop": {{sql: "DELETE FROM regions"}},
	}, discovered: map[string][]string{"revenue": {"order_items", "products"}}}
	rep, err := Run(t.Context(), set, Config{Target: sc.target, DB: db, Compare: CompareOptions{AbsTolerance: 0.005}})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if !r.OK {
		t.Errorf("revenue failed: %s", r.Reason)
	}
	want := []string{schema + ".order_items", schema + ".orders", schema + ".products"}
	if !slices.Equal(r.GoldTables, want) || r.Recall == nil || *r.Recall < 0.66 || *r.Recall > 0.67 {
		t.Errorf("gold tables %v, recall %v", r.GoldTables, r.Recall)
	}
	if r := rep.Results[1]; r.OK || !strings.HasPrefix(r.Reason, "answer SQL failed on re-execution: ") {
		t.Errorf("drop: ok=%v reason %q", r.OK, r.Reason)
	}
	var n int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM "+schema+".regions").Scan(&n); err != nil || n != 5 {
		t.Errorf("regions after the eval: %d, %v", n, err)
	}
}
