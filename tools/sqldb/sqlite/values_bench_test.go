package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

// BenchmarkIntrospect compares Introspect of the sample database with and
// without value sampling (one bounded query per table with text columns).
func BenchmarkIntrospect(b *testing.B) {
	path := filepath.Join(b.TempDir(), "retail.db")
	if err := sampledata.CreateSQLite(context.Background(), path); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		sv   sqldb.SampleValues
	}{{"no-sampling", sqldb.SampleValues{Disable: true}}, {"sampling", sqldb.SampleValues{}}} {
		b.Run(bc.name, func(b *testing.B) {
			db, err := Open(path, Options{SampleValues: bc.sv})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := db.Introspect(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
