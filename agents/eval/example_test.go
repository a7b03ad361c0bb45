package eval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/agents/eval"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// Example evaluates two questions over the retail sample. The target
// stands in for a Service (use svc.EvalTarget(principal)): it answers the
// first question right, with renamed columns, and forgets a filter in the
// second.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "eval-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "retail.db")
	if err := sampledata.CreateSQLite(ctx, path); err != nil {
		log.Fatal(err)
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	set, err := eval.ParseSet(strings.NewReader(`
- id: regions
  question: How many regions are there?
  sql: SELECT count(*) AS regions FROM regions
- id: completed
  question: How many completed orders are there?
  sql: SELECT count(*) FROM orders WHERE status = 'completed'
`), eval.FormatYAML)
	if err != nil {
		log.Fatal(err)
	}
	answers := map[string]string{
		"regions":   "SELECT COUNT(id) AS n FROM regions",
		"completed": "SELECT count(*) FROM orders",
	}
	target := func(ctx context.Context, q eval.Question) (eval.Transcript, error) {
		args, _ := json.Marshal(sqldb.QueryArgs{SQL: answers[q.ID]})
		return eval.Transcript{Discovered: []string{"regions", "orders"}, Events: []agents.Event{
			&agents.ToolCallStarted{CallID: "c1", Name: sqldb.ToolQuery, Arguments: args},
			&agents.ToolCallFinished{CallID: "c1", Name: sqldb.ToolQuery},
			&agents.RunFinished{Reason: agents.FinishEndTurn},
		}}, nil
	}
	rep, err := eval.Run(ctx, set, eval.Config{Target: target, DB: db, Concurrency: 2})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rep.Results {
		line := fmt.Sprintf("%-9s ok=%-5v recall=%.0f%%", r.ID, r.OK, 100**r.Recall)
		if !r.OK {
			line += " " + r.Reason
		}
		fmt.Println(line)
	}
	fmt.Printf("accuracy %.0f%%\n", 100*rep.Totals.Accuracy)
	// Output:
	// regions   ok=true  recall=100%
	// completed ok=false recall=100% values differ: row 1 is (3000), want (2364)
	// accuracy 50%
}
