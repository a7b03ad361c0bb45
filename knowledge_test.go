package bichat_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	bctx "github.com/bichat-go/bichat/context"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/docs"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/bichat-go/bichat/providers/scripted"
)

// retailCatalog holds three related datasets and one unrelated one in
// acme's scope, and a decoy with the same names in another tenant.
func retailCatalog(t *testing.T) *kb.MemoryCatalog {
	t.Helper()
	cat := kb.NewMemoryCatalog(kb.CatalogOptions{})
	t.Cleanup(func() { cat.Close() })
	orders := domain.Dataset{Name: "sales.orders", Source: "sales.orders", Description: "One row per customer order with its revenue.",
		Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "customer_id", Type: "bigint"},
			{Name: "revenue", Type: "numeric"}, {Name: "ordered_at", Type: "date"}},
		Relationships: []domain.Relationship{{From: "sales.orders", FromColumns: []string{"customer_id"}, To: "sales.customers", ToColumns: []string{"id"}}}}
	customers := domain.Dataset{Name: "sales.customers", Source: "sales.customers", Description: "Customers and their region.",
		Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "region", Type: "text"}}}
	staff := domain.Dataset{Name: "hr.employees", Source: "hr.employees", Description: "Employees, salaries and departments.",
		Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "salary", Type: "numeric"}}}
	if err := cat.Put(t.Context(), kb.Scope{TenantID: "acme"}, orders, customers, staff); err != nil {
		t.Fatal(err)
	}
	decoy := orders
	decoy.Description = "GLOBEX SECRET order table"
	if err := cat.Put(t.Context(), kb.Scope{TenantID: "globex"}, decoy); err != nil {
		t.Fatal(err)
	}
	return cat
}

// sqlTool stands in for query_database: it records the datasets it reads.
func sqlTool() agents.Tool {
	type in struct {
		SQL string `json:"sql"`
	}
	return agents.MustTool("query_database", "Runs one read-only SELECT.", func(_ context.Context, a in) (agents.Result, error) {
		return agents.Result{Summary: "2 rows: EMEA 1200, APAC 800", Datasets: []string{"sales.orders", "sales.customers"}}, nil
	})
}

type discoveryLog struct {
	mu  sync.Mutex
	evs []bichat.DiscoveryEvent
	cc  []hooks.ContextCompile
}

func (l *discoveryLog) Handle(_ context.Context, e hooks.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch v := e.(type) {
	case *bichat.DiscoveryEvent:
		l.evs = append(l.evs, *v)
	case *hooks.ContextCompile:
		l.cc = append(l.cc, *v)
	}
	return nil
}

