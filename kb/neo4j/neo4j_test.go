package neo4j

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	driver "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/kbtest"
)

func newFakeCatalog(t *testing.T) (*Catalog, *fakeDB) {
	db := newFakeDB()
	return New(db, Options{Embedder: kb.NewHashEmbedder(kb.HashEmbedderOptions{})}), db
}

// TestConformanceWithFake runs the whole kbtest suite against the fake
// driver, which simulates this package's Cypher statements.
func TestConformanceWithFake(t *testing.T) {
	t.Parallel()
	kbtest.RunCatalogTests(t, func(t *testing.T) kb.Catalog {
		c, _ := newFakeCatalog(t)
		return c
	})
}

// TestEveryQueryIsScoped drives every operation and checks each recorded
// statement: constant Cypher filtering on $tenant and $ontology, the
// scope's values as parameters, reads in read transactions.
func TestEveryQueryIsScoped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, db := newFakeCatalog(t)
	scope := kb.Scope{TenantID: "acme", Ontology: "sales"}
	if err := c.Put(ctx, scope, kbtest.Sales()...); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Search(ctx, scope, "revenue per customer", 5); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, scope, dset("inv.stock_levels", "Stock.", fv("site", "Rotterdam", "Hamburg"))); err != nil {
		t.Fatal(err)
	}
	if hits, err := c.Search(ctx, scope, "stock in Hamburg", 5); err != nil || len(hits[0].MatchedValues) != 1 { // value path
		t.Fatalf("value search = %+v, %v", hits, err)
	}
	if _, err := c.Search(ctx, scope, "zzz", 5); err != nil { // fallback path
		t.Fatal(err)
	}
	_, _ = c.Datasets(ctx, scope, "sales.orders")
	_, _ = c.Relationships(ctx, scope, "sales.orders")
	_, _ = c.List(ctx, scope)
	_, _ = c.Backfill(ctx, scope)
	_ = c.Delete(ctx, scope, "sales.orders")
	if _, err := kb.Discover(ctx, c, scope, "orders by store", kb.DiscoverOptions{}); err != nil {
		t.Fatal(err)
	}

	schema := map[string]bool{cypherConstraint: true, cypherVectorIdx: true, cypherFulltextIdx: true, cypherValueFirstIdx: true, cypherValueKeyIdx: true}
	seen := map[string]bool{}
	for _, call := range db.recorded() {
		seen[call.Cypher] = true
		if schema[call.Cypher] {
			if !call.Write {
				t.Errorf("schema statement in a read transaction: %s", call.Cypher)
			}
			continue
		}
		if call.Params["tenant"] != "acme" || call.Params["ontology"] != "sales" {
			t.Errorf("statement without the scope's parameters %v: %s", call.Params, call.Cypher)
		}
		if !strings.Contains(call.Cypher, "tenant: $tenant, ontology: $ontology") && !strings.Contains(call.Cypher, "node.tenant = $tenant AND node.ontology = $ontology") {
			t.Errorf("statement does not filter on the scope: %s", call.Cypher)
		}
		if strings.Contains(call.Cypher, "acme") || strings.Contains(call.Cypher, "sales.orders") {
			t.Errorf("a value was formatted into Cypher: %s", call.Cypher)
		}
		if call.Write != writeStatements[call.Cypher] {
			t.Errorf("statement in a %s transaction: %s", map[bool]string{true: "write", false: "read"}[call.Write], call.Cypher)
		}
	}
	for _, q := range []string{cypherVectorSearch, cypherFulltextSearch, cypherRelationships, cypherList, cypherDatasets, cypherDelete, cypherUpsert,
		cypherReplaceFields, cypherReplaceValues, cypherLink, cypherMissingEmbeddings, cypherValueCandidates, cypherValueHolding, cypherValueFirstIdx, cypherValueKeyIdx} {
		if !seen[q] {
			t.Errorf("statement never exercised: %s", q)
		}
	}
}

func TestSchemaAndOversampling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newFakeDB()
	c := New(db, Options{Embedder: kb.NewHashEmbedder(kb.HashEmbedderOptions{Dimensions: 128}), MaxOversample: 60})
	scope := kb.Scope{TenantID: "acme"}
	if err := c.Put(ctx, scope, kbtest.Sales()...); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, scope, kbtest.Sales()[0]); err != nil {
		t.Fatal(err)
	}
	nSchema := 0
	for _, call := range db.recorded() {
		if call.Cypher == cypherVectorIdx {
			nSchema++
			if call.Params["dimensions"] != 128 {
				t.Errorf("vector index dimensions = %v, want 128", call.Params["dimensions"])
			}
			if !strings.Contains(call.Cypher, "IF NOT EXISTS") || !strings.Contains(call.Cypher, "'cosine'") {
				t.Errorf("vector index statement: %s", call.Cypher)
			}
		}
	}
	if nSchema != 1 {
		t.Errorf("vector index created %d times, want once per catalog", nSchema)
	}
	if _, err := c.SearchWith(ctx, scope, "orders", kb.SearchOptions{K: 3}); err != nil {
		t.Fatal(err)
	}
	for _, call := range db.recorded() {
		if call.Cypher == cypherVectorSearch || call.Cypher == cypherFulltextSearch {
			// candidates = max(50, 5k) = 50; ×4 = 200, capped at 60.
			if call.Params["oversample"] != 60 || call.Params["limit"] != 50 {
				t.Errorf("oversample %v limit %v, want 60 and 50", call.Params["oversample"], call.Params["limit"])
			}
			if v, ok := call.Params["embedding"].([]float64); call.Cypher == cypherVectorSearch && (!ok || len(v) != 128) {
				t.Errorf("query embedding parameter: %T len %d", call.Params["embedding"], len(v))
			}
		}
	}
}

