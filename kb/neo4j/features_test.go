package neo4j

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

// The issue-15 features (synonyms, location, values, sensitive columns,
// relationship cardinality, expansion and the per-call SearchOptions),
// run against the fake here and against a real Neo4j in
// TestIntegrationFeatures.

func fld(name, typ string) domain.Field { return domain.Field{Name: name, Type: typ} }

func fv(name string, values ...string) domain.Field {
	return domain.Field{Name: name, Type: "text", Values: values}
}

func dset(name, desc string, fields ...domain.Field) domain.Dataset {
	return domain.Dataset{Name: name, Source: name, Kind: "table", Description: desc, Fields: fields}
}

// featureCatalog is a small business catalog: the tables the questions
// need and distractors sharing their words.
func featureCatalog() []domain.Dataset {
	customers := dset("crm.customers", "One row per customer account.",
		fld("id", "bigint"), fld("full_name", "text"),
		fv("city", "Lyon", "Paris", "Zürich", "New York", "São Paulo"),
		fv("segment_cd", "SMB", "ENT", "GOV"),
		domain.Field{Name: "email", Type: "text", Sensitive: true, Values: []string{"ada@example.com", "Grace Hopper"}})
	customers.Relationships = []domain.Relationship{{From: "crm.customers", FromColumns: []string{"id"}, To: "billing.subscriptions", ToColumns: []string{"customer_id"},
		Cardinality: domain.CardinalityOneToMany, Inferred: true, Confidence: 0.87}}
	staff := dset("hr.staff_roster", "Everyone on the payroll.",
		fld("emp_no", "bigint"), fv("dept", "Finance", "Logistics", "Research and Development"), fld("hired_on", "date"))
	staff.Synonyms = []string{"headcount"}
	gl := dset("gl_tx", "",
		fld("tx_id", "bigint"),
		domain.Field{Name: "amt_lc", Type: "numeric", Description: "Amount in local currency", Synonyms: []string{"journal amount"}},
		fld("pst_dt", "date"))
	gl.Database, gl.Schema = "erp", "bookkeeping"
	return []domain.Dataset{
		customers,
		dset("crm.contacts", "People we talk to at customer accounts.",
			fld("id", "bigint"), fv("person_name", "Marie Curie", "Ada Lovelace"), fld("customer_id", "bigint")),
		dset("crm.cancellations", "Customer attrition events.", fld("customer_id", "bigint"), fld("cancelled_on", "date")),
		dset("sales.orders", "One row per order placed.",
			fld("id", "bigint"), fld("customer_id", "bigint"), fv("status", "shipped", "cancelled", "pending"), fv("channel", "web shop", "Paris")),
		staff,
		dset("hr.payroll_runs", "Monthly payroll runs.", fld("run_id", "bigint"), fld("run_month", "date")),
		gl,
		dset("inv.stock_levels", "Units on hand per product and site.", fld("sku", "text"), fv("site", "Rotterdam", "Hamburg")),
		dset("fleet.vehicles", "Delivery vans.", fld("plate", "text"), fv("depot", "Lille", "Lyon Nord")),
		dset("billing.subscriptions", "Plans with start and end dates.",
			fld("id", "bigint"), fld("customer_id", "bigint"), fv("plan", "Basic", "Premium")),
	}
}

// opener returns a fresh, empty catalog with opts (no embedder unless
// opts sets one) and a scope no other test uses; the caller's datasets
// are removed when the test ends.
type opener func(t *testing.T, opts Options) (*Catalog, kb.Scope)

var scopeSeq atomic.Int64

