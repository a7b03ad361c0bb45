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
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	pgstore "github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/postgres"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: postgres [-dsn URL] [-schema NAME] [-sample NAME -owner-dsn URL] [-allow-privileged]
                [-store-dsn URL [-store-schema NAME] [-session ID]] [-region NAME]
       postgres -role-sql ROLE [-schema NAME] [-rls]

Connects to PostgreSQL as a read-only role, prints the dataset YAML the agent
reads and asks a bichat service one question, which a scripted model answers
with two tool calls (describe_table, query_database). With -store-dsn the
service keeps sessions, messages, run logs, named results and files in
PostgreSQL, so they outlive the process.

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
  -store-dsn         connection string of the role that owns the storage
                     schema (creates it and its tables on first use), e.g.
                     postgres://bichat:pass@localhost:5432/db; never the
                     -dsn role (default: the BICHAT_STORE_URL environment
                     variable; empty keeps sessions in memory)
  -store-schema      the storage schema (default bichat)
  -session           ask in this stored session instead of a new one
                     (needs -store-dsn)
  -rls               with -role-sql, also print the row-level security
                     policy that shows each caller only the sample's
                     orders of its own region (app.region)
  -region            ask as a caller of this sales region: the service
                     maps it to the data-scoping attribute "region",
                     which each statement sets as app.region
                     (postgres.Options.Settings) for the -rls policy
