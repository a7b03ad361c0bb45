package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/postgres"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: postgres [-dsn URL] [-schema NAME] [-sample NAME -owner-dsn URL] [-allow-privileged]
       postgres -role-sql ROLE [-schema NAME]

Connects to PostgreSQL as a read-only role, prints the dataset YAML the agent
reads and runs two tool calls (describe_table, query_database) with a
scripted model.

  -dsn               connection string of the read-only role the agent uses,
                     e.g. postgres://analyst:pass@localhost:5432/db
                     (default: the DATABASE_URL environment variable)
  -schema            introspect only this schema
  -sample            first create the retail sample tables in this schema,
                     through -owner-dsn, and let the -dsn role read them
  -owner-dsn         a role that may create tables, used only by -sample
                     (default: the DATABASE_OWNER_URL environment variable)
  -role-sql          print the SQL that creates the read-only login role
                     ROLE for -schema (default public), and exit
  -allow-privileged  accept a -dsn role with write or administrative
                     privileges (Options.AllowPrivilegedRole: local
                     experiments only)
`

// roleSQL is the SQL a database owner runs once to create the read-only
// login role the agent connects as: it may read every table of schema,
// now and later, and nothing else.
func roleSQL(role, password, schema string) []string {
	r, s := sqldb.QuoteIdent(role), sqldb.QuoteIdent(schema)
	return []string{
		// A login role without SUPERUSER, CREATEDB, CREATEROLE,
		// REPLICATION or BYPASSRLS (the defaults).
		"CREATE ROLE " + r + " LOGIN PASSWORD " + quoteLiteral(password),
		// Every transaction of the role is read-only, even outside bichat.
		"ALTER ROLE " + r + " SET default_transaction_read_only = on",
		"GRANT USAGE ON SCHEMA " + s + " TO " + r,
		"GRANT SELECT ON ALL TABLES IN SCHEMA " + s + " TO " + r,
		// Tables the owner (the role running this) creates later.
		"ALTER DEFAULT PRIVILEGES IN SCHEMA " + s + " GRANT SELECT ON TABLES TO " + r,
	}
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// run is main without the exit, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("postgres", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	dsn := fs.String("dsn", os.Getenv("DATABASE_URL"), "connection string")
	schema := fs.String("schema", "", "introspect only this schema")
	sample := fs.String("sample", "", "create the sample data in this schema first")
	owner := fs.String("owner-dsn", os.Getenv("DATABASE_OWNER_URL"), "connection string of a role that may create tables")
	role := fs.String("role-sql", "", "print the SQL that creates this read-only role")
	allow := fs.Bool("allow-privileged", false, "accept a privileged role")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *role != "" {
		s := *schema
		if s == "" {
			s = "public"
		}
		fmt.Fprintf(stdout, "-- Run as the owner of the tables in schema %s; choose a real password.\n", s)
		for _, stmt := range roleSQL(*role, "change-me", s) {
			fmt.Fprintln(stdout, stmt+";")
		}
		return 0
	}
	if *dsn == "" {
		fmt.Fprint(stderr, "postgres: no database given: pass -dsn or set DATABASE_URL\n\n"+usage)
		return 2
	}
	if *sample != "" && *owner == "" {
		fmt.Fprint(stderr, "postgres: -sample writes tables and needs -owner-dsn (or DATABASE_OWNER_URL); -dsn is the agent's read-only role\n\n"+usage)
		return 2
	}
	if err := demo(ctx, *dsn, *owner, *schema, *sample, *allow, stdout); err != nil {
		fmt.Fprintln(stderr, "postgres:", err)
		return 1
	}
	return 0
}

func demo(ctx context.Context, dsn, owner, schema, sample string, allowPrivileged bool, out io.Writer) error {
	opts := postgres.Options{AllowPrivilegedRole: allowPrivileged}
	if sample != "" {
		schema = sample
		if err := loadSample(ctx, owner, dsn, sample); err != nil {
			return err
		}
		fmt.Fprintf(out, "created the sample data in schema %s\n\n", sample)
	}
	if schema != "" {
		opts.Schemas = []string{schema}
		opts.Policy.SearchPath = []string{schema}
	}
	// Open refuses a role that may write, create or administer (see
	// postgres.CheckRole): the agent's SQL runs with exactly the
	// privileges of this role.
	db, err := postgres.Open(ctx, dsn, opts)
	if err != nil {
		return err
	}
	defer db.Close()

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

// loadSample creates the sample tables through the owner's connection
// and lets the role of dsn read them. The agent's path (db.Query) is
// read-only and would refuse these statements.
func loadSample(ctx context.Context, owner, dsn, schema string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return errors.New("the -dsn connection string does not parse")
	}
	conn, err := pgx.Connect(ctx, owner)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return fmt.Errorf("connect with -owner-dsn: %s (SQLSTATE %s)", pe.Message, pe.Code)
		}
		return errors.New("connect with -owner-dsn failed (check the host, the port and the credentials)")
	}
	defer conn.Close(ctx)
	err = sampledata.Load(ctx, "postgres", sampledata.Options{Schema: schema}, func(ctx context.Context, s string) error {
		_, err := conn.Exec(ctx, s)
		return err
	})
	if err != nil {
		return fmt.Errorf("create the sample data: %w", err)
	}
	if cfg.User == "" {
		return nil
	}
	r, s := sqldb.QuoteIdent(cfg.User), sqldb.QuoteIdent(schema)
	for _, stmt := range []string{"GRANT USAGE ON SCHEMA " + s + " TO " + r, "GRANT SELECT ON ALL TABLES IN SCHEMA " + s + " TO " + r} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("let %s read the sample data: %w", cfg.User, err)
		}
	}
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