func runFeatureTests(t *testing.T, open opener) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, open) })
	t.Run("ValueMatchesAsMemoryCatalog", func(t *testing.T) { testValuesLikeMemory(t, open) })
	t.Run("ValueRanking", func(t *testing.T) { testValueRanking(t, open) })
	t.Run("SensitiveNeverIndexed", func(t *testing.T) { testSensitive(t, open) })
	t.Run("ValuesFollowPutAndDelete", func(t *testing.T) { testValuesLifecycle(t, open) })
	t.Run("ValueCapPerField", func(t *testing.T) { testValueCap(t, open) })
	t.Run("SynonymsAndLocation", func(t *testing.T) { testSynonymsLocation(t, open) })
	t.Run("Expansion", func(t *testing.T) { testExpansion(t, open) })
}

func putAll(t *testing.T, c *Catalog, scope kb.Scope, ds []domain.Dataset) {
	t.Helper()
	if err := c.Put(context.Background(), scope, ds...); err != nil {
		t.Fatal(err)
	}
}

func search(t *testing.T, c *Catalog, scope kb.Scope, q string, opts kb.SearchOptions) []kb.DatasetHit {
	t.Helper()
	hits, err := c.SearchWith(context.Background(), scope, q, opts)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return hits
}

func first(t *testing.T, c *Catalog, scope kb.Scope, q string, opts kb.SearchOptions) string {
	t.Helper()
	hits := search(t, c, scope, q, opts)
	if len(hits) == 0 || hits[0].Fallback {
		return ""
	}
	return hits[0].Dataset.Name
}

func hitOf(hits []kb.DatasetHit, name string) (kb.DatasetHit, bool) {
	i := slices.IndexFunc(hits, func(h kb.DatasetHit) bool { return h.Dataset.Name == name })
	if i < 0 {
		return kb.DatasetHit{}, false
	}
	return hits[i], true
}

// Every new field comes back from Datasets, List, Search and
// Relationships; a Sensitive field's values are dropped.
func testRoundTrip(t *testing.T, open opener) {
	ctx := context.Background()
	c, scope := open(t, Options{})
	in := featureCatalog()
	putAll(t, c, scope, in)
	want := map[string]domain.Dataset{}
	for _, d := range in {
		d.Fields = slices.Clone(d.Fields)
		for i := range d.Fields {
			if d.Fields[i].Sensitive {
				d.Fields[i].Values = nil
			}
		}
		want[d.Name] = d
	}
	if v := in[0].Fields[4].Values; len(v) != 2 {
		t.Fatalf("Put modified the caller's dataset: %v", v)
	}
	got, err := c.Datasets(ctx, scope, "crm.customers", "gl_tx", "hr.staff_roster")
	if err != nil || len(got) != 3 {
		t.Fatalf("Datasets = %d, %v", len(got), err)
	}
	for _, d := range got {
		if !reflect.DeepEqual(d, want[d.Name]) {
			t.Errorf("Datasets(%s) =\n%+v\nwant\n%+v", d.Name, d, want[d.Name])
		}
	}
	list, err := c.List(ctx, scope)
	if err != nil || len(list) != len(in) {
		t.Fatalf("List = %d, %v", len(list), err)
	}
	for _, d := range list {
		if !reflect.DeepEqual(d, want[d.Name]) {
			t.Errorf("List(%s) = %+v", d.Name, d)
		}
	}
	hits := search(t, c, scope, "journal amount in local currency", kb.SearchOptions{K: 3})
	if h, ok := hitOf(hits, "gl_tx"); !ok || !reflect.DeepEqual(h.Dataset, want["gl_tx"]) || h.YAML != want["gl_tx"].YAML() {
		t.Errorf("search hit gl_tx = %+v (found %v)", h, ok)
	}
	rels, err := c.Relationships(ctx, scope, "billing.subscriptions")
	wantRel := []domain.Relationship{{From: "crm.customers", FromColumns: []string{"id"}, To: "billing.subscriptions", ToColumns: []string{"customer_id"},
		Cardinality: domain.CardinalityOneToMany, Inferred: true, Confidence: 0.87}}
	if err != nil || !reflect.DeepEqual(rels, wantRel) {
		t.Errorf("Relationships = %+v, %v; want %+v", rels, err, wantRel)
	}
}

