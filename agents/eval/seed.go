package eval

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// RecipeSaver is what SeedRecipes needs of a recipe store;
// recipes.Store (*recipes.Memory, kb/recipes/postgres) implements it.
type RecipeSaver interface {
	SaveRecipe(ctx context.Context, scope kb.Scope, n recipes.NewRecipe) (recipes.Recipe, error)
}

// SeedRecipes saves every question of set, with its gold SQL, as a
// verified recipe (recipes.NewRecipe.Verified) in scope, over the current
// definitions of its gold tables taken from cat: the discovery step then
// offers the verified queries first for similar questions. A question's
// gold tables are Question.Datasets, or the tables db reports the gold
// query read (db may be nil when every question lists its datasets).
// Saving the same set again updates the recipes instead of duplicating
// them. It returns how many recipes were saved; the first error stops it
// and names the question.
func SeedRecipes(ctx context.Context, store RecipeSaver, scope kb.Scope, set *Set, cat kb.Catalog, db Querier) (int, error) {
	if store == nil || cat == nil {
		return 0, errors.New("eval: seed recipes: a recipe store and a catalog are required")
	}
	if set == nil {
		return 0, errors.New("eval: seed recipes: no question set")
	}
	if err := set.Validate(); err != nil {
		return 0, err
	}
	var all []domain.Dataset // the catalog's list, loaded when a name needs matching
	n := 0
	for _, q := range set.Questions {
		names := q.Datasets
		if len(names) == 0 {
			if db == nil {
				return n, fmt.Errorf("eval: seed recipes: question %s lists no datasets and no database is given to find them", q.ID)
			}
			res, err := db.Query(ctx, q.SQL, sqldb.Limits{MaxRows: 1})
			if err != nil {
				return n, fmt.Errorf("eval: seed recipes: question %s: gold SQL: %w", q.ID, err)
			}
			names = res.Datasets
			if len(names) == 0 {
				return n, fmt.Errorf("eval: seed recipes: question %s: the database did not report the tables the gold SQL reads; list them in \"datasets\"", q.ID)
			}
		}
		ds, err := cat.Datasets(ctx, scope, names...)
		if err != nil {
			return n, fmt.Errorf("eval: seed recipes: question %s: datasets: %w", q.ID, err)
		}
		if len(ds) < len(names) {
			if all == nil {
				if all, err = cat.List(ctx, scope); err != nil {
					return n, fmt.Errorf("eval: seed recipes: list datasets: %w", err)
				}
			}
			ds = ds[:0]
			for _, name := range names {
				i := indexTable(all, name)
				if i < 0 {
					return n, fmt.Errorf("eval: seed recipes: question %s: dataset %q is not in the catalog", q.ID, name)
				}
				ds = append(ds, all[i])
			}
		}
		if _, err := store.SaveRecipe(ctx, scope, recipes.NewRecipe{Question: strings.TrimSpace(q.Question),
			SQL: []string{q.SQL}, Datasets: dedupe(ds), Verified: true}); err != nil {
			return n, fmt.Errorf("eval: seed recipes: question %s: %w", q.ID, err)
		}
		n++
	}
	return n, nil
}

func indexTable(ds []domain.Dataset, name string) int {
	for i, d := range ds {
		if sameTable(d.Name, name) {
			return i
		}
	}
	return -1
}

func dedupe(ds []domain.Dataset) []domain.Dataset {
	seen := map[string]bool{}
	out := ds[:0:0]
	for _, d := range ds {
		if !seen[d.Name] {
			seen[d.Name] = true
			out = append(out, d)
		}
	}
	return out
}
