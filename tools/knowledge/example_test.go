package knowledge_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/docs"
	"github.com/bichat-go/bichat/tools/knowledge"
)

func ExampleSearchTool() {
	ctx := context.Background()
	idx, err := docs.New(docs.Options{})
	if err != nil {
		panic(err)
	}
	defer idx.Close()
	err = idx.Add(ctx, kb.Scope{TenantID: "acme"}, docs.Document{
		ID: "churn.md", Title: "Churn", Content: "A customer churns when the subscription is not renewed within 30 days.",
		Source: "https://wiki.example.com/churn",
	})
	if err != nil {
		panic(err)
	}

	tool, err := knowledge.SearchTool(idx)
	if err != nil {
		panic(err)
	}
	// The executor puts the run's tenant on the context of every call.
	ctx = agents.WithCallInfo(ctx, agents.CallInfo{TenantID: "acme"})
	res, err := tool.Call(ctx, json.RawMessage(`{"query":"how is churn defined?"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Summary)
	fmt.Println("citation:", res.Citations[0].DocumentID, res.Citations[0].URL)
	// Output:
	// 1 of 1 matching knowledge-base documents for "how is churn defined?". Cite a passage you use as [n].
	//
	// [1] Churn (churn.md, https://wiki.example.com/churn)
	//     A customer **churns** when the subscription is not renewed within 30 days.
	// citation: churn.md https://wiki.example.com/churn
}
