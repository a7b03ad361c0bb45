package recipes_test

import (
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
)

// TestRecallWithOfflineEmbedder runs recall with the package kb offline
// default embedder: paraphrases and typos find the right recipe.
func TestRecallWithOfflineEmbedder(t *testing.T) {
	t.Parallel()
	m := recipes.New(kb.NewHashEmbedder(kb.HashEmbedderOptions{}), recipes.Options{})
	ds := []domain.Dataset{orders(), customers(), products()}
	saved := map[string]string{}
	for _, q := range []string{
		"total revenue by customer region for last quarter",
		"top ten product categories by units sold",
		"how many new customers signed up each month",
		"average order value per month this year",
		"which customers have not ordered in 90 days",
	} {
		saved[q] = save(t, m, scopeA, q, "SELECT 1", ds...).ID
	}
	for ask, want := range map[string]string{
		"revenue per region last quarter":              "total revenue by customer region for last quarter",
		"best selling product categories":              "top ten product categories by units sold",
		"monthly count of new customer signups":        "how many new customers signed up each month",
		"avg order value by month":                     "average order value per month this year",
		"customers who havent ordered in three months": "which customers have not ordered in 90 days",
		"revnue by custmer region":                     "total revenue by customer region for last quarter",
	} {
		got, err := m.Recall(t.Context(), scopeA, recipes.Query{Question: ask, Datasets: ds, K: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Recipe.ID != saved[want] || !got[0].SchemaMatch {
			t.Errorf("%q recalled %v, want %q", ask, questions(got), want)
		}
	}
}
