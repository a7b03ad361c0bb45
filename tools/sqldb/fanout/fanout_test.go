//go:build cgo

package fanout_test

import (
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb/fanout"
)

// retail is the sample retail schema (tools/sqldb/sampledata) with the
// cardinalities its foreign keys declare: regions 1-N customers 1-N
// orders 1-N order_items N-1 products.
func retail(schema string) []domain.Dataset {
	q := func(n string) string {
		if schema == "" {
			return n
		}
		return schema + "." + n
	}
	fk := func(from, fc, to string) domain.Relationship {
		return domain.Relationship{From: q(from), FromColumns: []string{fc}, To: q(to), ToColumns: []string{"id"}, Cardinality: domain.CardinalityManyToOne}
	}
	f := func(name string, pk bool) domain.Field {
		return domain.Field{Name: name, Type: "integer", PrimaryKey: pk}
	}
	return []domain.Dataset{
		{Name: q("regions"), Source: q("regions"), Schema: schema, Fields: []domain.Field{f("id", true), f("name", false)}},
		{Name: q("customers"), Source: q("customers"), Schema: schema,
			Fields:        []domain.Field{f("id", true), f("name", false), f("email", false), f("region_id", false), f("signed_up_at", false)},
			Relationships: []domain.Relationship{fk("customers", "region_id", "regions")}},
		{Name: q("products"), Source: q("products"), Schema: schema, Fields: []domain.Field{f("id", true), f("name", false), f("category", false), f("unit_price", false)}},
		{Name: q("orders"), Source: q("orders"), Schema: schema,
			Fields:        []domain.Field{f("id", true), f("customer_id", false), f("ordered_at", false), f("status", false)},
			Relationships: []domain.Relationship{fk("orders", "customer_id", "customers")}},
		{Name: q("order_items"), Source: q("order_items"), Schema: schema,
			Fields:        []domain.Field{f("order_id", true), f("line", true), f("product_id", false), f("quantity", false), f("unit_price", false)},
			Relationships: []domain.Relationship{fk("order_items", "order_id", "orders"), fk("order_items", "product_id", "products")}},
	}
}

func TestCorrectQueriesDoNotWarn(t *testing.T) {
	t.Parallel()
	c := fanout.New(nil, retail(""))
	sales := fanout.New(nil, retail("sales"))
	cases := []struct {
		name string
		sql  string
		c    *fanout.Checker
	}{
		{"no join", `SELECT SUM(quantity * unit_price) FROM order_items`, c},
		{"count star without join", `SELECT o.status, COUNT(*) FROM orders o GROUP BY o.status`, c},
		{"aggregate the many side", `SELECT o.status, SUM(i.quantity) FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.status`, c},
		{"many side through a chain", `SELECT r.name, SUM(i.quantity * i.unit_price) FROM regions r JOIN customers c ON c.region_id = r.id
			JOIN orders o ON o.customer_id = c.id JOIN order_items i ON i.order_id = o.id GROUP BY r.name`, c},
		{"count distinct key", `SELECT o.status, COUNT(DISTINCT o.id) FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.status`, c},
		{"min and max", `SELECT o.status, MIN(o.ordered_at), MAX(o.ordered_at) FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.status`, c},
		{"pre-aggregated CTE", `WITH t AS (SELECT order_id, SUM(quantity * unit_price) AS total FROM order_items GROUP BY order_id)
			SELECT c.region_id, SUM(t.total) FROM t JOIN orders o ON o.id = t.order_id JOIN customers c ON c.id = o.customer_id GROUP BY c.region_id`, c},
		{"join only to the one side", `SELECT r.name, COUNT(c.id) FROM customers c JOIN regions r ON r.id = c.region_id GROUP BY r.name`, c},
		{"count star counts the finest grain", `SELECT r.name, COUNT(*) FROM orders o JOIN customers c ON c.id = o.customer_id JOIN regions r ON r.id = c.region_id GROUP BY r.name`, c},
		{"pre-aggregated subquery", `SELECT c.region_id, SUM(x.n) FROM customers c JOIN (SELECT customer_id, COUNT(*) AS n FROM orders GROUP BY customer_id) x
			ON x.customer_id = c.id GROUP BY c.region_id`, c},
		{"line-level expression mixing both sides", `SELECT p.category, SUM(i.quantity * p.unit_price) FROM order_items i JOIN products p ON p.id = i.product_id GROUP BY p.category`, c},
		{"using many side", `SELECT SUM(i.quantity) FROM order_items i JOIN (SELECT id AS order_id, status FROM orders) o USING (order_id) WHERE o.status = 'completed'`, c},
		{"join bound to one line per order", `SELECT COUNT(o.id) FROM orders o JOIN order_items i ON i.order_id = o.id AND i.line = 1`, c},
		{"scalar subquery", `SELECT c.name, (SELECT COUNT(*) FROM orders o WHERE o.customer_id = c.id) AS n FROM customers c`, c},
		{"exists filter", `SELECT COUNT(o.id) FROM orders o WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id AND i.quantity > 3)`, c},
		{"CTE grouped at the order grain", `WITH per_order AS (SELECT o.id, o.customer_id, SUM(i.quantity) AS items FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.id, o.customer_id)
			SELECT c.region_id, SUM(p.items), COUNT(*) FROM per_order p JOIN customers c ON c.id = p.customer_id GROUP BY c.region_id`, c},
		{"schema-qualified many side", `SELECT SUM(sales.order_items.quantity) FROM sales.orders JOIN sales.order_items ON sales.order_items.order_id = sales.orders.id`, sales},
		{"tables outside the catalog", `SELECT SUM(a.v) FROM a JOIN b ON b.a_id = a.id`, c},
		{"unparseable statement", `SELECT [quantity] FROM order_items i JOIN orders o ON i.order_id = o.id`, c},
		{"sum distinct aggregate", `SELECT SUM(DISTINCT o.id) FROM orders o JOIN order_items i ON i.order_id = o.id`, c},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if w := tc.c.Check(tc.sql); len(w) != 0 {
				t.Fatalf("unexpected warnings for %s:\n%v", tc.sql, w)
			}
		})
	}
}

