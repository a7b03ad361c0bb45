package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

var (
	sampleOnce sync.Once
	samplePath string
	sampleErr  error
)

// sample opens the sample database, created once per test binary.
func sample(t *testing.T) *DB {
	t.Helper()
	sampleOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bichat-sqlite-test")
		if err != nil {
			sampleErr = err
			return
		}
		samplePath = filepath.Join(dir, "retail.db")
		sampleErr = sampledata.CreateSQLite(context.Background(), samplePath)
	})
	if sampleErr != nil {
		t.Fatal(sampleErr)
	}
	db, err := Open(samplePath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestMain(m *testing.M) {
	code := m.Run()
	if samplePath != "" {
		os.RemoveAll(filepath.Dir(samplePath))
	}
	os.Exit(code)
}

func TestCheckStatement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sql, want string // want: "" accepted (and the returned text), else part of the error
		text      string
	}{
		{sql: "SELECT 1", text: "SELECT 1"},
		{sql: "  select 1 ; -- done\n", text: "select 1"},
		{sql: "WITH x AS (SELECT 1) SELECT * FROM x", text: "WITH x AS (SELECT 1) SELECT * FROM x"},
		{sql: "VALUES (1)", text: "VALUES (1)"},
		{sql: "(SELECT 1)", text: "(SELECT 1)"},
		{sql: "SELECT ';' AS a, \"b;\" FROM [c;d] WHERE `e` = 'it''s'", text: "SELECT ';' AS a, \"b;\" FROM [c;d] WHERE `e` = 'it''s'"},
		{sql: "SELECT replace(name, 'a', 'b') FROM t", text: "SELECT replace(name, 'a', 'b') FROM t"},
		{sql: "SELECT 'DELETE FROM t' /* DROP TABLE t */", text: "SELECT 'DELETE FROM t' /* DROP TABLE t */"},
		{sql: "", want: "empty"},
		{sql: "-- nothing", want: "empty"},
		{sql: "SELECT 1; SELECT 2", want: "several statements"},
		{sql: "SELECT 1;;", want: "several statements"},
		{sql: "SELECT 1; /* x */ DELETE FROM t", want: "several statements"},
		{sql: "ATTACH DATABASE '/tmp/x.db' AS x", want: "ATTACH statements"},
		{sql: "PRAGMA query_only = 0", want: "PRAGMA statements"},
		{sql: "DELETE FROM t", want: "DELETE statements"},
		{sql: "REPLACE INTO t VALUES (1)", want: "REPLACE statements"},
		{sql: "WITH x AS (SELECT 1) DELETE FROM t", want: "DELETE is not allowed"},
		{sql: "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", want: "INSERT is not allowed"},
		{sql: "SELECT 1 FROM t; PRAGMA writable_schema = 1", want: "several statements"},
		{sql: "SELECT 'unterminated", want: "unterminated"},
		{sql: "BEGIN; DELETE FROM t; COMMIT", want: "several statements"},
		{sql: "BEGIN", want: "BEGIN statements"},
		{sql: "VACUUM INTO '/tmp/copy.db'", want: "VACUUM statements"},
	} {
		got, err := CheckStatement(tc.sql)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q rejected: %v", tc.sql, err)
		case tc.want == "" && got != tc.text:
			t.Errorf("%q: text %q, want %q", tc.sql, got, tc.text)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want %q", tc.sql, err, tc.want)
		}
	}
}

