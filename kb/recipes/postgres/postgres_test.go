package postgres_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/domain"
	dpg "github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/bichat-go/bichat/kb/recipes/postgres"
	"github.com/bichat-go/bichat/kb/recipes/recipestest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// freshSchema migrates a schema of its own for t, dropped when t ends.
func freshSchema(t *testing.T, p *pgxpool.Pool) string {
	t.Helper()
	schema := pgtest.Schema(t, p)
	if err := dpg.Migrate(t.Context(), p, schema); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return schema
}

func TestStore(t *testing.T) {
	p := pgtest.SharedPool(t, 12)
	recipestest.RunStoreTests(t, func(t *testing.T, e kb.Embedder, opts recipes.Options) recipes.Store {
		s, err := postgres.New(p, e, postgres.Options{Schema: freshSchema(t, p), Capacity: opts.Capacity, Now: opts.Now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestSharedAcrossStores: two Stores on one schema (two processes of a
// deployment) see each other's recipes, and their concurrent saves keep
// the capacity.
func TestSharedAcrossStores(t *testing.T) {
	p := pgtest.SharedPool(t, 12)
	schema := freshSchema(t, p)
	scope := kb.Scope{TenantID: "acme", Ontology: "sales"}
	ds := []domain.Dataset{{Name: "sales.orders", Source: "sales.orders", Fields: []domain.Field{{Name: "id", Type: "bigint"}}}}
	var stores [2]*postgres.Store
	for i := range stores {
		s, err := postgres.New(p, kb.NewHashEmbedder(kb.HashEmbedderOptions{}), postgres.Options{Schema: schema, Capacity: 5})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	r, err := stores[0].SaveRecipe(t.Context(), scope, recipes.NewRecipe{Question: "revenue by month", SQL: []string{"SELECT 1"}, Datasets: ds})
	if err != nil {
		t.Fatal(err)
	}
	got, err := stores[1].Recall(t.Context(), scope, recipes.Query{Question: "monthly revenue", Datasets: ds})
	if err != nil || len(got) != 1 || got[0].Recipe.ID != r.ID || len(got[0].Recipe.Embedding) != len(r.Embedding) {
		t.Fatalf("the other store recalls %+v, %v", got, err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, err := stores[i%2].SaveRecipe(t.Context(), scope, recipes.NewRecipe{Question: "question " + string(rune('a'+i)), SQL: []string{"SELECT 1"}, Datasets: ds})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	list, err := stores[0].List(t.Context(), scope)
	if err != nil || len(list) != 5 {
		t.Errorf("after concurrent saves from two stores: %d recipes (%v), want the capacity 5", len(list), err)
	}
	if _, err := stores[1].Get(t.Context(), kb.Scope{TenantID: "other", Ontology: "sales"}, list[0].ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Get from another tenant: %v, want ErrNotFound", err)
	}
}
