package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	dpg "github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/bichat-go/bichat/kb/recipes/postgres"
	"github.com/bichat-go/bichat/kb/recipes/recipestest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	poolOnce sync.Once
	pool     *pgxpool.Pool
	poolErr  error
)

func testPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	dsn := os.Getenv("BICHAT_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("BICHAT_TEST_POSTGRES_DSN is not set and BICHAT_REQUIRE_INTEGRATION=1: run make setup and source .ci/test.env")
		}
		t.Skip("PostgreSQL integration test: set BICHAT_TEST_POSTGRES_DSN (see .ci/test.env) to run it")
	}
	poolOnce.Do(func() {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			poolErr = err
			return
		}
		cfg.MaxConns = 12
		pool, poolErr = pgxpool.NewWithConfig(context.Background(), cfg)
	})
	if poolErr != nil {
		t.Fatalf("connect to the test server: %v", poolErr)
	}
	return pool
}

// freshSchema migrates a new schema, dropped when the test ends.
func freshSchema(t *testing.T, p *pgxpool.Pool) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "bichat_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := p.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop test schema %s: %v", schema, err)
		}
	})
	if err := dpg.Migrate(t.Context(), p, schema); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return schema
}

func TestStore(t *testing.T) {
	p := testPool(t)
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
	p := testPool(t)
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
