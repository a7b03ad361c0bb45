//go:build cgo

package fanout_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// cardinalDB is the SQLite sample database whose introspection gives
// every declared foreign key the many_to_one cardinality it has (the
// adapter may or may not set it already).
type cardinalDB struct{ *sqlite.DB }

func (d cardinalDB) Introspect(ctx context.Context) ([]domain.Dataset, error) {
	ds, err := d.DB.Introspect(ctx)
	for i := range ds {
		for j := range ds[i].Relationships {
			if r := &ds[i].Relationships[j]; r.Cardinality == "" {
				r.Cardinality = domain.CardinalityManyToOne
			}
		}
	}
	return ds, err
}

func openSample(t *testing.T) *sqlite.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "retail.db")
	if err := sampledata.CreateSQLite(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func query(t *testing.T, tl *sqldb.Tools, sql string) (agents.Result, *sqldb.QueryPayload) {
	t.Helper()
	args, _ := json.Marshal(sqldb.QueryArgs{SQL: sql})
	r, err := tl.QueryTool().Call(context.Background(), args)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return r, r.Payload.(*sqldb.QueryPayload)
}

// byKey maps the first column of a two-column result to its second.
func byKey(t *testing.T, p *sqldb.QueryPayload) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, row := range p.Table.Rows {
		switch v := row[1].(type) {
		case int64:
			out[row[0].(string)] = float64(v)
		case float64:
			out[row[0].(string)] = v
		default:
			t.Fatalf("unexpected cell %T %v", row[1], row[1])
		}
	}
	return out
}

// TestQueryDatabaseWarnsAndTheTrapIsReal runs double-counting statements
// and their repaired forms through query_database on the SQLite sample
// data: the trap's summary and payload carry the warning, its rows still
// come back, and they really are larger than the correct figures, which
// come back without a warning.
func TestQueryDatabaseWarnsAndTheTrapIsReal(t *testing.T) {
	t.Parallel()
	db := openSample(t)
	tl, err := sqldb.New(sqldb.Config{DB: cardinalDB{db}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, trap, correct string
		table, column       string
	}{
		{"orders per status",
			`SELECT o.status, COUNT(o.id) FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.status ORDER BY o.status`,
			`SELECT o.status, COUNT(DISTINCT o.id) FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.status ORDER BY o.status`,
			"orders", "id"},
		{"customers with orders per region",
			`SELECT r.name, COUNT(c.id) FROM regions r JOIN customers c ON c.region_id = r.id JOIN orders o ON o.customer_id = c.id GROUP BY r.name ORDER BY r.name`,
			`SELECT r.name, COUNT(c.id) FROM regions r JOIN customers c ON c.region_id = r.id
			 WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id) GROUP BY r.name ORDER BY r.name`,
			"customers", "id"},
		{"list price per category",
			`SELECT p.category, SUM(p.unit_price) FROM products p JOIN order_items i ON i.product_id = p.id GROUP BY p.category ORDER BY p.category`,
			`WITH sold AS (SELECT product_id, COUNT(*) AS lines FROM order_items GROUP BY product_id)
			 SELECT p.category, SUM(p.unit_price) FROM products p JOIN sold s ON s.product_id = p.id GROUP BY p.category ORDER BY p.category`,
			"products", "unit_price"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, p := query(t, tl, tc.trap)
			if len(p.FanOut) != 1 || p.FanOut[0].Table != tc.table || p.FanOut[0].Column != tc.column {
				t.Fatalf("payload warnings: %+v", p.FanOut)
			}
			if !strings.Contains(r.Summary, "WARNING (join fan-out") || !strings.Contains(r.Summary, p.FanOut[0].Hint) {
				t.Fatalf("summary lacks the warning:\n%s", r.Summary)
			}
			if p.Rows == 0 || !strings.Contains(r.Summary, "row(s)") {
				t.Fatalf("the result did not come back: %d rows\n%s", p.Rows, r.Summary)
			}
			cr, cp := query(t, tl, tc.correct)
			if len(cp.FanOut) != 0 || strings.Contains(cr.Summary, "WARNING") {
				t.Fatalf("correct query warned: %+v", cp.FanOut)
			}
			inflated, right := byKey(t, p), byKey(t, cp)
			if len(inflated) != len(right) || len(right) == 0 {
				t.Fatalf("groups differ: %v vs %v", inflated, right)
			}
			for k, v := range right {
				if !(inflated[k] > v) {
					t.Errorf("%s: trap %v is not above correct %v", k, inflated[k], v)
				}
			}
		})
	}
}

// TestQueryDatabaseTotals proves the double count on a figure known in
// advance: the sample data has exactly sampledata.Orders orders.
func TestQueryDatabaseTotals(t *testing.T) {
	t.Parallel()
	db := openSample(t)
	ds, err := cardinalDB{db}.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tl, err := sqldb.New(sqldb.Config{DB: db, Datasets: ds})
	if err != nil {
		t.Fatal(err)
	}
	_, p := query(t, tl, `SELECT COUNT(o.id) FROM orders o JOIN order_items i ON i.order_id = o.id`)
	if len(p.FanOut) != 1 || p.Table.Rows[0][0].(int64) <= sampledata.Orders {
		t.Fatalf("want one warning and more than %d counted orders, got %v and %v", sampledata.Orders, p.FanOut, p.Table.Rows)
	}
	_, p = query(t, tl, `SELECT COUNT(DISTINCT o.id) FROM orders o JOIN order_items i ON i.order_id = o.id`)
	if len(p.FanOut) != 0 || p.Table.Rows[0][0].(int64) != sampledata.Orders {
		t.Fatalf("want no warning and %d orders, got %v and %v", sampledata.Orders, p.FanOut, p.Table.Rows)
	}

	off, err := sqldb.New(sqldb.Config{DB: db, Datasets: ds, DisableFanOutGuard: true})
	if err != nil {
		t.Fatal(err)
	}
	r, p := query(t, off, `SELECT COUNT(o.id) FROM orders o JOIN order_items i ON i.order_id = o.id`)
	if len(p.FanOut) != 0 || strings.Contains(r.Summary, "WARNING") {
		t.Fatalf("the disabled guard warned: %v", p.FanOut)
	}
}

// Config.Relationships gives the guard join cardinalities the datasets do
// not declare (a semantic layer's, inferred ones): with the sample's
// foreign keys removed from the datasets the trap goes unnoticed, and
// handing them back through Config.Relationships restores the warning.
func TestConfigRelationshipsFeedTheGuard(t *testing.T) {
	t.Parallel()
	db := openSample(t)
	ds, err := cardinalDB{db}.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var rels []domain.Relationship
	for i := range ds {
		rels = append(rels, ds[i].Relationships...)
		ds[i].Relationships = nil
	}
	const trap = `SELECT o.status, COUNT(o.id) FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.status`
	without, err := sqldb.New(sqldb.Config{DB: db, Datasets: ds})
	if err != nil {
		t.Fatal(err)
	}
	if _, p := query(t, without, trap); len(p.FanOut) != 0 {
		t.Fatalf("warned without any cardinality: %+v", p.FanOut)
	}
	with, err := sqldb.New(sqldb.Config{DB: db, Datasets: ds, Relationships: rels})
	if err != nil {
		t.Fatal(err)
	}
	if r, p := query(t, with, trap); len(p.FanOut) != 1 || !strings.Contains(r.Summary, "WARNING (join fan-out") {
		t.Fatalf("fan-out = %+v, summary %q", p.FanOut, r.Summary)
	}
}