// For every question, each dataset's MatchedValues equal the memory
// catalog's on the same datasets: same values, same columns, same order.
func testValuesLikeMemory(t *testing.T, open opener) {
	ctx := context.Background()
	c, scope := open(t, Options{})
	putAll(t, c, scope, featureCatalog())
	mem, err := kb.Bootstrap(ctx, scope, featureCatalog(), kb.CatalogOptions{NoEmbeddings: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	questions := []string{
		"how many accounts are based in Lyon",
		"revenue from zurich",
		"everything about SAO PAULO",
		"new york and ENT",
		"Paris or Lyon, then new york",
		"when did we last call ada lovelace",
		"vans parked at Lyon Nord and in Lyon",
		"who works in research and development",
		"how much is sitting in Hamburg",
		"premium plans, shipped orders",
		"grace hopper ada@example.com",
		"nothing to see",
	}
	n := len(featureCatalog())
	matched := 0
	for _, q := range questions {
		got := search(t, c, scope, q, kb.SearchOptions{K: n})
		want, err := mem.SearchWith(ctx, scope, q, kb.SearchOptions{K: n})
		if err != nil {
			t.Fatal(err)
		}
		byName := func(hs []kb.DatasetHit) map[string][]kb.ValueMatch {
			m := map[string][]kb.ValueMatch{}
			for _, h := range hs {
				if len(h.MatchedValues) > 0 {
					m[h.Dataset.Name] = h.MatchedValues
				}
			}
			return m
		}
		g, w := byName(got), byName(want)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%q: matched values %+v, memory catalog %+v", q, g, w)
		}
		matched += len(g)
	}
	if matched < 10 {
		t.Errorf("only %d datasets matched a value over all questions: the test proves little", matched)
	}
	hits := search(t, c, scope, "Paris or Lyon, then new york", kb.SearchOptions{K: 3})
	h, _ := hitOf(hits, "crm.customers")
	if wantM := []kb.ValueMatch{{Field: "city", Value: "Paris"}, {Field: "city", Value: "Lyon"}, {Field: "city", Value: "New York"}}; !slices.Equal(h.MatchedValues, wantM) {
		t.Errorf("matches in question order = %+v, want %+v", h.MatchedValues, wantM)
	}
}

// A value only the value index knows finds its table (first), through
// the value ranking; NoValues, a negative ValueWeight and the
// single-side modes leave the ranking out but still report matches.
func testValueRanking(t *testing.T, open opener) {
	c, scope := open(t, Options{})
	putAll(t, c, scope, featureCatalog())
	q := "how much is sitting in Hamburg"
	hits := search(t, c, scope, q, kb.SearchOptions{K: 3})
	if len(hits) == 0 || hits[0].Dataset.Name != "inv.stock_levels" || hits[0].Fallback {
		t.Fatalf("%q: hits %v, want inv.stock_levels first", q, names(hits))
	}
	if want := []kb.ValueMatch{{Field: "site", Value: "Hamburg"}}; !slices.Equal(hits[0].MatchedValues, want) || hits[0].BM25 != 0 {
		t.Errorf("hit = %+v, want a value-only match %v", hits[0], want)
	}
	for _, opts := range []kb.SearchOptions{{K: 3, NoValues: true}, {K: 3, Mode: kb.BM25Only}} {
		if got := first(t, c, scope, q, opts); got != "" {
			t.Errorf("%+v: %q found %s without the value ranking", opts, q, got)
		}
	}
	off, scope2 := open(t, Options{ValueWeight: -1})
	putAll(t, off, scope2, featureCatalog())
	if got := first(t, off, scope2, q, kb.SearchOptions{K: 3}); got != "" {
		t.Errorf("ValueWeight -1: %q found %s", q, got)
	}
	// Matches are reported on hits the other sides found.
	hits = search(t, c, scope, "delivery vans at Lyon Nord", kb.SearchOptions{K: 3, NoValues: true})
	if h, ok := hitOf(hits, "fleet.vehicles"); !ok || !slices.Equal(h.MatchedValues, []kb.ValueMatch{{Field: "depot", Value: "Lyon Nord"}}) {
		t.Errorf("NoValues: fleet.vehicles hit %+v (found %v), want its match reported", h, ok)
	}
}

func testSensitive(t *testing.T, open opener) {
	for _, sensitive := range []bool{false, true} {
		t.Run(fmt.Sprint("sensitive=", sensitive), func(t *testing.T) {
			c, scope := open(t, Options{})
			people := dset("crm.people", "People.", fld("id", "bigint"),
				domain.Field{Name: "full_name", Type: "text", Sensitive: sensitive, Values: []string{"Grace Hopper", "Zebulon Quixote"}})
			putAll(t, c, scope, []domain.Dataset{people, dset("web.sessions", "Visits.", fld("id", "uuid"))})
			hits := search(t, c, scope, "Zebulon Quixote", kb.SearchOptions{K: 2})
			matched := len(hits) > 0 && !hits[0].Fallback && len(hits[0].MatchedValues) > 0
			if matched == sensitive {
				t.Errorf("sensitive=%v: value matched=%v (hits %+v)", sensitive, matched, hits)
			}
			ds, err := c.Datasets(context.Background(), scope, "crm.people")
			if err != nil || len(ds) != 1 {
				t.Fatalf("Datasets = %v, %v", ds, err)
			}
			if stored := ds[0].Fields[1].Values; (len(stored) > 0) == sensitive || strings.Contains(ds[0].YAML(), "Zebulon") == sensitive {
				t.Errorf("sensitive=%v: stored values %v", sensitive, stored)
			}
		})
	}
}

// Replacing a dataset replaces its values; deleting it removes them;
// another scope's values never match.
func testValuesLifecycle(t *testing.T, open opener) {
	ctx := context.Background()
	c, scope := open(t, Options{})
	sites := dset("inv.stock_levels", "Stock.", fv("site", "Rotterdam", "Hamburg"))
	putAll(t, c, scope, []domain.Dataset{sites, dset("web.sessions", "Visits.", fld("id", "uuid"))})
	if got := first(t, c, scope, "stock in Rotterdam", kb.SearchOptions{K: 1, NoValues: true}); got != "inv.stock_levels" {
		t.Fatalf("before replace: %q", got)
	}
	sites.Fields = []domain.Field{fv("site", "Antwerp")}
	putAll(t, c, scope, []domain.Dataset{sites})
	if h := search(t, c, scope, "Rotterdam", kb.SearchOptions{K: 2}); len(h) > 0 && len(h[0].MatchedValues) > 0 {
		t.Errorf("a replaced value still matches: %+v", h[0])
	}
	if got := first(t, c, scope, "Antwerp", kb.SearchOptions{K: 1}); got != "inv.stock_levels" {
		t.Errorf("the new value does not match: %q", got)
	}
	other := kb.Scope{TenantID: scope.TenantID + "-other", Ontology: scope.Ontology}
	putAll(t, c, other, []domain.Dataset{dset("fleet.vehicles", "Vans.", fv("depot", "Lille"))})
	t.Cleanup(func() { _ = c.Delete(ctx, other, "fleet.vehicles") })
	if got := first(t, c, scope, "Lille", kb.SearchOptions{K: 1}); got != "" {
		t.Errorf("another scope's value matched: %s", got)
	}
	if err := c.Delete(ctx, scope, "inv.stock_levels"); err != nil {
		t.Fatal(err)
	}
	if got := first(t, c, scope, "Antwerp", kb.SearchOptions{K: 1}); got != "" {
		t.Errorf("a deleted dataset's value matched: %s", got)
	}
}

func testValueCap(t *testing.T, open opener) {
	c, scope := open(t, Options{MaxValuesPerField: 2})
	putAll(t, c, scope, []domain.Dataset{dset("inv.sites", "Sites.", fv("site", "Rotterdam", "Hamburg", "Antwerp")), dset("web.sessions", "Visits.", fld("id", "uuid"))})
	if got := first(t, c, scope, "Hamburg", kb.SearchOptions{K: 1}); got != "inv.sites" {
		t.Errorf("the second value is not indexed: %q", got)
	}
	if got := first(t, c, scope, "Antwerp", kb.SearchOptions{K: 1}); got != "" {
		t.Errorf("the third value is indexed beyond MaxValuesPerField 2: %s", got)
	}
}

func testSynonymsLocation(t *testing.T, open opener) {
	cases := []struct {
		name, q, want string
		off           Options
	}{
		{"dataset synonyms", "headcount by month", "hr.staff_roster", Options{SynonymBoost: -1}},
		{"field synonyms", "journal by day", "gl_tx", Options{SynonymBoost: -1}},
		{"schema", "everything in bookkeeping", "gl_tx", Options{LocationBoost: -1}},
		{"database", "the erp tables", "gl_tx", Options{LocationBoost: -1}},
	}
	on, scope := open(t, Options{})
	putAll(t, on, scope, featureCatalog())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := first(t, on, scope, tc.q, kb.SearchOptions{K: 1}); got != tc.want {
				t.Errorf("%q: first hit %q, want %s", tc.q, got, tc.want)
			}
			off, offScope := open(t, tc.off)
			putAll(t, off, offScope, featureCatalog())
			if got := first(t, off, offScope, tc.q, kb.SearchOptions{K: 1}); got == tc.want {
				t.Errorf("%q: %s is first with %+v too: the case proves nothing", tc.q, got, tc.off)
			}
		})
	}
}

