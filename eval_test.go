package bichat_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/agents/eval"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// evalWorld is a service over the SQLite retail sample with its catalog
// and the real data tools, driven by a scripted analyst that answers each
// question with the statements in answers (in order, one per turn).
type evalWorld struct {
	f   *fixture
	db  *sqlite.DB
	cat *kb.MemoryCatalog

	mu         sync.Mutex
	discovered map[string][]string // by session id, from the run's DiscoveryEvent
}

func newEvalWorld(t *testing.T, answers map[string][]string) *evalWorld {
	t.Helper()
	path := filepath.Join(t.TempDir(), "retail.db")
	if err := sampledata.CreateSQLite(t.Context(), path); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ds, err := db.Introspect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := kb.Bootstrap(t.Context(), kb.Scope{TenantID: "acme"}, ds, kb.CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	data, err := sqldb.New(sqldb.Config{DB: db, Results: tools.NewMemoryResults(10), Datasets: ds})
	if err != nil {
		t.Fatal(err)
	}
	model := &scripted.Model{Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		question, calls := "", 0
		for _, m := range req.Messages {
			for _, p := range m.Parts {
				switch {
				case m.Role == domain.RoleUser && p.Type == domain.PartText:
					question = p.Text
				case p.ToolResult != nil:
					calls++
				}
			}
		}
		if steps := answers[question]; calls < len(steps) {
			return scripted.Turn{ToolCalls: []scripted.Call{scripted.CallJSON(sqldb.ToolQuery, sqldb.QueryArgs{SQL: steps[calls]})}}, nil
		}
		if strings.Contains(question, "explode") {
			return scripted.Turn{Err: errors.New("provider down")}, nil
		}
		return scripted.Turn{Text: "Here is the answer."}, nil
	}}
	w := &evalWorld{db: db, cat: cat, discovered: map[string][]string{}}
	bus := hooks.New(hooks.Options{})
	t.Cleanup(func() { bus.Close() })
	if _, err := hooks.Listen(bus, func(_ context.Context, e *bichat.DiscoveryEvent) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.discovered[e.SessionID] = e.Datasets
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w.f = newFixture(t, model, data.All(), func(c *bichat.Config) {
		c.Knowledge = bichat.Knowledge{Catalog: cat}
		c.Bus = bus
	})
	return w
}

func TestEvalTargetRunsQuestionsThroughTheService(t *testing.T) {
	t.Parallel()
	set := &eval.Set{Questions: []eval.Question{
		{ID: "regions", Question: "How many regions are there?", SQL: "SELECT count(*) FROM regions"},
		{ID: "per-region", Question: "How many customers does each region have?",
			SQL:   "SELECT r.name, count(*) FROM customers c JOIN regions r ON r.id = c.region_id GROUP BY r.name",
			Hints: []string{"customers belong to a region"}},
		{ID: "completed", Question: "How many completed orders are there?", SQL: "SELECT count(*) FROM orders WHERE status = 'completed'"},
	}}
	w := newEvalWorld(t, map[string][]string{
		"How many regions are there?": {"SELECT count(*) AS n FROM regions"},
		"How many customers does each region have?": {"SELECT region, count(*) FROM customers GROUP BY region",
			"SELECT count(*) AS customers, r.name FROM customers c JOIN regions r ON r.id = c.region_id GROUP BY r.name"},
		"How many completed orders are there?": {"SELECT count(*) FROM orders"},
	})
	rep, err := eval.Run(t.Context(), set, eval.Config{Target: w.f.svc.EvalTarget(alice), DB: w.db, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]eval.Result{}
	for _, r := range rep.Results {
		byID[r.ID] = r
	}
	if r := byID["regions"]; !r.OK || r.ToolCalls != 1 || r.Turns != 2 || r.TokensIn == 0 || r.Repairs != 0 || r.Model != "scripted" {
		t.Errorf("regions: %+v", r)
	}
	if r := byID["per-region"]; !r.OK || r.Repairs != 1 || r.ToolCalls != 2 || r.Turns != 3 {
		t.Errorf("per-region: %+v", r)
	}
	if r := byID["completed"]; r.OK || !strings.HasPrefix(r.Reason, "values differ") {
		t.Errorf("completed: %+v", r)
	}
	for _, r := range rep.Results {
		if r.Recall == nil || *r.Recall != 1 {
			t.Errorf("%s: recall %v (gold %v, discovered %v)", r.ID, r.Recall, r.GoldTables, r.Discovered)
		}
	}
	// Each question ran in a session of its own, titled with its id.
	page, err := w.f.svc.ListSessions(t.Context(), alice, domain.ListOptions{PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, s := range page.Items {
		titles = append(titles, s.Title)
	}
	slices.Sort(titles)
	if !slices.Equal(titles, []string{"eval completed", "eval per-region", "eval regions"}) {
		t.Errorf("session titles %v", titles)
	}
	// Discovered is what the run's discovery step found, hints included.
	w.mu.Lock()
	runs := maps.Clone(w.discovered)
	w.mu.Unlock()
	if len(runs) != 3 {
		t.Fatalf("%d discovery events", len(runs))
	}
	for _, s := range page.Items {
		id := strings.TrimPrefix(s.Title, "eval ")
		if got := byID[id].Discovered; !slices.Equal(got, runs[s.ID]) {
			t.Errorf("%s: transcript discovered %v, the run's discovery found %v", id, got, runs[s.ID])
		}
	}
}

func TestEvalTargetReportsFailedRunsInTheTranscript(t *testing.T) {
	t.Parallel()
	w := newEvalWorld(t, nil)
	tr, err := w.f.svc.EvalTarget(alice)(t.Context(), eval.Question{ID: "boom", Question: "Please explode", SQL: "SELECT 1"})
	if err != nil {
		t.Fatalf("EvalTarget error %v, want the failure in the transcript", err)
	}
	if n := len(tr.Events); n == 0 {
		t.Fatal("no events")
	} else if f, ok := tr.Events[n-1].(*agents.RunFailed); !ok || f.Code != "model_error" {
		t.Errorf("last event %T %+v", tr.Events[n-1], tr.Events[n-1])
	}
	// Errors before the run are errors.
	_, err = w.f.svc.EvalTarget(aliceViewer)(t.Context(), eval.Question{ID: "x", Question: "How many regions?", SQL: "SELECT 1"})
	if !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("viewer: %v, want ErrForbidden", err)
	}
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	cat := retailCatalog(t)
	f := newFixture(t, &scripted.Model{}, nil, func(c *bichat.Config) { c.Knowledge = bichat.Knowledge{Catalog: cat} })
	hits, err := f.svc.Discover(t.Context(), aliceViewer, "revenue of customer orders by region")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hits {
		names = append(names, h.Dataset.Name)
	}
	if len(names) < 2 || !slices.Contains(names, "sales.orders") || !slices.Contains(names, "sales.customers") {
		t.Errorf("hits %v", names)
	}
	// Hints are searched too: a question about nothing finds the hinted
	// dataset.
	hits, err = f.svc.Discover(t.Context(), aliceViewer, "what about it?", bichat.WithHints("employees salaries departments"))
	if err != nil || len(hits) == 0 || hits[0].Dataset.Name != "hr.employees" {
		t.Errorf("hinted discovery: %+v, %v", hits, err)
	}
	// Another tenant sees its own catalog only.
	hits, err = f.svc.Discover(t.Context(), stranger, "orders")
	if err != nil || len(hits) != 1 || !strings.Contains(hits[0].Dataset.Description, "GLOBEX") {
		t.Errorf("stranger: %+v, %v", hits, err)
	}
	if _, err := f.svc.Discover(t.Context(), domain.Principal{TenantID: "acme", UserID: "nobody"}, "orders"); !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("no role: %v, want ErrForbidden", err)
	}
	if _, err := f.svc.Discover(t.Context(), alice, "   "); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("empty question: %v, want ErrInvalid", err)
	}
	bare := newFixture(t, &scripted.Model{}, nil)
	if _, err := bare.svc.Discover(t.Context(), alice, "orders"); !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "Knowledge.Catalog") {
		t.Errorf("no catalog: %v, want ErrInvalid naming the setting", err)
	}
}
