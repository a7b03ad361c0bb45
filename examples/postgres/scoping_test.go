package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/postgres"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

// Two users of one tenant ask the bichat service the same question; the
// row-level security policy -role-sql -rls prints, fed by app.region
// from each caller's "region" attribute (bichat.Config.Attributes), gives
// each the orders of its own region only; a caller without a region is
// refused.
func TestUsersOfOneTenantSeeTheirRegion(t *testing.T) {
	t.Parallel()
	owner := testDSN(t)
	ctx := context.Background()
	schema, _, dsn := sampleSchema(t, owner)
	// The policy, as -role-sql -rls prints it.
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"-role-sql", "analyst", "-schema", schema, "-rls"}, &out, &errb); code != 0 {
		t.Fatalf("-role-sql -rls: exit %d: %s", code, errb.String())
	}
	_, policy, ok := strings.Cut(out.String(), "-- Row-level security")
	if !ok || !strings.Contains(policy, "CREATE POLICY orders_of_region") {
		t.Fatalf("-role-sql -rls prints no policy:\n%s", out.String())
	}
	ownerExec(t, owner, policy[strings.Index(policy, "\n")+1:])

	db, err := postgres.Open(ctx, dsn, postgres.Options{Schemas: []string{schema}, Policy: postgres.Policy{SearchPath: []string{schema}}, Settings: scopeSettings})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const question = "SELECT r.name AS region, count(*) AS orders FROM orders o JOIN customers c ON c.id = o.customer_id " +
		"JOIN regions r ON r.id = c.region_id GROUP BY r.name ORDER BY r.name"
	regions := map[string]string{"ana": "North", "ben": "South"}
	// ask runs one question as user through a bichat service and returns
	// what the host received of the query_database call.
	ask := func(user string) (*sqldb.QueryPayload, string) {
		dt, err := sqldb.New(sqldb.Config{DB: db})
		if err != nil {
			t.Fatal(err)
		}
		model := &scripted.Model{Turns: []scripted.Turn{
			{ToolCalls: []scripted.Call{scripted.CallJSON(sqldb.ToolQuery, map[string]any{"sql": question})}},
			{Text: "Here are your orders by region."},
		}}
		svc, err := bichat.New(bichat.Config{Agent: agents.Config{Model: model, Tools: dt.All()},
			Store: memory.New().Repositories(), Attributes: regionAttributes(regions)})
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close(ctx)
		p := domain.Principal{TenantID: "acme", UserID: user, Roles: []domain.AccessRole{domain.AccessContributor}}
		sess, err := svc.CreateSession(ctx, p, bichat.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var (
			payload *sqldb.QueryPayload
			failed  string
		)
		for ev, err := range svc.Send(ctx, p, sess.ID, "How many orders per region?") {
			if err != nil {
				t.Fatalf("%s: %v", user, err)
			}
			if e, ok := ev.(*agents.ToolCallFinished); ok && e.Name == sqldb.ToolQuery {
				failed = e.Error
				payload, _ = e.Payload.(*sqldb.QueryPayload)
			}
		}
		return payload, failed
	}
	var total int64
	for _, user := range []string{"ana", "ben"} {
		p, failed := ask(user)
		if p == nil || failed != "" {
			t.Fatalf("%s: no rows (%s)", user, failed)
		}
		if len(p.Table.Rows) != 1 || p.Table.Rows[0][0] != regions[user] {
			t.Fatalf("%s sees %v, want only region %s", user, p.Table.Rows, regions[user])
		}
		n, _ := p.Table.Rows[0][1].(int64)
		if n <= 0 {
			t.Errorf("%s sees %d orders", user, n)
		}
		total += n
	}
	// The two together see fewer orders than the table holds: the
	// other regions' orders stay hidden.
	if total >= sampledata.Orders {
		t.Errorf("ana and ben see %d orders of %d", total, sampledata.Orders)
	}
	// A caller the host knows no region of is refused.
	if p, failed := ask("cy"); p != nil || !strings.Contains(failed, `"region"`) {
		t.Errorf("a caller without a region: payload %v, error %q", p, failed)
	}
}
