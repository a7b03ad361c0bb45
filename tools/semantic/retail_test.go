package semantic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/semantic"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// retail loads testdata/retail.yaml, the model of the sample data.
func retail(t testing.TB) *semantic.Model {
	t.Helper()
	m, err := semantic.Load(readRetail(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readRetail(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "retail.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// sqliteSample creates the sample database in a temporary file and opens
// it read-only.
func sqliteSample(t testing.TB) *sqlite.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "retail.db")
	if err := sampledata.CreateSQLite(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// handCase is a query_metrics call and hand-written SQL that must give the
// same rows, per dialect.
type handCase struct {
	name  string
	query semantic.Query
	hand  map[string]string
}

func both(s string) map[string]string {
	return map[string]string{sqldb.DialectPostgres: s, sqldb.DialectSQLite: s}
}

// revenuePerOrder is a per-order revenue subquery: each order once.
const revenuePerOrder = `(SELECT order_id, SUM(quantity * unit_price) AS rev FROM order_items GROUP BY order_id)`

var handCases = []handCase{
	{
		name:  "measures of four grains by region",
		query: semantic.Query{Metrics: []string{"revenue", "orders", "completed_orders", "customers"}, Dimensions: []string{"region"}},
		hand: both(`SELECT r.name,
  (SELECT SUM(oi.quantity * oi.unit_price) FROM order_items oi JOIN orders o ON o.id = oi.order_id JOIN customers c ON c.id = o.customer_id WHERE c.region_id = r.id),
  (SELECT COUNT(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.region_id = r.id),
  (SELECT COUNT(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.region_id = r.id AND o.status = 'completed'),
  (SELECT COUNT(*) FROM customers c WHERE c.region_id = r.id)
FROM regions r ORDER BY r.name`),
	},
	{
		name:  "a product-level sum next to a line-level sum by category",
		query: semantic.Query{Metrics: []string{"revenue", "list_price_total", "units"}, Dimensions: []string{"category"}},
		hand: both(`SELECT p.category,
  (SELECT SUM(oi.quantity * oi.unit_price) FROM order_items oi JOIN products p2 ON p2.id = oi.product_id WHERE p2.category = p.category),
  SUM(p.unit_price),
  (SELECT SUM(oi.quantity) FROM order_items oi JOIN products p2 ON p2.id = oi.product_id WHERE p2.category = p.category)
FROM products p GROUP BY p.category ORDER BY p.category`),
	},
	{
		name: "completed orders by month in a half year",
		query: semantic.Query{Metrics: []string{"orders", "revenue"}, Dimensions: []string{"ordered_at__month"},
			Filters:   []semantic.Filter{{Dimension: "status", Op: semantic.OpEq, Value: "completed"}},
			TimeRange: &semantic.TimeRange{From: "2025-01-01", To: "2025-07-01"}},
		hand: map[string]string{
			sqldb.DialectPostgres: `SELECT make_date(extract(year FROM o.ordered_at)::int, extract(month FROM o.ordered_at)::int, 1) AS m, COUNT(*), SUM(x.rev)
FROM orders o JOIN ` + revenuePerOrder + ` x ON x.order_id = o.id
WHERE o.status = 'completed' AND o.ordered_at >= '2025-01-01' AND o.ordered_at < '2025-07-01' GROUP BY 1 ORDER BY 1`,
			sqldb.DialectSQLite: `SELECT substr(o.ordered_at, 1, 7) || '-01' AS m, COUNT(*), SUM(x.rev)
FROM orders o JOIN ` + revenuePerOrder + ` x ON x.order_id = o.id
WHERE o.status = 'completed' AND o.ordered_at >= '2025-01-01' AND o.ordered_at < '2025-07-01' GROUP BY 1 ORDER BY 1`,
		},
	},
	{
		name:  "a ratio by status, ordered by it",
		query: semantic.Query{Metrics: []string{"avg_order_value"}, Dimensions: []string{"status"}, OrderBy: []semantic.Order{{Name: "avg_order_value", Desc: true}}},
		hand: both(`SELECT o.status, SUM(x.rev) / COUNT(*) AS aov FROM orders o JOIN ` + revenuePerOrder + ` x ON x.order_id = o.id
GROUP BY o.status ORDER BY aov DESC`),
	},
	{
		name: "distinct customers by quarter across a one-to-many join",
		query: semantic.Query{Metrics: []string{"customers", "orders"}, Dimensions: []string{"ordered_at__quarter"},
			TimeRange: &semantic.TimeRange{From: "2024-01-01", To: "2026-01-01"}},
		hand: map[string]string{
			sqldb.DialectPostgres: `SELECT make_date(extract(year FROM ordered_at)::int, ((extract(month FROM ordered_at)::int - 1) / 3) * 3 + 1, 1), COUNT(DISTINCT customer_id), COUNT(*)
FROM orders GROUP BY 1 ORDER BY 1`,
			sqldb.DialectSQLite: `SELECT substr(ordered_at, 1, 4) || CASE WHEN substr(ordered_at, 6, 2) <= '03' THEN '-01-01' WHEN substr(ordered_at, 6, 2) <= '06' THEN '-04-01'
  WHEN substr(ordered_at, 6, 2) <= '09' THEN '-07-01' ELSE '-10-01' END, COUNT(DISTINCT customer_id), COUNT(*)
FROM orders GROUP BY 1 ORDER BY 1`,
		},
	},
	{
		name: "orders by week and region, filtered by a region list",
		query: semantic.Query{Metrics: []string{"orders"}, Dimensions: []string{"ordered_at__week", "region"},
			Filters:   []semantic.Filter{{Dimension: "region", Op: semantic.OpIn, Value: []any{"North", "East"}}},
			TimeRange: &semantic.TimeRange{From: "2025-03-01", To: "2025-05-01"}},
		hand: map[string]string{
			sqldb.DialectPostgres: `SELECT (o.ordered_at::date - ((extract(isodow FROM o.ordered_at)::int - 1))) AS w, r.name, COUNT(*)
FROM orders o JOIN customers c ON c.id = o.customer_id JOIN regions r ON r.id = c.region_id
WHERE r.name IN ('North', 'East') AND o.ordered_at >= '2025-03-01' AND o.ordered_at < '2025-05-01' GROUP BY 1, 2 ORDER BY 1, 2`,
			sqldb.DialectSQLite: `SELECT date(o.ordered_at, '-' || ((CAST(strftime('%w', o.ordered_at) AS INTEGER) + 6) % 7) || ' days') AS w, r.name, COUNT(*)
FROM orders o JOIN customers c ON c.id = o.customer_id JOIN regions r ON r.id = c.region_id
WHERE r.name IN ('North', 'East') AND o.ordered_at >= '2025-03-01' AND o.ordered_at < '2025-05-01' GROUP BY 1, 2 ORDER BY 1, 2`,
		},
	},
	{
		name:  "totals without dimensions",
		query: semantic.Query{Metrics: []string{"revenue", "orders", "customers", "list_price_total"}},
		hand: both(`SELECT (SELECT SUM(quantity * unit_price) FROM order_items), (SELECT COUNT(*) FROM orders),
  (SELECT COUNT(*) FROM customers), (SELECT SUM(unit_price) FROM products)`),
	},
}

// runHandCases runs every hand case through query_metrics on db and
// compares the rows with the hand-written SQL's.
func runHandCases(t *testing.T, m *semantic.Model, db sqldb.DB) {
	t.Helper()
	results := tools.NewMemoryResults(100)
	tool, err := semantic.NewTool(semantic.Config{Model: m, DB: db, Results: results})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range handCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "t1", SessionID: "s1"})
			got := callTool(t, ctx, tool, c.query)
			want, err := db.Query(ctx, c.hand[db.Dialect()], sqldb.Limits{})
			if err != nil {
				t.Fatalf("hand-written SQL: %v", err)
			}
			sameRows(t, got.Table.Rows, want.Rows)
			if len(got.Table.Columns) != len(c.query.Dimensions)+len(c.query.Metrics) {
				t.Errorf("columns %v", got.Table.Columns)
			}
			for i, d := range c.query.Dimensions {
				if got.Table.Columns[i].Name != d {
					t.Errorf("column %d is %q, want %q", i, got.Table.Columns[i].Name, d)
				}
			}
		})
	}
}

