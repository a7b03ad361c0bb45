package kb_test

import (
	"context"
	"fmt"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

func Example() {
	ctx := context.Background()
	scope := kb.Scope{TenantID: "acme", Ontology: "sales"}
	// Datasets as a SQL adapter's Introspect returns them.
	datasets := []domain.Dataset{
		{Name: "sales.customers", Source: "sales.customers", Description: "Buyers.",
			Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "fullName", Type: "text"}}},
		{Name: "sales.orders", Source: "sales.orders", Description: "One row per order.",
			Fields:        []domain.Field{{Name: "id", Type: "bigint"}, {Name: "customer_id", Type: "bigint"}, {Name: "total_amount", Type: "numeric"}},
			Relationships: []domain.Relationship{{From: "sales.orders", FromColumns: []string{"customer_id"}, To: "sales.customers", ToColumns: []string{"id"}}}},
		{Name: "hr.employees", Source: "hr.employees", Description: "Staff.",
			Fields: []domain.Field{{Name: "id", Type: "bigint"}, {Name: "salary", Type: "numeric"}}},
	}
	cat, err := kb.Bootstrap(ctx, scope, datasets, kb.CatalogOptions{})
	if err != nil {
		panic(err)
	}
	defer cat.Close()

	d, _ := kb.Discover(ctx, cat, scope, "total amount per customer", kb.DiscoverOptions{K: 2})
	fmt.Println(d.Names())
	for _, r := range d.JoinHints {
		fmt.Printf("%s JOIN %s ON %s\n", r.From, r.To, r.JoinCondition())
	}
	// Output:
	// [sales.orders sales.customers]
	// sales.orders JOIN sales.customers ON customer_id = id
}

func ExampleHashEmbedder() {
	corpus := []string{"sales.orders id customer_id total_amount", "sales.customers id full_name", "hr.employees id salary"}
	emb := kb.NewHashEmbedder(kb.HashEmbedderOptions{}).Fit(corpus)
	q := emb.Vector("salaries of employees")
	for _, doc := range corpus {
		fmt.Printf("%.2f %s\n", kb.Cosine(q, emb.Vector(doc)), doc)
	}
	// Output:
	// -0.01 sales.orders id customer_id total_amount
	// -0.03 sales.customers id full_name
	// 0.76 hr.employees id salary
}
