package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/kbtest"
	"github.com/bichat-go/bichat/tools/catalog"
)

func newCatalog(t *testing.T) kb.Catalog {
	t.Helper()
	c := kb.NewMemoryCatalog(kb.CatalogOptions{NoEmbeddings: true})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.Put(ctx, kb.Scope{TenantID: "acme", Ontology: "sales"}, kbtest.Sales()...); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, kb.Scope{TenantID: "globex", Ontology: "sales"}, domain.Dataset{Name: "secret.payroll", Source: "secret.payroll", Fields: []domain.Field{{Name: "ssn", Type: "text"}}}); err != nil {
		t.Fatal(err)
	}
	return c
}

func call(t *testing.T, tool agents.Tool, ctx context.Context, args string) agents.Result {
	t.Helper()
	res, err := tool.Call(ctx, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): %v", tool.Spec().Name, args, err)
	}
	return res
}

func TestListDatasetsScopeFromCallContext(t *testing.T) {
	t.Parallel()
	cat := newCatalog(t)
	tool, err := catalog.ListDatasets(cat, catalog.WithOntology("sales"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "acme"})
	res := call(t, tool, ctx, `{}`)
	out := res.Payload.(catalog.ListOutput)
	if out.Count != len(kbtest.Sales()) || len(out.Datasets) != out.Count {
		t.Fatalf("count %d, %d entries; want %d", out.Count, len(out.Datasets), len(kbtest.Sales()))
	}
	if !strings.HasPrefix(res.Summary, "7 datasets:") || !strings.Contains(res.Summary, "- sales.orders: One row per order placed.") {
		t.Errorf("summary:\n%s", res.Summary)
	}
	if strings.Contains(res.Summary, "payroll") {
		t.Error("list leaked another tenant's dataset")
	}
	// Another tenant sees only its own.
	res = call(t, tool, agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "globex"}), `{}`)
	if out := res.Payload.(catalog.ListOutput); out.Count != 1 || out.Datasets[0].Name != "secret.payroll" {
		t.Errorf("globex list = %+v", out)
	}
	// No scope anywhere: a clear error.
	if _, err := tool.Call(context.Background(), json.RawMessage(`{}`)); !errors.Is(err, catalog.ErrNoScope) {
		t.Errorf("no scope: err = %v, want ErrNoScope", err)
	}
	// Unknown arguments are rejected by the schema.
	if _, err := tool.Call(ctx, json.RawMessage(`{"x":1}`)); err == nil {
		t.Error("unknown argument accepted")
	}
}

func TestListDatasetsTruncates(t *testing.T) {
	t.Parallel()
	tool, _ := catalog.ListDatasets(newCatalog(t), catalog.WithScope(kb.Scope{TenantID: "acme", Ontology: "sales"}), catalog.WithMaxList(2))
	res := call(t, tool, context.Background(), `{}`)
	if out := res.Payload.(catalog.ListOutput); !out.Truncated || out.Count != 7 || len(out.Datasets) != 7 {
		t.Errorf("payload = %+v, want all 7 and truncated", out)
	}
	if strings.Count(res.Summary, "\n- ") != 2 || !strings.Contains(res.Summary, "and 5 more") {
		t.Errorf("summary:\n%s", res.Summary)
	}
}

func TestGetDatasetDetails(t *testing.T) {
	t.Parallel()
	tool, err := catalog.GetDatasetDetails(newCatalog(t), catalog.WithScope(kb.Scope{TenantID: "acme", Ontology: "sales"}))
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, tool, context.Background(), `{"names":["sales.orders","sales.order","customers","sales.orders","secret.payroll"]}`)
	out := res.Payload.(catalog.DetailsOutput)
	if len(out.Definitions) != 1 || out.Definitions[0].YAML != kbtest.Sales()[1].YAML() {
		t.Fatalf("definitions = %+v", out.Definitions)
	}
	if !slices.Equal(res.Datasets, []string{"sales.orders"}) {
		t.Errorf("Datasets = %v", res.Datasets)
	}
	want := map[string]string{"sales.order": "sales.orders", "customers": "sales.customers", "secret.payroll": ""}
	if len(out.Unknown) != 3 {
		t.Fatalf("unknown = %+v, want 3", out.Unknown)
	}
	for _, u := range out.Unknown {
		w, ok := want[u.Name]
		if !ok {
			t.Errorf("unexpected unknown %q", u.Name)
			continue
		}
		if w == "" && len(u.DidYouMean) != 0 {
			t.Errorf("%q: suggestions %v, want none", u.Name, u.DidYouMean)
		}
		if w != "" && (len(u.DidYouMean) == 0 || u.DidYouMean[0] != w) {
			t.Errorf("%q: suggestions %v, want %s first", u.Name, u.DidYouMean, w)
		}
	}
	for _, s := range []string{"name: sales.orders", "on: customer_id = id", `unknown dataset "sales.order"; did you mean: sales.orders`, `unknown dataset "secret.payroll"`} {
		if !strings.Contains(res.Summary, s) {
			t.Errorf("summary lacks %q:\n%s", s, res.Summary)
		}
	}
	if strings.Contains(res.Summary, "ssn") {
		t.Error("details leaked another tenant's columns")
	}
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"names":[]}`)); err == nil {
		t.Error("empty names accepted")
	}
}
