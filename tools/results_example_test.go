package tools_test

import (
	"context"
	"fmt"
	"log"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/tools"
)

func ExampleStoreResults() {
	repos := memory.New().Repositories() // or domain/postgres in production
	ctx := context.Background()
	session := &domain.Session{ID: domain.NewID(), TenantID: "acme", OwnerID: "alice", Title: "Q3"}
	if err := repos.Sessions.CreateSession(ctx, session); err != nil {
		log.Fatal(err)
	}
	// Give this to every tool that takes a tools.Results.
	results := tools.StoreResults(repos.Results)

	// The executor puts the tool call's tenant and session in the context.
	call := agents.WithCallInfo(ctx, agents.CallInfo{TenantID: "acme", SessionID: session.ID})
	name, err := results.Put(call, tools.Table{
		Columns: []tools.Column{{Name: "region"}, {Name: "revenue"}},
		Rows:    [][]any{{"EU", int64(1200)}, {"US", int64(3400)}},
	})
	if err != nil {
		log.Fatal(err)
	}
	t, err := results.Get(call, name)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d rows, revenue %T\n", name, len(t.Rows), t.Rows[0][1])
	_, err = results.Get(call, "result_9")
	fmt.Println(err)
	// Output:
	// result_1: 2 rows, revenue int64
	// tools: no result called "result_9"; available: [result_1]: not found
}
