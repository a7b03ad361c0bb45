package recipestest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
)

// NewStore returns an empty store, not shared with other calls, that
// embeds questions with e (possibly nil) and honours opts.Capacity and
// opts.Now.
type NewStore func(t *testing.T, e kb.Embedder, opts recipes.Options) recipes.Store

// RunStoreTests runs the suite; subtests run in parallel.
func RunStoreTests(t *testing.T, newStore NewStore) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, newStore NewStore)
	}{
		{"SaveRecipe", testSave},
		{"RecallRanking", testRecallRanking},
		{"EvictionLeastRecentlyUsed", testEviction},
		{"ScopeIsolation", testScopeIsolation},
		{"EmbedderFailureFallsBackToWords", testEmbedderFailure},
		{"ConcurrentUse", testConcurrentUse},
		{"Restore", testRestore},
		{"RecallTiesByContent", testTiesByContent},
		{"VerifiedOnSave", testVerifiedOnSave},
		{"SetVerified", testSetVerified},
		{"VerifiedFirst", testVerifiedFirst},
		{"VerifiedScopeIsolation", testVerifiedScopeIsolation},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newStore)
		})
	}
}

// wordEmbedder is a small deterministic embedder: hashed bag of
// lower-case words (with a crude plural strip), L2-normalised.
type wordEmbedder struct {
	dims int
	fail bool
}

func (e *wordEmbedder) Dimensions() int { return e.dims }

func (e *wordEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.fail {
		return nil, errors.New("embedding service unavailable")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, e.dims)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return r < 'a' || r > 'z' }) {
			w = strings.TrimSuffix(w, "s")
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%uint32(e.dims)]++
		}
		var n float64
		for _, x := range v {
			n += float64(x * x)
		}
		if n > 0 {
			for k := range v {
				v[k] /= float32(math.Sqrt(n))
			}
		}
		out[i] = v
	}
	return out, nil
}

// clock is a fake time source advancing one second per reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

var (
	scopeA = kb.Scope{TenantID: "tenant-a", Ontology: "sales"}
	scopeB = kb.Scope{TenantID: "tenant-b", Ontology: "sales"}
)

// Orders returns the sales.orders dataset the suite saves recipes on:
// four typed columns and a relationship to sales.customers. Each call
// returns a new value, free to modify.
func Orders() domain.Dataset {
	return domain.Dataset{
		Name: "sales.orders", Source: "sales.orders", Kind: "table", Description: "One row per order.",
		Fields: []domain.Field{
			{Name: "id", Type: "bigint", PrimaryKey: true},
			{Name: "customer_id", Type: "bigint"},
			{Name: "total", Type: "numeric(12,2)"},
			{Name: "created_at", Type: "timestamptz"},
		},
		Relationships: []domain.Relationship{{From: "sales.orders", FromColumns: []string{"customer_id"}, To: "sales.customers", ToColumns: []string{"id"}}},
	}
}

// Customers returns the sales.customers dataset of the suite (three
// columns). Each call returns a new value.
func Customers() domain.Dataset {
	return domain.Dataset{
		Name: "sales.customers", Source: "sales.customers",
		Fields: []domain.Field{{Name: "id", Type: "bigint"}, {Name: "region", Type: "text"}, {Name: "name", Type: "text"}},
	}
}

// Products returns the sales.products dataset of the suite (two
// columns). Each call returns a new value.
func Products() domain.Dataset {
	return domain.Dataset{Name: "sales.products", Source: "sales.products", Fields: []domain.Field{{Name: "id", Type: "bigint"}, {Name: "category", Type: "text"}}}
}

func newWithClock(t *testing.T, newStore NewStore, e kb.Embedder, capacity int) recipes.Store {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return newStore(t, e, recipes.Options{Capacity: capacity, Now: c.Now})
}

// Save saves, in scope of m, a recipe answering question q with the one
// statement sql over ds, and returns it; an error stops the test.
func Save(t *testing.T, m recipes.Store, scope kb.Scope, q string, sql string, ds ...domain.Dataset) recipes.Recipe {
	t.Helper()
	r, err := m.SaveRecipe(t.Context(), scope, recipes.NewRecipe{Question: q, SQL: []string{sql}, Datasets: ds})
	if err != nil {
		t.Fatalf("save %q: %v", q, err)
	}
	return r
}

// Questions returns the questions of the recipes in ms, in order.
func Questions(ms []recipes.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Recipe.Question
	}
	return out
}

