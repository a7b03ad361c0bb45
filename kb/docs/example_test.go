package docs_test

import (
	"context"
	"fmt"

	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/docs"
)

func Example() {
	ctx := context.Background()
	idx, err := docs.New(docs.Options{})
	if err != nil {
		panic(err)
	}
	defer idx.Close()

	scope := kb.Scope{TenantID: "acme"}
	err = idx.AddBatch(ctx, scope, []docs.Document{
		{ID: "revenue.md", Title: "Revenue recognition", Content: "Revenue is recognised when the order ships. Refunds reduce revenue in the month they are issued.", Tags: []string{"finance"}},
		{ID: "churn.md", Title: "Churn", Content: "A customer churns when the subscription is not renewed within 30 days."},
	})
	if err != nil {
		panic(err)
	}

	// A typo still finds the document; snippets mark the matched words.
	res, err := idx.Search(ctx, scope, "when are refnds booked", docs.SearchOptions{Limit: 3})
	if err != nil {
		panic(err)
	}
	for _, h := range res.Hits {
		fmt.Println(h.Document.ID, h.Document.Title)
		for _, s := range h.Snippets {
			fmt.Println("  ", s.Mark("**", "**"))
		}
	}
	// Output:
	// revenue.md Revenue recognition
	//    Revenue is recognised when the order ships. **Refunds** reduce revenue in the month they are issued.
}
