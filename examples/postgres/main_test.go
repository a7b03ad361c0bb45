package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	pgstore "github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

func TestUsageWithoutDSN(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	var out, errb bytes.Buffer
	if code := run(context.Background(), nil, &out, &errb); code != 2 {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(errb.String(), "no database given: pass -dsn or set DATABASE_URL") || !strings.Contains(errb.String(), "usage: postgres") || out.Len() != 0 {
		t.Errorf("stderr %q stdout %q", errb.String(), out.String())
	}
}

func TestBadDSNIsAnErrorWithoutThePassword(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-dsn", "postgres://u:hunter2-secret@127.0.0.1:1/db?connect_timeout=2"}, &out, &errb)
	if code != 1 || strings.Contains(errb.String(), "hunter2-secret") || !strings.Contains(errb.String(), "postgres: connect to 127.0.0.1:1") {
		t.Errorf("code %d stderr %q", code, errb.String())
	}
}

func testDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("BICHAT_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("BICHAT_TEST_POSTGRES_DSN is not set")
		}
		t.Skip("BICHAT_TEST_POSTGRES_DSN is not set")
	}
	return dsn
}

func randomName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// ownerExec runs statements as the owner of the test database.
func ownerExec(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal("connect to the test database")
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// readOnlyRole creates a login role with the SQL -role-sql prints, for
// schema (which must exist), dropped with the schema at the end of the
// test, and returns a DSN for it.
func readOnlyRole(t *testing.T, owner, schema string) (string, string) {
	t.Helper()
	role, password := randomName("example_ro_"), randomName("pw")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-role-sql", role, "-schema", schema}, &out, &errb); code != 0 {
		t.Fatalf("-role-sql: exit %d: %s", code, errb.String())
	}
	script := strings.Replace(out.String(), "'change-me'", "'"+password+"'", 1)
	ownerExec(t, owner, script)
	t.Cleanup(func() {
		// The schema goes first (its grants and default privileges with
		// it), then the role.
		ownerExec(t, owner, "DROP SCHEMA IF EXISTS "+schema+" CASCADE", "DROP ROLE IF EXISTS "+role)
	})
	u, err := url.Parse(owner)
	if err != nil {
		t.Fatal("the test DSN is not a URL")
	}
	u.User = url.UserPassword(role, password)
	return role, u.String()
}

var demoOutput = func(schema string) []string {
	return []string{
		"5 dataset(s):",
		"name: " + schema + ".customers\nsource: " + schema + ".customers\nkind: table\ndescription: One row per customer.",
		"→ describe_table",
		"→ query_database",
		"| row_count |",
		"| 200 |",
		"host payload: result_1 with 1 row(s); artifact result_1.csv",
		"answer: I counted the rows of " + schema + ".customers.",
	}
}

// The documented setup end to end: -role-sql's script creates the
// read-only role, the owner loads tables later (the default privileges
// let the role read them), and the demo runs as that role.
func TestDemoAsReadOnlyRole(t *testing.T) {
	t.Parallel()
	owner := testDSN(t)
	schema := randomName("example_")
	ownerExec(t, owner, "CREATE SCHEMA "+schema)
	_, dsn := readOnlyRole(t, owner, schema)
	conn, err := pgx.Connect(context.Background(), owner)
	if err != nil {
		t.Fatal("connect to the test database")
	}
	err = sampledata.Load(context.Background(), "postgres", sampledata.Options{Schema: schema}, func(ctx context.Context, s string) error {
		_, err := conn.Exec(ctx, s)
		return err
	})
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-dsn", dsn, "-schema", schema}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range demoOutput(schema) {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// The owner of the tables is refused, and accepted only on request.
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"-dsn", owner, "-schema", schema}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "refusing to run the agent's SQL as role") || !strings.Contains(errb.String(), "on table "+schema+".customers") {
		t.Errorf("owner role: exit %d, stderr %s", code, errb.String())
	}
	if code := run(context.Background(), []string{"-dsn", owner, "-schema", schema, "-allow-privileged"}, &out, &errb); code != 0 {
		t.Errorf("-allow-privileged: exit %d: %s", code, errb.String())
	}
}

