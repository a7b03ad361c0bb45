package recipes_test

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

// wordEmbedder is a small deterministic embedder for tests: hashed bag of
// lower-case words (with a crude plural strip), L2-normalised.
type wordEmbedder struct {
	dims  int
	fail  bool
	calls int
	mu    sync.Mutex
}

func (e *wordEmbedder) Dimensions() int { return e.dims }

func (e *wordEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
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

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

var (
	scopeA = kb.Scope{TenantID: "tenant-a", Ontology: "sales"}
	scopeB = kb.Scope{TenantID: "tenant-b", Ontology: "sales"}
)

func orders() domain.Dataset {
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

func customers() domain.Dataset {
	return domain.Dataset{
		Name: "sales.customers", Source: "sales.customers",
		Fields: []domain.Field{{Name: "id", Type: "bigint"}, {Name: "region", Type: "text"}, {Name: "name", Type: "text"}},
	}
}

func products() domain.Dataset {
	return domain.Dataset{Name: "sales.products", Source: "sales.products", Fields: []domain.Field{{Name: "id", Type: "bigint"}, {Name: "category", Type: "text"}}}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	base := recipes.Fingerprint([]domain.Dataset{orders(), customers()})
	if len(base) != 64 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Fatalf("fingerprint %q is not lower-case hex SHA-256", base)
	}
	cases := []struct {
		name   string
		edit   func(o, c *domain.Dataset)
		change bool
	}{
		{"field order", func(o, c *domain.Dataset) { slices.Reverse(o.Fields) }, false},
		{"descriptions, kind, keys, estimates", func(o, c *domain.Dataset) {
			o.Description = "changed"
			o.Kind = "view"
			o.RowEstimate = 99
			o.Fields[0].PrimaryKey = false
			o.Fields[1].Description = "the buyer"
			o.Fields[1].Nullable = true
		}, false},
		{"type spelling", func(o, c *domain.Dataset) { o.Fields[0].Type = " BIGINT " }, false},
		{"implicit relationship from", func(o, c *domain.Dataset) { o.Relationships[0].From = "" }, false},
		{"duplicate relationship", func(o, c *domain.Dataset) { o.Relationships = append(o.Relationships, o.Relationships[0]) }, false},
		{"column renamed", func(o, c *domain.Dataset) { o.Fields[2].Name = "amount" }, true},
		{"type changed", func(o, c *domain.Dataset) { o.Fields[2].Type = "double precision" }, true},
		{"column added", func(o, c *domain.Dataset) { c.Fields = append(c.Fields, domain.Field{Name: "tier", Type: "text"}) }, true},
		{"source moved", func(o, c *domain.Dataset) { c.Source = "crm.customers" }, true},
		{"relationship changed", func(o, c *domain.Dataset) { o.Relationships[0].ToColumns = []string{"customer_key"} }, true},
		{"relationship added", func(o, c *domain.Dataset) {
			c.Relationships = []domain.Relationship{{FromColumns: []string{"id"}, To: "sales.orders", ToColumns: []string{"customer_id"}}}
		}, true},
		{"dataset renamed", func(o, c *domain.Dataset) { c.Name = "sales.clients" }, true},
	}
	for _, tc := range cases {
		o, c := orders(), customers()
		tc.edit(&o, &c)
		got := recipes.Fingerprint([]domain.Dataset{c, o}) // order of datasets never matters
		if changed := got != base; changed != tc.change {
			t.Errorf("%s: fingerprint changed = %v, want %v\n%s", tc.name, changed, tc.change, recipes.CanonicalSchema([]domain.Dataset{c, o}))
		}
	}
	// The canonical form, spelled out.
	want := `{"version":"bichat-recipe-schema/v1","datasets":[` +
		`{"name":"sales.customers","source":"sales.customers","fields":[["id","bigint"],["name","text"],["region","text"]],"relationships":[]},` +
		`{"name":"sales.orders","source":"sales.orders","fields":[["created_at","timestamptz"],["customer_id","bigint"],["id","bigint"],["total","numeric(12,2)"]],` +
		`"relationships":[{"from":"sales.orders","from_columns":["customer_id"],"to":"sales.customers","to_columns":["id"]}]}]}`
	if got := string(recipes.CanonicalSchema([]domain.Dataset{orders(), customers()})); got != want {
		t.Errorf("canonical schema:\n got %s\nwant %s", got, want)
	}
	// Names cannot run into each other.
	a := recipes.Fingerprint([]domain.Dataset{{Name: "ab", Source: "c"}})
	b := recipes.Fingerprint([]domain.Dataset{{Name: "a", Source: "bc"}})
	if a == b {
		t.Error("ambiguous canonical form")
	}
}

func newMemory(e kb.Embedder, capacity int) (*recipes.Memory, *clock) {
	c := newClock()
	return recipes.New(e, recipes.Options{Capacity: capacity, Now: c.Now}), c
}

func save(t *testing.T, m *recipes.Memory, scope kb.Scope, q string, sql string, ds ...domain.Dataset) recipes.Recipe {
	t.Helper()
	r, err := m.SaveRecipe(t.Context(), scope, recipes.NewRecipe{Question: q, SQL: []string{sql}, Datasets: ds})
	if err != nil {
		t.Fatalf("save %q: %v", q, err)
	}
	return r
}

func questions(ms []recipes.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Recipe.Question
	}
	return out
}

