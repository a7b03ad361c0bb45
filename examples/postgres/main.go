package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/postgres"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: postgres [-dsn URL] [-schema NAME] [-sample NAME]

Connects to PostgreSQL, prints the dataset YAML the agent reads and runs two
tool calls (describe_table, query_database) with a scripted model.

  -dsn     connection string, e.g. postgres://user:pass@localhost:5432/db
           (default: the DATABASE_URL environment variable)
  -schema  introspect only this schema
  -sample  first create the retail sample tables in this schema (writes)
`

// run is main without the exit, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("postgres", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	dsn := fs.String("dsn", os.Getenv("DATABASE_URL"), "connection string")
	schema := fs.String("schema", "", "introspect only this schema")
	sample := fs.String("sample", "", "create the sample data in this schema first")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dsn == "" {
		fmt.Fprint(stderr, "postgres: no database given: pass -dsn or set DATABASE_URL\n\n"+usage)
		return 2
	}
	if err := demo(ctx, *dsn, *schema, *sample, stdout); err != nil {
		fmt.Fprintln(stderr, "postgres:", err)
		return 1
	}
	return 0
}

func demo(ctx context.Context, dsn, schema, sample string, out io.Writer) error {
	opts := postgres.Options{}
	if sample != "" {
		schema = sample
	}
	if schema != "" {
		opts.Schemas = []string{schema}
		opts.Policy.SearchPath = []string{schema}
	}
	db, err := postgres.Open(ctx, dsn, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	if sample != "" {
		// The sample is written through the pool directly: the agent's
		// path (db.Query) is read-only and would refuse it.
		err := sampledata.Load(ctx, "postgres", sampledata.Options{Schema: sample}, func(ctx context.Context, s string) error {
			_, err := db.Pool().Exec(ctx, s)
			return err
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "created the sample data in schema %s\n\n", sample)
	}

	datasets, err := db.Introspect(ctx)
	if err != nil {
		return err
	}
	if len(datasets) == 0 {
		return errors.New("no tables or views to show; use -sample NAME to create sample data")
	}
	fmt.Fprintf(out, "%d dataset(s):\n\n", len(datasets))
	for i, d := range datasets {
		if i == 5 {
			fmt.Fprintf(out, "... and %d more\n\n", len(datasets)-5)
			break
		}
		fmt.Fprintln(out, d.YAML())
	}

	// The data tools, and a scripted model that uses two of them on the
	// first dataset (a real provider's model plugs in the same way).
	dt, err := sqldb.New(sqldb.Config{DB: db, Datasets: datasets, PreviewRows: 5})
	if err != nil {
		return err
	}
	first := datasets[0]
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{scripted.CallJSON(sqldb.ToolDescribe, map[string]any{"datasets": []string{first.Name}})}},
		{ToolCalls: []scripted.Call{scripted.CallJSON(sqldb.ToolQuery, map[string]any{"sql": "SELECT count(*) AS row_count FROM " + sqldb.QuoteQualified(first.Source)})}},
		{Text: "I counted the rows of " + first.Name + "."},
	}}
	exec, err := agents.NewExecutor(agents.Config{Model: model, Tools: dt.All()})
	if err != nil {
		return err
	}
	for ev, err := range exec.Run(ctx, agents.Input{TenantID: "demo", UserID: "demo", SessionID: "demo", Message: agents.UserMessage("How many rows does " + first.Name + " have?")}) {
		if err != nil {
			return err
		}
		switch e := ev.(type) {
		case *agents.ToolCallStarted:
			fmt.Fprintf(out, "→ %s %s\n", e.Name, e.Arguments)
		case *agents.ToolCallFinished:
			if e.Error != "" {
				fmt.Fprintf(out, "← %s failed: %s\n", e.Name, e.Error)
				continue
			}
			fmt.Fprintf(out, "← %s (model sees %d bytes):\n%s\n", e.Name, len(e.Summary), indent(e.Summary))
			if p, ok := e.Payload.(*sqldb.QueryPayload); ok {
				fmt.Fprintf(out, "  host payload: %s with %d row(s); artifact %s (%d bytes, sha256 %s...)\n\n", p.Table.Name, p.Rows, e.Artifacts[0].Name, e.Artifacts[0].Size, e.Artifacts[0].SHA256[:12])
			}
		case *agents.RunFinished:
			fmt.Fprintf(out, "answer: %s\n", e.Text)
		}
	}
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
