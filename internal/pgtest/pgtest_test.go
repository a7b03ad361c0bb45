package pgtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestSchemaIsUniqueAndDroppedAtCleanup: each call names a new schema,
// and what a test created in it is gone once that test ends, while
// another test's schema stays.
func TestSchemaIsUniqueAndDroppedAtCleanup(t *testing.T) {
	p := pgtest.SharedPool(t, 4)
	if pgtest.SharedPool(t, 8) != p {
		t.Fatal("SharedPool returned a second pool")
	}
	kept := pgtest.Schema(t, p)
	if _, err := p.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{kept}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	var dropped string
	t.Run("inner", func(t *testing.T) {
		dropped = pgtest.Schema(t, p)
		if dropped == kept || !strings.HasPrefix(dropped, pgtest.SchemaPrefix) || len(dropped) != len(pgtest.SchemaPrefix)+16 {
			t.Fatalf("Schema = %q after %q, want a new %s name with 16 hex digits", dropped, kept, pgtest.SchemaPrefix)
		}
		if _, err := p.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{dropped}.Sanitize()+
			"; CREATE TABLE "+pgx.Identifier{dropped, "t"}.Sanitize()+" (id int)"); err != nil {
			t.Fatal(err)
		}
	})
	exists := func(schema string) bool {
		t.Helper()
		var ok bool
		if err := p.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if exists(dropped) {
		t.Errorf("schema %s of the finished subtest still exists", dropped)
	}
	if !exists(kept) {
		t.Errorf("schema %s of the running test was dropped", kept)
	}
}

// TestNewPoolIsItsOwn: NewPool opens a pool apart from the shared one,
// with the connection limit asked for, and it works.
func TestNewPoolIsItsOwn(t *testing.T) {
	p := pgtest.NewPool(t, 3)
	if p == pgtest.SharedPool(t, 4) {
		t.Fatal("NewPool returned the shared pool")
	}
	if got := p.Config().MaxConns; got != 3 {
		t.Errorf("MaxConns = %d, want 3", got)
	}
	var one int
	if err := p.QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}

const childEnv = "PGTEST_TEST_CHILD"

// TestDSNSkipsOrFails: without a DSN a test is skipped, and fails instead
// under BICHAT_REQUIRE_INTEGRATION=1 (checked in a child process, since
// the failure would fail this test).
func TestDSNSkipsOrFails(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		pgtest.DSN(t)
		return
	}
	for _, c := range []struct {
		require string
		wantErr bool
		want    string
	}{
		{"", false, "SKIP: TestDSNSkipsOrFails"},
		{"1", true, "is not set and " + pgtest.RequireEnv + "=1"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDSNSkipsOrFails$", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"=1", pgtest.DSNEnv+"=", pgtest.RequireEnv+"="+c.require)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.wantErr || !strings.Contains(string(out), c.want) {
			t.Errorf("%s=%q: exit error %v, output:\n%s\nwant an error: %v, output containing %q",
				pgtest.RequireEnv, c.require, err, out, c.wantErr, c.want)
		}
	}
}
