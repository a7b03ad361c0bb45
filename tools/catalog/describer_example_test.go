package catalog_test

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools/catalog"
)

// A host proposes descriptions for cryptic tables once, reviews them and
// applies the accepted ones; plain tables are never sent to the model, and
// the host's own descriptions are kept. A real host passes its configured
// model instead of the scripted one.
func ExampleModelDescriber() {
	ctx := context.Background()
	model := &scripted.Model{Turns: []scripted.Turn{{
		Text: `{"description": "Order headers, one row per order.", "fields": {"cst_cd": "Customer code.", "amt1": "Amount."}}`,
	}}}
	datasets := []domain.Dataset{
		{Name: "sales.t_ord_h", Source: "sales.t_ord_h", Fields: []domain.Field{
			{Name: "cst_cd", Type: "text", Values: []string{"C001", "C002"}},
			{Name: "amt1", Type: "numeric", Description: "Net amount in EUR."},
		}},
		{Name: "sales.customers", Source: "sales.customers", Fields: []domain.Field{
			{Name: "customer_id", Type: "bigint"},
		}},
	}

	var cache kb.DescriptionCache
	proposals, err := kb.Propose(ctx, datasets, catalog.ModelDescriber{Model: model, MaxValues: 5}, &cache)
	if err != nil {
		panic(err)
	}
	for _, p := range proposals { // the host reviews these
		fmt.Printf("%s: %s\n", p.Dataset, p.Text)
		for _, col := range slices.Sorted(maps.Keys(p.Fields)) {
			fmt.Printf("  %s: %s\n", col, p.Fields[col])
		}
	}

	described := kb.Apply(datasets, proposals)
	fmt.Println(described[0].Description)
	fmt.Println(described[0].Fields[1].Description)

	// Asking again hits the cache: the model is not called twice.
	if _, err := kb.Propose(ctx, datasets, catalog.ModelDescriber{Model: model}, &cache); err != nil {
		panic(err)
	}
	fmt.Println("model calls:", model.Calls())
	// Output:
	// sales.t_ord_h: Order headers, one row per order.
	//   cst_cd: Customer code.
	// Order headers, one row per order.
	// Net amount in EUR.
	// model calls: 1
}