func TestSaveRecipe(t *testing.T) {
	t.Parallel()
	e := &wordEmbedder{dims: 64}
	m, _ := newMemory(e, 0)
	ctx := t.Context()
	r := save(t, m, scopeA, "  Revenue by region last quarter ", "SELECT region, sum(total) FROM ...", orders(), customers())
	if r.ID == "" || r.Question != "Revenue by region last quarter" || r.SuccessCount != 1 || len(r.Embedding) != 64 ||
		!slices.Equal(r.Datasets, []string{"sales.customers", "sales.orders"}) ||
		r.Fingerprint != recipes.Fingerprint([]domain.Dataset{customers(), orders()}) || r.CreatedAt.IsZero() || !r.LastUsedAt.Equal(r.CreatedAt) {
		t.Errorf("saved %+v", r)
	}
	// The same question (case, spacing, punctuation aside) on the same
	// schema updates the recipe.
	again, err := m.SaveRecipe(ctx, scopeA, recipes.NewRecipe{Question: "revenue by region, last quarter?", SQL: []string{"SELECT 2", "SELECT 3"}, Datasets: []domain.Dataset{customers(), orders()}})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != r.ID || again.SuccessCount != 2 || !slices.Equal(again.SQL, []string{"SELECT 2", "SELECT 3"}) || !again.LastUsedAt.After(r.LastUsedAt) || !again.CreatedAt.Equal(r.CreatedAt) {
		t.Errorf("re-save = %+v", again)
	}
	// On a changed schema it is a new recipe.
	o := orders()
	o.Fields[2].Name = "amount"
	other := save(t, m, scopeA, "Revenue by region last quarter", "SELECT region, sum(amount) FROM ...", o, customers())
	if other.ID == r.ID {
		t.Error("a changed schema updated the old recipe")
	}
	// Copies: mutating a result does not change the store.
	again.SQL[0] = "DROP TABLE x"
	if got, _ := m.Get(ctx, scopeA, r.ID); got.SQL[0] != "SELECT 2" {
		t.Errorf("stored SQL changed through a returned copy: %v", got.SQL)
	}
	// RecordSuccess counts.
	if got, err := m.RecordSuccess(ctx, scopeA, r.ID); err != nil || got.SuccessCount != 3 {
		t.Errorf("RecordSuccess = %+v, %v", got, err)
	}
	// Validation.
	for name, n := range map[string]recipes.NewRecipe{
		"no question":    {SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{orders()}},
		"no sql":         {Question: "q", Datasets: []domain.Dataset{orders()}},
		"blank sql":      {Question: "q", SQL: []string{" "}, Datasets: []domain.Dataset{orders()}},
		"no datasets":    {Question: "q", SQL: []string{"SELECT 1"}},
		"dup datasets":   {Question: "q", SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{orders(), orders()}},
		"unnamed":        {Question: "q", SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{{Source: "x"}}},
		"long question":  {Question: strings.Repeat("q", recipes.MaxQuestionLength+1), SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{orders()}},
		"too many stmts": {Question: "q", SQL: slices.Repeat([]string{"SELECT 1"}, recipes.MaxStatements+1), Datasets: []domain.Dataset{orders()}},
	} {
		if _, err := m.SaveRecipe(ctx, scopeA, n); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := m.SaveRecipe(ctx, kb.Scope{}, recipes.NewRecipe{Question: "q", SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{orders()}}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("empty scope: %v", err)
	}
	if list, _ := m.List(ctx, scopeA); len(list) != 2 {
		t.Errorf("list has %d recipes, want 2", len(list))
	}
}

func TestRecallRanking(t *testing.T) {
	t.Parallel()
	e := &wordEmbedder{dims: 256}
	m, _ := newMemory(e, 0)
	ctx := t.Context()
	save(t, m, scopeA, "revenue by region last quarter", "SELECT 1", orders(), customers())
	save(t, m, scopeA, "top product categories by units", "SELECT 2", products())
	save(t, m, scopeA, "number of customers per region", "SELECT 3", customers())
	save(t, m, scopeA, "average order value per month", "SELECT 4", orders())
	inView := []domain.Dataset{orders(), customers(), products()}

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
	changed := orders()
	changed.Fields[2].Type = "double precision"
	view := []domain.Dataset{changed, customers(), products()}
	got, _ = m.Recall(ctx, scopeA, recipes.Query{Question: "revenue by region last quarter", Datasets: view, K: 4})
	if qs := questions(got); len(got) != 4 || qs[2] != "revenue by region last quarter" || got[2].SchemaMatch || got[3].SchemaMatch || got[2].Similarity < 0.99 {
		t.Errorf("stale recipes not after the schema matches: %v", qs)
	}
	for _, g := range got[:2] {
		if !g.SchemaMatch {
			t.Errorf("%q should match the schema", g.Recipe.Question)
		}
	}
	got, _ = m.Recall(ctx, scopeA, recipes.Query{Question: "revenue by region last quarter", Datasets: view, K: 10, RequireSchemaMatch: true})
	if qs := questions(got); len(qs) != 2 || slices.Contains(qs, "revenue by region last quarter") || slices.Contains(qs, "average order value per month") {
		t.Errorf("RequireSchemaMatch = %v", qs)
	}
	// Datasets out of view are no schema match either.
	got, _ = m.Recall(ctx, scopeA, recipes.Query{Question: "categories", Datasets: []domain.Dataset{customers()}, K: 10})
	for _, g := range got {
		if g.SchemaMatch != (g.Recipe.Question == "number of customers per region") {
			t.Errorf("%q schema match = %v", g.Recipe.Question, g.SchemaMatch)
		}
	}
	// MinSimilarity.
	got, _ = m.Recall(ctx, scopeA, recipes.Query{Question: "product categories", Datasets: inView, MinSimilarity: 0.3})
	if qs := questions(got); !slices.Equal(qs, []string{"top product categories by units"}) {
		t.Errorf("MinSimilarity 0.3 = %v", qs)
	}
	if _, err := m.Recall(ctx, scopeA, recipes.Query{Question: "x", K: -1}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("negative K: %v", err)
	}
	if got, err := m.Recall(ctx, kb.Scope{TenantID: "empty"}, recipes.Query{Question: "x"}); err != nil || len(got) != 0 {
		t.Errorf("empty scope = %v, %v", got, err)
	}
}

func TestEvictionLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	m, _ := newMemory(&wordEmbedder{dims: 32}, 3)
	ctx := t.Context()
	r1 := save(t, m, scopeA, "first question", "SELECT 1", orders())
	r2 := save(t, m, scopeA, "second question", "SELECT 2", orders())
	r3 := save(t, m, scopeA, "third question", "SELECT 3", orders())
	// Recall uses r1; Get does not count as a use.
	if got, _ := m.Recall(ctx, scopeA, recipes.Query{Question: "first", K: 1}); len(got) != 1 || got[0].Recipe.ID != r1.ID {
		t.Fatalf("recall = %v", got)
	}
	if _, err := m.Get(ctx, scopeA, r2.ID); err != nil {
		t.Fatal(err)
	}
	r4 := save(t, m, scopeA, "fourth question", "SELECT 4", orders())
	if _, err := m.Get(ctx, scopeA, r2.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("r2 (least recently used) survived: %v", err)
	}
	// Use order is now r4, r1, r3; RecordSuccess uses r3, so r1 goes next.
	if _, err := m.RecordSuccess(ctx, scopeA, r3.ID); err != nil {
		t.Fatal(err)
	}
	save(t, m, scopeA, "fifth question", "SELECT 5", orders())
	list, _ := m.List(ctx, scopeA)
	var got []string
	for _, r := range list {
		got = append(got, r.Question)
	}
	if !slices.Equal(got, []string{"fifth question", "third question", "fourth question"}) {
		t.Errorf("after evictions, most recent first: %v (r4 %s)", got, r4.ID)
	}
	// Capacity is per scope.
	for i := range 3 {
		save(t, m, scopeB, fmt.Sprintf("b question %d", i), "SELECT 1", orders())
	}
	if list, _ := m.List(ctx, scopeA); len(list) != 3 {
		t.Errorf("scope B's saves evicted from A: %d left", len(list))
	}
}

