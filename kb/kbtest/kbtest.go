package kbtest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

// Sales returns a small, related set of datasets the suite uses: orders,
// order_items, customers, products, employees, stores and a web_sessions
// table without relationships.
func Sales() []domain.Dataset {
	return []domain.Dataset{
		{Name: "sales.customers", Source: "sales.customers", Kind: "table", Description: "One row per customer (buyer account).",
			Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "fullName", Type: "text", Description: "Customer name."}, {Name: "country_code", Type: "text"}}},
		{Name: "sales.orders", Source: "sales.orders", Kind: "table", Description: "One row per order placed.",
			Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "customer_id", Type: "bigint"}, {Name: "store_id", Type: "bigint"}, {Name: "ordered_at", Type: "timestamptz"}, {Name: "total_amount", Type: "numeric(12,2)", Description: "Revenue of the order."}},
			Relationships: []domain.Relationship{
				{From: "sales.orders", FromColumns: []string{"customer_id"}, To: "sales.customers", ToColumns: []string{"id"}},
				{From: "sales.orders", FromColumns: []string{"store_id"}, To: "sales.stores", ToColumns: []string{"id"}},
			}},
		{Name: "sales.order_items", Source: "sales.order_items", Kind: "table", Description: "Lines of an order.",
			Fields: []domain.Field{{Name: "order_id", Type: "bigint"}, {Name: "product_id", Type: "bigint"}, {Name: "quantity", Type: "integer"}},
			Relationships: []domain.Relationship{
				{From: "sales.order_items", FromColumns: []string{"order_id"}, To: "sales.orders", ToColumns: []string{"id"}},
				{From: "sales.order_items", FromColumns: []string{"product_id"}, To: "sales.products", ToColumns: []string{"id"}},
			}},
		{Name: "sales.products", Source: "sales.products", Kind: "table", Description: "Catalogue of items for sale.",
			Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "title", Type: "text"}, {Name: "unitPrice", Type: "numeric"}}},
		{Name: "hr.employees", Source: "hr.employees", Kind: "table", Description: "Staff members and their salaries.",
			Fields:        []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "salary", Type: "numeric"}, {Name: "hired_on", Type: "date"}},
			Relationships: []domain.Relationship{{From: "hr.employees", FromColumns: []string{"id"}, To: "hr.missing_table", ToColumns: []string{"employee_id"}}}},
		{Name: "sales.stores", Source: "sales.stores", Kind: "table", Description: "Physical shops.",
			Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "city", Type: "text"}}},
		{Name: "web.web_sessions", Source: "web.web_sessions", Kind: "table", Description: "Website visits.",
			Fields: []domain.Field{{Name: "session_id", Type: "uuid"}, {Name: "landing_page", Type: "text"}}},
	}
}

// RunCatalogTests runs the conformance suite. newCatalog returns a fresh,
// empty catalog with an embedder; the suite uses several scopes in it
// and never closes it (register cleanup in newCatalog).
func RunCatalogTests(t *testing.T, newCatalog func(t *testing.T) kb.Catalog) {
	t.Run("InvalidScope", func(t *testing.T) { testInvalidScope(t, newCatalog(t)) })
	t.Run("Scoping", func(t *testing.T) { testScoping(t, newCatalog(t)) })
	t.Run("PutValidates", func(t *testing.T) { testPutValidates(t, newCatalog(t)) })
	t.Run("ListAndDetails", func(t *testing.T) { testListAndDetails(t, newCatalog(t)) })
	t.Run("Search", func(t *testing.T) { testSearch(t, newCatalog(t)) })
	t.Run("SearchFallback", func(t *testing.T) { testFallback(t, newCatalog(t)) })
	t.Run("Relationships", func(t *testing.T) { testRelationships(t, newCatalog(t)) })
	t.Run("ReplaceAndDelete", func(t *testing.T) { testReplaceDelete(t, newCatalog(t)) })
	t.Run("Backfill", func(t *testing.T) { testBackfill(t, newCatalog(t)) })
	t.Run("Discover", func(t *testing.T) { testDiscover(t, newCatalog(t)) })
	t.Run("DeterministicRankings", func(t *testing.T) { testDeterministic(t, newCatalog) })
}

var (
	scopeA = kb.Scope{TenantID: "tenant-a", Ontology: "sales"}
	scopeB = kb.Scope{TenantID: "tenant-a", Ontology: "finance"}
	scopeC = kb.Scope{TenantID: "tenant-c", Ontology: "sales"}
)

