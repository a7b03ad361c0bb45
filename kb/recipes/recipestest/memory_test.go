package recipestest_test

import (
	"testing"

	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/bichat-go/bichat/kb/recipes/recipestest"
)

// TestMemory runs the suite against recipes.Memory, the reference.
func TestMemory(t *testing.T) {
	recipestest.RunStoreTests(t, func(t *testing.T, e kb.Embedder, opts recipes.Options) recipes.Store {
		return recipes.New(e, opts)
	})
}
