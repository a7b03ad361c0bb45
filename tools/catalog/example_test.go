package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/tools/catalog"
)

func Example() {
	ctx := context.Background()
	scope := kb.Scope{TenantID: "acme"}
	cat, _ := kb.Bootstrap(ctx, scope, []domain.Dataset{
		{Name: "orders", Source: "public.orders", Description: "One row per order.",
			Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "total", Type: "numeric"}}},
	}, kb.CatalogOptions{})
	defer cat.Close()

	list, _ := catalog.ListDatasets(cat, catalog.WithScope(scope))
	res, _ := list.Call(ctx, json.RawMessage(`{}`))
	fmt.Println(res.Summary)

	details, _ := catalog.GetDatasetDetails(cat, catalog.WithScope(scope))
	res, _ = details.Call(ctx, json.RawMessage(`{"names":["order"]}`))
	fmt.Println(res.Summary)
	// Output:
	// 1 datasets:
	// - orders (source public.orders): One row per order.
	// unknown dataset "order"; did you mean: orders
}