// sameRecipes reports whether a and b hold the same recipes in the same
// order, times compared as instants.
func sameRecipes(a, b []recipes.Recipe) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.Fingerprint != y.Fingerprint || x.Question != y.Question || !slices.Equal(x.Embedding, y.Embedding) ||
			!slices.Equal(x.Datasets, y.Datasets) || !slices.Equal(x.SQL, y.SQL) || x.SuccessCount != y.SuccessCount || x.Verified != y.Verified ||
			!x.CreatedAt.Equal(y.CreatedAt) || !x.LastUsedAt.Equal(y.LastUsedAt) {
			return false
		}
	}
	return true
}

func testSave(t *testing.T, newStore NewStore) {
	m := newWithClock(t, newStore, &wordEmbedder{dims: 64}, 0)
	ctx := t.Context()
	r := Save(t, m, scopeA, "  Revenue by region last quarter ", "SELECT region, sum(total) FROM ...", Orders(), Customers())
	if r.ID == "" || r.Question != "Revenue by region last quarter" || r.SuccessCount != 1 || len(r.Embedding) != 64 ||
		!slices.Equal(r.Datasets, []string{"sales.customers", "sales.orders"}) ||
		r.Fingerprint != recipes.Fingerprint([]domain.Dataset{Customers(), Orders()}) || r.CreatedAt.IsZero() || !r.LastUsedAt.Equal(r.CreatedAt) {
		t.Errorf("saved %+v", r)
	}
	// The same question (case, spacing, punctuation aside) on the same
	// schema updates the recipe.
	again, err := m.SaveRecipe(ctx, scopeA, recipes.NewRecipe{Question: "revenue by region, last quarter?", SQL: []string{"SELECT 2", "SELECT 3"}, Datasets: []domain.Dataset{Customers(), Orders()}})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != r.ID || again.SuccessCount != 2 || !slices.Equal(again.SQL, []string{"SELECT 2", "SELECT 3"}) || !again.LastUsedAt.After(r.LastUsedAt) || !again.CreatedAt.Equal(r.CreatedAt) {
		t.Errorf("re-save = %+v", again)
	}
	o := Orders()
	o.Fields[2].Name = "amount"
	other := Save(t, m, scopeA, "Revenue by region last quarter", "SELECT region, sum(amount) FROM ...", o, Customers())
	if other.ID == r.ID {
		t.Error("a changed schema updated the old recipe")
	}
	again.SQL[0] = "DROP TABLE x"
	if got, _ := m.Get(ctx, scopeA, r.ID); got.SQL[0] != "SELECT 2" {
		t.Errorf("stored SQL changed through a returned copy: %v", got.SQL)
	}
	if got, err := m.RecordSuccess(ctx, scopeA, r.ID); err != nil || got.SuccessCount != 3 {
		t.Errorf("RecordSuccess = %+v, %v", got, err)
	}
	for name, n := range map[string]recipes.NewRecipe{
		"no question":    {SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{Orders()}},
		"no sql":         {Question: "q", Datasets: []domain.Dataset{Orders()}},
		"blank sql":      {Question: "q", SQL: []string{" "}, Datasets: []domain.Dataset{Orders()}},
		"no datasets":    {Question: "q", SQL: []string{"SELECT 1"}},
		"dup datasets":   {Question: "q", SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{Orders(), Orders()}},
		"unnamed":        {Question: "q", SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{{Source: "x"}}},
		"long question":  {Question: strings.Repeat("q", recipes.MaxQuestionLength+1), SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{Orders()}},
		"too many stmts": {Question: "q", SQL: slices.Repeat([]string{"SELECT 1"}, recipes.MaxStatements+1), Datasets: []domain.Dataset{Orders()}},
	} {
		if _, err := m.SaveRecipe(ctx, scopeA, n); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := m.SaveRecipe(ctx, kb.Scope{}, recipes.NewRecipe{Question: "q", SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{Orders()}}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("empty scope: %v", err)
	}
	if list, _ := m.List(ctx, scopeA); len(list) != 2 {
		t.Errorf("list has %d recipes, want 2", len(list))
	}
	if _, err := m.Get(ctx, scopeA, domain.NewID()); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Get of an unknown id: %v, want ErrNotFound", err)
	}
}

