package docs_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/docs"
)

var (
	tenantA = kb.Scope{TenantID: "tenant-a"}
	tenantB = kb.Scope{TenantID: "tenant-b"}
)

func sampleDocs() []docs.Document {
	return []docs.Document{
		{
			ID:       "policies/revenue.md",
			Title:    "Revenue recognition policy",
			Content:  "We recognise revenue when the order ships.\n\nRefunds reduce revenue in the month they are issued, not the month of the sale.",
			Tags:     []string{"finance", "policy"},
			Metadata: map[string]string{"owner": "finance-team"},
			Source:   "https://wiki.example.com/policies/revenue",
		},
		{
			ID:      "metrics/churn.md",
			Title:   "Churn definition",
			Content: "A customer churns when their subscription is not renewed within 30 days of expiry. Churn rate is churned customers over active customers at the start of the month.",
			Tags:    []string{"metrics"},
			Source:  "metrics/churn.md",
		},
		{
			ID:      "runbooks/warehouse.txt",
			Title:   "Warehouse refresh runbook",
			Content: "The data warehouse refreshes nightly at 02:00 UTC. If the orders table is stale, rerun the ingestion job.",
			Tags:    []string{"ops"},
		},
	}
}

func newIndex(t *testing.T, opts docs.Options) *docs.Index {
	t.Helper()
	idx, err := docs.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := idx.Close(); err != nil {
			t.Error(err)
		}
	})
	return idx
}

func ids(r docs.Results) []string {
	out := make([]string, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = h.Document.ID
	}
	return out
}

func search(t *testing.T, idx *docs.Index, scope kb.Scope, q string, opts docs.SearchOptions) docs.Results {
	t.Helper()
	r, err := idx.Search(t.Context(), scope, q, opts)
	if err != nil {
		t.Fatalf("search %q in %s: %v", q, scope, err)
	}
	return r
}

func TestSearchRanksAndReturnsStoredFields(t *testing.T) {
	t.Parallel()
	idx := newIndex(t, docs.Options{})
	if err := idx.AddBatch(t.Context(), tenantA, sampleDocs()); err != nil {
		t.Fatal(err)
	}
	r := search(t, idx, tenantA, "when is revenue recognised?", docs.SearchOptions{})
	if len(r.Hits) == 0 || r.Hits[0].Document.ID != "policies/revenue.md" {
		t.Fatalf("hits = %v, want policies/revenue.md first", ids(r))
	}
	h := r.Hits[0]
	want := docs.Document{
		ID: "policies/revenue.md", Title: "Revenue recognition policy", Tags: []string{"finance", "policy"},
		Metadata: map[string]string{"owner": "finance-team"}, Source: "https://wiki.example.com/policies/revenue",
	}
	if fmt.Sprint(h.Document) != fmt.Sprint(want) {
		t.Errorf("hit document = %+v, want %+v (content only on request)", h.Document, want)
	}
	if h.Score <= 0 || (len(r.Hits) > 1 && r.Hits[1].Score > h.Score) {
		t.Errorf("scores not descending and positive: %v", r.Hits)
	}
	if r.Total != uint64(len(r.Hits)) {
		t.Errorf("total %d, hits %d", r.Total, len(r.Hits))
	}
	// Stemming: "churned customers" matches "churns"/"customer".
	if got := ids(search(t, idx, tenantA, "churned customer", docs.SearchOptions{})); len(got) != 1 || got[0] != "metrics/churn.md" {
		t.Errorf("churn search = %v", got)
	}
	// A title word weighs more than a body word: "warehouse" is in one
	// title and one body (the revenue policy has none; the runbook both).
	r = search(t, idx, tenantA, "orders", docs.SearchOptions{IncludeContent: true})
	if len(r.Hits) != 2 || r.Hits[0].Document.Content == "" {
		t.Errorf("IncludeContent: hits %v, first content %q", ids(r), r.Hits[0].Document.Content)
	}
	// Tags are searched as words and filter exactly.
	if got := ids(search(t, idx, tenantA, "finance", docs.SearchOptions{})); !slices.Equal(got, []string{"policies/revenue.md"}) {
		t.Errorf("tag word search = %v", got)
	}
	if got := ids(search(t, idx, tenantA, "month", docs.SearchOptions{Tags: []string{"metrics"}})); !slices.Equal(got, []string{"metrics/churn.md"}) {
		t.Errorf("tag filter = %v, want only the churn definition", got)
	}
	if got := ids(search(t, idx, tenantA, "month", docs.SearchOptions{Tags: []string{"finance", "ops"}})); len(got) != 0 {
		t.Errorf("two tags no document has both = %v", got)
	}
	// Stop words only, and no words at all, find nothing without error.
	for _, q := range []string{"the of and", "", "   ", "?!"} {
		if r := search(t, idx, tenantA, q, docs.SearchOptions{}); len(r.Hits) != 0 {
			t.Errorf("query %q found %v", q, ids(r))
		}
	}
	// Query syntax is not interpreted.
	if got := ids(search(t, idx, tenantA, `+churn -revenue "ships AND`, docs.SearchOptions{})); len(got) != 2 {
		t.Errorf("operators in free text: %v", got)
	}
	// Limit.
	if got := ids(search(t, idx, tenantA, "the revenue churn warehouse", docs.SearchOptions{Limit: 2})); len(got) != 2 {
		t.Errorf("limit 2 returned %v", got)
	}
	for _, l := range []int{-1, docs.MaxLimit + 1} {
		if _, err := idx.Search(t.Context(), tenantA, "revenue", docs.SearchOptions{Limit: l}); err == nil {
			t.Errorf("limit %d accepted", l)
		}
	}
}