// The authorizer on its own: statements that pass CheckStatement but read
// what they may not, or call denied functions, never run.
func TestAuthorizer(t *testing.T) {
	t.Parallel()
	db := sample(t)
	ctx := context.Background()
	for _, tc := range []struct {
		sql  string
		lim  sqldb.Limits
		want string
	}{
		{"SELECT load_extension('/tmp/evil.so')", sqldb.Limits{}, "function load_extension"},
		{"SELECT sqlite_version()", sqldb.Limits{}, "function sqlite_version"},
		{"SELECT * FROM sqlite_master", sqldb.Limits{}, "system table sqlite_master"},
		{"SELECT * FROM sqlite_schema", sqldb.Limits{}, "system table"},
		{"SELECT * FROM pragma_table_info('orders')", sqldb.Limits{}, "pragma_table_info"},
		{"SELECT * FROM orders", sqldb.Limits{Tables: []string{"customers"}}, "relation orders is not in the allowed datasets"},
		{"SELECT * FROM customers WHERE id IN (SELECT customer_id FROM orders)", sqldb.Limits{Tables: []string{"customers"}}, "orders"},
		{"WITH o AS (SELECT * FROM orders) SELECT * FROM o", sqldb.Limits{Tables: []string{"customers"}}, "orders"},
		// A CTE named like an allowed table does not launder what it reads.
		{"WITH customers AS (SELECT * FROM orders) SELECT * FROM customers", sqldb.Limits{Tables: []string{"customers"}}, "orders"},
	} {
		_, err := db.Query(ctx, tc.sql, tc.lim)
		if !errors.Is(err, sqldb.ErrRejected) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a rejection naming %q", tc.sql, err, tc.want)
		}
	}
	// Allowed relations pass, CTE names need no entry, and the datasets
	// read are reported.
	res, err := db.Query(ctx, "WITH c AS (SELECT * FROM customers) SELECT count(*) FROM c JOIN regions r ON r.id = c.region_id", sqldb.Limits{Tables: []string{"customers", "main.regions"}})
	if err != nil || res.Rows[0][0] != int64(sampledata.Customers) || strings.Join(res.Datasets, ",") != "customers,regions" {
		t.Fatalf("allowed: %v %v", res, err)
	}
	// The authorizer left on an idle pooled connection refuses everything.
	conn, err := db.q.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.QueryContext(ctx, "SELECT 1"); err == nil {
		t.Error("a pooled connection ran a statement without the per-query policy")
	}
}

// The connection on its own is read-only: even without the statement
// check and the authorizer (the introspection pool has neither), writes
// fail.
func TestConnectionIsReadOnly(t *testing.T) {
	t.Parallel()
	db := sample(t)
	for _, q := range []string{"CREATE TABLE x (a)", "DELETE FROM orders", "PRAGMA query_only = 0; DELETE FROM orders"} {
		if _, err := db.meta.Exec(q); err == nil {
			t.Errorf("%s succeeded on the read-only connection", q)
		}
	}
	var n int
	if err := db.meta.QueryRow("SELECT count(*) FROM orders").Scan(&n); err != nil || n != sampledata.Orders {
		t.Fatalf("orders %d %v", n, err)
	}
}

