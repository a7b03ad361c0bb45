//go:build cgo

package fanout_test

import (
	"testing"

	"github.com/bichat-go/bichat/tools/sqldb/fanout"
)

func BenchmarkCheck(b *testing.B) {
	chk := fanout.New(nil, retail(""))
	cases := []struct{ name, sql string }{
		{"trap", `SELECT r.name, COUNT(c.id) FROM regions r JOIN customers c ON c.region_id = r.id JOIN orders o ON o.customer_id = c.id GROUP BY r.name`},
		{"cte", `WITH t AS (SELECT order_id, SUM(quantity * unit_price) AS total FROM order_items GROUP BY order_id)
			SELECT c.region_id, SUM(t.total) FROM t JOIN orders o ON o.id = t.order_id JOIN customers c ON c.id = o.customer_id GROUP BY c.region_id`},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				chk.Check(tc.sql)
			}
		})
	}
	b.Run("new+check", func(b *testing.B) {
		ds := retail("")
		b.ReportAllocs()
		for b.Loop() {
			fanout.Check(cases[0].sql, nil, ds)
		}
	})
}