func TestFuzzyMatching(t *testing.T) {
	t.Parallel()
	idx := newIndex(t, docs.Options{})
	if err := idx.AddBatch(t.Context(), tenantA, sampleDocs()); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, idx, tenantA, "revnue", docs.SearchOptions{})); len(got) != 1 || got[0] != "policies/revenue.md" {
		t.Errorf("fuzzy revnue = %v", got)
	}
	if got := ids(search(t, idx, tenantA, "revnue", docs.SearchOptions{Exact: true})); len(got) != 0 {
		t.Errorf("exact revnue = %v, want nothing", got)
	}
	// The typo is highlighted where the corrected word occurs.
	r := search(t, idx, tenantA, "warehuse", docs.SearchOptions{})
	if len(r.Hits) != 1 || !strings.Contains(r.Hits[0].Snippets[0].Mark("[", "]"), "[warehouse]") {
		t.Errorf("fuzzy snippet: %+v", r.Hits)
	}
	// An exact match outranks a fuzzy one: "refund" is exact in the
	// revenue policy; add a document with a near miss ("refunt").
	if err := idx.Add(t.Context(), tenantA, docs.Document{ID: "typo.md", Title: "Notes", Content: "refunt handling"}); err != nil {
		t.Fatal(err)
	}
	// "refunt" is rare (one document), so it is also matched fuzzily;
	// "refunds" (stemmed "refund") is common enough to be exact only.
	got := ids(search(t, idx, tenantA, "refunt", docs.SearchOptions{}))
	if !slices.Equal(got, []string{"typo.md", "policies/revenue.md"}) {
		t.Errorf("refunt = %v, want the exact match before the fuzzy one", got)
	}
}

