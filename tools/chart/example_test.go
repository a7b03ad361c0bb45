package chart_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain/fsartifacts"
	"github.com/bichat-go/bichat/tools/chart"
)

func Example() {
	dir, _ := os.MkdirTemp("", "charts")
	defer os.RemoveAll(dir)
	store, err := fsartifacts.Open(dir, fsartifacts.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	tool, err := chart.New(chart.Config{Charts: chart.NewMemoryCharts(0), Store: store, Width: 480, Height: 300})
	if err != nil {
		log.Fatal(err)
	}
	ctx := agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "acme", SessionID: "s1", RunID: "r1"})
	res, err := tool.Call(ctx, json.RawMessage(`{
		"type": "bar", "x": "region", "y": "revenue", "title": "Revenue by region",
		"data": {"columns": ["region", "revenue"], "rows": [["EU", 120.5], ["US", 98], ["APAC", 40]]}}`))
	if err != nil {
		log.Fatal(err)
	}
	c := res.Payload.(chart.Chart)
	fmt.Println(c.Name, c.Type, c.Width, c.Height)
	for _, a := range res.Artifacts {
		fmt.Println(a.Kind, a.Name, a.MediaType)
	}

	// A chart that does not fit the data goes back to the model.
	_, err = tool.Call(ctx, json.RawMessage(`{"type": "line", "x": "month", "y": "region",
		"data": {"columns": ["region", "revenue"], "rows": [["EU", 1]]}}`))
	fmt.Println(err)
	// Output:
	// chart_1 bar 480 300
	// chart chart_1.png image/png
	// chart chart_1.vl.json application/vnd.vegalite.v5+json
	// invalid chart: x field "month" is not a column of inline; columns: "region", "revenue"; y field "region" is text (e.g. "EU"), but a line chart needs numbers on y; choose a numeric column (or aggregate, e.g. COUNT(*)) (fix it and call draw_chart again; 3 of 3 repairs left)
}
