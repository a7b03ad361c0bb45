package semantic_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/semantic"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// The checks every adapter must pass, run on SQLite here and on
// PostgreSQL in pg_test.go.
func runAll(t *testing.T, db sqldb.DB) {
	m := retail(t)
	if err := m.Validate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	t.Run("hand-written SQL", func(t *testing.T) { runHandCases(t, m, db) })
	t.Run("no double counting", func(t *testing.T) { t.Parallel(); checkNoFanOut(t, m, db) })
	t.Run("filter values are quoted", func(t *testing.T) { t.Parallel(); checkInjection(t, m, db) })
	t.Run("broken models", func(t *testing.T) { t.Parallel(); checkBrokenModels(t, db) })
}

func TestSQLite(t *testing.T) {
	t.Parallel()
	runAll(t, sqliteSample(t))
}

func toolFor(t *testing.T, m *semantic.Model, db sqldb.DB) (agents.Tool, context.Context) {
	t.Helper()
	tool, err := semantic.NewTool(semantic.Config{Model: m, DB: db, Results: tools.NewMemoryResults(100)})
	if err != nil {
		t.Fatal(err)
	}
	return tool, agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "t1", SessionID: "s1"})
}

// An orders-level count and a products-level sum asked together with an
// order_items-level sum: a naive join repeats each order (and product)
// once per line; the generated SQL aggregates each measure on its own
// rows first.
func checkNoFanOut(t *testing.T, m *semantic.Model, db sqldb.DB) {
	tool, ctx := toolFor(t, m, db)
	for _, c := range []struct {
		name   string
		query  semantic.Query
		col    int // the column the naive join inflates
		naive  string
		single string // the measure alone, without the other one
		cteOf  string // the entity whose CTE must not read order_items
	}{
		{
			name:   "orders and revenue by region",
			query:  semantic.Query{Metrics: []string{"revenue", "completed_orders"}, Dimensions: []string{"region"}},
			col:    2,
			naive:  `SELECT r.name, SUM(oi.quantity * oi.unit_price), COUNT(CASE WHEN o.status = 'completed' THEN o.id END) FROM orders o JOIN order_items oi ON oi.order_id = o.id JOIN customers c ON c.id = o.customer_id JOIN regions r ON r.id = c.region_id GROUP BY r.name ORDER BY r.name`,
			single: `completed_orders`,
			cteOf:  `"orders" t0`,
		},
		{
			name:   "list prices and revenue by category",
			query:  semantic.Query{Metrics: []string{"revenue", "list_price_total"}, Dimensions: []string{"category"}},
			col:    2,
			naive:  `SELECT p.category, SUM(oi.quantity * oi.unit_price), SUM(p.unit_price) FROM order_items oi JOIN products p ON p.id = oi.product_id GROUP BY p.category ORDER BY p.category`,
			single: `list_price_total`,
			cteOf:  `"products" t0`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := callTool(t, ctx, tool, c.query)
			naive, err := db.Query(ctx, c.naive, sqldb.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			alone := callTool(t, ctx, tool, semantic.Query{Metrics: []string{c.single}, Dimensions: c.query.Dimensions})
			if len(got.Table.Rows) != len(naive.Rows) || len(got.Table.Rows) == 0 {
				t.Fatalf("%d rows, naive %d", len(got.Table.Rows), len(naive.Rows))
			}
			for i := range got.Table.Rows {
				g, n, a := num(got.Table.Rows[i][c.col]), num(naive.Rows[i][c.col]), num(alone.Table.Rows[i][1])
				if g != a {
					t.Errorf("row %d: %v together with revenue, %v alone", i, g, a)
				}
				if !(n > 1.5*g) {
					t.Errorf("row %d: naive join %v is not inflated over %v: the case proves nothing", i, n, g)
				}
				if num(got.Table.Rows[i][1]) != num(naive.Rows[i][1]) {
					t.Errorf("row %d: revenue %v, naive %v (revenue is the many side and must agree)", i, got.Table.Rows[i][1], naive.Rows[i][1])
				}
			}
			// The measure of the one side is aggregated without touching
			// the many side: its CTE (one per line) never reads order_items.
			sql := got.Table.SQL
			start := strings.Index(sql, c.cteOf)
			if start < 0 {
				t.Fatalf("no CTE over %s in\n%s", c.cteOf, sql)
			}
			cte := sql[start:]
			cte, _, _ = strings.Cut(cte, "\n") // one CTE per line
			if strings.Contains(cte, "order_items") {
				t.Errorf("the %s CTE joins order_items:\n%s", c.cteOf, sql)
			}
		})
	}
}

func num(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return -1
}