func TestSnippets(t *testing.T) {
	t.Parallel()
	idx := newIndex(t, docs.Options{})
	long := strings.Repeat("filler words about nothing in particular. ", 40) +
		"The gross margin is\n\n   revenue minus cost of goods sold, divided by revenue. " +
		strings.Repeat("more unrelated padding text here. ", 40) + "Margin appears again at the end."
	docsIn := []docs.Document{
		{ID: "margin.md", Title: "Gross margin", Content: long},
		{ID: "title-only.md", Title: "Quarterly planning", Content: "Budget owners meet every " + strings.Repeat("week ", 100)},
	}
	if err := idx.AddBatch(t.Context(), tenantA, docsIn); err != nil {
		t.Fatal(err)
	}
	r := search(t, idx, tenantA, "margin revenue", docs.SearchOptions{SnippetSize: 120})
	if len(r.Hits) != 1 {
		t.Fatalf("hits %v", ids(r))
	}
	sn := r.Hits[0].Snippets
	if len(sn) != 2 {
		t.Fatalf("snippets = %+v, want 2", sn)
	}
	first := sn[0].Mark("**", "**")
	if !strings.Contains(first, "**margin** is **revenue** minus cost of goods sold, divided by **revenue**") {
		t.Errorf("best snippet = %q", first)
	}
	if strings.Contains(sn[0].Text, "  ") || strings.Contains(sn[0].Text, "\n") {
		t.Errorf("whitespace not collapsed: %q", sn[0].Text)
	}
	if !sn[0].CutStart || !sn[0].CutEnd || sn[0].Start <= 0 || sn[0].End >= len(long) || len(sn[0].Text) > 140 {
		t.Errorf("snippet bounds: %+v (content %d bytes)", sn[0], len(long))
	}
	for _, h := range sn[0].Highlights {
		if w := strings.ToLower(sn[0].Text[h.Start:h.End]); w != "margin" && w != "revenue" {
			t.Errorf("highlight %q is not a query word", w)
		}
	}
	if !strings.Contains(sn[1].Mark("<", ">"), "<Margin> appears again at the end.") || sn[1].End != len(long) || sn[1].CutEnd {
		t.Errorf("second snippet = %+v", sn[1])
	}
	if r := search(t, idx, tenantA, "margin", docs.SearchOptions{Snippets: -1}); len(r.Hits[0].Snippets) != 0 {
		t.Errorf("Snippets -1 still returned %v", r.Hits[0].Snippets)
	}
	// Only the title matched: the lead of the content, unhighlighted.
	r = search(t, idx, tenantA, "quarterly", docs.SearchOptions{SnippetSize: 60})
	if len(r.Hits) != 1 || len(r.Hits[0].Snippets) != 1 {
		t.Fatalf("title-only hits %+v", r.Hits)
	}
	lead := r.Hits[0].Snippets[0]
	if lead.Start != 0 || !strings.HasPrefix(lead.Text, "Budget owners meet every week") || len(lead.Highlights) != 0 || !lead.CutEnd || lead.CutStart || len(lead.Text) > 60 {
		t.Errorf("lead snippet = %+v", lead)
	}
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"memory", "disk"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			opts := docs.Options{}
			if mode == "disk" {
				opts.Dir = t.TempDir()
			}
			idx := newIndex(t, opts)
			ctx := t.Context()
			ontA1 := kb.Scope{TenantID: "tenant-a", Ontology: "sales"}
			// The same documents in both tenants (and an ontology of A).
			for _, s := range []kb.Scope{tenantA, tenantB, ontA1} {
				if err := idx.AddBatch(ctx, s, sampleDocs()); err != nil {
					t.Fatal(err)
				}
			}
			secret := docs.Document{ID: "secret.md", Title: "Acquisition plan", Content: "Project nightingale acquires a competitor."}
			if err := idx.Add(ctx, tenantA, secret); err != nil {
				t.Fatal(err)
			}
			for _, s := range []kb.Scope{tenantB, ontA1, {TenantID: "tenant-c"}} {
				for _, q := range []string{"nightingale", "acquisition plan", "nightingal"} {
					if r := search(t, idx, s, q, docs.SearchOptions{}); len(r.Hits) != 0 || r.Total != 0 {
						t.Errorf("%s sees %v for %q", s, ids(r), q)
					}
				}
				if _, err := idx.Get(ctx, s, "secret.md"); !errors.Is(err, domain.ErrNotFound) {
					t.Errorf("%s Get(secret.md) = %v, want not found", s, err)
				}
				if n, err := idx.Delete(ctx, s, "secret.md"); err != nil || n != 0 {
					t.Errorf("%s Delete(secret.md) = %d, %v", s, n, err)
				}
			}
			if d, err := idx.Get(ctx, tenantA, "secret.md"); err != nil || d.Content != secret.Content {
				t.Errorf("owner Get = %+v, %v", d, err)
			}
			// Deleting the shared id in A leaves B's copy.
			if n, err := idx.Delete(ctx, tenantA, "policies/revenue.md"); err != nil || n != 1 {
				t.Fatalf("delete in A = %d, %v", n, err)
			}
			if got := ids(search(t, idx, tenantA, "revenue", docs.SearchOptions{})); len(got) != 0 {
				t.Errorf("A still finds %v", got)
			}
			for _, s := range []kb.Scope{tenantB, ontA1} {
				if got := ids(search(t, idx, s, "revenue", docs.SearchOptions{})); !slices.Equal(got, []string{"policies/revenue.md"}) {
					t.Errorf("%s finds %v after A's delete", s, got)
				}
			}
			// Stats count per scope.
			for s, want := range map[kb.Scope]uint64{tenantA: 3, tenantB: 3, ontA1: 3, {TenantID: "tenant-c"}: 0} {
				st, err := idx.Stats(ctx, s)
				if err != nil || st.Documents != want {
					t.Errorf("%s stats = %+v, %v; want %d documents", s, st, err, want)
				}
			}
			// Dropping A leaves B and A's ontology; A can start again.
			if err := idx.Drop(ctx, tenantA); err != nil {
				t.Fatal(err)
			}
			if got := ids(search(t, idx, tenantA, "nightingale churn", docs.SearchOptions{})); len(got) != 0 {
				t.Errorf("dropped scope still finds %v", got)
			}
			for _, s := range []kb.Scope{tenantB, ontA1} {
				if st, _ := idx.Stats(ctx, s); st.Documents != 3 {
					t.Errorf("drop of A changed %s: %d documents", s, st.Documents)
				}
			}
			if mode == "disk" {
				entries, _ := os.ReadDir(opts.Dir)
				if len(entries) != 2 {
					t.Errorf("%d scope directories after the drop, want 2", len(entries))
				}
			}
			if err := idx.Add(ctx, tenantA, secret); err != nil {
				t.Fatal(err)
			}
			if st, _ := idx.Stats(ctx, tenantA); st.Documents != 1 {
				t.Errorf("after drop and add: %d documents", st.Documents)
			}
			// Invalid scopes are refused everywhere.
			bad := kb.Scope{TenantID: "has space"}
			if _, err := idx.Search(ctx, bad, "revenue", docs.SearchOptions{}); !errors.Is(err, domain.ErrInvalid) {
				t.Errorf("search with bad scope: %v", err)
			}
			if err := idx.Add(ctx, kb.Scope{}, secret); !errors.Is(err, domain.ErrInvalid) {
				t.Errorf("add with empty scope: %v", err)
			}
		})
	}
}