func TestQueryLimitsAndTypes(t *testing.T) {
	t.Parallel()
	db := sample(t)
	ctx := context.Background()
	res, err := db.Query(ctx, "SELECT id, ordered_at, status, 1.5 AS x, NULL AS n, x'ff' AS b FROM orders ORDER BY id", sqldb.Limits{MaxRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || !res.Truncated {
		t.Fatalf("%d rows, truncated %v", len(res.Rows), res.Truncated)
	}
	var types []string
	for _, c := range res.Columns {
		types = append(types, c.Type)
	}
	if got := strings.Join(types, ","); got != "INTEGER,TIMESTAMP,TEXT,REAL,,BLOB" {
		t.Errorf("types %s", got)
	}
	r := res.Rows[0]
	if r[0] != int64(1) || r[3] != 1.5 || r[4] != nil {
		t.Errorf("row %v", r)
	}
	if _, ok := r[1].(time.Time); !ok {
		t.Errorf("timestamp is %T", r[1])
	}
	res, err = db.Query(ctx, "SELECT name FROM customers LIMIT 3", sqldb.Limits{MaxCellBytes: 2})
	if err != nil || res.CutCells != 3 || len(res.Rows[0][0].(string)) > 2 {
		t.Errorf("cut cells: %v %v", res, err)
	}
	res, err = db.Query(ctx, "SELECT email FROM customers", sqldb.Limits{MaxBytes: 100})
	if err != nil || !res.Truncated || len(res.Rows) > 10 {
		t.Errorf("byte cap: %d rows %v %v", len(res.Rows), res.Truncated, err)
	}
}

func TestTimeoutAndErrors(t *testing.T) {
	t.Parallel()
	db := sample(t)
	ctx := context.Background()
	start := time.Now()
	_, err := db.Query(ctx, "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r", sqldb.Limits{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, sqldb.ErrTimeout) {
		t.Fatalf("want timeout, got %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("interrupt took %s", d)
	}
	for q, kind := range map[string]sqldb.Kind{
		"SELECT nope FROM orders":                        sqldb.KindUndefinedColumn,
		"SELECT * FROM nope":                             sqldb.KindUndefinedTable,
		"SELECT FROM WHERE":                              sqldb.KindSyntax,
		"SELECT no_such_fn(1)":                           sqldb.KindTypeMismatch,
		"SELECT substr()":                                sqldb.KindTypeMismatch,
		"SELECT * FROM orders JOIN customers ON id = id": sqldb.KindSyntax,
	} {
		if _, err := db.Query(ctx, q, sqldb.Limits{}); sqldb.KindOf(err) != kind {
			t.Errorf("%s: %v (%s), want %s", q, err, sqldb.KindOf(err), kind)
		}
	}
	// The pool still works after an interrupted statement.
	if _, err := db.Query(ctx, "SELECT 1", sqldb.Limits{}); err != nil {
		t.Fatal(err)
	}
}

func TestIntrospectSample(t *testing.T) {
	t.Parallel()
	db := sample(t)
	ds, err := db.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, d := range ds {
		rel := ""
		for _, r := range d.Relationships {
			rel += " " + r.To + "(" + r.JoinCondition() + ")"
		}
		lines = append(lines, fmt.Sprintf("%s %s %d%s", d.Name, d.Kind, d.RowEstimate, rel))
	}
	want := "customers table 200 regions(region_id = id)|" +
		"order_items table %d products(product_id = id) orders(order_id = id)|" +
		"orders table 3000 customers(customer_id = id)|products table 40|regions table 5"
	want = fmt.Sprintf(want, len(sampledata.Generate(0).OrderItems))
	if got := strings.Join(lines, "|"); got != want {
		t.Errorf("datasets\n got %s\nwant %s", got, want)
	}
	items := ds[1]
	if f, _ := items.Field("order_id"); !f.PrimaryKey || f.Nullable || f.Type != "INTEGER" {
		t.Errorf("order_id %+v", f)
	}
	res, err := db.Sample(context.Background(), "regions", 2)
	if err != nil || len(res.Rows) != 2 {
		t.Fatalf("sample %v %v", res, err)
	}
}

// Gold SELECTs over the Chinook SQLite file from ../shared/datasets.
func TestGoldChinookSQLite(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("BICHAT_DATASETS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "shared", "datasets")
	}
	src := filepath.Join(dir, "chinook", "Chinook_Sqlite.sqlite")
	if _, err := os.Stat(src); err != nil {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("Chinook is missing: %v", err)
		}
		t.Skipf("Chinook is missing (%v); set BICHAT_DATASETS", err)
	}
	// Work on a copy: the dataset directory may be read-only.
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "chinook.sqlite")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, g := range []struct{ sql, want string }{
		{"SELECT count(*) FROM Track", "[3503]"},
		{"SELECT g.Name, count(*) FROM Track t JOIN Genre g ON g.GenreId = t.GenreId GROUP BY g.Name ORDER BY 2 DESC LIMIT 1", "[Rock 1297]"},
		{"SELECT printf('%.2f', sum(Total)) FROM Invoice", "[2328.60]"},
		{"SELECT BillingCountry, printf('%.2f', sum(Total)) FROM Invoice GROUP BY 1 ORDER BY sum(Total) DESC LIMIT 1", "[USA 523.06]"},
		{`WITH per AS (SELECT c.Country, c.FirstName || ' ' || c.LastName AS who, sum(i.Total) AS spent
			FROM Customer c JOIN Invoice i ON i.CustomerId = c.CustomerId GROUP BY 1, 2)
			SELECT Country, who, printf('%.2f', spent) FROM (SELECT *, rank() OVER (PARTITION BY Country ORDER BY spent DESC) r FROM per)
			WHERE r = 1 ORDER BY spent DESC, who LIMIT 1`, "[Czech Republic Helena Holý 49.62]"},
		{`WITH RECURSIVE chain AS (SELECT EmployeeId, 0 AS depth FROM Employee WHERE ReportsTo IS NULL
			UNION ALL SELECT e.EmployeeId, c.depth + 1 FROM Employee e JOIN chain c ON e.ReportsTo = c.EmployeeId)
			SELECT max(depth), count(*) FROM chain`, "[2 8]"},
	} {
		res, err := db.Query(context.Background(), g.sql, sqldb.Limits{})
		if err != nil {
			t.Errorf("%s: %v", g.sql, err)
			continue
		}
		if got := fmt.Sprint(res.Rows[0]); got != g.want {
			t.Errorf("%s\n got %s\nwant %s", g.sql, got, g.want)
		}
	}
	// The file is unchanged by the session (read-only).
	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(b) {
		t.Error("the database file changed")
	}
	_ = sql.ErrNoRows
}