func put(t *testing.T, c kb.Catalog, s kb.Scope, ds ...domain.Dataset) {
	t.Helper()
	if err := c.Put(context.Background(), s, ds...); err != nil {
		t.Fatalf("Put(%s): %v", s, err)
	}
}

func names(ds []domain.Dataset) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}

func hitNames(hs []kb.DatasetHit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Dataset.Name
	}
	return out
}

func testInvalidScope(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	for _, s := range []kb.Scope{{}, {TenantID: "has space"}, {TenantID: "ok", Ontology: "bad ontology"}} {
		checks := map[string]error{}
		_, checks["Search"] = c.Search(ctx, s, "orders", 5)
		_, checks["Datasets"] = c.Datasets(ctx, s, "sales.orders")
		_, checks["Relationships"] = c.Relationships(ctx, s, "sales.orders")
		_, checks["List"] = c.List(ctx, s)
		checks["Put"] = c.Put(ctx, s, Sales()[0])
		checks["Delete"] = c.Delete(ctx, s, "sales.orders")
		_, checks["Backfill"] = c.Backfill(ctx, s)
		for op, err := range checks {
			if !errors.Is(err, domain.ErrInvalid) {
				t.Errorf("%s with scope %+v: err = %v, want domain.ErrInvalid", op, s, err)
			}
		}
	}
}

func testScoping(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	put(t, c, scopeA, Sales()...)
	secret := domain.Dataset{Name: "sales.orders", Source: "secret.orders_b", Description: "Finance orders ledger.",
		Fields: []domain.Field{{Name: "ledger_code", Type: "text"}}}
	put(t, c, scopeB, secret)
	other := domain.Dataset{Name: "sales.customers", Source: "other.customers", Description: "Other tenant's customers.",
		Fields:        []domain.Field{{Name: "vip_level", Type: "int"}},
		Relationships: []domain.Relationship{{From: "sales.customers", FromColumns: []string{"id"}, To: "sales.orders", ToColumns: []string{"customer_id"}}}}
	put(t, c, scopeC, other)

	listA, err := c.List(ctx, scopeA)
	if err != nil {
		t.Fatal(err)
	}
	if len(listA) != len(Sales()) {
		t.Errorf("List(A) = %v, want the %d sales datasets only", names(listA), len(Sales()))
	}
	listB, _ := c.List(ctx, scopeB)
	if len(listB) != 1 || listB[0].Source != "secret.orders_b" {
		t.Errorf("List(B) = %+v, want only B's orders", listB)
	}
	for _, d := range listA {
		if d.Source == "secret.orders_b" || d.Source == "other.customers" {
			t.Errorf("List(A) leaked %s from another scope", d.Source)
		}
	}
	got, _ := c.Datasets(ctx, scopeC, "sales.orders", "sales.customers")
	if len(got) != 1 || got[0].Source != "other.customers" {
		t.Errorf("Datasets(C) = %+v, want only C's customers", got)
	}
	hits, err := c.Search(ctx, scopeA, "ledger code vip level", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Dataset.Source == "secret.orders_b" || h.Dataset.Source == "other.customers" {
			t.Errorf("Search(A) leaked %s", h.Dataset.Source)
		}
	}
	hits, _ = c.Search(ctx, scopeB, "ledger", 10)
	if len(hits) != 1 || hits[0].Dataset.Source != "secret.orders_b" {
		t.Errorf("Search(B, ledger) = %v, want B's orders only", hitNames(hits))
	}
	rels, _ := c.Relationships(ctx, scopeC, "sales.customers")
	if len(rels) != 0 {
		t.Errorf("Relationships(C) = %+v: C has no orders, want none", rels)
	}
	relsB, _ := c.Relationships(ctx, scopeB, "sales.orders")
	if len(relsB) != 0 {
		t.Errorf("Relationships(B) = %+v, want none (A's joins must not leak)", relsB)
	}
	empty := kb.Scope{TenantID: "tenant-empty"}
	if l, err := c.List(ctx, empty); err != nil || len(l) != 0 {
		t.Errorf("List(empty scope) = %v, %v; want nothing, no error", l, err)
	}
	if h, err := c.Search(ctx, empty, "orders", 5); err != nil || len(h) != 0 {
		t.Errorf("Search(empty scope) = %v, %v; want nothing, no error", hitNames(h), err)
	}
	// Deleting in one scope leaves the same name in the others.
	if err := c.Delete(ctx, scopeB, "sales.orders"); err != nil {
		t.Fatal(err)
	}
	if d, _ := c.Datasets(ctx, scopeA, "sales.orders"); len(d) != 1 {
		t.Error("Delete in scope B removed A's sales.orders")
	}
}