func TestDiscoveryFeedsTheContext(t *testing.T) {
	t.Parallel()
	cat := retailCatalog(t)
	mem := recipes.New(kb.NewHashEmbedder(kb.HashEmbedderOptions{}), recipes.Options{})
	index, err := docs.New(docs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { index.Close() })
	if err := index.Add(t.Context(), kb.Scope{TenantID: "acme"}, docs.Document{ID: "rev-def", Title: "Revenue definition",
		Content: "Revenue is counted when an order ships, net of refunds."}); err != nil {
		t.Fatal(err)
	}
	model := &scripted.Model{Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == domain.RoleUser && strings.Contains(last.Text(), "revenue by region") {
			if toolResultFor(*req, "q1") == "" {
				return scripted.Turn{ToolCalls: []scripted.Call{{ID: "q1", Name: "query_database", Args: `{"sql":"SELECT c.region, sum(o.revenue) FROM sales.orders o JOIN sales.customers c ON c.id = o.customer_id GROUP BY 1"}`}}}, nil
			}
		}
		return scripted.Turn{Text: "EMEA leads."}, nil
	}}
	log := &discoveryLog{}
	f := newFixture(t, model, []agents.Tool{sqlTool()}, func(c *bichat.Config) {
		c.Knowledge = bichat.Knowledge{Catalog: cat, Recipes: mem, Documents: index}
		if _, err := c.Bus.Subscribe(log); err != nil {
			t.Fatal(err)
		}
	})
	sess := f.session(t, alice, "revenue")
	items := collect(t, f.svc.Send(t.Context(), alice, sess.ID, "What is the revenue by region?",
		bichat.WithState(bctx.State{Page: "Sales dashboard", Dataset: "sales.orders"})))
	if _, fin := finished(t, items); fin == nil {
		t.Fatalf("run did not finish: %s", describe(items))
	}
	first := model.Requests()[0]
	for _, want := range []string{"name: sales.orders", "name: sales.customers", "customer_id = id", "Revenue is counted when an order ships", "Sales dashboard"} {
		if !strings.Contains(first.System, want) && !requestContains(first, want) {
			t.Errorf("first request lacks %q:\n%s", want, first.System)
		}
	}
	if requestContains(first, "GLOBEX") || strings.Contains(first.System, "GLOBEX") {
		t.Fatal("another tenant's dataset reached the model")
	}
	if first.Cache.SystemPrefix == 0 {
		t.Error("no prompt-cache breakpoint in the system prompt")
	}
	log.mu.Lock()
	if len(log.evs) != 1 || log.evs[0].Error != "" || !slices.Contains(log.evs[0].Datasets, "sales.orders") || !slices.Contains(log.evs[0].Datasets, "sales.customers") || log.evs[0].JoinHints != 1 || log.evs[0].Documents != 1 {
		t.Errorf("discovery events = %+v", log.evs)
	}
	if len(log.cc) != 2 || log.cc[0].Tokens == 0 || log.cc[0].Budget == 0 || log.cc[0].Meta.SessionID != sess.ID {
		t.Errorf("context.compile events = %+v", log.cc)
	}
	log.mu.Unlock()

	// The user marks the answer good: the recipe comes back for a similar
	// question.
	msgs := f.messages(t, alice, sess.ID)
	answer := msgs[len(msgs)-1]
	if _, err := f.svc.SaveRecipe(t.Context(), bob, answer.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("bob saved alice's recipe: %v", err)
	}
	if _, err := f.svc.SaveRecipe(t.Context(), aliceViewer, answer.ID); !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("viewer saved a recipe: %v", err)
	}
	if _, err := f.svc.SaveRecipe(t.Context(), alice, msgs[0].ID); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("saved a user message as recipe: %v", err)
	}
	r, err := f.svc.SaveRecipe(t.Context(), alice, answer.ID)
	if err != nil {
		t.Fatalf("SaveRecipe: %v", err)
	}
	if r.Question != "What is the revenue by region?" || len(r.SQL) != 1 || !strings.Contains(r.SQL[0], "GROUP BY") ||
		strings.Join(r.Datasets, ",") != "sales.customers,sales.orders" {
		t.Fatalf("recipe = %+v", r)
	}
	collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Show revenue per region for 2025"))
	last := model.Requests()[len(model.Requests())-1]
	if !strings.Contains(last.System, "GROUP BY") && !requestContains(last, "GROUP BY") {
		t.Errorf("the recipe did not reach the next question:\n%s", last.System)
	}
	if strings.Contains(last.System, "verified query") || requestContains(last, "verified query") {
		t.Errorf("an unverified recipe is shown as verified:\n%s", last.System)
	}
	// The host marks it verified (a checked query): the model is told.
	if _, err := mem.SetVerified(t.Context(), kb.Scope{TenantID: "acme"}, r.ID, true); err != nil {
		t.Fatal(err)
	}
	collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Show revenue per region for 2024"))
	last = model.Requests()[len(model.Requests())-1]
	if !strings.Contains(last.System, "verified query") && !requestContains(last, "verified query") {
		t.Errorf("the verified recipe is not marked verified:\n%s", last.System)
	}
}

func requestContains(req agents.Request, s string) bool {
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if strings.Contains(p.Text, s) || (p.ToolResult != nil && strings.Contains(p.ToolResult.Content, s)) {
				return true
			}
		}
	}
	return false
}