func callTool(t *testing.T, ctx context.Context, tool agents.Tool, q semantic.Query) *sqldb.QueryPayload {
	t.Helper()
	args, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Call(ctx, args)
	if err != nil {
		t.Fatalf("query_metrics: %v", err)
	}
	p, ok := res.Payload.(*sqldb.QueryPayload)
	if !ok {
		t.Fatalf("payload %T", res.Payload)
	}
	if !strings.Contains(res.Summary, p.Table.Name) || len(res.Artifacts) != 1 || len(res.Datasets) == 0 {
		t.Errorf("summary %q, artifacts %v, datasets %v", res.Summary, res.Artifacts, res.Datasets)
	}
	return p
}

// cell normalises a value so the two dialects' and the two queries'
// renderings compare: numbers as float64, dates as YYYY-MM-DD.
func cell(v any) any {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case time.Time:
		return x.Format("2006-01-02")
	case nil:
		return "NULL"
	}
	return v
}

func sameRows(t *testing.T, got, want [][]any) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("the hand-written SQL returned no rows; the comparison would prove nothing")
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, hand-written SQL has %d:\ngot  %v\nwant %v", len(got), len(want), got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("row %d: %d cells, want %d", i, len(got[i]), len(want[i]))
		}
		for k := range want[i] {
			g, w := cell(got[i][k]), cell(want[i][k])
			gf, gok := g.(float64)
			wf, wok := w.(float64)
			if gok && wok {
				if math.Abs(gf-wf) > 1e-6*math.Max(1, math.Abs(wf)) {
					t.Errorf("row %d cell %d: %v, want %v", i, k, gf, wf)
				}
				continue
			}
			if fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("row %d cell %d: %v (%T), want %v (%T)", i, k, got[i][k], got[i][k], want[i][k], want[i][k])
			}
		}
	}
}
