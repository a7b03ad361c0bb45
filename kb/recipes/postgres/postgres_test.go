package postgres_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	dpg "github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/bichat-go/bichat/kb/recipes/postgres"
	"github.com/bichat-go/bichat/kb/recipes/recipestest"
	"github.com/jackc/pgx/v5"
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

// TestUpgradesOldTable: a recipes table made before the verified column
// (migration 3 as first released) gets the column on first use, keeps its
// recipes (unverified), and several stores upgrading at once all succeed.
func TestUpgradesOldTable(t *testing.T) {
	p := pgtest.SharedPool(t, 12)
	schema := freshSchema(t, p)
	ctx := t.Context()
	table := pgx.Identifier{schema, "recipes"}.Sanitize()
	if _, err := p.Exec(ctx, "ALTER TABLE "+table+" DROP COLUMN IF EXISTS verified"); err != nil {
		t.Fatal(err)
	}
	scope := kb.Scope{TenantID: "acme", Ontology: "sales"}
	orders := recipestest.Orders()
	fp := recipes.Fingerprint([]domain.Dataset{orders})
	old := domain.NewID()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := p.Exec(ctx, `INSERT INTO `+table+` (tenant_id, ontology, id, fingerprint, question, question_key, datasets,
			statements, success_count, created_at, last_used_at, used_seq)
		VALUES ($1, $2, $3, $4, 'revenue by month', 'revenue by month', $5, $6, 4, $7, $7, 1)`,
		scope.TenantID, scope.Ontology, old, fp, []string{orders.Name}, []string{"SELECT 1"}, now); err != nil {
		t.Fatal(err)
	}
	stores := make([]*postgres.Store, 4)
	for i := range stores {
		s, err := postgres.New(p, nil, postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Go(func() {
			if r, err := s.Get(ctx, scope, old); err != nil || r.Verified || r.SuccessCount != 4 {
				t.Errorf("Get of the old recipe after the upgrade = %+v, %v", r, err)
			}
		})
	}
	wg.Wait()
	var nullable string
	var def *string
	if err := p.QueryRow(ctx, `SELECT is_nullable, column_default FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = 'recipes' AND column_name = 'verified'`, schema).Scan(&nullable, &def); err != nil {
		t.Fatalf("verified column after the upgrade: %v", err)
	}
	if nullable != "NO" || def == nil || *def != "false" {
		t.Errorf("verified column: nullable %s, default %v; want NOT NULL DEFAULT false", nullable, def)
	}
	r, err := stores[0].SetVerified(ctx, scope, old, true)
	if err != nil || !r.Verified {
		t.Fatalf("SetVerified on the upgraded table = %+v, %v", r, err)
	}
	if r, err := stores[1].Get(ctx, scope, old); err != nil || !r.Verified {
		t.Errorf("another store sees %+v, %v", r, err)
	}
}

// TestMissingTable: a store on a schema that was never migrated says so.
func TestMissingTable(t *testing.T) {
	p := pgtest.SharedPool(t, 12)
	schema := pgtest.Schema(t, p)
	s, err := postgres.New(p, nil, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.List(t.Context(), kb.Scope{TenantID: "acme"})
	if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "Migrate") {
		t.Errorf("List on an unmigrated schema: %v, want an error naming the missing table and Migrate", err)
	}
}
