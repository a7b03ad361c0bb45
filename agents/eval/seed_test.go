package eval

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
)

func sampleCatalog(t *testing.T, scope kb.Scope) *kb.MemoryCatalog {
	t.Helper()
	ds, err := sampleDB.Introspect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := kb.Bootstrap(t.Context(), scope, ds, kb.CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

func TestSeedRecipes(t *testing.T) {
	t.Parallel()
	scope := kb.Scope{TenantID: "acme"}
	cat := sampleCatalog(t, scope)
	mem := recipes.New(nil, recipes.Options{})
	set := retailSet()
	set.Questions[4].Datasets = []string{"main.regions"} // matched without the schema
	n, err := SeedRecipes(t.Context(), mem, scope, set, cat, sampleDB)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("seeded %d recipes, want 5", n)
	}
	list, err := mem.List(t.Context(), scope)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 5 {
		t.Fatalf("store holds %d recipes", len(list))
	}
	for _, r := range list {
		if !r.Verified {
			t.Errorf("recipe %q is not verified", r.Question)
		}
		if r.Question == "How many customers does each region have?" {
			if !slices.Equal(r.Datasets, []string{"customers", "regions"}) || len(r.SQL) != 1 || !strings.Contains(r.SQL[0], "JOIN regions") {
				t.Errorf("recipe %+v", r)
			}
		}
	}
	// Seeding again updates instead of duplicating.
	if _, err := SeedRecipes(t.Context(), mem, scope, set, cat, sampleDB); err != nil {
		t.Fatal(err)
	}
	if list, _ = mem.List(t.Context(), scope); len(list) != 5 {
		t.Errorf("store holds %d recipes after seeding twice", len(list))
	}
	// The verified recipe is recalled for a similar question.
	ms, err := mem.Recall(t.Context(), scope, recipes.Query{Question: "how many customers in each region", K: 1})
	if err != nil || len(ms) != 1 || !strings.Contains(ms[0].Recipe.SQL[0], "JOIN regions") {
		t.Errorf("recall: %+v, %v", ms, err)
	}
}

func TestSeedRecipesErrors(t *testing.T) {
	t.Parallel()
	scope := kb.Scope{TenantID: "acme"}
	cat := sampleCatalog(t, scope)
	mem := recipes.New(nil, recipes.Options{})
	unknown := &Set{Questions: []Question{{ID: "x", Question: "Q", SQL: "SELECT 1", Datasets: []string{"invoices"}}}}
	noTables := &Set{Questions: []Question{{ID: "y", Question: "Q", SQL: "SELECT 1"}}}
	badGold := &Set{Questions: []Question{{ID: "z", Question: "Q", SQL: "SELECT nope FROM regions"}}}
	for _, c := range []struct {
		set  *Set
		db   Querier
		want string
	}{
		{unknown, sampleDB, `question x: dataset "invoices" is not in the catalog`},
		{noTables, nil, "question y lists no datasets and no database is given"},
		{noTables, sampleDB, "question y: the database did not report the tables"},
		{badGold, sampleDB, "question z: gold SQL:"},
	} {
		n, err := SeedRecipes(context.Background(), mem, scope, c.set, cat, c.db)
		if err == nil || n != 0 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SeedRecipes = %d, %v; want %q", n, err, c.want)
		}
	}
	if _, err := SeedRecipes(t.Context(), nil, scope, retailSet(), cat, sampleDB); err == nil {
		t.Error("SeedRecipes without a store succeeded")
	}
}