// Filter values that would change the result if spliced into the SQL:
// each must match nothing (no status has such a value) and leave the
// statement one query.
func checkInjection(t *testing.T, m *semantic.Model, db sqldb.DB) {
	tool, ctx := toolFor(t, m, db)
	count := func(f semantic.Filter) float64 {
		t.Helper()
		p := callTool(t, ctx, tool, semantic.Query{Metrics: []string{"orders"}, Filters: []semantic.Filter{f}})
		if len(p.Table.Rows) != 1 {
			t.Fatalf("%d rows", len(p.Table.Rows))
		}
		return num(p.Table.Rows[0][0])
	}
	if n := count(semantic.Filter{Dimension: "status", Op: semantic.OpEq, Value: "completed"}); n <= 0 {
		t.Fatalf("control: %v completed orders", n)
	}
	for _, v := range []string{
		`x' OR '1'='1`,
		`completed' OR 1=1 --`,
		`completed\' OR 1=1 --`,
		`completed\\' OR 1=1 --`,
		`'); DROP TABLE orders; --`,
		`completed" OR "1"="1`,
		`completed'/**/OR/**/'a'='a`,
		"completed'\nOR status <> '",
		`$$ OR true --`,
		`completed' UNION SELECT 1 --`,
	} {
		for _, f := range []semantic.Filter{
			{Dimension: "status", Op: semantic.OpEq, Value: v},
			{Dimension: "status", Op: semantic.OpIn, Value: []any{v, v + "'"}},
		} {
			if n := count(f); n != 0 {
				t.Errorf("%s %q matched %v orders: the value reached the SQL unquoted", f.Op, v, n)
			}
		}
	}
	// The not-equal filter shows the value is compared as a whole: every
	// order differs from it.
	if n := count(semantic.Filter{Dimension: "status", Op: semantic.OpNe, Value: `completed' OR '1'='1`}); n != 3000 {
		t.Errorf("ne: %v orders, want all 3000", n)
	}
}

func checkBrokenModels(t *testing.T, db sqldb.DB) {
	base := `
entities:
  - {name: orders, primary_key: [id]}
  - {name: customers, primary_key: [id]}
joins:
  - {from: orders, to: customers, from_columns: [customer_id], cardinality: many_to_one}
measures:
  - {name: n, entity: orders, agg: count}
metrics:
  - {name: orders, measure: n}
`
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown measure column", strings.Replace(base, "agg: count}", "agg: sum, expr: amount * 2}", 1),
			[]string{`measure "n": column "amount" does not exist in`, "its columns: id, customer_id, ordered_at, status"}},
		{"unknown filter column", strings.Replace(base, "agg: count}", "agg: count, filter: \"state = 'x'\"}", 1),
			[]string{`measure "n" filter: column "state" does not exist`}},
		{"unknown dataset", strings.Replace(base, "{name: customers, primary_key: [id]}", "{name: customers, dataset: clients, primary_key: [id]}", 1),
			[]string{`entity "customers": dataset "clients" does not exist`}},
		{"unresolvable join column", strings.Replace(base, "from_columns: [customer_id]", "from_columns: [client_id]", 1),
			[]string{`join 1 (orders -> customers): column "client_id" does not exist`}},
		{"join of incompatible types", strings.Replace(base, "from_columns: [customer_id]", "from_columns: [status]", 1),
			[]string{`join 1 (orders -> customers): orders.status (TEXT) and customers.id (INTEGER) have incompatible types`}},
		{"unknown primary key", strings.Replace(base, "{name: orders, primary_key: [id]}", "{name: orders, primary_key: [order_id]}", 1),
			[]string{`entity "orders": primary key column "order_id" does not exist`}},
		{"sum of text", strings.Replace(base, "agg: count}", "agg: sum, expr: status}", 1),
			[]string{`measure "n": sum of column "status" of type TEXT: the column is not numeric`}},
		{"time dimension of text", base + "dimensions:\n  - {name: when, entity: orders, column: status, type: time}\n",
			[]string{`dimension "when": a time dimension needs a date or timestamp column; "status" is TEXT`}},
		{"unjoined entity", strings.Replace(base, "  - {from: orders, to: customers, from_columns: [customer_id], cardinality: many_to_one}\n", "", 1),
			[]string{`entity "customers": no chain of joins connects it to entity "orders"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := semantic.Load([]byte(c.yaml))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			err = m.Validate(context.Background(), db)
			if err == nil {
				t.Fatal("Validate accepted a broken model")
			}
			msg := err.Error()
			for _, w := range c.want {
				if db.Dialect() == sqldb.DialectPostgres {
					w = pgTypes.Replace(w)
				}
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
	m, err := semantic.Load([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(context.Background(), db); err != nil {
		t.Errorf("the unbroken model: %v", err)
	}
}

// pgTypes spells the SQLite type names of the expected messages as
// PostgreSQL introspection reports them.
var pgTypes = strings.NewReplacer("(TEXT)", "(text)", "(INTEGER)", "(integer)", "type TEXT", "type text", `is TEXT`, `is text`)