// An embedding failure never fails Put: the datasets are stored without
// vectors, an event says so, search runs on full text, Backfill fixes it.
func TestEmbeddingFailureDegrades(t *testing.T) {
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
	emb := &flakyEmbedder{Embedder: kb.NewHashEmbedder(kb.HashEmbedderOptions{}), fail: true}
	db := newFakeDB()
	c := New(db, Options{Embedder: emb, Bus: bus})
	scope := kb.Scope{TenantID: "acme"}
	if err := c.Put(ctx, scope, kbtest.Sales()...); err != nil {
		t.Fatalf("Put with a failing embedder: %v", err)
	}
	hits, err := c.Search(ctx, scope, "employees salaries", 3)
	if err != nil || len(hits) == 0 || hits[0].Dataset.Name != "hr.employees" || hits[0].Vector != 0 {
		t.Fatalf("degraded search = %+v, %v; want hr.employees from full text", hits, err)
	}
	mu.Lock()
	if len(events) != 2 || len(events[0].Datasets) != len(kbtest.Sales()) || !events[1].Query || events[0].TenantID != "acme" {
		t.Errorf("events = %+v, want one for the datasets and one for the query", events)
	}
	mu.Unlock()
	emb.set(false)
	n, err := c.Backfill(ctx, scope)
	if err != nil || n != len(kbtest.Sales()) {
		t.Fatalf("Backfill = %d, %v; want %d", n, err, len(kbtest.Sales()))
	}
	if n, _ := c.Backfill(ctx, scope); n != 0 {
		t.Errorf("second Backfill embedded %d", n)
	}
	hits, _ = c.Search(ctx, scope, "employes", 1)
	if len(hits) != 1 || hits[0].Dataset.Name != "hr.employees" || hits[0].Vector == 0 {
		t.Errorf("vector search after backfill = %+v", hits)
	}
}

func TestDriverErrorsAreWrapped(t *testing.T) {
	t.Parallel()
	db := newFakeDB()
	db.failRun = errors.New("connection refused")
	c := New(db, Options{})
	_, err := c.List(context.Background(), kb.Scope{TenantID: "acme"})
	if err == nil || !strings.Contains(err.Error(), "kb/neo4j: list") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err = %v", err)
	}
}

type flakyEmbedder struct {
	kb.Embedder
	mu   sync.Mutex
	fail bool
}

func (f *flakyEmbedder) set(fail bool) { f.mu.Lock(); f.fail = fail; f.mu.Unlock() }

func (f *flakyEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return nil, errors.New("embedding service unavailable")
	}
	return f.Embedder.Embed(ctx, texts)
}

// realNeo4j connects to the Neo4j 5 at NEO4J_URI (NEO4J_USER,
// NEO4J_PASSWORD), closed when t ends, or skips t when it is not set.
func realNeo4j(t *testing.T) driver.DriverWithContext {
	t.Helper()
	uri := os.Getenv("NEO4J_URI")
	if uri == "" {
		t.Skip("NEO4J_URI not set; skipping the Neo4j integration test")
	}
	d, err := driver.NewDriverWithContext(uri, driver.BasicAuth(os.Getenv("NEO4J_USER"), os.Getenv("NEO4J_PASSWORD"), ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	if err := d.VerifyConnectivity(t.Context()); err != nil {
		t.Fatalf("connect to %s: %v", uri, err)
	}
	return d
}

// TestIntegrationConformance runs the suite against a real Neo4j 5 when
// NEO4J_URI (and NEO4J_USER/NEO4J_PASSWORD) is set. No Neo4j can run in
// this project's CI, so BICHAT_REQUIRE_INTEGRATION does not force it.
func TestIntegrationConformance(t *testing.T) {
	d := realNeo4j(t)
	kbtest.RunCatalogTests(t, func(t *testing.T) kb.Catalog {
		c := New(FromDriver(d, os.Getenv("NEO4J_DATABASE")), Options{Embedder: kb.NewHashEmbedder(kb.HashEmbedderOptions{})})
		// The suite's scopes are fixed: start each test from an empty
		// catalog for them.
		t.Cleanup(func() { wipe(t, c) })
		wipe(t, c)
		return c
	})
}

func wipe(t *testing.T, c *Catalog) {
	ctx := context.Background()
	for _, s := range []kb.Scope{{TenantID: "tenant-a", Ontology: "sales"}, {TenantID: "tenant-a", Ontology: "finance"}, {TenantID: "tenant-c", Ontology: "sales"}, {TenantID: "tenant-empty"}} {
		ds, err := c.List(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		names := make([]string, len(ds))
		for i, d := range ds {
			names[i] = d.Name
		}
		if err := c.Delete(ctx, s, names...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIntegrationFeatures runs the issue-15 feature cases against a real
// Neo4j 5 when NEO4J_URI is set: each case in a tenant of its own,
// removed afterwards.
func TestIntegrationFeatures(t *testing.T) {
	d := realNeo4j(t)
	ctx := context.Background()
	run := time.Now().UnixNano()
	runFeatureTests(t, func(t *testing.T, opts Options) (*Catalog, kb.Scope) {
		c := New(FromDriver(d, os.Getenv("NEO4J_DATABASE")), opts)
		scope := kb.Scope{TenantID: fmt.Sprintf("features-%d-%d", run, scopeSeq.Add(1)), Ontology: "o"}
		t.Cleanup(func() {
			ds, err := c.List(ctx, scope)
			if err != nil {
				t.Error(err)
				return
			}
			names := make([]string, len(ds))
			for i, d := range ds {
				names[i] = d.Name
			}
			if err := c.Delete(ctx, scope, names...); err != nil {
				t.Error(err)
			}
		})
		return c, scope
	})
}
