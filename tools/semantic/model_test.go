package semantic_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/semantic"
	"github.com/bichat-go/bichat/tools/sqldb"
)

const minimal = `
entities:
  - {name: orders, primary_key: [id]}
  - {name: customers, primary_key: [id]}
joins:
  - {from: orders, to: customers, from_columns: [customer_id], cardinality: many_to_one}
measures:
  - {name: n, entity: orders, agg: count}
dimensions:
  - {name: status, entity: orders, column: status}
metrics:
  - {name: orders, measure: n}
`

func TestLoadRejectsBrokenModels(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, old, new string
		want           string
	}{
		{"unknown key", "primary_key: [id]}\n  - {name: customers", "primary_key: [id], pk: x}\n  - {name: customers", `field pk not found`},
		{"bad entity name", "{name: orders,", "{name: Orders,", `entity 1: entity name "Orders" must be 1-63 lower-case letters`},
		{"double underscore", "{name: n, entity", "{name: n__x, entity", `measure 1: measure name "n__x" may not contain a double underscore`},
		{"duplicate entity", "{name: customers,", "{name: orders,", `entity "orders" is defined twice`},
		{"missing primary key", "{name: customers, primary_key: [id]}", "{name: customers}", `entity "customers": primary_key is required`},
		{"join to unknown entity", "to: customers,", "to: clients,", `join 1 (orders -> clients): unknown entity "clients"`},
		{"many to many", "cardinality: many_to_one", "cardinality: many_to_many", `join 1 (orders -> customers): many_to_many cannot be joined without fan-out`},
		{"unknown cardinality", "cardinality: many_to_one", "cardinality: several", `cardinality "several" must be one_to_one, many_to_one or one_to_many`},
		{"join without columns", "from_columns: [customer_id], ", "", `join 1 (orders -> customers): from_columns is required`},
		{"column count mismatch", "from_columns: [customer_id]", "from_columns: [customer_id, x]", `2 from_columns but 1 to_columns`},
		{"unknown aggregation", "agg: count}", "agg: median, expr: id}", `measure "n": agg "median" must be one of sum, count, count_distinct, avg, min, max`},
		{"sum without expr", "agg: count}", "agg: sum}", `measure "n": expr is required for agg sum`},
		{"measure of unknown entity", "{name: n, entity: orders", "{name: n, entity: lines", `measure "n": unknown entity "lines"`},
		{"statement in an expression", "agg: count}", "agg: sum, expr: 'id; DROP TABLE orders'}", `measure "n": expr: a semicolon is not allowed`},
		{"comment in a filter", "agg: count}", "agg: count, filter: 'id > 1 -- x'}", `measure "n": filter: comments are not allowed`},
		{"qualified column", "agg: count}", "agg: sum, expr: customers.id}", `qualified name customers.…: refer to the entity's columns by bare name`},
		{"unterminated literal", "agg: count}", "agg: count, filter: \"status = 'x\"}", `unterminated string literal`},
		{"grain of a categorical", "column: status}", "column: status, grains: [day]}", `dimension "status": grains are only for time dimensions`},
		{"unknown grain", "column: status}", "column: status, type: time, grains: [hour]}", `grain "hour" must be one of day, week, month, quarter, year`},
		{"unknown dimension type", "column: status}", "column: status, type: geo}", `type "geo" must be categorical or time`},
		{"column and expr", "column: status}", "column: status, expr: lower(status)}", `give column or expr, not both`},
		{"metric of unknown measure", "measure: n}", "measure: m}", `metric "orders": unknown measure "m"`},
		{"half a ratio", "measure: n}", "numerator: n}", `metric "orders": give measure, or numerator and denominator`},
		{"metric named like a dimension", "{name: orders, measure: n}", "{name: status, measure: n}", `metric "status" has the name of a dimension`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(minimal, c.old, c.new, 1)
			if src == minimal {
				t.Fatalf("%q is not in the model", c.old)
			}
			_, err := semantic.Load([]byte(src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	if _, err := semantic.Load([]byte(minimal)); err != nil {
		t.Fatalf("the minimal model: %v", err)
	}
	if _, err := semantic.Load([]byte("metrics: []")); err == nil || !strings.Contains(err.Error(), "no entities") {
		t.Errorf("empty model: %v", err)
	}
}

func TestExpressionsQualifyColumns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expr, want string }{
		{"quantity * unit_price", `SUM(t0."quantity" * t0."unit_price")`},
		{"CASE WHEN status = 'it''s done' THEN quantity ELSE 0 END", `SUM(CASE WHEN t0."status" = 'it''s done' THEN t0."quantity" ELSE 0 END)`},
		{"CAST(quantity AS numeric) / 2.5e1", `SUM(CAST(t0."quantity" AS numeric) / 2.5e1)`},
		{"coalesce(quantity, 0)::float", `SUM(coalesce(t0."quantity", 0)::float)`},
		{`"Odd ""Name"""`, `SUM(t0."Odd ""Name""")`},
	} {
		t.Run(c.expr, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(minimal, "agg: count}", "agg: sum, expr: '"+strings.ReplaceAll(c.expr, "'", "''")+"'}", 1)
			m, err := semantic.Load([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			sql, err := m.SQL(sqldb.DialectSQLite, semantic.Query{Metrics: []string{"orders"}})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(sql, c.want) {
				t.Errorf("SQL\n%s\nlacks %s", sql, c.want)
			}
		})
	}
}

func TestDescribeIsCompactAndDeterministic(t *testing.T) {
	t.Parallel()
	got := retail(t).Describe()
	want := `Semantic layer: ask query_metrics for these metrics, grouped and filtered by these dimensions; it writes the joins so nothing double counts.
Metrics:
- revenue (sum of order_items): Line revenue, quantity times the price paid.
- units (sum of order_items)
- orders (count_distinct of orders): Orders placed.
- completed_orders (count of orders): Orders with status completed.
- customers (count_distinct of customers): Distinct customers (by order dimensions, those who ordered).
- list_price_total (sum of products): Sum of the catalogue's list prices.
- avg_order_value (ratio revenue / order_count): Revenue per order.
Dimensions:
- region (categorical)
- ordered_at (time; grains day, week, month, quarter, year; ask as ordered_at__day): When the order was placed (UTC).
- status (categorical)
- category (categorical)
`
	if got != want {
		t.Errorf("Describe:\n%s\nwant:\n%s", got, want)
	}
	if again := retail(t).Describe(); again != got {
		t.Error("two loads of the same model describe differently")
	}
}

func TestRelationshipsBothDirections(t *testing.T) {
	t.Parallel()
	rels := retail(t).Relationships()
	if len(rels) != 8 {
		t.Fatalf("%d relationships, want 8", len(rels))
	}
	want := []domain.Relationship{
		{From: "order_items", FromColumns: []string{"order_id"}, To: "orders", ToColumns: []string{"id"}, Cardinality: domain.CardinalityManyToOne},
		{From: "orders", FromColumns: []string{"id"}, To: "order_items", ToColumns: []string{"order_id"}, Cardinality: domain.CardinalityOneToMany},
	}
	for i, w := range want {
		g := rels[i]
		if g.From != w.From || g.To != w.To || g.Cardinality != w.Cardinality || !slices.Equal(g.FromColumns, w.FromColumns) || !slices.Equal(g.ToColumns, w.ToColumns) {
			t.Errorf("relationship %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestQueryErrors(t *testing.T) {
	t.Parallel()
	m := retail(t)
	for _, c := range []struct {
		name    string
		dialect string
		q       semantic.Query
		want    string
	}{
		{"no metric", sqldb.DialectSQLite, semantic.Query{}, "name at least one metric; metrics: revenue, units"},
		{"unknown metric", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"profit"}}, `unknown metric "profit"`},
		{"metric twice", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue", "revenue"}}, `metric "revenue" is asked twice`},
		{"unknown dimension", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, Dimensions: []string{"city"}}, `unknown dimension "city"; dimensions: region, ordered_at__day|week|month|quarter|year`},
		{"grain of a categorical", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, Dimensions: []string{"region__month"}}, `dimension "region" is categorical and takes no grain`},
		{"unknown grain", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, Dimensions: []string{"ordered_at__hour"}}, `dimension "ordered_at" has no grain "hour"`},
		{"fan-out", sqldb.DialectPostgres, semantic.Query{Metrics: []string{"list_price_total"}, Dimensions: []string{"region"}},
			`measure "list_price_total" (sum over products) cannot be broken down or filtered by dimension "region": the way from products to regions crosses the one-to-many join products -> order_items`},
		{"fan-out through a filter", sqldb.DialectPostgres, semantic.Query{Metrics: []string{"list_price_total"}, Filters: []semantic.Filter{{Dimension: "status", Op: "eq", Value: "completed"}}},
			`cannot be broken down or filtered by dimension "status"`},
		{"unknown operator", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, Filters: []semantic.Filter{{Dimension: "status", Op: "like", Value: "%"}}},
			`filter 1: dimension "status": operator "like" must be one of eq, ne, lt, le, gt, ge, in, not_in`},
		{"in without a list", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, Filters: []semantic.Filter{{Dimension: "status", Op: "in", Value: "x"}}}, `the value must be a list`},
		{"empty list", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, Filters: []semantic.Filter{{Dimension: "status", Op: "in", Value: []any{}}}}, `the list must hold 1 to 1000 values, not 0`},
		{"object value", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, Filters: []semantic.Filter{{Dimension: "status", Op: "eq", Value: map[string]any{"a": 1}}}}, `value of type map[string]interface {}: want a string, number or boolean`},
		{"null value", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, Filters: []semantic.Filter{{Dimension: "status", Op: "eq"}}}, `null cannot be compared`},
		{"NUL byte", sqldb.DialectPostgres, semantic.Query{Metrics: []string{"revenue"}, Filters: []semantic.Filter{{Dimension: "status", Op: "eq", Value: "a\x00b"}}}, `the string holds a NUL byte`},
		{"time filter with text", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, Filters: []semantic.Filter{{Dimension: "ordered_at", Op: "ge", Value: "2025-01-01' OR 1=1"}}}, `is not a date (YYYY-MM-DD)`},
		{"filter with a grain", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, Filters: []semantic.Filter{{Dimension: "ordered_at__month", Op: "ge", Value: "2025-01-01"}}}, `filters compare the dimension itself`},
		{"bad time range", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, TimeRange: &semantic.TimeRange{From: "yesterday"}}, `time_range: "yesterday" is not a date`},
		{"empty time range", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, TimeRange: &semantic.TimeRange{From: "2025-02-01", To: "2025-01-01"}}, `time_range: from 2025-02-01 is not before to 2025-01-01`},
		{"time range on a categorical", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, TimeRange: &semantic.TimeRange{Dimension: "status", From: "2025-01-01"}}, `dimension "status" is not a time dimension`},
		{"order by a column not asked", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, OrderBy: []semantic.Order{{Name: "orders"}}}, `order by "orders": not a column of this query`},
		{"negative limit", sqldb.DialectSQLite, semantic.Query{Metrics: []string{"revenue"}, Limit: -1}, `limit -1 is negative`},
		{"unknown dialect", "mysql", semantic.Query{Metrics: []string{"revenue"}}, `dialect "mysql" is not supported`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sql, err := m.SQL(c.dialect, c.q)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "semantic: query: ") {
				t.Fatalf("error %v (SQL %q), want %q", err, sql, c.want)
			}
		})
	}
}

