package bwrap_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/sandbox/bwrap"
)

// A warm pool of two workers; each job runs in a fresh forked process.
// (Not run by `go test`: it needs bubblewrap.)
func Example() {
	s, err := bwrap.New(bwrap.Config{PoolSize: 2, IdleTimeout: 5 * time.Minute})
	if err != nil {
		log.Fatal(err) // e.g. bubblewrap not installed
	}
	defer s.Close()
	out, err := s.Run(context.Background(), sandbox.Job{
		Code:  "import pandas as pd\nprint(pd.read_csv('inputs/t.csv')['x'].sum())",
		Files: []sandbox.File{{Name: "t.csv", Data: []byte("x\n1\n2\n")}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if !out.OK() {
		log.Fatalf("job failed: %s\n%s", out.Reason(), out.Stderr)
	}
	fmt.Print(out.Stdout)
}