func testExpansion(t *testing.T, open opener) {
	c, scope := open(t, Options{Synonyms: [][]string{{"churn", "attrition"}}})
	putAll(t, c, scope, featureCatalog())
	cases := []struct {
		q, want string
	}{
		{"list our clients", "crm.customers"},       // thesaurus: client ~ customer
		{"churn last quarter", "crm.cancellations"}, // host group
	}
	for _, tc := range cases {
		if got := first(t, c, scope, tc.q, kb.SearchOptions{K: 1}); got != tc.want {
			t.Errorf("%q: first hit %q, want %s", tc.q, got, tc.want)
		}
		if got := first(t, c, scope, tc.q, kb.SearchOptions{K: 1, NoExpansion: true}); got != "" {
			t.Errorf("%q with NoExpansion: first hit %s, want none", tc.q, got)
		}
	}
	noThes, s2 := open(t, Options{NoThesaurus: true, Synonyms: [][]string{{"churn", "attrition"}}})
	putAll(t, noThes, s2, featureCatalog())
	if got := first(t, noThes, s2, "list our clients", kb.SearchOptions{K: 1}); got != "" {
		t.Errorf("NoThesaurus: %q found %s", "list our clients", got)
	}
	if got := first(t, noThes, s2, "churn last quarter", kb.SearchOptions{K: 1}); got != "crm.cancellations" {
		t.Errorf("NoThesaurus keeps the host's groups: got %q", got)
	}
	// An expansion term weighs less than the question's own word: a
	// table named after the word beats one named after its synonym.
	w, s3 := open(t, Options{})
	putAll(t, w, s3, []domain.Dataset{dset("a.client_ledger", "Ledger.", fld("id", "bigint")), dset("b.customer_report", "Report.", fld("id", "bigint"))})
	for q, want := range map[string]string{"customer": "b.customer_report", "client": "a.client_ledger"} {
		hits := search(t, w, s3, q, kb.SearchOptions{K: 2, Mode: kb.BM25Only})
		if len(hits) != 2 || hits[0].Dataset.Name != want || hits[0].BM25 <= hits[1].BM25 {
			t.Errorf("%q: hits %v, want %s first and both found", q, names(hits), want)
		}
	}
}

