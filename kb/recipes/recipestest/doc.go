// Package recipestest is the conformance suite for recipes.Store
// implementations: recipes.Memory and kb/recipes/postgres run it, so both
// save, recall, rank, evict, scope and restore recipes alike.
//
//	func TestStore(t *testing.T) {
//		recipestest.RunStoreTests(t, func(t *testing.T, e kb.Embedder, opts recipes.Options) recipes.Store {
//			return recipes.New(e, opts)
//		})
//	}
package recipestest
