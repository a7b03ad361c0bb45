package bichat_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/providers/scripted"
)

type fixedLayer string

func (l fixedLayer) Describe() string { return string(l) }

// The discovery step tells the model which column holds a value the
// question names, searches the host's hints on their own, and the
// semantic layer's description reaches the model.
func TestDiscoveryValuesHintsAndSemanticLayer(t *testing.T) {
	t.Parallel()
	cat := kb.NewMemoryCatalog(kb.CatalogOptions{})
	t.Cleanup(func() { cat.Close() })
	stores := domain.Dataset{Name: "retail.stores", Source: "retail.stores", Description: "Shops.",
		Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true},
			{Name: "town", Type: "text", Values: []string{"Lyon", "Marseille", "Paris"}}}}
	refunds := domain.Dataset{Name: "finance.refunds", Source: "finance.refunds", Description: "Money given back to buyers.",
		Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "amount", Type: "numeric"}}}
	staff := domain.Dataset{Name: "hr.employees", Source: "hr.employees", Description: "Employees and salaries.",
		Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "salary", Type: "numeric"}}}
	if err := cat.Put(t.Context(), kb.Scope{TenantID: "acme"}, stores, refunds, staff); err != nil {
		t.Fatal(err)
	}
	m := &scripted.Model{Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "ok"}, nil
	}}
	f := newFixture(t, m, nil, func(c *bichat.Config) {
		c.Knowledge = bichat.Knowledge{Catalog: cat, Semantic: fixedLayer("metric revenue: sum of order lines")}
	})
	s := f.session(t, alice, "values")
	finished(t, collect(t, f.svc.Send(t.Context(), alice, s.ID, "How did we do in Lyon?",
		bichat.WithHints("net revenue subtracts money given back to buyers"))))
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	prompt := reqs[0].System
	for _, m := range reqs[0].Messages {
		prompt += "\n" + m.Text()
	}
	for _, want := range []string{
		`retail.stores.town = "Lyon"`, // the value index found the column
		"finance.refunds",             // found through the hint only
		"Semantic layer (query it with query_metrics):\nmetric revenue: sum of order lines",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the request lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, "net revenue subtracts") {
		t.Error("the hint was glued onto the prompt; it should only steer discovery")
	}
	// Without the hint the refunds table is not discovered.
	m.Reset()
	finished(t, collect(t, f.svc.Send(t.Context(), alice, s.ID, "How did we do in Lyon?")))
	reqs = m.Requests()
	last := reqs[len(reqs)-1]
	if strings.Contains(last.System, "finance.refunds") {
		t.Error("finance.refunds discovered without the hint: the test proves nothing")
	}
}