func testPutValidates(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	bad := domain.Dataset{Name: "x.bad", Source: ""}
	if err := c.Put(ctx, scopeA, Sales()[0], bad); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("Put with an invalid dataset: err = %v, want domain.ErrInvalid", err)
	}
	dup := Sales()[0]
	if err := c.Put(ctx, scopeA, dup, dup); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("Put with a duplicate name: err = %v, want domain.ErrInvalid", err)
	}
	if l, _ := c.List(ctx, scopeA); len(l) != 0 {
		t.Errorf("failed Put stored %v, want nothing", names(l))
	}
}

func testListAndDetails(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	put(t, c, scopeA, Sales()...)
	l, err := c.List(ctx, scopeA)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(names(l)) || len(l) != len(Sales()) {
		t.Errorf("List = %v, want all %d sorted by name", names(l), len(Sales()))
	}
	got, err := c.Datasets(ctx, scopeA, "sales.products", "nope.unknown", "sales.orders")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sales.products", "sales.orders"}; !slices.Equal(names(got), want) {
		t.Fatalf("Datasets = %v, want %v (asked order, unknown left out)", names(got), want)
	}
	want := Sales()[1]
	if got[1].YAML() != want.YAML() {
		t.Errorf("stored definition differs:\n%s\nwant\n%s", got[1].YAML(), want.YAML())
	}
	if d, _ := c.Datasets(ctx, scopeA); len(d) != 0 {
		t.Errorf("Datasets() with no names = %v, want none", names(d))
	}
}

func testSearch(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	put(t, c, scopeA, Sales()...)
	cases := []struct {
		q    string
		want []string // all within the top len(want)+1
	}{
		{"total revenue per customer", []string{"sales.customers", "sales.orders"}},
		{"employees salaries", []string{"hr.employees"}},
		{"order items quantity", []string{"sales.order_items"}},     // snake_case split
		{"full name of each buyer", []string{"sales.customers"}},    // camelCase split
		{"unit price of products", []string{"sales.products"}},      // stemming + camelCase
		{"which shops are in which city", []string{"sales.stores"}}, // description words
		{"landing pages of website visits", []string{"web.web_sessions"}},
	}
	for _, tc := range cases {
		hits, err := c.Search(ctx, scopeA, tc.q, 5)
		if err != nil {
			t.Fatalf("Search(%q): %v", tc.q, err)
		}
		top := hitNames(hits)
		if len(top) > len(tc.want)+1 {
			top = top[:len(tc.want)+1]
		}
		for _, w := range tc.want {
			if !slices.Contains(top, w) {
				t.Errorf("Search(%q) top = %v, want %s among them", tc.q, top, w)
			}
		}
		for i := range hits {
			if hits[i].Fallback {
				t.Errorf("Search(%q): hit %s marked fallback", tc.q, hits[i].Dataset.Name)
			}
			if hits[i].YAML != hits[i].Dataset.YAML() {
				t.Errorf("Search(%q): hit %s YAML does not match its dataset", tc.q, hits[i].Dataset.Name)
			}
			if i > 0 && hits[i].Score > hits[i-1].Score {
				t.Errorf("Search(%q): scores not descending at %d: %v > %v", tc.q, i, hits[i].Score, hits[i-1].Score)
			}
		}
	}
	if hits, _ := c.Search(ctx, scopeA, "orders customers products stores", 2); len(hits) != 2 {
		t.Errorf("Search k=2 returned %d hits", len(hits))
	}
	// A misspelling no term matches: the vector side (character n-grams)
	// still finds the table.
	hits, _ := c.Search(ctx, scopeA, "employes", 3)
	if len(hits) == 0 || hits[0].Dataset.Name != "hr.employees" || hits[0].Fallback {
		t.Errorf("Search(misspelled) = %v, want hr.employees first (vector side)", hitNames(hits))
	}
}

