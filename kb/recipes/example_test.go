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