func TestScopeIsolation(t *testing.T) {
	t.Parallel()
	m, _ := newMemory(&wordEmbedder{dims: 64}, 0)
	ctx := t.Context()
	a := save(t, m, scopeA, "revenue by region", "SELECT a", orders(), customers())
	b := save(t, m, scopeB, "revenue by region", "SELECT b", orders(), customers())
	secret := save(t, m, scopeA, "board bonus payouts", "SELECT secret", orders())
	if a.ID == b.ID {
		t.Fatal("two tenants share a recipe")
	}
	otherOntology := kb.Scope{TenantID: "tenant-a", Ontology: "finance"}
	for _, s := range []kb.Scope{scopeB, otherOntology} {
		got, err := m.Recall(ctx, s, recipes.Query{Question: "board bonus payouts revenue by region", K: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			if g.Recipe.ID == a.ID || g.Recipe.ID == secret.ID || strings.Contains(g.Recipe.SQL[0], "secret") || g.Recipe.SQL[0] == "SELECT a" {
				t.Errorf("%s recalled %+v", s, g.Recipe)
			}
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
	if got, _ := m.Recall(ctx, scopeB, recipes.Query{Question: "revenue by region"}); len(got) != 1 || got[0].Recipe.ID != b.ID {
		t.Errorf("B after A's delete = %v", got)
	}
	if got, _ := m.Recall(ctx, scopeA, recipes.Query{Question: "revenue by region", K: 10}); len(got) != 1 || got[0].Recipe.ID != secret.ID {
		t.Errorf("A after delete = %v", got)
	}
}

func TestEmbedderFailureFallsBackToWords(t *testing.T) {
	t.Parallel()
	e := &wordEmbedder{dims: 64, fail: true}
	m, _ := newMemory(e, 0)
	ctx := t.Context()
	r := save(t, m, scopeA, "revenue by region last quarter", "SELECT 1", orders())
	save(t, m, scopeA, "count of products per category", "SELECT 2", products())
	if r.Embedding != nil {
		t.Errorf("embedding %v from a failing embedder", r.Embedding)
	}
	got, err := m.Recall(ctx, scopeA, recipes.Query{Question: "Revenue by region?", Datasets: []domain.Dataset{orders(), products()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Recipe.ID != r.ID || got[0].Similarity != 0.6 || got[1].Similarity != 0 {
		t.Errorf("word fallback = %+v", got)
	}
	// Without any embedder too.
	plain := recipes.New(nil, recipes.Options{})
	save(t, plain, scopeA, "revenue by region", "SELECT 1", orders())
	if got, _ := plain.Recall(ctx, scopeA, recipes.Query{Question: "revenue by region"}); len(got) != 1 || got[0].Similarity != 1 {
		t.Errorf("nil embedder = %+v", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	m, _ := newMemory(&wordEmbedder{dims: 32}, 10)
	ctx := t.Context()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				scope := []kb.Scope{scopeA, scopeB}[i%2]
				r, err := m.SaveRecipe(ctx, scope, recipes.NewRecipe{Question: fmt.Sprintf("question %d from %d", i, g), SQL: []string{"SELECT 1"}, Datasets: []domain.Dataset{orders()}})
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := m.Recall(ctx, scope, recipes.Query{Question: "question", Datasets: []domain.Dataset{orders()}}); err != nil {
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

func TestRestore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src, _ := newMemory(&wordEmbedder{dims: 32}, 0)
	for _, q := range []string{"one", "two", "three", "four"} {
		save(t, src, scopeA, q+" question", "SELECT "+q, orders())
	}
	saved, _ := src.List(ctx, scopeA) // most recent first: four, three, two, one
	// Restore into a fresh memory with room for three: the least recently
	// used ("one") is dropped, order and fields survive.
	dst, _ := newMemory(&wordEmbedder{dims: 32}, 3)
	shuffled := []recipes.Recipe{saved[2], saved[0], saved[3], saved[1]}
	if err := dst.Restore(ctx, scopeA, shuffled); err != nil {
		t.Fatal(err)
	}
	got, _ := dst.List(ctx, scopeA)
	if len(got) != 3 || fmt.Sprint(got) != fmt.Sprint(saved[:3]) {
		t.Errorf("restored:\n%v\nwant\n%v", got, saved[:3])
	}
	// Restored recipes are recalled and update on a re-save.
	m, err := dst.Recall(ctx, scopeA, recipes.Query{Question: "four question", Datasets: []domain.Dataset{orders()}, K: 1})
	if err != nil || len(m) != 1 || m[0].Recipe.ID != saved[0].ID || !m[0].SchemaMatch {
		t.Errorf("recall after restore = %v, %v", m, err)
	}
	if r := save(t, dst, scopeA, "four question", "SELECT 4", orders()); r.ID != saved[0].ID || r.SuccessCount != 2 {
		t.Errorf("re-save after restore = %+v", r)
	}
	// Invalid input restores nothing.
	bad := saved[0]
	bad.Fingerprint = "nope"
	if err := dst.Restore(ctx, scopeB, []recipes.Recipe{saved[1], bad}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("bad fingerprint: %v", err)
	}
	if list, _ := dst.List(ctx, scopeB); len(list) != 0 {
		t.Errorf("partial restore: %v", list)
	}
}
