package kb_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"testing"

	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/kbtest"
)

func newMemory(t *testing.T, opts kb.CatalogOptions) *kb.MemoryCatalog {
	c := kb.NewMemoryCatalog(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestMemoryCatalogConformance(t *testing.T) {
	t.Parallel()
	kbtest.RunCatalogTests(t, func(t *testing.T) kb.Catalog { return newMemory(t, kb.CatalogOptions{}) })
}

func TestMemoryCatalogPersistence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	a, b := kb.Scope{TenantID: "acme", Ontology: "sales"}, kb.Scope{TenantID: "globex"}
	c := newMemory(t, kb.CatalogOptions{})
	if err := c.Put(ctx, a, kbtest.Sales()...); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, b, kbtest.Sales()[4]); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Search(ctx, a, "revenue per customer", 3)
	if err := c.Save(dir); err != nil {
		t.Fatal(err)
	}
	l, err := kb.LoadCatalog(ctx, dir, kb.CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	after, _ := l.Search(ctx, a, "revenue per customer", 3)
	if len(after) != len(before) {
		t.Fatalf("after load %d hits, before %d", len(after), len(before))
	}
	for i := range before {
		if after[i].Dataset.Name != before[i].Dataset.Name || after[i].Score != before[i].Score {
			t.Errorf("hit %d: %s %.4f after load, %s %.4f before", i, after[i].Dataset.Name, after[i].Score, before[i].Dataset.Name, before[i].Score)
		}
	}
	if got, _ := l.List(ctx, b); len(got) != 1 || got[0].Name != "hr.employees" {
		t.Errorf("scope b after load = %v", got)
	}
	rels, _ := l.Relationships(ctx, a, "sales.customers")
	if len(rels) != 1 {
		t.Errorf("relationships after load = %+v", rels)
	}
	// Changes after loading land in the on-disk index; saving into the
	// same directory again and reloading keeps them.
	extra := domain.Dataset{Name: "sales.returns", Source: "sales.returns", Description: "Refunded merchandise.", Fields: []domain.Field{{Name: "order_id", Type: "bigint"}}}
	if err := l.Put(ctx, a, extra); err != nil {
		t.Fatal(err)
	}
	if err := l.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := kb.LoadCatalog(ctx, dir, kb.CatalogOptions{Mode: kb.BM25Only})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l2.Close() })
	hits, _ := l2.Search(ctx, a, "refunded merchandise", 1)
	if len(hits) != 1 || hits[0].Dataset.Name != "sales.returns" {
		t.Errorf("after second load: %v", hits)
	}
	if _, err := kb.LoadCatalog(ctx, t.TempDir(), kb.CatalogOptions{}); err == nil {
		t.Error("loading an empty directory succeeded")
	}
	// Lost indexes are rebuilt from the definitions.
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "indexes")); err != nil {
		t.Fatal(err)
	}
	l3, err := kb.LoadCatalog(ctx, dir, kb.CatalogOptions{})
	if err != nil {
		t.Fatalf("load without indexes: %v", err)
	}
	t.Cleanup(func() { _ = l3.Close() })
	if hits, _ := l3.Search(ctx, a, "refunded merchandise", 1); len(hits) != 1 || hits[0].Dataset.Name != "sales.returns" {
		t.Errorf("after rebuilding the index: %v", hits)
	}
}

func TestBootstrapRejectsInvalidDatasets(t *testing.T) {
	t.Parallel()
	_, err := kb.Bootstrap(context.Background(), kb.Scope{TenantID: "acme"}, []domain.Dataset{{Name: "x"}}, kb.CatalogOptions{})
	if !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "source") {
		t.Errorf("err = %v, want a validation error naming source", err)
	}
	_, err = kb.Bootstrap(context.Background(), kb.Scope{}, kbtest.Sales(), kb.CatalogOptions{})
	if !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("empty scope: err = %v", err)
	}
}