func TestDoubleCountingQueriesWarn(t *testing.T) {
	t.Parallel()
	c := fanout.New(nil, retail(""))
	sales := fanout.New(nil, retail("sales"))
	cases := []struct {
		name                         string
		sql                          string
		c                            *fanout.Checker
		table, column, agg, fannedBy string
		hintHas                      string
	}{
		{"count one side after fan-out", `SELECT o.status, COUNT(o.id) FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.status`,
			c, "orders", "id", "count", "order_items", "COUNT(DISTINCT o.id)"},
		{"count customers through orders", `SELECT r.name, COUNT(c.id) FROM regions r JOIN customers c ON c.region_id = r.id JOIN orders o ON o.customer_id = c.id GROUP BY r.name`,
			c, "customers", "id", "count", "orders", "COUNT(DISTINCT c.id)"},
		{"sum one-side measure", `SELECT p.category, SUM(p.unit_price) FROM products p JOIN order_items i ON i.product_id = p.id GROUP BY p.category`,
			c, "products", "unit_price", "sum", "order_items", "grouped by product_id"},
		{"pre-aggregated CTE joined back to lines", `WITH t AS (SELECT order_id, SUM(quantity * unit_price) AS total FROM order_items GROUP BY order_id)
			SELECT SUM(t.total) FROM t JOIN order_items i ON i.order_id = t.order_id`, c, "t", "total", "sum", "order_items", "grouped by order_id"},
		{"comma joins in WHERE", `SELECT r.name, COUNT(c.email) FROM regions r, customers c, orders o WHERE c.region_id = r.id AND o.customer_id = c.id GROUP BY r.name`,
			c, "customers", "email", "count", "orders", "COUNT(DISTINCT c.id)"},
		{"schema-qualified unaliased", `SELECT COUNT(sales.orders.id) FROM sales.orders JOIN sales.order_items ON sales.order_items.order_id = sales.orders.id`,
			sales, "sales.orders", "id", "count", "sales.order_items", "COUNT(DISTINCT orders.id)"},
		{"bare names resolve to schema datasets", `SELECT AVG(products.unit_price) FROM products JOIN order_items ON order_items.product_id = products.id`,
			sales, "sales.products", "unit_price", "avg", "sales.order_items", "grouped by product_id"},
		{"subquery in FROM keeps its key", `SELECT x.status, COUNT(x.id) FROM (SELECT o.id, o.status FROM orders o) x JOIN order_items i ON i.order_id = x.id GROUP BY x.status`,
			c, "x", "id", "count", "order_items", "COUNT(DISTINCT x.id)"},
		{"using clause", `SELECT COUNT(o.order_id) FROM (SELECT id AS order_id, status FROM orders) o JOIN order_items i USING (order_id)`,
			c, "o", "order_id", "count", "order_items", "COUNT(DISTINCT o.order_id)"},
		{"count star over a chasm", `SELECT c.id, COUNT(*) FROM customers c JOIN orders o1 ON o1.customer_id = c.id AND o1.status = 'completed'
			JOIN orders o2 ON o2.customer_id = c.id AND o2.status = 'returned' GROUP BY c.id`, c, "customers", "", "count", "orders", "COUNT(DISTINCT"},
		{"many side repeated by a chasm", `SELECT c.id, SUM(o1.id) FROM customers c JOIN orders o1 ON o1.customer_id = c.id JOIN orders o2 ON o2.customer_id = c.id GROUP BY c.id`,
			c, "orders", "id", "sum", "orders", "grouped by customer_id"},
		{"inside a subquery in FROM", `SELECT AVG(n) FROM (SELECT o.status, COUNT(o.id) AS n FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.status) s`,
			c, "orders", "id", "count", "order_items", "COUNT(DISTINCT o.id)"},
		{"inside a CTE", `WITH s AS (SELECT c.region_id, COUNT(c.id) AS n FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.region_id) SELECT * FROM s`,
			c, "customers", "id", "count", "orders", "COUNT(DISTINCT c.id)"},
		{"in HAVING", `SELECT o.customer_id FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.customer_id HAVING COUNT(o.id) > 5`,
			c, "orders", "id", "count", "order_items", "COUNT(DISTINCT o.id)"},
		{"quoted identifiers", `SELECT COUNT("O".id) FROM "orders" AS "O" JOIN order_items i ON i.order_id = "O".id`,
			c, "orders", "id", "count", "order_items", "COUNT(DISTINCT O.id)"},
		{"unqualified columns", `SELECT COUNT(email) FROM customers JOIN orders ON customer_id = customers.id`,
			c, "customers", "email", "count", "orders", "COUNT(DISTINCT customers.id)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := tc.c.Check(tc.sql)
			if len(ws) != 1 {
				t.Fatalf("want 1 warning, got %d: %v", len(ws), ws)
			}
			w := ws[0]
			if w.Table != tc.table || w.Column != tc.column || w.Aggregate != tc.agg || w.FannedBy != tc.fannedBy {
				t.Fatalf("got table=%q column=%q aggregate=%q fanned_by=%q, want %q %q %q %q", w.Table, w.Column, w.Aggregate, w.FannedBy, tc.table, tc.column, tc.agg, tc.fannedBy)
			}
			if !strings.Contains(w.Message, "double counts") || !strings.Contains(w.Hint, tc.hintHas) {
				t.Fatalf("message/hint lack the explanation or %q:\n%s", tc.hintHas, w)
			}
		})
	}
}

