package sampledata_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

func TestGenerateIsDeterministic(t *testing.T) {
	t.Parallel()
	a, b := sampledata.Generate(0), sampledata.Generate(sampledata.DefaultSeed)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("same seed, different data")
	}
	if fmt.Sprint(a) == fmt.Sprint(sampledata.Generate(7)) {
		t.Fatal("another seed gives the same data")
	}
	if len(a.Regions) != sampledata.Regions || len(a.Customers) != sampledata.Customers || len(a.Products) != sampledata.Products || len(a.Orders) != sampledata.Orders {
		t.Fatalf("sizes %d %d %d %d", len(a.Regions), len(a.Customers), len(a.Products), len(a.Orders))
	}
	if n := len(a.OrderItems); n < sampledata.Orders || n > 4*sampledata.Orders {
		t.Fatalf("%d items", n)
	}
	// Orders are numbered by date within the two years.
	for i, o := range a.Orders {
		at := o[2].(time.Time)
		if o[0] != int64(i+1) || at.Before(sampledata.Start) || !at.Before(sampledata.End) || i > 0 && at.Before(a.Orders[i-1][2].(time.Time)) {
			t.Fatalf("order %d: %v", i, o)
		}
	}
	stmts, err := sampledata.Statements("postgres", sampledata.Options{Schema: "retail"})
	if err != nil {
		t.Fatal(err)
	}
	// The SQL is stable too; a change here is a change of the sample data.
	sum := sha256.Sum256([]byte(strings.Join(stmts, "\n")))
	again, _ := sampledata.Statements("postgres", sampledata.Options{Schema: "retail"})
	if sha256.Sum256([]byte(strings.Join(again, "\n"))) != sum {
		t.Fatal("statements differ between calls")
	}
	if _, err := sampledata.Statements("oracle", sampledata.Options{}); err == nil {
		t.Fatal("unknown dialect accepted")
	}
}

func TestCreateSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.db")
	ctx := context.Background()
	if err := sampledata.CreateSQLite(ctx, path); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var orders, bad int
	var first, last string
	if err := db.QueryRow("SELECT count(*), min(ordered_at), max(ordered_at) FROM orders").Scan(&orders, &first, &last); err != nil {
		t.Fatal(err)
	}
	if orders != sampledata.Orders || first < "2024-01-01" || last >= "2026-01-01" {
		t.Errorf("orders %d from %s to %s", orders, first, last)
	}
	// Foreign keys hold and ids follow time.
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM order_items i LEFT JOIN orders o ON o.id = i.order_id WHERE o.id IS NULL)
		+ (SELECT count(*) FROM orders a JOIN orders b ON b.id = a.id + 1 WHERE b.ordered_at < a.ordered_at)`).Scan(&bad); err != nil || bad != 0 {
		t.Errorf("integrity: %d %v", bad, err)
	}
}
