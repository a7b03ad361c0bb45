package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

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