// -sample loads the tables through -owner-dsn and lets the -dsn role
// read them.
func TestDemoWithSample(t *testing.T) {
	t.Parallel()
	owner := testDSN(t)
	// A role that may read nothing yet: -sample grants it the schema.
	base := randomName("example_")
	ownerExec(t, owner, "CREATE SCHEMA "+base)
	_, dsn := readOnlyRole(t, owner, base)
	schema := randomName("example_")
	t.Cleanup(func() { ownerExec(t, owner, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-dsn", dsn, "-sample", schema}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "needs -owner-dsn") {
		t.Errorf("-sample without -owner-dsn: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := run(context.Background(), []string{"-dsn", dsn, "-owner-dsn", owner, "-sample", schema}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range append(demoOutput(schema), "created the sample data in schema "+schema) {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSessionNeedsStore(t *testing.T) {
	t.Setenv("BICHAT_STORE_URL", "")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-dsn", "postgres://u@127.0.0.1:1/db", "-session", "s1"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "-session continues a stored session and needs -store-dsn") {
		t.Errorf("-session without -store-dsn: exit %d: %s", code, errb.String())
	}
}

func TestBadStoreDSNIsAnErrorWithoutThePassword(t *testing.T) {
	t.Parallel()
	owner := testDSN(t)
	schema := randomName("example_")
	ownerExec(t, owner, "CREATE SCHEMA "+schema, "CREATE TABLE "+schema+".t (id int)")
	_, dsn := readOnlyRole(t, owner, schema)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-dsn", dsn, "-schema", schema,
		"-store-dsn", "postgres://u:hunter2-secret@127.0.0.1:1/db?connect_timeout=2"}, &out, &errb)
	if code != 1 || strings.Contains(errb.String(), "hunter2-secret") || !strings.Contains(errb.String(), "connect with -store-dsn to 127.0.0.1:1 failed") {
		t.Errorf("code %d stderr %q", code, errb.String())
	}
}

// sampleSchema creates a schema of its own with the retail sample tables,
// through the owner, and a read-only role that reads it; it returns the
// schema, the role and the role's DSN.
func sampleSchema(t *testing.T, owner string) (schema, role, dsn string) {
	t.Helper()
	ctx := context.Background()
	schema = randomName("example_")
	ownerExec(t, owner, "CREATE SCHEMA "+schema)
	role, dsn = readOnlyRole(t, owner, schema)
	conn, err := pgx.Connect(ctx, owner)
	if err != nil {
		t.Fatal("connect to the test database")
	}
	defer conn.Close(ctx)
	if err := sampledata.Load(ctx, "postgres", sampledata.Options{Schema: schema}, func(ctx context.Context, s string) error {
		_, err := conn.Exec(ctx, s)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return schema, role, dsn
}

var sessionLine = regexp.MustCompile(`(?m)^session: (\S+)$`)

// With -store-dsn the service keeps its data in PostgreSQL: after the
// program exits, a new Service on a new pool over the same database reads
// the session, its messages, the named result result_1 and the result's
// CSV file back, and a second run of the program continues the session.
func TestSessionsPersistInPostgres(t *testing.T) {
	t.Parallel()
	owner := testDSN(t)
	ctx := context.Background()
	schema, role, dsn := sampleSchema(t, owner)
	// The storage schema belongs to the owner; the program creates it.
	store := randomName("example_store_")
	t.Cleanup(func() { ownerExec(t, owner, "DROP SCHEMA IF EXISTS "+store+" CASCADE") })

	var out, errb bytes.Buffer
	if code := run(ctx, []string{"-dsn", dsn, "-schema", schema, "-store-dsn", owner, "-store-schema", store}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range append(demoOutput(schema),
		"storage: PostgreSQL schema "+store,
		" holds 2 message(s) and the result(s) result_1\n",
		"-store-schema "+store+" -session ") {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	m := sessionLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no session line in:\n%s", out.String())
	}
	sessionID := m[1]

	// The read-only role of the data cannot read the storage schema.
	roConn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	_, err = roConn.Exec(ctx, "SELECT count(*) FROM "+store+".sessions")
	roConn.Close(ctx)
	if err == nil {
		t.Errorf("role %s reads the storage schema", role)
	}

	// A new pool, a new store and a new service: nothing is shared with the
	// run above but the database.
	pool, err := pgxpool.New(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := pgstore.New(pool, pgstore.Options{Schema: store})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CheckSchema(ctx); err != nil {
		t.Fatalf("the program did not migrate %s: %v", store, err)
	}
	repos := st.Repositories()
	svc, err := bichat.New(bichat.Config{
		Agent:         agents.Config{Model: &scripted.Model{}},
		Store:         repos,
		ArtifactStore: st.ArtifactStore(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)

	sess, err := svc.GetSession(ctx, principal, sessionID)
	if err != nil {
		t.Fatalf("GetSession after the program exited: %v", err)
	}
	question := "How many rows does " + schema + ".customers have?"
	if sess.Title != question {
		t.Errorf("session title %q, want the first question", sess.Title)
	}
	msgs, err := svc.Messages(ctx, principal, sessionID, domain.MessageListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want the question and the answer: %+v", len(msgs), msgs)
	}
	if msgs[0].Role != domain.RoleUser || msgs[0].Text() != question {
		t.Errorf("first message %s %q", msgs[0].Role, msgs[0].Text())
	}
	answer := msgs[1]
	if answer.Role != domain.RoleAssistant || answer.Status != domain.StatusComplete ||
		answer.Text() != "I counted the rows of "+schema+".customers." {
		t.Errorf("answer %s %s %q", answer.Role, answer.Status, answer.Text())
	}
	var calls []string
	for _, p := range answer.Parts {
		if p.ToolCall != nil {
			calls = append(calls, p.ToolCall.Name)
		}
	}
	if strings.Join(calls, ",") != "describe_table,query_database" {
		t.Errorf("stored tool calls %v", calls)
	}

	// The named result, through the Results the tools use.
	results := tools.StoreResults(repos.Results)
	callCtx := agents.WithCallInfo(ctx, agents.CallInfo{TenantID: principal.TenantID, SessionID: sessionID})
	table, err := results.Get(callCtx, "result_1")
	if err != nil {
		t.Fatalf("result_1 after the program exited: %v", err)
	}
	if len(table.Columns) != 1 || table.Columns[0].Name != "row_count" || len(table.Rows) != 1 || table.Rows[0][0] != int64(200) {
		t.Errorf("result_1 = %+v", table)
	}
	// Its CSV file, in the PostgreSQL artifact store.
	arts, err := svc.Artifacts(ctx, principal, answer.ID)
	if err != nil {
		t.Fatal(err)
	}
	var csv string
	for _, a := range arts {
		if a.Name != "result_1.csv" {
			continue
		}
		rc, _, err := svc.ArtifactContent(ctx, principal, a.ID)
		if err != nil {
			t.Fatalf("content of %s: %v", a.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		csv = string(b)
	}
	if csv != "row_count\n200\n" {
		t.Errorf("result_1.csv = %q (artifacts %+v)", csv, arts)
	}
	// Another user does not see the session.
	other := domain.Principal{TenantID: principal.TenantID, UserID: "someone-else", Roles: principal.Roles}
	if _, err := svc.GetSession(ctx, other, sessionID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("another user's GetSession = %v, want ErrNotFound", err)
	}

	// A second run of the program continues the stored session.
	out.Reset()
	errb.Reset()
	if code := run(ctx, []string{"-dsn", dsn, "-schema", schema, "-store-dsn", owner, "-store-schema", store, "-session", sessionID}, &out, &errb); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"session: " + sessionID + "\n", "host payload: result_2 with 1 row(s)",
		"session " + sessionID + " holds 4 message(s) and the result(s) result_1, result_2\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("second run's output lacks %q:\n%s", want, out.String())
		}
	}
	if msgs, err := svc.Messages(ctx, principal, sessionID, domain.MessageListOptions{}); err != nil || len(msgs) != 4 {
		t.Errorf("after the second run: %d messages, %v", len(msgs), err)
	}
}

func TestRoleSQL(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-role-sql", "analyst", "-schema", "sales"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		`CREATE ROLE "analyst" LOGIN PASSWORD 'change-me';`,
		`ALTER ROLE "analyst" SET default_transaction_read_only = on;`,
		`GRANT USAGE ON SCHEMA "sales" TO "analyst";`,
		`GRANT SELECT ON ALL TABLES IN SCHEMA "sales" TO "analyst";`,
		`ALTER DEFAULT PRIVILEGES IN SCHEMA "sales" GRANT SELECT ON TABLES TO "analyst";`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("role SQL lacks %s:\n%s", want, out.String())
		}
	}
}
