package sqlite

import (
	"context"
	"database/sql"
	"maps"
	"testing"
)

func TestDDLComments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sql   string
		table string
		cols  map[string]string
	}{
		{"none", "CREATE TABLE t (a INTEGER, b TEXT)", "", map[string]string{}},
		{"end of line and own line", `CREATE TABLE orders ( -- One row per order.
  id INTEGER PRIMARY KEY, -- the order number
  -- When the order was placed,
  -- in UTC.
  ordered_at TEXT NOT NULL,
  status TEXT CHECK (status IN ('a', 'b')) -- completed, cancelled
    DEFAULT 'a',
  amt REAL /* in EUR */
)`, "One row per order.", map[string]string{
			"id": "the order number", "ordered_at": "When the order was placed, in UTC.",
			"status": "completed, cancelled", "amt": "in EUR"}},
		{"quoted names and tricky literals", "CREATE TABLE \"t\" (\n\"Col A\" TEXT DEFAULT '--not a comment', -- real\n[b c] INT, -- bracketed\n`d` TEXT /* multi\n line */\n)", "",
			map[string]string{"col a": "real", "b c": "bracketed", "d": "multi line"}},
		{"table constraints drop their comments", "CREATE TABLE t (\n a INT,\n b INT,\n PRIMARY KEY (a, b), -- the key\n FOREIGN KEY (b) REFERENCES u(id) -- to u\n)", "", map[string]string{}},
		{"comment before the parenthesis", "CREATE TABLE t -- lookup table\n(a TEXT)", "lookup table", map[string]string{}},
		{"an unterminated block comment", "CREATE TABLE t (a TEXT /* oops", "", map[string]string{"a": "oops"}},
	} {
		table, cols := ddlComments(tc.sql)
		if table != tc.table || !maps.Equal(cols, tc.cols) {
			t.Errorf("%s: table %q columns %q, want %q %q", tc.name, table, cols, tc.table, tc.cols)
		}
	}
}

func TestIntrospectReadsDDLComments(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/c.db"
	w, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"CREATE TABLE orders ( -- One row per order.\n  id INTEGER PRIMARY KEY,\n  -- When the order was placed (UTC).\n  ordered_at TEXT NOT NULL,\n  status TEXT NOT NULL -- completed, cancelled or returned\n)",
		"CREATE VIEW v AS SELECT id -- not a description\n FROM orders",
	} {
		if _, err := w.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ds, err := db.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].Description != "One row per order." || ds[1].Description != "" {
		t.Fatalf("datasets %+v", ds)
	}
	want := map[string]string{"id": "", "ordered_at": "When the order was placed (UTC).", "status": "completed, cancelled or returned"}
	for _, f := range ds[0].Fields {
		if f.Description != want[f.Name] {
			t.Errorf("%s: %q, want %q", f.Name, f.Description, want[f.Name])
		}
	}
}

// ddlComments never panics, whatever the statement text.
func FuzzDDLComments(f *testing.F) {
	for _, s := range []string{"CREATE TABLE t (a -- x\n, b /* y */)", "(((", ")))--", "'unterminated", "[", "/*", "--", "CREATE TABLE t (\"a\"\"b\" TEXT -- q\n)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, cols := ddlComments(s)
		if cols == nil {
			t.Fatal("nil columns map")
		}
	})
}