func TestDocumentIDValidation(t *testing.T) {
	t.Parallel()
	idx := newIndex(t, docs.Options{})
	ctx := t.Context()
	bad := map[string]string{
		"empty":       "",
		"too long":    strings.Repeat("x", docs.MaxIDLength+1),
		"not utf-8":   "a\xffb",
		"leading sp":  " a.md",
		"trailing sp": "a.md ",
		"newline":     "a\nb",
		"nul":         "a\x00b",
	}
	for name, id := range bad {
		if err := idx.Add(ctx, tenantA, docs.Document{ID: id, Title: "t", Content: "c"}); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: Add = %v, want ErrInvalid", name, err)
		}
		if _, err := idx.Delete(ctx, tenantA, id); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: Delete = %v, want ErrInvalid", name, err)
		}
		if _, err := idx.Get(ctx, tenantA, id); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: Get = %v, want ErrInvalid", name, err)
		}
	}
	// One invalid document rejects the whole batch.
	batch := append(sampleDocs(), docs.Document{ID: "empty.md"})
	err := idx.AddBatch(ctx, tenantA, batch)
	if !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "empty.md") {
		t.Errorf("batch with an empty document: %v", err)
	}
	if st, _ := idx.Stats(ctx, tenantA); st.Documents != 0 {
		t.Errorf("rejected batch indexed %d documents", st.Documents)
	}
	for _, id := range []string{"a", "guides/Revenue Policy (2025).md", "ÜBERSICHT/übersicht.md", strings.Repeat("y", docs.MaxIDLength), "42"} {
		if err := idx.Add(ctx, tenantA, docs.Document{ID: id, Content: "ok"}); err != nil {
			t.Errorf("valid id %q: %v", id, err)
		}
		if d, err := idx.Get(ctx, tenantA, id); err != nil || d.ID != id {
			t.Errorf("Get(%q) = %+v, %v", id, d, err)
		}
	}
}