func names(hs []kb.DatasetHit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Dataset.Name
		if h.Fallback {
			out[i] += " (fallback)"
		}
	}
	return out
}

func TestFeaturesWithFake(t *testing.T) {
	t.Parallel()
	runFeatureTests(t, func(t *testing.T, opts Options) (*Catalog, kb.Scope) {
		return New(newFakeDB(), opts), kb.Scope{TenantID: fmt.Sprintf("features-%d", scopeSeq.Add(1)), Ontology: "o"}
	})
}

// The fake's checks that a server cannot show: no sensitive value in
// any statement's parameters, and the full-text query's clauses and
// boosts.
func TestSensitiveValuesNeverSent(t *testing.T) {
	t.Parallel()
	db := newFakeDB()
	c := New(db, Options{})
	scope := kb.Scope{TenantID: "acme"}
	if err := c.Put(context.Background(), scope, featureCatalog()...); err != nil {
		t.Fatal(err)
	}
	for _, call := range db.recorded() {
		if s := fmt.Sprintf("%v", call.Params); strings.Contains(s, "Grace Hopper") || strings.Contains(s, "ada@example.com") {
			t.Errorf("a sensitive value was sent to Neo4j: %s", call.Cypher)
		}
	}
	var values []string
	for _, nd := range db.nodes {
		for _, v := range nd.values {
			values = append(values, v["value"].(string))
		}
	}
	if len(values) < 20 || slices.Contains(values, "Grace Hopper") {
		t.Errorf("value nodes %v", values)
	}
}