`

// regionSetting is the custom setting the sample's row-level security
// policy reads: the caller's region, set for each statement from the
// "region" data-scoping attribute.
const regionSetting = "app.region"

// scopeSettings maps the data-scoping attributes the demo uses to the
// settings the policies read (postgres.Options.Settings).
var scopeSettings = map[string]string{"region": regionSetting}

// rlsSQL is the SQL the owner of the sample tables in schema runs once so
// that orders (and their items) are visible only to callers of the
// customer's region: row-level security, forced even for the owner,
// with policies that read app.region. A caller without the setting sees
// no orders; the agent's role must not have BYPASSRLS (postgres.Open
// refuses such a role).
func rlsSQL(schema string) []string {
	s := sqldb.QuoteIdent(schema)
	inRegion := "EXISTS (SELECT 1 FROM " + s + ".customers c JOIN " + s + ".regions r ON r.id = c.region_id " +
		"WHERE c.id = %s AND r.name = current_setting('" + regionSetting + "', true))"
	return []string{
		"ALTER TABLE " + s + ".orders ENABLE ROW LEVEL SECURITY",
		"ALTER TABLE " + s + ".orders FORCE ROW LEVEL SECURITY",
		"CREATE POLICY orders_of_region ON " + s + ".orders FOR SELECT USING (" + fmt.Sprintf(inRegion, "orders.customer_id") + ")",
		"ALTER TABLE " + s + ".order_items ENABLE ROW LEVEL SECURITY",
		"ALTER TABLE " + s + ".order_items FORCE ROW LEVEL SECURITY",
		"CREATE POLICY items_of_region ON " + s + ".order_items FOR SELECT USING (EXISTS (SELECT 1 FROM " + s + ".orders o WHERE o.id = order_items.order_id))",
	}
}

// regionAttributes maps a caller to its data-scoping attributes: the
// default ones (tenant_id, user_id, roles) and its region from regions
// (user id -> region name), as a host would from its directory. A
// caller without a region gets none, and its statements are refused.
func regionAttributes(regions map[string]string) func(context.Context, domain.Principal) (map[string]string, error) {
	return func(ctx context.Context, p domain.Principal) (map[string]string, error) {
		m, err := bichat.DefaultAttributes(ctx, p)
		if err != nil {
			return nil, err
		}
		if r := regions[p.UserID]; r != "" {
			m["region"] = r
		}
		return m, nil
	}
}

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
	storeDSN := fs.String("store-dsn", os.Getenv("BICHAT_STORE_URL"), "connection string of the storage schema's owner")
	storeSchema := fs.String("store-schema", pgstore.DefaultSchema, "the storage schema")
	session := fs.String("session", "", "continue this stored session")
	rls := fs.Bool("rls", false, "with -role-sql, also print the row-level security policy of the sample")
	region := fs.String("region", "", "ask as a caller of this region (sets app.region for each statement)")
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
		if *rls {
			fmt.Fprintf(stdout, "-- Row-level security on the sample's orders: each caller sees the orders of its region (%s).\n", regionSetting)
			for _, stmt := range rlsSQL(s) {
				fmt.Fprintln(stdout, stmt+";")
			}
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
	if *session != "" && *storeDSN == "" {
		fmt.Fprint(stderr, "postgres: -session continues a stored session and needs -store-dsn (or BICHAT_STORE_URL)\n\n"+usage)
		return 2
	}
	cfg := demoConfig{dsn: *dsn, owner: *owner, schema: *schema, sample: *sample, allowPrivileged: *allow,
		storeDSN: *storeDSN, storeSchema: *storeSchema, session: *session, region: *region}
	if err := demo(ctx, cfg, stdout); err != nil {
		fmt.Fprintln(stderr, "postgres:", err)
		return 1
	}
	return 0
}

// demoConfig is what the flags ask for.
type demoConfig struct {
	dsn, owner, schema, sample string
	allowPrivileged            bool
	// storeDSN, when set, keeps the service's data in PostgreSQL, in
	// storeSchema; session continues a stored session.
	storeDSN, storeSchema, session string
	// region, when set, is the demo caller's region: each statement sets
	// it as app.region for the -rls policy.
	region string
}

// principal is who asks the demo's questions.
var principal = domain.Principal{TenantID: "demo", UserID: "demo", Roles: []domain.AccessRole{domain.AccessContributor}}

func demo(ctx context.Context, c demoConfig, out io.Writer) error {
	opts := postgres.Options{AllowPrivilegedRole: c.allowPrivileged}
	if c.region != "" {
		// Each statement sets app.region from the caller's "region"
		// attribute; a call without it is refused.
		opts.Settings = scopeSettings
	}
	schema := c.schema
	if c.sample != "" {
		schema = c.sample
		if err := loadSample(ctx, c.owner, c.dsn, c.sample); err != nil {
			return err
		}
		fmt.Fprintf(out, "created the sample data in schema %s\n\n", c.sample)
	}
	if schema != "" {
		opts.Schemas = []string{schema}
		opts.Policy.SearchPath = []string{schema}
	}
	// Open refuses a role that may write, create or administer (see
	// postgres.CheckRole): the agent's SQL runs with exactly the
	// privileges of this role.
	db, err := postgres.Open(ctx, c.dsn, opts)
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

	// Where the service keeps sessions, messages, run logs, named results
	// and files: PostgreSQL with -store-dsn, else memory.
	st, err := openStorage(ctx, c.storeDSN, c.storeSchema)
	if err != nil {
		return err
	}
	defer st.close()
	fmt.Fprintln(out, st.note)

	// The data tools keep their tables (result_1, ...) in the service's
	// Results repository and their CSV files in its artifact store, so both
	// live as long as the session. A scripted model uses two of them on the
	// first dataset (a real provider's model plugs in the same way).
	dt, err := sqldb.New(sqldb.Config{DB: db, Datasets: datasets, PreviewRows: 5,
		Results: tools.StoreResults(st.repos.Results), Store: st.artifacts})
	if err != nil {
		return err
	}
	first := datasets[0]
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{scripted.CallJSON(sqldb.ToolDescribe, map[string]any{"datasets": []string{first.Name}})}},
		{ToolCalls: []scripted.Call{scripted.CallJSON(sqldb.ToolQuery, map[string]any{"sql": "SELECT count(*) AS row_count FROM " + sqldb.QuoteQualified(first.Source)})}},
		{Text: "I counted the rows of " + first.Name + "."},
	}}
	svc, err := bichat.New(bichat.Config{
		Agent:         agents.Config{Model: model, Tools: dt.All()},
		Store:         st.repos,
		ArtifactStore: st.artifacts,
		Attributes:    regionAttributes(map[string]string{principal.UserID: c.region}),
	})
	if err != nil {
		return err
	}
	defer svc.Close(context.WithoutCancel(ctx))

	var sess *domain.Session
	if c.session != "" {
		sess, err = svc.GetSession(ctx, principal, c.session)
	} else {
		sess, err = svc.CreateSession(ctx, principal, bichat.SessionOptions{})
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "session: %s\n\n", sess.ID)

	for ev, err := range svc.Send(ctx, principal, sess.ID, "How many rows does "+first.Name+" have?") {
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
			if p, ok := e.Payload.(*sqldb.QueryPayload); ok && len(e.Artifacts) > 0 {
				fmt.Fprintf(out, "  host payload: %s with %d row(s); artifact %s (%d bytes, sha256 %s...)\n\n", p.Table.Name, p.Rows, e.Artifacts[0].Name, e.Artifacts[0].Size, e.Artifacts[0].SHA256[:12])
			}
		case *agents.RunFinished:
			fmt.Fprintf(out, "answer: %s\n", e.Text)
		}
	}

	// What the session holds now: read back from the store.
	msgs, err := svc.Messages(ctx, principal, sess.ID, domain.MessageListOptions{})
	if err != nil {
		return err
	}
	names, err := st.repos.Results.ListResults(ctx, principal.TenantID, sess.ID)
	if err != nil {
		return fmt.Errorf("list the session's results: %w", err)
	}
	fmt.Fprintf(out, "\nsession %s holds %d message(s) and the result(s) %s\n", sess.ID, len(msgs), strings.Join(names, ", "))
	if st.durable {
		fmt.Fprintf(out, "ask again in this session, from any process: -store-dsn ... -store-schema %s -session %s\n", c.storeSchema, sess.ID)
	}
	return nil
}

// storage is where the service keeps its data.
type storage struct {
	repos     domain.Repositories
	artifacts domain.ArtifactStore
	durable   bool
	note      string
	close     func()
}

// openStorage connects to the storage schema's owner at dsn, creates or
// upgrades the schema (postgres.Migrate is safe to run from several
// processes at once) and returns its repositories and artifact store. An
// empty dsn keeps everything in memory.
func openStorage(ctx context.Context, dsn, schema string) (*storage, error) {
	if dsn == "" {
		return &storage{repos: memory.New().Repositories(), artifacts: memory.NewArtifactStore(0),
			note:  "storage: in memory, lost when this program exits (pass -store-dsn to keep sessions in PostgreSQL)\n",
			close: func() {}}, nil
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("the -store-dsn connection string does not parse")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, errors.New("the -store-dsn connection string is not usable")
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("connect with -store-dsn: %s (SQLSTATE %s)", pe.Message, pe.Code)
		}
		return nil, fmt.Errorf("connect with -store-dsn to %s:%d failed (check the host, the port and the credentials)", cfg.ConnConfig.Host, cfg.ConnConfig.Port)
	}
	if err := pgstore.Migrate(ctx, pool, schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("create the storage schema %s: %w", schema, err)
	}
	store, err := pgstore.New(pool, pgstore.Options{Schema: schema})
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &storage{
		repos:     store.Repositories(),
		artifacts: store.ArtifactStore(0),
		durable:   true,
		note:      fmt.Sprintf("storage: PostgreSQL schema %s (sessions, messages, run logs, results and files outlive this program)\n", schema),
		close: func() {
			store.Close()
			pool.Close()
		},
	}, nil
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