func TestAddReplacesAndDeleteCounts(t *testing.T) {
	t.Parallel()
	idx := newIndex(t, docs.Options{})
	ctx := t.Context()
	if n, err := idx.Delete(ctx, tenantA, "nothing-here"); err != nil || n != 0 {
		t.Errorf("delete in an empty scope = %d, %v", n, err)
	}
	if err := idx.AddBatch(ctx, tenantA, sampleDocs()); err != nil {
		t.Fatal(err)
	}
	// Same id replaces: the old words are gone, the new ones found.
	if err := idx.Add(ctx, tenantA, docs.Document{ID: "metrics/churn.md", Title: "Churn", Content: "Logo attrition, measured quarterly."}); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, idx, tenantA, "subscription", docs.SearchOptions{})); len(got) != 0 {
		t.Errorf("replaced content still found: %v", got)
	}
	if got := ids(search(t, idx, tenantA, "attrition", docs.SearchOptions{})); !slices.Equal(got, []string{"metrics/churn.md"}) {
		t.Errorf("new content: %v", got)
	}
	// Repeated ids in one batch: the last wins.
	if err := idx.AddBatch(ctx, tenantA, []docs.Document{{ID: "dup", Content: "first version"}, {ID: "dup", Content: "second version"}}); err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Get(ctx, tenantA, "dup"); d.Content != "second version" {
		t.Errorf("dup = %q", d.Content)
	}
	if st, _ := idx.Stats(ctx, tenantA); st.Documents != 4 {
		t.Errorf("documents = %d, want 4", st.Documents)
	}
	n, err := idx.Delete(ctx, tenantA, "dup", "metrics/churn.md", "dup", "unknown")
	if err != nil || n != 2 {
		t.Errorf("delete = %d, %v; want 2", n, err)
	}
	if _, err := idx.Get(ctx, tenantA, "dup"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("deleted document: %v", err)
	}
	if st, _ := idx.Stats(ctx, tenantA); st.Documents != 2 || st.MemoryBytes == 0 || st.DiskBytes != 0 {
		t.Errorf("stats = %+v, want 2 documents in memory", st)
	}
	// Deleted documents can come back.
	if err := idx.Add(ctx, tenantA, docs.Document{ID: "dup", Content: "third"}); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, idx, tenantA, "third", docs.SearchOptions{})); !slices.Equal(got, []string{"dup"}) {
		t.Errorf("re-added: %v", got)
	}
}

// sliceSource yields docs, then err when set.
type sliceSource struct {
	docs []docs.Document
	err  error
}

func (s sliceSource) Documents(ctx context.Context) iter.Seq2[docs.Document, error] {
	return func(yield func(docs.Document, error) bool) {
		for _, d := range s.docs {
			if !yield(d, nil) {
				return
			}
		}
		if s.err != nil {
			yield(docs.Document{}, s.err)
		}
	}
}

