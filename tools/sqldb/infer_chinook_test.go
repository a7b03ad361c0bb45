package sqldb_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// InferJoins on a real third-party schema: the Chinook SQLite database
// (from ../shared/datasets, never copied into the repository) with its 11
// declared foreign keys removed from the datasets. Its naming is not the
// sample's (Invoice.CustomerId -> Customer.CustomerId, Employee.ReportsTo
// -> Employee.EmployeeId), so this measures the name rules too. Every join
// found must be a declared one; the recall is reported and held to a floor.
func TestInferJoinsOnChinook(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("BICHAT_DATASETS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "datasets")
	}
	src := filepath.Join(dir, "chinook", "Chinook_Sqlite.sqlite")
	if _, err := os.Stat(src); err != nil {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("Chinook is missing: %v", err)
		}
		t.Skipf("Chinook is missing (%v); set BICHAT_DATASETS", err)
	}
	b, err := os.ReadFile(src) // a copy: the dataset folder may be read-only
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "chinook.sqlite")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ds, err := db.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bare, declared := withoutJoins(ds, false)
	if len(declared) != 11 {
		t.Fatalf("Chinook declares %d foreign keys, want 11", len(declared))
	}
	got, err := sqldb.InferJoins(context.Background(), db, bare, sqldb.InferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, r, extra, missed := precisionRecall(got, declared)
	t.Logf("Chinook (SQLite), foreign keys dropped: precision %.2f recall %.2f; missed %q", p, r, missed)
	if p < 1 {
		t.Errorf("precision %.2f: joins Chinook does not declare: %q", p, extra)
	}
	if r < 0.8 {
		t.Errorf("recall %.2f below the floor 0.8; missed %q", r, missed)
	}
}