// TestCardinalitySources checks where cardinalities come from: the rels
// argument as well as the datasets' own relationships, in either
// orientation, and that a join whose cardinality is unknown never warns.
func TestCardinalitySources(t *testing.T) {
	t.Parallel()
	bare := func() []domain.Dataset {
		return []domain.Dataset{
			{Name: "shop.orders", Source: "shop.orders", Fields: []domain.Field{{Name: "id", PrimaryKey: true}, {Name: "region"}, {Name: "total"}}},
			{Name: "shop.order_items", Source: "shop.order_items", Fields: []domain.Field{{Name: "order_id"}, {Name: "sku"}, {Name: "qty"}}},
		}
	}
	const trap = `SELECT o.region, SUM(o.total) FROM shop.orders o JOIN shop.order_items oi ON oi.order_id = o.id GROUP BY o.region`
	const fixed = `WITH lines AS (SELECT order_id, SUM(qty) AS qty FROM shop.order_items GROUP BY order_id)
		SELECT o.region, SUM(o.total), SUM(l.qty) FROM shop.orders o JOIN lines l ON l.order_id = o.id GROUP BY o.region`
	manyToOne := domain.Relationship{From: "shop.order_items", FromColumns: []string{"order_id"}, To: "shop.orders", ToColumns: []string{"id"}, Cardinality: domain.CardinalityManyToOne}
	oneToMany := domain.Relationship{From: "orders", FromColumns: []string{"id"}, To: "order_items", ToColumns: []string{"order_id"}, Cardinality: domain.CardinalityOneToMany}
	inferred := domain.Relationship{From: "order_items", FromColumns: []string{"order_id"}, To: "orders", ToColumns: []string{"id"},
		Cardinality: domain.CardinalityManyToOne, Inferred: true, Confidence: 0.9}
	unknown := manyToOne
	unknown.Cardinality = ""
	oneToOne := manyToOne
	oneToOne.Cardinality = domain.CardinalityOneToOne
	inDataset := bare()
	inDataset[1].Relationships = []domain.Relationship{manyToOne}
	cases := []struct {
		name     string
		rels     []domain.Relationship
		datasets []domain.Dataset
		warn     bool
	}{
		{"declared many_to_one in rels", []domain.Relationship{manyToOne}, bare(), true},
		{"one_to_many from the other end, bare names", []domain.Relationship{oneToMany}, bare(), true},
		{"inferred join", []domain.Relationship{inferred}, bare(), true},
		{"relationship on the dataset", nil, inDataset, true},
		{"no cardinality", []domain.Relationship{unknown}, bare(), false},
		{"one_to_one", []domain.Relationship{oneToOne}, bare(), false},
		{"no relationship", nil, bare(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := fanout.Check(trap, tc.rels, tc.datasets)
			if got := len(ws) > 0; got != tc.warn {
				t.Fatalf("warned=%v, want %v: %v", got, tc.warn, ws)
			}
			if tc.warn {
				w := ws[0]
				if w.Table != "shop.orders" || w.Column != "total" || w.FannedBy != "shop.order_items" || len(w.JoinColumns) != 1 || w.JoinColumns[0] != "order_id" {
					t.Fatalf("wrong warning: %+v", w)
				}
				if !strings.Contains(w.Hint, "aggregate shop.order_items first in a subquery or CTE grouped by order_id") {
					t.Fatalf("hint: %s", w.Hint)
				}
			}
			if ws := fanout.Check(fixed, tc.rels, tc.datasets); len(ws) != 0 {
				t.Fatalf("the pre-aggregated form warned: %v", ws)
			}
		})
	}
}