func TestRebuild(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"memory", "disk"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			opts := docs.Options{BatchSize: 2}
			if mode == "disk" {
				opts.Dir = t.TempDir()
			}
			idx := newIndex(t, opts)
			ctx := t.Context()
			if err := idx.AddBatch(ctx, tenantA, sampleDocs()); err != nil {
				t.Fatal(err)
			}
			if err := idx.AddBatch(ctx, tenantB, sampleDocs()); err != nil {
				t.Fatal(err)
			}
			next := []docs.Document{
				{ID: "metrics/churn.md", Title: "Churn", Content: "Churn v2: cancellations over starting customers."},
				{ID: "metrics/nrr.md", Title: "Net revenue retention", Content: "NRR compares recurring revenue of a cohort year over year."},
				{ID: "metrics/arr.md", Title: "ARR", Content: "Annual recurring revenue."},
			}
			st, err := idx.Rebuild(ctx, tenantA, sliceSource{docs: next})
			if err != nil || st.Documents != 3 {
				t.Fatalf("rebuild = %+v, %v", st, err)
			}
			if got := ids(search(t, idx, tenantA, "warehouse", docs.SearchOptions{})); len(got) != 0 {
				t.Errorf("documents missing from the source survived: %v", got)
			}
			if got := ids(search(t, idx, tenantA, "recurring", docs.SearchOptions{})); len(got) != 2 {
				t.Errorf("rebuilt documents: %v", got)
			}
			if got := ids(search(t, idx, tenantB, "warehouse", docs.SearchOptions{})); len(got) != 1 {
				t.Errorf("rebuild of A touched B: %v", got)
			}
			// Failures leave the index as it was.
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			for name, run := range map[string]func() error{
				"source error": func() error {
					_, err := idx.Rebuild(ctx, tenantA, sliceSource{docs: sampleDocs(), err: errors.New("disk on fire")})
					if err == nil || !strings.Contains(err.Error(), "disk on fire") {
						return fmt.Errorf("error = %v", err)
					}
					return nil
				},
				"invalid document": func() error {
					_, err := idx.Rebuild(ctx, tenantA, sliceSource{docs: append(sampleDocs(), docs.Document{ID: " bad"})})
					if !errors.Is(err, domain.ErrInvalid) {
						return fmt.Errorf("error = %v", err)
					}
					return nil
				},
				"cancelled": func() error {
					_, err := idx.Rebuild(cancelled, tenantA, sliceSource{docs: sampleDocs()})
					if !errors.Is(err, context.Canceled) {
						return fmt.Errorf("error = %v", err)
					}
					return nil
				},
			} {
				if err := run(); err != nil {
					t.Errorf("%s: %v", name, err)
				}
				if st, _ := idx.Stats(ctx, tenantA); st.Documents != 3 {
					t.Errorf("%s: %d documents after a failed rebuild, want 3", name, st.Documents)
				}
				if got := ids(search(t, idx, tenantA, "warehouse", docs.SearchOptions{})); len(got) != 0 {
					t.Errorf("%s: failed rebuild leaked %v", name, got)
				}
			}
			// Rebuild of a scope that had nothing, and to empty.
			fresh := kb.Scope{TenantID: "tenant-new"}
			if st, err := idx.Rebuild(ctx, fresh, sliceSource{docs: next[:1]}); err != nil || st.Documents != 1 {
				t.Errorf("rebuild of a new scope = %+v, %v", st, err)
			}
			if st, err := idx.Rebuild(ctx, fresh, sliceSource{}); err != nil || st.Documents != 0 {
				t.Errorf("rebuild to empty = %+v, %v", st, err)
			}
			if mode == "disk" {
				if err := idx.Compact(ctx, tenantA); err != nil {
					t.Fatal(err)
				}
				st, _ := idx.Stats(ctx, tenantA)
				if st.DiskBytes == 0 {
					t.Errorf("disk stats = %+v", st)
				}
				if err := idx.Close(); err != nil {
					t.Fatal(err)
				}
				entries, _ := os.ReadDir(opts.Dir)
				for _, e := range entries {
					if strings.Contains(e.Name(), ".rebuild-") || strings.HasSuffix(e.Name(), ".old") {
						t.Errorf("left over %s", e.Name())
					}
				}
				// A new Index on the same directory has the rebuilt documents.
				again := newIndex(t, docs.Options{Dir: opts.Dir})
				if got := ids(search(t, again, tenantA, "recurring", docs.SearchOptions{})); len(got) != 2 {
					t.Errorf("reopened: %v", got)
				}
				if got := ids(search(t, again, tenantB, "warehouse", docs.SearchOptions{})); len(got) != 1 {
					t.Errorf("reopened B: %v", got)
				}
			}
		})
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	idx, err := docs.New(docs.Options{Dir: filepath.Join(t.TempDir(), "kb")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := idx.AddBatch(ctx, tenantA, sampleDocs()); err != nil {
		t.Fatal(err)
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := idx.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := idx.Search(ctx, tenantA, "revenue", docs.SearchOptions{}); !errors.Is(err, docs.ErrClosed) {
		t.Errorf("search after close: %v", err)
	}
	if err := idx.Add(ctx, tenantA, sampleDocs()[0]); !errors.Is(err, docs.ErrClosed) {
		t.Errorf("add after close: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	idx := newIndex(t, docs.Options{})
	ctx := t.Context()
	if err := idx.AddBatch(ctx, tenantA, sampleDocs()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 20 {
				scope := kb.Scope{TenantID: fmt.Sprintf("t%d", g)}
				id := fmt.Sprintf("doc-%d", i)
				if err := idx.Add(ctx, scope, docs.Document{ID: id, Content: fmt.Sprintf("tenant %d note %d", g, i)}); err != nil {
					t.Error(err)
					return
				}
				if _, err := idx.Search(ctx, tenantA, "revenue", docs.SearchOptions{}); err != nil {
					t.Error(err)
					return
				}
				if i%5 == 0 {
					if _, err := idx.Rebuild(ctx, tenantA, sliceSource{docs: sampleDocs()}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for g := range 4 {
		st, err := idx.Stats(ctx, kb.Scope{TenantID: fmt.Sprintf("t%d", g)})
		if err != nil || st.Documents != 20 {
			t.Errorf("t%d: %+v, %v", g, st, err)
		}
		r := search(t, idx, kb.Scope{TenantID: fmt.Sprintf("t%d", g)}, "tenant", docs.SearchOptions{Limit: 100})
		for _, h := range r.Hits {
			if !strings.HasPrefix(h.Document.ID, "doc-") {
				t.Errorf("t%d sees %s", g, h.Document.ID)
			}
		}
	}
}
