// Package recipestest is the conformance suite for recipes.Store
// implementations: recipes.Memory and kb/recipes/postgres run it, so both
// save, recall, rank, evict, scope and restore recipes alike, and keep,
// set and rank verified recipes alike (verified first among the recipes
// relevant to a question, after the schema rule).
//
//	func TestStore(t *testing.T) {
//		recipestest.RunStoreTests(t, func(t *testing.T, e kb.Embedder, opts recipes.Options) recipes.Store {
//			return recipes.New(e, opts)
//		})
//	}
package recipestest