func TestSeveralWarningsInStatementOrder(t *testing.T) {
	t.Parallel()
	ws := fanout.Check(`SELECT COUNT(c.id), SUM(o.id), COUNT(c.id) FROM customers c JOIN orders o ON o.customer_id = c.id JOIN order_items i ON i.order_id = o.id`, nil, retail(""))
	var got []string
	for _, w := range ws {
		got = append(got, w.Table+"."+w.Column)
	}
	if strings.Join(got, " ") != "customers.id orders.id" {
		t.Fatalf("got %v", got)
	}
}

// TestOddStatements runs statements the analysis only partly follows:
// none may panic, and each gets exactly the warnings listed.
func TestOddStatements(t *testing.T) {
	t.Parallel()
	c := fanout.New(nil, retail(""))
	cases := []struct {
		sql  string
		want []string // table.column of each warning
	}{
		{`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT SUM(i) FROM n JOIN orders o ON o.id = n.i`, nil},
		{`SELECT COUNT(o.id) FROM orders o JOIN order_items i ON i.order_id = o.id UNION ALL SELECT COUNT(*) FROM customers`, []string{"orders.id"}},
		{`VALUES (1, 2), (3, 4)`, nil},
		{`SELECT SUM(x.q) FROM orders o, LATERAL (SELECT SUM(quantity) AS q FROM order_items i WHERE i.order_id = o.id) x`, nil},
		{`SELECT COUNT(j.id) FROM (orders o JOIN order_items i ON i.order_id = o.id) AS j`, nil},
		{`SELECT DISTINCT ON (o.customer_id) o.customer_id, o.ordered_at FROM orders o ORDER BY o.customer_id, o.ordered_at DESC`, nil},
		{`SELECT c.region_id, o.status, COUNT(c.id) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY GROUPING SETS ((c.region_id), (o.status))`, []string{"customers.id"}},
		{`WITH x AS (SELECT o.customer_id, COUNT(*) AS n FROM orders o GROUP BY 1) SELECT SUM(c.id) FROM customers c JOIN x ON x.customer_id = c.id`, nil},
		{`WITH x AS (SELECT * FROM orders) SELECT COUNT(x.id) FROM x JOIN order_items i ON i.order_id = x.id`, []string{"x.id"}},
		{`WITH orders AS (SELECT 1 AS id) SELECT COUNT(orders.id) FROM orders JOIN order_items i ON i.order_id = orders.id`, []string{"orders.id"}},
		// The CTE shadows the table: grouped by order_id, it is one row per order.
		{`WITH order_items AS (SELECT order_id FROM order_items GROUP BY order_id) SELECT COUNT(o.id) FROM orders o JOIN order_items i ON i.order_id = o.id`, nil},
		{`SELECT SUM(o.id) OVER (PARTITION BY o.status) FROM orders o NATURAL JOIN customers c`, nil},
		{`SELECT COUNT(o.id) FROM orders o LEFT JOIN order_items i USING (id)`, nil},
		{`SELECT COUNT(*) FROM generate_series(1, 3) g JOIN orders o ON o.id = g`, nil},
		{`SELECT 1; SELECT COUNT(o.id) FROM orders o JOIN order_items i ON i.order_id = o.id`, []string{"orders.id"}},
		{``, nil},
		{`DELETE FROM orders`, nil},
	}
	for _, tc := range cases {
		var got []string
		for _, w := range c.Check(tc.sql) {
			got = append(got, w.Table+"."+w.Column)
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s\n got %v, want %v", tc.sql, got, tc.want)
		}
	}
}