func testRecallRanking(t *testing.T, newStore NewStore) {
	m := newWithClock(t, newStore, &wordEmbedder{dims: 256}, 0)
	ctx := t.Context()
	Save(t, m, scopeA, "revenue by region last quarter", "SELECT 1", Orders(), Customers())
	Save(t, m, scopeA, "top product categories by units", "SELECT 2", Products())
	Save(t, m, scopeA, "number of customers per region", "SELECT 3", Customers())
	Save(t, m, scopeA, "average order value per month", "SELECT 4", Orders())
	inView := []domain.Dataset{Orders(), Customers(), Products()}

	got, err := m.Recall(ctx, scopeA, recipes.Query{Question: "What was revenue by region in the last quarter?", Datasets: inView})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != recipes.DefaultK || got[0].Recipe.Question != "revenue by region last quarter" || !got[0].SchemaMatch {
		t.Fatalf("recall = %v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Similarity > got[i-1].Similarity {
			t.Errorf("not by similarity: %v", got)
		}
	}
	if got[0].Similarity < 0.7 || got[0].Similarity > 1.0001 {
		t.Errorf("similarity %v", got[0].Similarity)
	}
	// Fingerprint first: change the orders schema. The revenue recipe (and
	// the order value one) are now stale and drop below every schema
	// match, however similar.
	changed := Orders()
	changed.Fields[2].Type = "double precision"
	view := []domain.Dataset{changed, Customers(), Products()}
	got, _ = m.Recall(ctx, scopeA, recipes.Query{Question: "revenue by region last quarter", Datasets: view, K: 4})
	if qs := Questions(got); len(got) != 4 || qs[2] != "revenue by region last quarter" || got[2].SchemaMatch || got[3].SchemaMatch || got[2].Similarity < 0.99 {
		t.Errorf("stale recipes not after the schema matches: %v", qs)
	}
	for _, g := range got[:2] {
		if !g.SchemaMatch {
			t.Errorf("%q should match the schema", g.Recipe.Question)
		}
	}
	got, _ = m.Recall(ctx, scopeA, recipes.Query{Question: "revenue by region last quarter", Datasets: view, K: 10, RequireSchemaMatch: true})
	if qs := Questions(got); len(qs) != 2 || slices.Contains(qs, "revenue by region last quarter") || slices.Contains(qs, "average order value per month") {
		t.Errorf("RequireSchemaMatch = %v", qs)
	}
	got, _ = m.Recall(ctx, scopeA, recipes.Query{Question: "categories", Datasets: []domain.Dataset{Customers()}, K: 10})
	for _, g := range got {
		if g.SchemaMatch != (g.Recipe.Question == "number of customers per region") {
			t.Errorf("%q schema match = %v", g.Recipe.Question, g.SchemaMatch)
		}
	}
	got, _ = m.Recall(ctx, scopeA, recipes.Query{Question: "product categories", Datasets: inView, MinSimilarity: 0.3})
	if qs := Questions(got); !slices.Equal(qs, []string{"top product categories by units"}) {
		t.Errorf("MinSimilarity 0.3 = %v", qs)
	}
	if _, err := m.Recall(ctx, scopeA, recipes.Query{Question: "x", K: -1}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("negative K: %v", err)
	}
	if got, err := m.Recall(ctx, kb.Scope{TenantID: "empty"}, recipes.Query{Question: "x"}); err != nil || len(got) != 0 || got == nil {
		t.Errorf("empty scope = %#v, %v; want an empty, non-nil slice", got, err)
	}
}

func testEviction(t *testing.T, newStore NewStore) {
	m := newWithClock(t, newStore, &wordEmbedder{dims: 32}, 3)
	ctx := t.Context()
	r1 := Save(t, m, scopeA, "first question", "SELECT 1", Orders())
	r2 := Save(t, m, scopeA, "second question", "SELECT 2", Orders())
	r3 := Save(t, m, scopeA, "third question", "SELECT 3", Orders())
	// Recall uses r1; Get does not count as a use.
	if got, _ := m.Recall(ctx, scopeA, recipes.Query{Question: "first", K: 1}); len(got) != 1 || got[0].Recipe.ID != r1.ID {
		t.Fatalf("recall = %v", got)
	}
	if _, err := m.Get(ctx, scopeA, r2.ID); err != nil {
		t.Fatal(err)
	}
	Save(t, m, scopeA, "fourth question", "SELECT 4", Orders())
	if _, err := m.Get(ctx, scopeA, r2.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("r2 (least recently used) survived: %v", err)
	}
	// Use order is now r4, r1, r3; RecordSuccess uses r3, so r1 goes next.
	if _, err := m.RecordSuccess(ctx, scopeA, r3.ID); err != nil {
		t.Fatal(err)
	}
	Save(t, m, scopeA, "fifth question", "SELECT 5", Orders())
	list, _ := m.List(ctx, scopeA)
	var got []string
	for _, r := range list {
		got = append(got, r.Question)
	}
	if !slices.Equal(got, []string{"fifth question", "third question", "fourth question"}) {
		t.Errorf("after evictions, most recent first: %v", got)
	}
	// Capacity is per scope.
	for i := range 3 {
		Save(t, m, scopeB, fmt.Sprintf("b question %d", i), "SELECT 1", Orders())
	}
	if list, _ := m.List(ctx, scopeA); len(list) != 3 {
		t.Errorf("scope B's saves evicted from A: %d left", len(list))
	}
}