func testFallback(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	put(t, c, scopeA, Sales()...)
	hits, err := c.Search(ctx, scopeA, "", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 3 {
		t.Fatalf("Search(empty query) = %v, want the first 3 of the list", hitNames(hits))
	}
	l, _ := c.List(ctx, scopeA)
	for i, h := range hits {
		if !h.Fallback || h.Dataset.Name != l[i].Name {
			t.Errorf("fallback hit %d = %s (fallback %v), want %s marked fallback", i, h.Dataset.Name, h.Fallback, l[i].Name)
		}
	}
}

func testRelationships(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	put(t, c, scopeA, Sales()...)
	rels, err := c.Relationships(ctx, scopeA, "sales.customers")
	if err != nil {
		t.Fatal(err)
	}
	// Defined on orders, pointing at customers: found from the customers side.
	if len(rels) != 1 || rels[0].From != "sales.orders" || rels[0].To != "sales.customers" || rels[0].JoinCondition() != "customer_id = id" {
		t.Errorf("Relationships(customers) = %+v, want orders.customer_id = customers.id", rels)
	}
	rels, _ = c.Relationships(ctx, scopeA, "sales.orders", "sales.customers")
	if len(rels) != 3 {
		t.Errorf("Relationships(orders, customers) = %+v, want 3 (customers, stores, order_items), each once", rels)
	}
	for i := 1; i < len(rels); i++ {
		a, b := rels[i-1], rels[i]
		if a.From > b.From || (a.From == b.From && a.To > b.To) {
			t.Errorf("relationships not sorted: %+v", rels)
		}
	}
	if rels, _ := c.Relationships(ctx, scopeA, "hr.employees"); len(rels) != 0 {
		t.Errorf("Relationships(employees) = %+v: its target does not exist, want none", rels)
	}
	if rels, _ := c.Relationships(ctx, scopeA, "web.web_sessions"); len(rels) != 0 {
		t.Errorf("Relationships(web_sessions) = %+v, want none", rels)
	}
}

func testReplaceDelete(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	put(t, c, scopeA, Sales()...)
	changed := Sales()[5] // stores
	changed.Description = "Warehouses holding inventory."
	changed.Fields = append(changed.Fields, domain.Field{Name: "capacity_m3", Type: "numeric"})
	put(t, c, scopeA, changed)
	if l, _ := c.List(ctx, scopeA); len(l) != len(Sales()) {
		t.Errorf("replace changed the count: %v", names(l))
	}
	d, _ := c.Datasets(ctx, scopeA, "sales.stores")
	if len(d) != 1 || d[0].Description != changed.Description {
		t.Fatalf("Datasets(stores) = %+v, want the new definition", d)
	}
	hits, _ := c.Search(ctx, scopeA, "warehouse inventory capacity", 1)
	if len(hits) != 1 || hits[0].Dataset.Name != "sales.stores" {
		t.Errorf("Search for the new definition = %v, want sales.stores", hitNames(hits))
	}
	if err := c.Delete(ctx, scopeA, "sales.customers", "no.such"); err != nil {
		t.Fatal(err)
	}
	if d, _ := c.Datasets(ctx, scopeA, "sales.customers"); len(d) != 0 {
		t.Error("deleted dataset still returned")
	}
	hits, _ = c.Search(ctx, scopeA, "customer full name buyer", 10)
	if slices.Contains(hitNames(hits), "sales.customers") {
		t.Error("deleted dataset still found by Search")
	}
	rels, _ := c.Relationships(ctx, scopeA, "sales.orders")
	for _, r := range rels {
		if r.To == "sales.customers" || r.From == "sales.customers" {
			t.Errorf("relationship to a deleted dataset returned: %+v", r)
		}
	}
}

func testBackfill(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	put(t, c, scopeA, Sales()...)
	if _, err := c.Backfill(ctx, scopeA); err != nil {
		t.Fatalf("Backfill: %v", err)
	}
	n, err := c.Backfill(ctx, scopeA)
	if err != nil || n != 0 {
		t.Errorf("second Backfill = %d, %v; want 0 (everything embedded)", n, err)
	}
	if n, err := c.Backfill(ctx, kb.Scope{TenantID: "tenant-empty"}); err != nil || n != 0 {
		t.Errorf("Backfill(empty scope) = %d, %v; want 0, nil", n, err)
	}
	hits, _ := c.Search(ctx, scopeA, "employes", 1)
	if len(hits) != 1 || hits[0].Dataset.Name != "hr.employees" {
		t.Errorf("vector search after Backfill = %v, want hr.employees", hitNames(hits))
	}
}

func testDiscover(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	put(t, c, scopeA, Sales()...)
	d, err := kb.Discover(ctx, c, scopeA, "revenue by customer", kb.DiscoverOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	got := d.Names()
	if len(got) != 3 || !slices.Contains(got, "sales.customers") || !slices.Contains(got, "sales.orders") {
		t.Fatalf("Discover = %v, want customers and orders among 3", got)
	}
	found := false
	for _, r := range d.JoinHints {
		if !slices.Contains(got, r.From) || !slices.Contains(got, r.To) {
			t.Errorf("join hint %+v leaves the hits %v", r, got)
		}
		if r.From == "sales.orders" && r.To == "sales.customers" {
			found = true
		}
	}
	if !found {
		t.Errorf("join hints %+v lack orders → customers", d.JoinHints)
	}
}
