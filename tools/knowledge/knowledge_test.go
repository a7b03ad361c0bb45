package knowledge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/docs"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools/knowledge"
)

var kbDocs = []docs.Document{
	{ID: "policies/revenue.md", Title: "Revenue recognition", Content: "Revenue is recognised when the order ships. Refunds reduce revenue in the month they are issued.", Source: "https://wiki.example.com/revenue"},
	{ID: "metrics/churn.md", Title: "Churn", Content: "A customer churns when the subscription is not renewed within 30 days."},
}

func newIndex(t *testing.T) *docs.Index {
	t.Helper()
	idx, err := docs.New(docs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idx.Close() })
	return idx
}

func tenantCtx(ctx context.Context, tenant string) context.Context {
	return agents.WithCallInfo(ctx, agents.CallInfo{TenantID: tenant, RunID: "r1", CallID: "c1"})
}

func call(t *testing.T, tool agents.Tool, ctx context.Context, args string) (agents.Result, error) {
	t.Helper()
	return tool.Call(ctx, json.RawMessage(args))
}

func TestSearchTool(t *testing.T) {
	t.Parallel()
	idx := newIndex(t)
	a, b := kb.Scope{TenantID: "tenant-a"}, kb.Scope{TenantID: "tenant-b"}
	for _, s := range []kb.Scope{a, b} {
		if err := idx.AddBatch(t.Context(), s, kbDocs); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Add(t.Context(), a, docs.Document{ID: "secret.md", Title: "Layoff plan", Content: "Refunds team will be restructured in March."}); err != nil {
		t.Fatal(err)
	}
	tool, err := knowledge.SearchTool(idx)
	if err != nil {
		t.Fatal(err)
	}
	spec := tool.Spec()
	if spec.Name != "kb_search" || spec.Permission != agents.PermRead || !spec.ParallelSafe {
		t.Errorf("spec = %+v", spec)
	}
	var schema struct {
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(spec.Schema, &schema); err != nil || fmt.Sprint(schema.Required) != "[query]" || schema.Properties["limit"]["maximum"] != float64(20) {
		t.Errorf("schema = %s", spec.Schema)
	}

	res, err := call(t, tool, tenantCtx(t.Context(), "tenant-b"), `{"query":"when are refunds booked"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := "1 of 1 matching knowledge-base documents for \"when are refunds booked\". Cite a passage you use as [n].\n\n" +
		"[1] Revenue recognition (policies/revenue.md, https://wiki.example.com/revenue)\n" +
		"    Revenue is recognised when the order ships. **Refunds** reduce revenue in the month they are issued."
	if res.Summary != want {
		t.Errorf("summary:\n%s\nwant:\n%s", res.Summary, want)
	}
	if len(res.Citations) != 1 {
		t.Fatalf("citations = %+v", res.Citations)
	}
	c := res.Citations[0]
	if c.Source != "kb" || c.DocumentID != "policies/revenue.md" || c.Title != "Revenue recognition" || c.URL != "https://wiki.example.com/revenue" ||
		c.Score <= 0 || c.Snippet != "Revenue is recognised when the order ships. Refunds reduce revenue in the month they are issued." {
		t.Errorf("citation = %+v", c)
	}
	p, ok := res.Payload.(knowledge.SearchPayload)
	if !ok || p.Total != 1 || len(p.Hits) != 1 || len(p.Hits[0].Snippets[0].Highlights) != 1 {
		t.Errorf("payload = %#v", res.Payload)
	}

	// Tenant A sees its own extra document; B never does.
	resA, err := call(t, tool, tenantCtx(t.Context(), "tenant-a"), `{"query":"refunds restructured layoff","limit":5}`)
	if err != nil || !strings.Contains(resA.Summary, "secret.md") {
		t.Errorf("tenant A: %v, %s", err, resA.Summary)
	}
	resB, _ := call(t, tool, tenantCtx(t.Context(), "tenant-b"), `{"query":"refunds restructured layoff","limit":5}`)
	if strings.Contains(resB.Summary, "secret") || strings.Contains(resB.Summary, "Layoff") || strings.Contains(fmt.Sprint(resB.Payload), "Layoff") {
		t.Errorf("tenant B sees A's document: %s", resB.Summary)
	}
	for _, c := range resB.Citations {
		if c.DocumentID == "secret.md" {
			t.Errorf("tenant B cites %+v", c)
		}
	}

	// No match.
	res, err = call(t, tool, tenantCtx(t.Context(), "tenant-b"), `{"query":"xylophone"}`)
	if err != nil || !strings.HasPrefix(res.Summary, "No knowledge-base documents match \"xylophone\"") || len(res.Citations) != 0 {
		t.Errorf("no match: %v, %q, %v", err, res.Summary, res.Citations)
	}
	// Schema validation happens before the search.
	for _, args := range []string{`{"query":""}`, `{"query":"x","limit":21}`, `{"limit":3}`, `{"query":"x","tenant":"tenant-a"}`} {
		if _, err := call(t, tool, tenantCtx(t.Context(), "tenant-b"), args); !errors.Is(err, agents.ErrInvalidArguments) {
			t.Errorf("%s: %v, want an argument error", args, err)
		}
	}
	// No tenant: refused.
	if _, err := call(t, tool, t.Context(), `{"query":"revenue"}`); err == nil {
		t.Error("a call without a tenant ran")
	}
}

func TestSearchToolScopeOptions(t *testing.T) {
	t.Parallel()
	idx := newIndex(t)
	sales := kb.Scope{TenantID: "tenant-a", Ontology: "sales"}
	if err := idx.AddBatch(t.Context(), sales, kbDocs); err != nil {
		t.Fatal(err)
	}
	// A fixed scope works without CallInfo and with the same tenant...
	fixed, err := knowledge.SearchTool(idx, knowledge.WithScope(sales))
	if err != nil {
		t.Fatal(err)
	}
	for _, ctx := range []context.Context{t.Context(), tenantCtx(t.Context(), "tenant-a")} {
		if res, err := call(t, fixed, ctx, `{"query":"churn"}`); err != nil || len(res.Citations) != 1 {
			t.Errorf("fixed scope: %v, %+v", err, res)
		}
	}
	// ...but refuses a run of another tenant.
	if _, err := call(t, fixed, tenantCtx(t.Context(), "tenant-b"), `{"query":"churn"}`); !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("other tenant with a fixed scope: %v", err)
	}
	// WithOntology combines the call's tenant with the ontology.
	ont, err := knowledge.SearchTool(idx, knowledge.WithOntology("sales"))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := call(t, ont, tenantCtx(t.Context(), "tenant-a"), `{"query":"churn"}`); err != nil || len(res.Citations) != 1 {
		t.Errorf("ontology option: %v, %+v", err, res)
	}
	plain, _ := knowledge.SearchTool(idx)
	if res, err := call(t, plain, tenantCtx(t.Context(), "tenant-a"), `{"query":"churn"}`); err != nil || len(res.Citations) != 0 {
		t.Errorf("tenant without the ontology sees the sales documents: %v, %+v", err, res)
	}
	if _, err := knowledge.SearchTool(idx, knowledge.WithScope(kb.Scope{})); err == nil {
		t.Error("invalid fixed scope accepted")
	}
	if _, err := knowledge.SearchTool(nil); err == nil {
		t.Error("nil searcher accepted")
	}
}

// The dataset catalog of package kb resolves the save_recipe datasets.
var _ knowledge.DatasetResolver = kb.Catalog(nil)

func newCatalog(t *testing.T, scope kb.Scope, ds ...domain.Dataset) *kb.MemoryCatalog {
	t.Helper()
	c := kb.NewMemoryCatalog(kb.CatalogOptions{})
	if err := c.Put(t.Context(), scope, ds...); err != nil {
		t.Fatal(err)
	}
	return c
}

var ordersDS = domain.Dataset{Name: "orders", Source: "public.orders", Fields: []domain.Field{{Name: "region", Type: "text"}, {Name: "total", Type: "numeric"}}}

func TestSaveRecipeToolDirect(t *testing.T) {
	t.Parallel()
	mem := recipes.New(nil, recipes.Options{})
	a := kb.Scope{TenantID: "tenant-a"}
	tool, err := knowledge.SaveRecipeTool(mem, newCatalog(t, a, ordersDS))
	if err != nil {
		t.Fatal(err)
	}
	if spec := tool.Spec(); spec.Name != "save_recipe" || spec.Permission != agents.PermWrite || spec.ParallelSafe {
		t.Errorf("spec = %+v", spec)
	}
	ctx := tenantCtx(t.Context(), "tenant-a")
	res, err := call(t, tool, ctx, `{"question":"Revenue by region","sql":["SELECT region, sum(total) FROM orders GROUP BY 1"],"datasets":["orders","orders"]}`)
	if err != nil {
		t.Fatal(err)
	}
	saved, ok := res.Payload.(knowledge.SavedRecipe)
	if !ok || saved.Fingerprint != recipes.Fingerprint([]domain.Dataset{ordersDS}) || saved.SuccessCount != 1 ||
		!strings.Contains(res.Summary, "Saved recipe "+saved.ID) || fmt.Sprint(res.Datasets) != "[orders]" {
		t.Errorf("result = %+v", res)
	}
	if got, err := mem.Get(t.Context(), a, saved.ID); err != nil || got.Question != "Revenue by region" {
		t.Errorf("stored = %+v, %v", got, err)
	}
	// Unknown datasets are refused, by name.
	if _, err := call(t, tool, ctx, `{"question":"q","sql":["SELECT 1"],"datasets":["orders","ghost"]}`); err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Errorf("unknown dataset: %v", err)
	}
	// Another tenant's datasets are unknown there, and nothing is saved
	// in tenant A.
	if _, err := call(t, tool, tenantCtx(t.Context(), "tenant-b"), `{"question":"q","sql":["SELECT 1"],"datasets":["orders"]}`); err == nil {
		t.Error("tenant B saved against tenant A's catalog")
	}
	if list, _ := mem.List(t.Context(), kb.Scope{TenantID: "tenant-b"}); len(list) != 0 {
		t.Errorf("tenant B has %d recipes", len(list))
	}
	for _, args := range []string{`{"question":"q","sql":[],"datasets":["orders"]}`, `{"question":"q","sql":["SELECT 1"]}`} {
		if _, err := call(t, tool, ctx, args); !errors.Is(err, agents.ErrInvalidArguments) {
			t.Errorf("%s: %v", args, err)
		}
	}
}

func drain(t *testing.T, seq iter.Seq2[agents.Event, error]) []agents.Event {
	t.Helper()
	var evs []agents.Event
	for ev, err := range seq {
		if err != nil {
			t.Fatalf("run error: %v", err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestSaveRecipeNeedsApproval runs save_recipe through the executor: the
// model's call stops the run with a confirmation request and saves
// nothing; the host's approval saves the recipe.
func TestSaveRecipeNeedsApproval(t *testing.T) {
	t.Parallel()
	mem := recipes.New(nil, recipes.Options{})
	a := kb.Scope{TenantID: "tenant-a"}
	tool, err := knowledge.SaveRecipeTool(mem, newCatalog(t, a, ordersDS))
	if err != nil {
		t.Fatal(err)
	}
	args := `{"question":"Revenue by region","sql":["SELECT region, sum(total) FROM orders GROUP BY 1"],"datasets":["orders"]}`
	m := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{ID: "s1", Name: "save_recipe", Args: args}}},
		{Text: "Saved."},
	}}
	e, err := agents.NewExecutor(agents.Config{Model: m, Tools: []agents.Tool{tool}})
	if err != nil {
		t.Fatal(err)
	}
	in := agents.Input{TenantID: "tenant-a", UserID: "u1", Message: agents.UserMessage("remember this")}
	var intr *agents.Interrupted
	for _, ev := range drain(t, e.Run(t.Context(), in)) {
		if i, ok := ev.(*agents.Interrupted); ok {
			intr = i
		}
	}
	if intr == nil || intr.Confirmation == nil || intr.Confirmation.Tool != "save_recipe" {
		t.Fatalf("no confirmation request: %+v", intr)
	}
	if list, _ := mem.List(t.Context(), a); len(list) != 0 {
		t.Fatalf("saved before approval: %+v", list)
	}
	var finished *agents.ToolCallFinished
	for _, ev := range drain(t, e.Approve(t.Context(), intr.Checkpoint, agents.Decision{Token: intr.Confirmation.Token, TenantID: "tenant-a", UserID: "u1"})) {
		if f, ok := ev.(*agents.ToolCallFinished); ok {
			finished = f
		}
	}
	list, _ := mem.List(t.Context(), a)
	if finished == nil || len(list) != 1 || list[0].Question != "Revenue by region" {
		t.Errorf("after approval: finished %+v, recipes %+v", finished, list)
	}
}