func testScopeIsolation(t *testing.T, newStore NewStore) {
	m := newWithClock(t, newStore, &wordEmbedder{dims: 64}, 0)
	ctx := t.Context()
	a := Save(t, m, scopeA, "revenue by region", "SELECT a", Orders(), Customers())
	b := Save(t, m, scopeB, "revenue by region", "SELECT b", Orders(), Customers())
	secret := Save(t, m, scopeA, "board bonus payouts", "SELECT secret", Orders())
	if a.ID == b.ID {
		t.Fatal("two tenants share a recipe")
	}
	otherOntology := kb.Scope{TenantID: "tenant-a", Ontology: "finance"}
	noOntology := kb.Scope{TenantID: "tenant-a"}
	for _, s := range []kb.Scope{scopeB, otherOntology, noOntology} {
		got, err := m.Recall(ctx, s, recipes.Query{Question: "board bonus payouts revenue by region", K: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			if g.Recipe.ID == a.ID || g.Recipe.ID == secret.ID || strings.Contains(g.Recipe.SQL[0], "secret") || g.Recipe.SQL[0] == "SELECT a" {
				t.Errorf("%s recalled %+v", s, g.Recipe)
			}
		}
		if list, _ := m.List(ctx, s); slices.ContainsFunc(list, func(r recipes.Recipe) bool { return r.ID == a.ID || r.ID == secret.ID }) {
			t.Errorf("%s lists scope A's recipes", s)
		}
		for _, id := range []string{a.ID, secret.ID} {
			if _, err := m.Get(ctx, s, id); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s Get(%s) = %v", s, id, err)
			}
			if _, err := m.RecordSuccess(ctx, s, id); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s RecordSuccess(%s) = %v", s, id, err)
			}
			if err := m.Delete(ctx, s, id); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s Delete(%s) = %v", s, id, err)
			}
		}
	}
	if err := m.Delete(ctx, scopeA, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, scopeA, a.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
	if got, _ := m.Recall(ctx, scopeB, recipes.Query{Question: "revenue by region"}); len(got) != 1 || got[0].Recipe.ID != b.ID {
		t.Errorf("B after A's delete = %v", got)
	}
	if got, _ := m.Recall(ctx, scopeA, recipes.Query{Question: "revenue by region", K: 10}); len(got) != 1 || got[0].Recipe.ID != secret.ID {
		t.Errorf("A after delete = %v", got)
	}
}

func testEmbedderFailure(t *testing.T, newStore NewStore) {
	m := newWithClock(t, newStore, &wordEmbedder{dims: 64, fail: true}, 0)
	ctx := t.Context()
	r := Save(t, m, scopeA, "revenue by region last quarter", "SELECT 1", Orders())
	Save(t, m, scopeA, "count of products per category", "SELECT 2", Products())
	if r.Embedding != nil {
		t.Errorf("embedding %v from a failing embedder", r.Embedding)
	}
	got, err := m.Recall(ctx, scopeA, recipes.Query{Question: "Revenue by region?", Datasets: []domain.Dataset{Orders(), Products()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Recipe.ID != r.ID || got[0].Similarity != 0.6 || got[1].Similarity != 0 {
		t.Errorf("word fallback = %+v", got)
	}
	plain := newStore(t, nil, recipes.Options{})
	Save(t, plain, scopeA, "revenue by region", "SELECT 1", Orders())
	if got, _ := plain.Recall(ctx, scopeA, recipes.Query{Question: "revenue by region"}); len(got) != 1 || got[0].Similarity != 1 {
		t.Errorf("nil embedder = %+v", got)
	}
}

func testConcurrentUse(t *testing.T, newStore NewStore) {
	m := newWithClock(t, newStore, &wordEmbedder{dims: 32}, 10)
	ctx := t.Context()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				scope := []kb.Scope{scopeA, scopeB}[i%2]
				r, err := m.SaveRecipe(ctx, scope, recipes.NewRecipe{Question: fmt.Sprintf("question %d from %d", i, g), SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{Orders()}})
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := m.Recall(ctx, scope, recipes.Query{Question: "question", Datasets: []domain.Dataset{Orders()}}); err != nil {
					t.Error(err)
					return
				}
				_, _ = m.RecordSuccess(ctx, scope, r.ID) // may be evicted meanwhile
			}
		})
	}
	wg.Wait()
	for _, s := range []kb.Scope{scopeA, scopeB} {
		if list, _ := m.List(ctx, s); len(list) != 10 {
			t.Errorf("%s holds %d recipes, capacity 10", s, len(list))
		}
	}
}

