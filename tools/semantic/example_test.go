package semantic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/semantic"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

const exampleModel = `
entities:
  - {name: regions, primary_key: [id]}
  - {name: customers, primary_key: [id]}
  - {name: orders, primary_key: [id]}
  - {name: order_items, primary_key: [order_id, line]}
joins:
  - {from: order_items, to: orders, from_columns: [order_id], cardinality: many_to_one}
  - {from: orders, to: customers, from_columns: [customer_id], cardinality: many_to_one}
  - {from: customers, to: regions, from_columns: [region_id], cardinality: many_to_one}
measures:
  - {name: revenue, entity: order_items, expr: quantity * unit_price, agg: sum}
  - {name: order_count, entity: orders, agg: count}
dimensions:
  - {name: region, entity: regions, column: name}
  - {name: ordered_at, entity: orders, column: ordered_at, type: time, grains: [month, year]}
metrics:
  - {name: revenue, measure: revenue, description: Order line revenue in EUR.}
  - {name: orders, measure: order_count}
  - {name: avg_order_value, numerator: revenue, denominator: order_count}
`

// A semantic layer over the SQLite sample data: the model asks for
// revenue and orders by region for 2025; the tool writes the SQL (orders
// counted on their own rows, not once per order line) and runs it
// read-only.
func Example() {
	dir, _ := os.MkdirTemp("", "semantic-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "retail.db")
	ctx := context.Background()
	if err := sampledata.CreateSQLite(ctx, path); err != nil {
		panic(err)
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		panic(err)
	}
	defer db.Close()

	m, err := semantic.Load([]byte(exampleModel))
	if err != nil {
		panic(err)
	}
	if err := m.Validate(ctx, db); err != nil {
		panic(err)
	}
	fmt.Print(m.Describe())

	tool, err := semantic.NewTool(semantic.Config{Model: m, DB: db, Results: tools.NewMemoryResults(10)})
	if err != nil {
		panic(err)
	}
	ctx = agents.WithCallInfo(ctx, agents.CallInfo{TenantID: "acme", SessionID: "s1"})
	args, _ := json.Marshal(semantic.Query{
		Metrics:    []string{"revenue", "orders"},
		Dimensions: []string{"region"},
		TimeRange:  &semantic.TimeRange{From: "2025-01-01", To: "2026-01-01"},
		OrderBy:    []semantic.Order{{Name: "revenue", Desc: true}},
		Limit:      3,
	})
	res, err := tool.Call(ctx, args)
	if err != nil {
		panic(err)
	}
	p := res.Payload.(*sqldb.QueryPayload)
	fmt.Println(p.Table.Name, res.Datasets)
	for _, row := range p.Table.Rows {
		fmt.Printf("%-8s %10.2f %5d\n", row[0], row[1], row[2])
	}
	// Output:
	// Semantic layer: ask query_metrics for these metrics, grouped and filtered by these dimensions; it writes the joins so nothing double counts.
	// Metrics:
	// - revenue (sum of order_items): Order line revenue in EUR.
	// - orders (count of orders)
	// - avg_order_value (ratio revenue / order_count)
	// Dimensions:
	// - region (categorical)
	// - ordered_at (time; grains month, year; ask as ordered_at__month)
	// result_1 [customers order_items orders regions]
	// Central   501843.86   574
	// West      423188.86   513
	// South     386506.14   477
}