// Filter values become literals: quotes doubled, and in PostgreSQL a
// backslash turns the literal into an escape string with the backslash
// doubled, so the value reads the same whatever standard_conforming_strings
// is. Numbers are re-rendered from their value.
func TestLiteralsAreQuoted(t *testing.T) {
	t.Parallel()
	m := retail(t)
	for _, c := range []struct {
		dialect string
		value   any
		want    string
	}{
		{sqldb.DialectSQLite, `a'b`, `= 'a''b')`},
		{sqldb.DialectPostgres, `a'b`, `= 'a''b')`},
		{sqldb.DialectSQLite, `a\'b`, `= 'a\''b')`},
		{sqldb.DialectPostgres, `a\'b`, `= E'a\\''b')`},
		{sqldb.DialectPostgres, `x' OR '1'='1`, `= 'x'' OR ''1''=''1')`},
		{sqldb.DialectPostgres, 42.0, `= 42)`},
		{sqldb.DialectPostgres, 0.5, `= 0.5)`},
		{sqldb.DialectSQLite, true, `= TRUE)`},
	} {
		sql, err := m.SQL(c.dialect, semantic.Query{Metrics: []string{"orders"}, Filters: []semantic.Filter{{Dimension: "status", Op: "eq", Value: c.value}}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(sql, `(t0."status" `+c.want) {
			t.Errorf("%s %v: SQL\n%s\nlacks %s", c.dialect, c.value, sql, c.want)
		}
	}
	sql, err := m.SQL(sqldb.DialectPostgres, semantic.Query{Metrics: []string{"orders"}, TimeRange: &semantic.TimeRange{From: "2025-01-01T02:00:00+02:00", To: "2025-02-01"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sql, `(t0."ordered_at" >= '2025-01-01 00:00:00') AND (t0."ordered_at" < '2025-02-01 00:00:00')`) {
		t.Errorf("time range SQL:\n%s", sql)
	}
}