func TestSaveRecipeNeedsSQLAndMemory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, brainModel(), nil)
	sess := f.session(t, alice, "plain")
	collect(t, f.svc.Send(t.Context(), alice, sess.ID, "hello"))
	msgs := f.messages(t, alice, sess.ID)
	if _, err := f.svc.SaveRecipe(t.Context(), alice, msgs[1].ID); !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "Knowledge.Recipes") {
		t.Errorf("without recipe memory: %v", err)
	}
	g := newFixture(t, brainModel(), nil, func(c *bichat.Config) {
		c.Knowledge.Recipes = recipes.New(nil, recipes.Options{})
	})
	sess = g.session(t, alice, "plain")
	collect(t, g.svc.Send(t.Context(), alice, sess.ID, "hello"))
	msgs = g.messages(t, alice, sess.ID)
	if _, err := g.svc.SaveRecipe(t.Context(), alice, msgs[1].ID); !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "query_database") {
		t.Errorf("answer without SQL: %v", err)
	}
}

// failingCatalog fails every call: discovery must report it and the run
// must go on.
type failingCatalog struct{ kb.Catalog }

func (failingCatalog) Search(context.Context, kb.Scope, string, int) ([]kb.DatasetHit, error) {
	return nil, fmt.Errorf("catalog backend down")
}

func TestDiscoveryFailureDoesNotFailTheRun(t *testing.T) {
	t.Parallel()
	log := &discoveryLog{}
	f := newFixture(t, brainModel(), nil, func(c *bichat.Config) {
		c.Knowledge.Catalog = failingCatalog{}
		if _, err := c.Bus.Subscribe(log); err != nil {
			t.Fatal(err)
		}
	})
	sess := f.session(t, alice, "x")
	if _, fin := finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "revenue?"))); fin == nil {
		t.Fatal("run failed because discovery failed")
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.evs) != 1 || !strings.Contains(log.evs[0].Error, "catalog backend down") {
		t.Errorf("discovery events = %+v", log.evs)
	}
}

func TestContextDisabledUsesPlainRequests(t *testing.T) {
	t.Parallel()
	log := &discoveryLog{}
	f := newFixture(t, brainModel(), nil, func(c *bichat.Config) {
		c.Context.Disable = true
		if _, err := c.Bus.Subscribe(log); err != nil {
			t.Fatal(err)
		}
	})
	sess := f.session(t, alice, "x")
	collect(t, f.svc.Send(t.Context(), alice, sess.ID, "hello"))
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.cc) != 0 {
		t.Errorf("compiler ran although disabled: %d events", len(log.cc))
	}
	if req := f.model.Requests()[0]; req.System != "You are a test analyst." || req.Cache.SystemPrefix != 0 {
		t.Errorf("plain request = %+v", req)
	}
}

func TestContextRulesArePinned(t *testing.T) {
	t.Parallel()
	f := newFixture(t, brainModel(), nil, func(c *bichat.Config) {
		c.Context.Rules = []string{"Never reveal salaries."}
	})
	sess := f.session(t, alice, "x")
	collect(t, f.svc.Send(t.Context(), alice, sess.ID, "hello"))
	req := f.model.Requests()[0]
	if !strings.Contains(req.System, "You are a test analyst.") || !strings.Contains(req.System, "Never reveal salaries.") {
		t.Errorf("system = %q", req.System)
	}
	if req.Cache.SystemPrefix == 0 || req.Cache.SystemPrefix > len(req.System) {
		t.Errorf("system prefix %d of %d", req.Cache.SystemPrefix, len(req.System))
	}
}

func TestContextTooLongFailsTheMessageClearly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, brainModel(), nil, func(c *bichat.Config) {
		c.Context.Policy = func(m agents.Model) bctx.Policy {
			return bctx.Policy{ContextWindow: 60, CompletionReserve: 10, Overflow: bctx.OverflowError}
		}
	})
	sess := f.session(t, alice, "long")
	_, rf, err := failedRun(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, strings.Repeat("Revenue by region please. ", 40))))
	if !errors.Is(err, bctx.ErrBudgetExceeded) || rf == nil || rf.Code != "context_too_long" || !strings.Contains(rf.Message, "start a new conversation") {
		t.Fatalf("RunFailed = %+v, err = %v", rf, err)
	}
	msgs := f.messages(t, alice, sess.ID)
	last := msgs[len(msgs)-1]
	if last.Status != domain.StatusFailed || last.Metadata.Error == nil || last.Metadata.Error.Code != "context_too_long" {
		t.Fatalf("message %s %+v", last.Status, last.Metadata.Error)
	}
	if f.model.Calls() != 0 {
		t.Errorf("the model was called %d times", f.model.Calls())
	}
}
