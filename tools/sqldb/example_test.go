package sqldb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

func ExampleMarkdown() {
	fmt.Print(sqldb.Markdown(
		[]tools.Column{{Name: "region", Type: "text"}, {Name: "revenue", Type: "numeric"}},
		[][]any{{"North", 1250.5}, {"South | West", nil}},
	))
	// Output:
	// | region | revenue |
	// | --- | --- |
	// | North | 1250.5 |
	// | South \| West |   |
}

// The data tools over the SQLite sample database: the model calls
// query_database, the host receives every row and a CSV artifact, and the
// table stays available to later tools by name.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "sqldb-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "retail.db")
	ctx := context.Background()
	if err := sampledata.CreateSQLite(ctx, path); err != nil {
		panic(err)
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		panic(err)
	}
	defer db.Close()

	results := tools.NewMemoryResults(10)
	dt, _ := sqldb.New(sqldb.Config{DB: db, Results: results})
	query := dt.QueryTool()

	// The executor attaches the call's session; a direct call does it here.
	ctx = agents.WithCallInfo(ctx, agents.CallInfo{TenantID: "acme", SessionID: "s1"})
	args, _ := json.Marshal(map[string]string{"sql": "SELECT category, count(*) AS products FROM products GROUP BY category ORDER BY category"})
	res, err := query.Call(ctx, args)
	if err != nil {
		panic(err)
	}
	p := res.Payload.(*sqldb.QueryPayload)
	fmt.Println(p.Table.Name, p.Rows, "rows; truncated:", p.Truncated)
	fmt.Println(res.Artifacts[0].Name, res.Artifacts[0].MediaType)
	stored, _ := results.Get(ctx, p.Table.Name)
	fmt.Print(string(must(stored.CSV())))
	// Output:
	// result_1 5 rows; truncated: false
	// result_1.csv text/csv
	// category,products
	// Books,8
	// Electronics,8
	// Garden,8
	// Home,8
	// Toys,8
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
