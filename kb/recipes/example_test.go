package recipes_test

import (
	"context"
	"fmt"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
)

func Example() {
	ctx := context.Background()
	mem := recipes.New(kb.NewHashEmbedder(kb.HashEmbedderOptions{}), recipes.Options{Capacity: 100})
	scope := kb.Scope{TenantID: "acme"}
	orders := domain.Dataset{Name: "orders", Source: "public.orders", Fields: []domain.Field{
		{Name: "id", Type: "bigint"}, {Name: "region", Type: "text"}, {Name: "total", Type: "numeric"},
	}}

	// The user marked an answer good: the host saves the recipe.
	_, err := mem.SaveRecipe(ctx, scope, recipes.NewRecipe{
		Question: "Revenue by region",
		SQL:      []string{"SELECT region, sum(total) FROM orders GROUP BY region"},
		Datasets: []domain.Dataset{orders},
	})
	if err != nil {
		panic(err)
	}

	// Later, discovery recalls it for a similar question.
	matches, err := mem.Recall(ctx, scope, recipes.Query{Question: "What is the revenue per region?", Datasets: []domain.Dataset{orders}})
	if err != nil {
		panic(err)
	}
	for _, m := range matches {
		fmt.Println(m.Recipe.Question, "| schema unchanged:", m.SchemaMatch)
		fmt.Println(m.Recipe.SQL[0])
	}
	// Output:
	// Revenue by region | schema unchanged: true
	// SELECT region, sum(total) FROM orders GROUP BY region
}

// The host marks a recipe it checked as verified: for a matching question
// it is offered before unverified recipes, even more similar ones, while a
// verified recipe unrelated to the question gets no preference.
func ExampleMemory_SetVerified() {
	ctx := context.Background()
	mem := recipes.New(kb.NewHashEmbedder(kb.HashEmbedderOptions{}), recipes.Options{})
	scope := kb.Scope{TenantID: "acme"}
	orders := domain.Dataset{Name: "orders", Source: "public.orders", Fields: []domain.Field{
		{Name: "id", Type: "bigint"}, {Name: "region", Type: "text"}, {Name: "total", Type: "numeric"}, {Name: "created_at", Type: "date"},
	}}
	staff := domain.Dataset{Name: "staff", Source: "hr.staff", Fields: []domain.Field{{Name: "id", Type: "bigint"}, {Name: "department", Type: "text"}}}
	save := func(q, sql string, d domain.Dataset, verified bool) recipes.Recipe {
		r, err := mem.SaveRecipe(ctx, scope, recipes.NewRecipe{Question: q, SQL: []string{sql}, Datasets: []domain.Dataset{d}, Verified: verified})
		if err != nil {
			panic(err)
		}
		return r
	}
	save("Revenue by region", "SELECT region, sum(total) FROM orders GROUP BY region", orders, false)
	checked := save("Revenue by region and quarter", "SELECT region, date_trunc('quarter', created_at) AS quarter, sum(total) FROM orders GROUP BY 1, 2", orders, false)
	// A seeded verified query (e.g. from an evaluation set) on other data.
	save("Headcount by department", "SELECT department, count(*) FROM staff GROUP BY 1", staff, true)

	// The analyst checked the quarterly query: mark it.
	if _, err := mem.SetVerified(ctx, scope, checked.ID, true); err != nil {
		panic(err)
	}
	matches, err := mem.Recall(ctx, scope, recipes.Query{Question: "What is the revenue per region?", Datasets: []domain.Dataset{orders, staff}})
	if err != nil {
		panic(err)
	}
	for _, m := range matches {
		fmt.Printf("%-30s verified=%-5v similarity=%.2f\n", m.Recipe.Question, m.Recipe.Verified, m.Similarity)
	}
	// Output:
	// Revenue by region and quarter  verified=true  similarity=0.65
	// Revenue by region              verified=false similarity=0.79
	// Headcount by department        verified=true  similarity=0.11
}