// A failing embedder never fails Put: the catalog stores the datasets,
// publishes an event and searches with BM25; Backfill embeds later.
func TestMemoryCatalogEmbeddingFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bus := hooks.New(hooks.Options{})
	defer bus.Close()
	var mu sync.Mutex
	var events []*kb.EmbeddingFailed
	if _, err := hooks.Listen(bus, func(_ context.Context, e *kb.EmbeddingFailed) error {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	emb := &failingEmbedder{Embedder: kb.NewHashEmbedder(kb.HashEmbedderOptions{}), fail: true}
	c := newMemory(t, kb.CatalogOptions{Embedder: emb, Bus: bus})
	s := kb.Scope{TenantID: "acme"}
	if err := c.Put(ctx, s, kbtest.Sales()...); err != nil {
		t.Fatalf("Put: %v", err)
	}
	hits, err := c.Search(ctx, s, "employee salaries", 2)
	if err != nil || len(hits) == 0 || hits[0].Dataset.Name != "hr.employees" || hits[0].Vector != 0 {
		t.Fatalf("degraded search = %+v, %v", hits, err)
	}
	mu.Lock()
	// One event for the datasets; the scope has no vectors, so searches
	// do not try to embed the question.
	if len(events) != 1 || len(events[0].Datasets) != 7 || events[0].Query || events[0].TenantID != "acme" || events[0].Kind() != kb.KindEmbeddingFailed {
		t.Errorf("events = %+v", events)
	}
	mu.Unlock()
	if _, err := c.Backfill(ctx, s); err == nil {
		t.Error("Backfill with the embedder still failing: want an error")
	}
	emb.set(false)
	n, err := c.Backfill(ctx, s)
	if err != nil || n != 7 {
		t.Fatalf("Backfill = %d, %v; want 7", n, err)
	}
	hits, _ = c.Search(ctx, s, "employes", 1)
	if len(hits) != 1 || hits[0].Vector == 0 || hits[0].Dataset.Name != "hr.employees" {
		t.Errorf("after backfill = %+v", hits)
	}
	// The question itself cannot be embedded: BM25 answers, an event says so.
	emb.set(true)
	hits, err = c.Search(ctx, s, "employee salaries", 1)
	if err != nil || len(hits) != 1 || hits[0].Dataset.Name != "hr.employees" || hits[0].Vector != 0 {
		t.Errorf("search with a failing query embedding = %+v, %v", hits, err)
	}
	mu.Lock()
	// Put, the failed Backfill, then the query.
	if len(events) != 3 || events[1].Query || !events[2].Query {
		t.Errorf("events = %+v, want a query event last", events)
	}
	mu.Unlock()
}

// A catalog created without embeddings gets them with SetEmbedder and
// Backfill.
func TestMemoryCatalogBackfillLater(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newMemory(t, kb.CatalogOptions{NoEmbeddings: true})
	s := kb.Scope{TenantID: "acme"}
	if err := c.Put(ctx, s, kbtest.Sales()...); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Backfill(ctx, s); !errors.Is(err, kb.ErrNoEmbedder) {
		t.Errorf("Backfill without embedder: %v", err)
	}
	if hits, _ := c.SearchWith(ctx, s, "employes", kb.SearchOptions{K: 1, Mode: kb.VectorOnly}); len(hits) != 1 || !hits[0].Fallback {
		t.Errorf("vector search without vectors = %+v, want the fallback", hits)
	}
	c.SetEmbedder(kb.NewHashEmbedder(kb.HashEmbedderOptions{}))
	if n, err := c.Backfill(ctx, s); err != nil || n != 7 {
		t.Fatalf("Backfill = %d, %v", n, err)
	}
	if hits, _ := c.SearchWith(ctx, s, "employes", kb.SearchOptions{K: 1, Mode: kb.VectorOnly}); len(hits) != 1 || hits[0].Dataset.Name != "hr.employees" {
		t.Errorf("vector search after backfill = %+v", hits)
	}
}

// Changing a definition re-embeds it; an unchanged one keeps its vector.
func TestMemoryCatalogReembedsOnChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emb := &countingEmbedder{Embedder: kb.NewHashEmbedder(kb.HashEmbedderOptions{})}
	c := newMemory(t, kb.CatalogOptions{Embedder: emb})
	s := kb.Scope{TenantID: "acme"}
	if err := c.Put(ctx, s, kbtest.Sales()...); err != nil {
		t.Fatal(err)
	}
	n0 := emb.texts()
	if err := c.Put(ctx, s, kbtest.Sales()[0]); err != nil { // unchanged
		t.Fatal(err)
	}
	if emb.texts() != n0 {
		t.Errorf("unchanged definition re-embedded (%d texts, was %d)", emb.texts(), n0)
	}
	changed := kbtest.Sales()[0]
	changed.Description = "Loyalty programme members."
	if err := c.Put(ctx, s, changed); err != nil {
		t.Fatal(err)
	}
	if emb.texts() != n0+1 {
		t.Errorf("changed definition: %d texts embedded, want %d", emb.texts(), n0+1)
	}
	hits, _ := c.SearchWith(ctx, s, "loyalty programme", kb.SearchOptions{K: 1, Mode: kb.VectorOnly})
	if len(hits) != 1 || hits[0].Dataset.Name != "sales.customers" {
		t.Errorf("vector search for the new text = %+v", hits)
	}
}

func TestMemoryCatalogConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newMemory(t, kb.CatalogOptions{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := kb.Scope{TenantID: "t", Ontology: []string{"a", "b"}[w%2]}
			for i := range 20 {
				d := kbtest.Sales()[i%7]
				d.Description += " v" + string(rune('a'+i))
				if err := c.Put(ctx, s, d); err != nil {
					t.Error(err)
					return
				}
				if _, err := c.Search(ctx, s, "orders per customer", 3); err != nil {
					t.Error(err)
					return
				}
				if i%5 == 0 {
					_ = c.Delete(ctx, s, d.Name)
				}
			}
		}()
	}
	wg.Wait()
}

func TestFuseRRF(t *testing.T) {
	t.Parallel()
	a := []kb.Ranked{{"x", 9}, {"y", 5}, {"z", 1}}
	b := []kb.Ranked{{"y", 0.9}, {"w", 0.8}}
	got := kb.FuseRRF(10, []float64{1, 1}, a, b)
	names := make([]string, len(got))
	for i, f := range got {
		names[i] = f.Name
	}
	// y: 1/12+1/11; x: 1/11; w: 1/12; z: 1/13.
	if want := []string{"y", "x", "w", "z"}; !slices.Equal(names, want) {
		t.Errorf("order = %v, want %v", names, want)
	}
	if got[0].Scores[0] != 5 || got[0].Scores[1] != 0.9 || got[2].Scores[0] != 0 {
		t.Errorf("scores = %+v", got)
	}
}

// Join-hint expansion pulls a bridge table related to two strong hits
// above unrelated text matches.
func TestDiscoverExpansion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newMemory(t, kb.CatalogOptions{})
	s := kb.Scope{TenantID: "acme"}
	ds := []domain.Dataset{
		{Name: "singer", Source: "singer", Fields: []domain.Field{{Name: "singer_id", Type: "int"}, {Name: "name", Type: "text"}}},
		{Name: "concert", Source: "concert", Fields: []domain.Field{{Name: "concert_id", Type: "int"}, {Name: "year", Type: "int"}}},
		{Name: "performance_link", Source: "performance_link", Fields: []domain.Field{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}},
			Relationships: []domain.Relationship{
				{From: "performance_link", FromColumns: []string{"a"}, To: "singer", ToColumns: []string{"singer_id"}},
				{From: "performance_link", FromColumns: []string{"b"}, To: "concert", ToColumns: []string{"concert_id"}},
			}},
		{Name: "singer_awards", Source: "singer_awards", Fields: []domain.Field{{Name: "award", Type: "text"}}},
		{Name: "concert_halls", Source: "concert_halls", Fields: []domain.Field{{Name: "hall", Type: "text"}}},
	}
	if err := c.Put(ctx, s, ds...); err != nil {
		t.Fatal(err)
	}
	q := "names of singers in concerts of year 2014"
	plain, _ := kb.Discover(ctx, c, s, q, kb.DiscoverOptions{K: 3, NoExpand: true})
	if slices.Contains(plain.Names(), "performance_link") {
		t.Fatalf("without expansion the bridge is already in %v: the test proves nothing", plain.Names())
	}
	d, err := kb.Discover(ctx, c, s, q, kb.DiscoverOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Names(); !slices.Contains(got, "performance_link") || !slices.Contains(got, "singer") || !slices.Contains(got, "concert") {
		t.Errorf("expanded = %v, want singer, concert and the bridge", got)
	}
	if len(d.JoinHints) != 2 {
		t.Errorf("join hints = %+v, want the bridge's two", d.JoinHints)
	}
}

type failingEmbedder struct {
	kb.Embedder
	mu   sync.Mutex
	fail bool
}

func (f *failingEmbedder) set(v bool) { f.mu.Lock(); f.fail = v; f.mu.Unlock() }

func (f *failingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return nil, errors.New("embedding service unavailable")
	}
	return f.Embedder.Embed(ctx, texts)
}

type countingEmbedder struct {
	kb.Embedder
	mu sync.Mutex
	n  int
}

func (c *countingEmbedder) texts() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.n += len(texts)
	c.mu.Unlock()
	return c.Embedder.Embed(ctx, texts)
}