func testRestore(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	src := newWithClock(t, newStore, &wordEmbedder{dims: 32}, 0)
	for _, q := range []string{"one", "two", "three", "four"} {
		r := Save(t, src, scopeA, q+" question", "SELECT "+q, Orders())
		if q == "three" {
			if _, err := src.SetVerified(ctx, scopeA, r.ID, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	saved, _ := src.List(ctx, scopeA) // most recent first: four, three, two, one
	if !saved[1].Verified || saved[0].Verified {
		t.Fatalf("verified marks before restore: %+v", saved)
	}
	// Restore into a fresh store with room for three: the least recently
	// used ("one") is dropped, order and fields survive.
	dst := newWithClock(t, newStore, &wordEmbedder{dims: 32}, 3)
	shuffled := []recipes.Recipe{saved[2], saved[0], saved[3], saved[1]}
	if err := dst.Restore(ctx, scopeA, shuffled); err != nil {
		t.Fatal(err)
	}
	got, _ := dst.List(ctx, scopeA)
	if !sameRecipes(got, saved[:3]) {
		t.Errorf("restored:\n%v\nwant\n%v", got, saved[:3])
	}
	m, err := dst.Recall(ctx, scopeA, recipes.Query{Question: "three question", Datasets: []domain.Dataset{Orders()}, K: 1})
	if err != nil || len(m) != 1 || m[0].Recipe.ID != saved[1].ID || !m[0].SchemaMatch || !m[0].Recipe.Verified {
		t.Errorf("recall after restore = %v, %v", m, err)
	}
	if r := Save(t, dst, scopeA, "four question", "SELECT 4", Orders()); r.ID != saved[0].ID || r.SuccessCount != 2 {
		t.Errorf("re-save after restore = %+v", r)
	}
	bad := saved[0]
	bad.Fingerprint = "nope"
	if err := dst.Restore(ctx, scopeB, []recipes.Recipe{saved[1], bad}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("bad fingerprint: %v", err)
	}
	if list, _ := dst.List(ctx, scopeB); len(list) != 0 {
		t.Errorf("partial restore: %v", list)
	}
	// A restored recipe replaces one with the same question and
	// fingerprint under another id.
	repl := saved[1]
	repl.ID = domain.NewID()
	repl.SQL = []string{"SELECT replaced"}
	if err := dst.Restore(ctx, scopeA, []recipes.Recipe{repl}); err != nil {
		t.Fatal(err)
	}
	list, _ := dst.List(ctx, scopeA)
	n := 0
	for _, r := range list {
		if r.Question == repl.Question {
			n++
			if r.ID != repl.ID || r.SQL[0] != "SELECT replaced" {
				t.Errorf("after restoring a replacement: %+v", r)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d recipes with the replaced question, want 1", n)
	}
}

// testTiesByContent: two stores holding the same recipes, saved in
// opposite orders (so under different random ids), recall them in the
// same order when their similarities, counts and times tie, with the
// word-overlap similarity (exact ties) and with the offline embedder.
func testTiesByContent(t *testing.T, newStore NewStore) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fixed := func() time.Time { return at }
	words := []string{"revenue", "region", "quarter", "customer", "month"}
	var qs []string
	for i := range words {
		// Rotations of the same words: every pair ties on word overlap.
		qs = append(qs, strings.Join(append(slices.Clone(words[i:]), words[:i]...), " "))
	}
	for i := range 20 {
		qs = append(qs, fmt.Sprintf("%s by %s %d", words[i%5], words[(i/5)%5], i%3))
	}
	dsets := [][]domain.Dataset{{Orders()}, {Customers()}, {Orders(), Customers()}}
	for _, e := range []kb.Embedder{nil, kb.NewHashEmbedder(kb.HashEmbedderOptions{Dimensions: 32})} {
		var stores [2]recipes.Store
		for mi := range stores {
			stores[mi] = newStore(t, e, recipes.Options{Now: fixed})
			order := slices.Clone(qs)
			if mi == 1 {
				slices.Reverse(order)
			}
			for _, q := range order {
				for di, ds := range dsets {
					if _, err := stores[mi].SaveRecipe(t.Context(), scopeA, recipes.NewRecipe{Question: q, SQL: []string{fmt.Sprintf("SELECT %d", di)}, Datasets: ds}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		render := func(ms []recipes.Match) string {
			var b strings.Builder
			for _, m := range ms {
				fmt.Fprintf(&b, "%q %s %v\n", m.Recipe.Question, m.Recipe.Datasets, m.Similarity)
			}
			return b.String()
		}
		for _, q := range append([]string{"revenue region", "customer month quarter"}, qs[:6]...) {
			query := recipes.Query{Question: q, K: 12, Datasets: []domain.Dataset{Orders(), Customers()}}
			want, err := stores[0].Recall(t.Context(), scopeA, query)
			if err != nil {
				t.Fatal(err)
			}
			for run := range 10 {
				for mi, m := range stores {
					got, err := m.Recall(t.Context(), scopeA, query)
					if err != nil {
						t.Fatal(err)
					}
					if render(got) != render(want) {
						t.Fatalf("embedder %T, recall %q on store %d, run %d:\n%s\nwant:\n%s", e, q, mi+1, run+1, render(got), render(want))
					}
				}
			}
		}
	}
}

// SaveVerified is Save with the recipe marked verified.
func SaveVerified(t *testing.T, m recipes.Store, scope kb.Scope, q string, sql string, ds ...domain.Dataset) recipes.Recipe {
	t.Helper()
	r, err := m.SaveRecipe(t.Context(), scope, recipes.NewRecipe{Question: q, SQL: []string{sql}, Datasets: ds, Verified: true})
	if err != nil {
		t.Fatalf("save verified %q: %v", q, err)
	}
	return r
}

// testVerifiedOnSave: NewRecipe.Verified is stored; a re-save with it
// marks an existing recipe verified, a re-save without it keeps the mark,
// and a recipe saved on a changed schema starts unverified.
func testVerifiedOnSave(t *testing.T, newStore NewStore) {
	m := newWithClock(t, newStore, &wordEmbedder{dims: 64}, 0)
	ctx := t.Context()
	plain := Save(t, m, scopeA, "revenue by region", "SELECT 1", Orders(), Customers())
	checked := SaveVerified(t, m, scopeA, "orders per month", "SELECT 2", Orders())
	if plain.Verified || !checked.Verified {
		t.Fatalf("saved verified = %v and %v, want false and true", plain.Verified, checked.Verified)
	}
	if got, err := m.Get(ctx, scopeA, checked.ID); err != nil || !got.Verified {
		t.Errorf("Get of the verified recipe = %+v, %v", got, err)
	}
	// Re-save without the mark: the earlier mark stays, the rest updates.
	again := Save(t, m, scopeA, "Orders per month?", "SELECT 3", Orders())
	if again.ID != checked.ID || !again.Verified || again.SuccessCount != 2 || again.SQL[0] != "SELECT 3" {
		t.Errorf("re-save without Verified = %+v, want the same recipe, still verified, count 2", again)
	}
	// Re-save with the mark verifies an unverified recipe.
	marked := SaveVerified(t, m, scopeA, "revenue by region", "SELECT 4", Orders(), Customers())
	if marked.ID != plain.ID || !marked.Verified || marked.SuccessCount != 2 {
		t.Errorf("re-save with Verified = %+v, want the same recipe, now verified", marked)
	}
	// The mark belongs to the schema it was given for.
	changed := Orders()
	changed.Fields[2].Name = "amount"
	fresh := Save(t, m, scopeA, "orders per month", "SELECT 5", changed)
	if fresh.ID == checked.ID || fresh.Verified {
		t.Errorf("save on a changed schema = %+v, want a new, unverified recipe", fresh)
	}
	list, err := m.List(ctx, scopeA)
	if err != nil {
		t.Fatal(err)
	}
	verified := map[string]bool{}
	for _, r := range list {
		verified[r.ID] = r.Verified
	}
	if len(list) != 3 || !verified[plain.ID] || !verified[checked.ID] || verified[fresh.ID] {
		t.Errorf("List verified marks = %v", verified)
	}
}

// testSetVerified: SetVerified marks and unmarks without counting a use,
// and only in the recipe's own scope.
func testSetVerified(t *testing.T, newStore NewStore) {
	m := newWithClock(t, newStore, &wordEmbedder{dims: 64}, 0)
	ctx := t.Context()
	first := Save(t, m, scopeA, "revenue by region", "SELECT 1", Orders(), Customers())
	second := Save(t, m, scopeA, "orders per month", "SELECT 2", Orders())
	got, err := m.SetVerified(ctx, scopeA, first.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Verified || got.ID != first.ID || got.SuccessCount != 1 || !got.LastUsedAt.Equal(first.LastUsedAt) || got.SQL[0] != "SELECT 1" {
		t.Errorf("SetVerified(true) = %+v", got)
	}
	if g, _ := m.Get(ctx, scopeA, first.ID); !g.Verified {
		t.Error("the mark was not stored")
	}
	// Not a use: the most recently used recipe is still the second one.
	if list, _ := m.List(ctx, scopeA); len(list) != 2 || list[0].ID != second.ID {
		t.Errorf("SetVerified changed the use order: %v", list)
	}
	// Idempotent, then cleared.
	if g, err := m.SetVerified(ctx, scopeA, first.ID, true); err != nil || !g.Verified {
		t.Errorf("second SetVerified(true) = %+v, %v", g, err)
	}
	if g, err := m.SetVerified(ctx, scopeA, first.ID, false); err != nil || g.Verified {
		t.Errorf("SetVerified(false) = %+v, %v", g, err)
	}
	if g, _ := m.Get(ctx, scopeA, first.ID); g.Verified {
		t.Error("the cleared mark was not stored")
	}
	if _, err := m.SetVerified(ctx, scopeA, domain.NewID(), true); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("SetVerified of an unknown id: %v, want ErrNotFound", err)
	}
	if _, err := m.SetVerified(ctx, kb.Scope{}, first.ID, true); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("SetVerified with an empty scope: %v, want ErrInvalid", err)
	}
	// A deleted recipe cannot be marked.
	if err := m.Delete(ctx, scopeA, second.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetVerified(ctx, scopeA, second.ID, true); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("SetVerified of a deleted recipe: %v, want ErrNotFound", err)
	}
}

// testVerifiedFirst: among the recipes relevant to the question, verified
// ones come first, within their schema-match group; an unrelated verified
// recipe gets no preference, and a stale verified one stays behind every
// schema match. The same order with embeddings and with word overlap.
func testVerifiedFirst(t *testing.T, newStore NewStore) {
	ctx := t.Context()
	changed := Orders()
	changed.Fields[2].Type = "double precision"
	for _, e := range []kb.Embedder{&wordEmbedder{dims: 256}, nil} {
		m := newWithClock(t, newStore, e, 0)
		const (
			exact     = "revenue by region last quarter"        // unverified, schema match
			close     = "revenue by region last year"           // verified, schema match, similar
			unrelated = "top product categories by units"       // verified, schema match, unrelated
			staleV    = "revenue by region in the last quarter" // verified, schema changed
			staleU    = "revenue by region last quarter"        // unverified, schema changed
		)
		Save(t, m, scopeA, exact, "SELECT 1", Orders(), Customers())
		SaveVerified(t, m, scopeA, close, "SELECT 2", Orders(), Customers())
		SaveVerified(t, m, scopeA, unrelated, "SELECT 3", Products())
		SaveVerified(t, m, scopeA, staleV, "SELECT 4", changed, Customers())
		Save(t, m, scopeA, staleU, "SELECT 5", changed, Customers())
		view := []domain.Dataset{Orders(), Customers(), Products()}
		recall := func(q recipes.Query) []recipes.Match {
			t.Helper()
			q.Datasets = view
			got, err := m.Recall(ctx, scopeA, q)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		got := recall(recipes.Query{Question: exact, K: 10})
		want := []string{close, exact, unrelated, staleV, staleU}
		if qs := Questions(got); !slices.Equal(qs, want) {
			t.Fatalf("embedder %T: recall = %q, want %q", e, qs, want)
		}
		if !got[0].Recipe.Verified || got[1].Recipe.Verified || !got[0].SchemaMatch || got[3].SchemaMatch || !got[3].Recipe.Verified {
			t.Errorf("embedder %T: matches %+v", e, got)
		}
		if got[0].Similarity >= got[1].Similarity {
			t.Errorf("embedder %T: the verified recipe should win on the mark, not on similarity: %v", e, got)
		}
		// K cuts after the preference: the verified recipe takes the one slot.
		if qs := Questions(recall(recipes.Query{Question: exact, K: 1})); !slices.Equal(qs, []string{close}) {
			t.Errorf("embedder %T: K 1 = %q", e, qs)
		}
		if qs := Questions(recall(recipes.Query{Question: exact, K: 10, RequireSchemaMatch: true})); !slices.Equal(qs, []string{close, exact, unrelated}) {
			t.Errorf("embedder %T: RequireSchemaMatch = %q", e, qs)
		}
		if qs := Questions(recall(recipes.Query{Question: exact, K: 10, MinSimilarity: 0.5})); !slices.Equal(qs, []string{close, exact, staleV, staleU}) {
			t.Errorf("embedder %T: MinSimilarity 0.5 = %q", e, qs)
		}
		// Above 1 turns the preference off: plain similarity order.
		if qs := Questions(recall(recipes.Query{Question: exact, K: 10, VerifiedMinSimilarity: 2})); !slices.Equal(qs, []string{exact, close, unrelated, staleU, staleV}) {
			t.Errorf("embedder %T: VerifiedMinSimilarity 2 = %q", e, qs)
		}
		// A question the verified recipe barely shares a word with: the
		// unverified, more similar recipe comes first.
		if qs := Questions(recall(recipes.Query{Question: "quarter revenue", K: 2})); len(qs) != 2 || qs[0] != exact {
			t.Errorf("embedder %T: a weakly related verified recipe was preferred: %q", e, qs)
		}
		// A question about products: the verified products recipe is first
		// (it is relevant now), the revenue ones get no preference.
		if qs := Questions(recall(recipes.Query{Question: "top product categories", K: 2})); len(qs) != 2 || qs[0] != unrelated || qs[1] == close {
			t.Errorf("embedder %T: product question = %q", e, qs)
		}
		if _, err := m.Recall(ctx, scopeA, recipes.Query{Question: exact, VerifiedMinSimilarity: -0.1}); !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "verified_min_similarity") {
			t.Errorf("negative VerifiedMinSimilarity: %v, want ErrInvalid naming it", err)
		}
	}
}

// testVerifiedScopeIsolation: a mark set in one scope neither shows nor
// ranks in another, and another scope cannot set or clear it.
func testVerifiedScopeIsolation(t *testing.T, newStore NewStore) {
	m := newWithClock(t, newStore, &wordEmbedder{dims: 64}, 0)
	ctx := t.Context()
	a := SaveVerified(t, m, scopeA, "revenue by region", "SELECT a", Orders(), Customers())
	b := Save(t, m, scopeB, "revenue by region", "SELECT b", Orders(), Customers())
	if b.Verified || b.ID == a.ID {
		t.Fatalf("scope B's save = %+v", b)
	}
	for _, s := range []kb.Scope{scopeB, {TenantID: "tenant-a", Ontology: "finance"}, {TenantID: "tenant-a"}} {
		for _, v := range []bool{false, true} {
			if _, err := m.SetVerified(ctx, s, a.ID, v); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s SetVerified(%s, %v) = %v, want ErrNotFound", s, a.ID, v, err)
			}
		}
	}
	if got, _ := m.Get(ctx, scopeA, a.ID); !got.Verified {
		t.Error("another scope cleared the mark")
	}
	got, err := m.Recall(ctx, scopeB, recipes.Query{Question: "revenue by region", Datasets: []domain.Dataset{Orders(), Customers()}, K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Recipe.ID != b.ID || got[0].Recipe.Verified {
		t.Errorf("scope B recalls %+v", got)
	}
	if _, err := m.SetVerified(ctx, scopeB, b.ID, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Get(ctx, scopeA, a.ID); !got.Verified || got.SQL[0] != "SELECT a" {
		t.Errorf("scope A's recipe after B's mark = %+v", got)
	}
}
