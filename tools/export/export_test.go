package export_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain/fsartifacts"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/chart"
)

type fixture struct {
	results *tools.MemoryResults
	charts  *chart.MemoryCharts
	store   *fsartifacts.Store
	ctx     context.Context
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	store, err := fsartifacts.Open(t.TempDir(), fsartifacts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &fixture{
		results: tools.NewMemoryResults(0),
		charts:  chart.NewMemoryCharts(0),
		store:   store,
		ctx:     agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "acme", SessionID: "s1", RunID: "r1"}),
	}
}

func call(t testing.TB, ctx context.Context, tool agents.Tool, args any) (agents.Result, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Call(ctx, b)
}

// cities is a query result with every cell type query_database produces.
func cities(n int) tools.Table {
	t := tools.Table{Name: "result_1", Datasets: []string{"cities"},
		Columns: []tools.Column{{Name: "city"}, {Name: "day"}, {Name: "visitors"}, {Name: "revenue"},
			{Name: "updated_at"}, {Name: "active"}, {Name: "note"}}}
	names := []string{"Zürich", "Łódź", "東京", "São Paulo"}
	for i := range n {
		var note any = fmt.Sprintf("note %d", i)
		if i%5 == 4 {
			note = nil
		}
		t.Rows = append(t.Rows, []any{
			names[i%len(names)],
			time.Date(2024, 1, 1+i%28, 0, 0, 0, 0, time.UTC),
			int64(1000 + i),
			float64(i)*1.25 + 0.5,
			time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC).Add(time.Duration(i) * time.Hour),
			i%2 == 0,
			note,
		})
	}
	return t
}
