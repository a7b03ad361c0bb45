package semantic_test

import (
	"testing"

	"github.com/bichat-go/bichat/tools/semantic"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// BenchmarkSQL measures writing the statement for a typical question:
// three metrics (one a ratio) over two entities, two dimensions (one a
// time grain), a list filter and a time range.
func BenchmarkSQL(b *testing.B) {
	m := retail(b)
	q := semantic.Query{
		Metrics:    []string{"revenue", "completed_orders", "avg_order_value"},
		Dimensions: []string{"region", "ordered_at__month"},
		Filters:    []semantic.Filter{{Dimension: "status", Op: semantic.OpIn, Value: []any{"completed", "returned"}}},
		TimeRange:  &semantic.TimeRange{From: "2025-01-01", To: "2026-01-01"},
		OrderBy:    []semantic.Order{{Name: "revenue", Desc: true}},
		Limit:      100,
	}
	for _, dialect := range []string{sqldb.DialectPostgres, sqldb.DialectSQLite} {
		b.Run(dialect, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.SQL(dialect, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoad measures parsing and checking the retail model.
func BenchmarkLoad(b *testing.B) {
	data := readRetail(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := semantic.Load(data); err != nil {
			b.Fatal(err)
		}
	}
}
