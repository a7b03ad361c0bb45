package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/bichat-go/bichat/domain"
	dpg "github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/bichat-go/bichat/kb/recipes/postgres"
	"github.com/bichat-go/bichat/kb/recipes/recipestest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Example saves a recipe and recalls it for a reworded question. It needs
// a server: it does nothing when BICHAT_TEST_POSTGRES_DSN is not set
// (TestStore runs the whole suite against the test server).
func Example() {
	dsn := os.Getenv("BICHAT_TEST_POSTGRES_DSN")
	if dsn == "" {
		return
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn) // the host's pool
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	const schema = "bichat_example_recipes"
	if err := dpg.Migrate(ctx, pool, schema); err != nil { // creates the recipes table
		log.Fatal(err)
	}
	defer pool.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE") //nolint:errcheck // example clean-up
	store, err := postgres.New(pool, kb.NewHashEmbedder(kb.HashEmbedderOptions{}), postgres.Options{Schema: schema})
	if err != nil {
		log.Fatal(err)
	}
	scope := kb.Scope{TenantID: "acme"}
	orders := recipestest.Orders()
	if _, err := store.SaveRecipe(ctx, scope, recipes.NewRecipe{
		Question: "Total revenue per month in 2025",
		SQL:      []string{"SELECT date_trunc('month', created_at) AS month, sum(total) FROM sales.orders GROUP BY 1"},
		Datasets: []domain.Dataset{orders},
	}); err != nil {
		log.Fatal(err)
	}
	matches, err := store.Recall(ctx, scope, recipes.Query{Question: "monthly revenue for 2025", Datasets: []domain.Dataset{orders}})
	if err != nil || len(matches) == 0 {
		log.Fatalf("recall: %d matches, %v", len(matches), err)
	}
	fmt.Println(matches[0].Recipe.Question, matches[0].SchemaMatch)
}
