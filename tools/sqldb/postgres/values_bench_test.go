package postgres

import (
	"context"
	"testing"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// BenchmarkIntrospect compares Introspect of the sample schema, as the
// read-only role, with and without value sampling (pg_stats, then one
// bounded query per table whose statistics do not settle it).
func BenchmarkIntrospect(b *testing.B) {
	sample(b, Options{})
	for _, bc := range []struct {
		name string
		sv   sqldb.SampleValues
	}{{"no-sampling", sqldb.SampleValues{Disable: true}}, {"sampling", sqldb.SampleValues{}}} {
		b.Run(bc.name, func(b *testing.B) {
			db := readDB(b, sampleSchema, Options{Schemas: []string{sampleSchema}, SampleValues: bc.sv})
			b.ReportAllocs()
			for b.Loop() {
				if _, err := db.Introspect(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