func TestLuceneQuery(t *testing.T) {
	t.Parallel()
	c := New(newFakeDB(), Options{SynonymBoost: 4, LocationBoost: -1, ExpansionWeight: 0.5, NoThesaurus: true, Synonyms: [][]string{{"churn", "attrition"}}})
	got := c.luceneQuery(kb.Terms("the churn"), c.exp, nil)
	want := "search_name:churn^3 OR search_text:churn^1 OR search_synonyms:churn^4 OR " +
		"search_name:attrit^1.5 OR search_text:attrit^0.5 OR search_synonyms:attrit^2"
	if got != want {
		t.Errorf("luceneQuery =\n%s\nwant\n%s", got, want)
	}
	if got := c.luceneQuery(kb.Terms("the churn"), nil, nil); strings.Contains(got, "attrit") {
		t.Errorf("without an expander: %s", got)
	}
	// The lexicon's words come after the synonyms, at LexiconWeight; a
	// word the synonyms already bring is not repeated.
	lc := New(newFakeDB(), Options{SynonymBoost: -1, LocationBoost: -1, ExpansionWeight: 0.5, NoThesaurus: true,
		Synonyms: [][]string{{"churn", "attrition"}}, Lexicon: kb.Lexicon{"churn": {"attrition", "turnover"}}, LexiconWeight: 0.1})
	got = lc.luceneQuery(kb.Terms("churn"), lc.exp, lc.lex)
	want = "search_name:churn^3 OR search_text:churn^1 OR search_name:attrit^1.5 OR search_text:attrit^0.5 OR " +
		"search_name:turnov^0.3 OR search_text:turnov^0.1"
	if got != want {
		t.Errorf("luceneQuery with a lexicon =\n%s\nwant\n%s", got, want)
	}
	var ts []string
	for i := range 400 {
		ts = append(ts, fmt.Sprintf("w%d", i))
	}
	if n := len(strings.Split(c.luceneQuery(ts, c.exp, nil), " OR ")); n != maxClauses {
		t.Errorf("%d clauses for 400 terms, want the cap %d", n, maxClauses)
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{Synonyms: [][]string{{"churn"}}}, {MaxValuesPerField: -1}} {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", o)
		}
	}
	if err := (Options{Synonyms: [][]string{{"churn", "attrition"}}}).Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
}
