package python_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/sandbox/bwrap"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/python"
)

// run_python over an earlier query result. (Not run by `go test`: it
// needs bubblewrap.)
func Example() {
	sb, err := bwrap.New(bwrap.Config{PoolSize: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	results := tools.NewMemoryResults(0)
	ctx := agents.WithCallInfo(context.Background(), agents.CallInfo{SessionID: "s1"})
	name, _ := results.Put(ctx, tools.Table{Columns: []tools.Column{{Name: "x"}}, Rows: [][]any{{int64(1)}, {int64(2)}}})

	tool, err := python.New(python.Config{Sandbox: sb, Results: results})
	if err != nil {
		log.Fatal(err)
	}
	args, _ := json.Marshal(python.Args{Code: "import pandas as pd\nprint(pd.read_csv('inputs/" + name + ".csv').x.sum())", Inputs: []string{name}})
	res, err := tool.Call(ctx, args)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Summary)      // for the model
	_ = res.Payload.(*python.Run) // for the host, with the files' bytes
}
