package kb_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/spidertest"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/kbtest"
)

// twoBuilds bootstraps two catalogs from the same datasets, the second
// from them in another order, so that anything depending on insertion or
// index layout shows.
func twoBuilds(t *testing.T, scope kb.Scope, ds []domain.Dataset) (*kb.MemoryCatalog, *kb.MemoryCatalog) {
	t.Helper()
	ctx := context.Background()
	shuffled := slices.Clone(ds)
	rand.New(rand.NewPCG(3, 7)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	var cats [2]*kb.MemoryCatalog
	for i, in := range [][]domain.Dataset{ds, shuffled} {
		c, err := kb.Bootstrap(ctx, scope, in, kb.CatalogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		cats[i] = c
	}
	return cats[0], cats[1]
}

// rankingQuestions returns n questions spread over qs and how often to
// repeat one 100 times: every 50th (10 questions). The race detector
// makes every search several times slower: under it, a tenth of the
// questions, two of them repeated.
func rankingQuestions(qs []string, n int) ([]string, int) {
	every := 50
	if raceEnabled {
		n /= 10
		every = n / 2
	}
	out := make([]string, n)
	for i := range out {
		out[i] = qs[i*len(qs)/n]
	}
	return out, every
}

// TestRankingsDeterministicSynthetic: a catalog of a few hundred
// datasets full of ties (the same tables in twenty schemas) ranks 500
// questions identically across two builds and 100 repeats, and k=5 is
// the prefix of k=10 for Search and Discover.
func TestRankingsDeterministicSynthetic(t *testing.T) {
	t.Parallel()
	scope := kb.Scope{TenantID: "ties"}
	a, b := twoBuilds(t, scope, kbtest.NearTies(400))
	qs, every := rankingQuestions(kbtest.NearTieQuestions(500), 500)
	kbtest.CheckRankings(t, a, b, scope, qs, kbtest.RankingOptions{RepeatEvery: every})
}

// TestRankingsDeterministicSpider is the same on the pooled Spider
// catalog (876 tables) with 500 of its development questions.
func TestRankingsDeterministicSpider(t *testing.T) {
	if testing.Short() {
		t.Skip("Spider determinism check skipped in -short mode")
	}
	set := spidertest.Load(t)
	scope := kb.Scope{TenantID: "spider"}
	a, b := twoBuilds(t, scope, set.Datasets)
	all := make([]string, len(set.Questions))
	for i, q := range set.Questions {
		all[i] = q.Question
	}
	qs, every := rankingQuestions(all, 500)
	kbtest.CheckRankings(t, a, b, scope, qs, kbtest.RankingOptions{RepeatEvery: every})
}
