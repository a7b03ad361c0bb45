//go:build cgo

package fanout_test

import (
	"fmt"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb/fanout"
)

func Example() {
	datasets := []domain.Dataset{
		{Name: "orders", Source: "orders", Fields: []domain.Field{{Name: "id", PrimaryKey: true}, {Name: "region"}, {Name: "total"}}},
		{Name: "order_items", Source: "order_items", Fields: []domain.Field{{Name: "order_id"}, {Name: "sku"}, {Name: "qty"}}},
	}
	rels := []domain.Relationship{{
		From: "order_items", FromColumns: []string{"order_id"},
		To: "orders", ToColumns: []string{"id"},
		Cardinality: domain.CardinalityManyToOne, // a foreign key
	}}
	chk := fanout.New(rels, datasets)

	for _, w := range chk.Check(`SELECT o.region, SUM(o.total) FROM orders o
		JOIN order_items i ON i.order_id = o.id GROUP BY o.region`) {
		fmt.Println(w.Table, w.Column, w.Aggregate, "fanned by", w.FannedBy)
		fmt.Println(w.Message)
		fmt.Println(w.Hint)
	}
	fmt.Println(len(chk.Check(`SELECT o.region, SUM(o.total), SUM(i.qty) FROM orders o
		JOIN (SELECT order_id, SUM(qty) AS qty FROM order_items GROUP BY order_id) i ON i.order_id = o.id
		GROUP BY o.region`)), "warnings for the pre-aggregated form")
	// Output:
	// orders total sum fanned by order_items
	// SUM(o.total) double counts: the one-to-many join to order_items (on order_items.order_id) repeats each orders row once per matching order_items row, so the SUM over orders is inflated.
	// aggregate order_items first in a subquery or CTE grouped by order_id (one row per orders row) and join that, or compute SUM(o.total) from orders alone in its own subquery before joining; SUM(DISTINCT ...) is no fix (it drops equal values).
	// 0 warnings for the pre-aggregated form
}
