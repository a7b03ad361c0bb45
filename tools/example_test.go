package tools_test

import (
	"context"
	"fmt"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/tools"
)

func ExampleMemoryResults() {
	results := tools.NewMemoryResults(10)
	// The executor attaches the call's session to the tool's context.
	ctx := agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "acme", SessionID: "s1"})
	name, _ := results.Put(ctx, tools.Table{
		Columns: []tools.Column{{Name: "region", Type: "text"}, {Name: "revenue", Type: "numeric"}},
		Rows:    [][]any{{"EU", 1250.5}, {"US", 980.0}},
	})
	t, _ := results.Get(ctx, name)
	csv, _ := t.CSV()
	fmt.Println(name)
	fmt.Print(string(csv))
	// Output:
	// result_1
	// region,revenue
	// EU,1250.5
	// US,980
}
