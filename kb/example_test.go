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

// A question that names a value finds the column holding it; synonyms
// (the built-in Thesaurus and the host's) find tables by other words;
// hints are searched on their own and marked.
func ExampleDiscover_valuesSynonymsHints() {
	ctx := context.Background()
	scope := kb.Scope{TenantID: "acme"}
	datasets := []domain.Dataset{
		{Name: "crm.customers", Source: "crm.customers", Description: "Customer accounts.",
			Fields: []domain.Field{{Name: "id", Type: "bigint"}, {Name: "city", Type: "text", Values: []string{"Lyon", "Zürich"}},
				{Name: "email", Type: "text", Sensitive: true}}},
		{Name: "hr.staff", Source: "hr.staff", Description: "Payroll.", Fields: []domain.Field{{Name: "id", Type: "bigint"}}},
		{Name: "crm.cancellations", Source: "crm.cancellations", Description: "Attrition events.",
			Fields: []domain.Field{{Name: "customer_id", Type: "bigint"}}},
		{Name: "billing.subscriptions", Source: "billing.subscriptions", Description: "Plans with their end dates.",
			Fields: []domain.Field{{Name: "id", Type: "bigint"}, {Name: "end_date", Type: "date"}}},
	}
	cat, err := kb.Bootstrap(ctx, scope, datasets, kb.CatalogOptions{
		Synonyms:     [][]string{{"churn", "attrition"}},
		NoEmbeddings: true, // text only: tiny catalogs make vector neighbours noise
	})
	if err != nil {
		panic(err)
	}
	defer cat.Close()

	d, _ := kb.Discover(ctx, cat, scope, "how many accounts in zurich", kb.DiscoverOptions{K: 1})
	for _, m := range d.Hits[0].MatchedValues {
		fmt.Printf("%s = '%s' is in %s.%s\n", m.Field, m.Value, d.Hits[0].Dataset.Name, m.Field)
	}
	d, _ = kb.Discover(ctx, cat, scope, "how many workers", kb.DiscoverOptions{K: 1})
	fmt.Println(d.Names())
	d, _ = kb.Discover(ctx, cat, scope, "churn this year", kb.DiscoverOptions{K: 2,
		Hints: []string{"measured on subscription end dates"}})
	for _, h := range d.Hits {
		fmt.Println(h.Dataset.Name, "hint:", h.Hint)
	}
	// Output:
	// city = 'Zürich' is in crm.customers.city
	// [hr.staff]
	// billing.subscriptions hint: true
	// crm.cancellations hint: false
}

// A lexicon covers the paraphrases a business thesaurus does not: here a
// two-word one; kb.LoadWordNet("", kb.WordNetOptions{}) builds one from
// WordNet (Debian's wordnet-base) with tens of thousands of words.
func ExampleCatalogOptions_lexicon() {
	ctx := context.Background()
	scope := kb.Scope{TenantID: "acme"}
	datasets := []domain.Dataset{
		{Name: "logistics.shipments", Source: "logistics.shipments", Description: "Goods sent to customers.",
			Fields: []domain.Field{{Name: "tracking_no", Type: "text"}, {Name: "weight_kg", Type: "numeric"}}},
		{Name: "logistics.depots", Source: "logistics.depots", Description: "Warehouses.",
			Fields: []domain.Field{{Name: "code", Type: "text"}, {Name: "city", Type: "text"}}},
	}
	lexicon := kb.Lexicon{"freight": {"cargo", "shipment"}}
	for _, opts := range []kb.CatalogOptions{{}, {Lexicon: lexicon}} {
		cat, err := kb.Bootstrap(ctx, scope, datasets, opts)
		if err != nil {
			panic(err)
		}
		hits, _ := cat.SearchWith(ctx, scope, "how much freight left in May", kb.SearchOptions{K: 1, Mode: kb.BM25Only})
		fmt.Println(hits[0].Dataset.Name, "fallback:", hits[0].Fallback)
		cat.Close()
	}
	// Output:
	// logistics.depots fallback: true
	// logistics.shipments fallback: false
}
