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
			!slices.Equal(x.Datasets, y.Datasets) || !slices.Equal(x.SQL, y.SQL) || x.SuccessCount != y.SuccessCount ||
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
		Save(t, src, scopeA, q+" question", "SELECT "+q, Orders())
	}
	saved, _ := src.List(ctx, scopeA) // most recent first: four, three, two, one
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
	m, err := dst.Recall(ctx, scopeA, recipes.Query{Question: "four question", Datasets: []domain.Dataset{Orders()}, K: 1})
	if err != nil || len(m) != 1 || m[0].Recipe.ID != saved[0].ID || !m[0].SchemaMatch {
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
