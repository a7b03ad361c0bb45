package postgres

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// TestAttackCorpusDoesNotExecute sends every attack (standalone and in
// injection contexts) through DB.Query against the real server and shows
// that none had an effect: the canary table, its sequence and the large
// objects are unchanged, no file appeared, and no statement slept.
func TestAttackCorpusDoesNotExecute(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	exec(t,
		"CREATE TABLE "+schema+".canary (id int PRIMARY KEY, name text)",
		"INSERT INTO "+schema+".canary VALUES (1, 'alpha'), (2, 'beta'), (3, 'gamma')",
		"CREATE SEQUENCE "+schema+".canary_seq",
		"SELECT nextval('"+schema+".canary_seq')",
	)
	db, err := New(admin(t), Options{Policy: Policy{SearchPath: []string{schema}}, AllowPrivilegedRole: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	files := []string{"/tmp/bichat_attack", "/tmp/pentestlab", "/tmp/testexport", "/tmp/nc.sh", "/tmp/test", "/tmp/f"}
	existed := map[string]bool{}
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			existed[f] = true
		}
	}
	state := func() (string, int64, int64) {
		var names string
		var seq, los int64
		if err := admin(t).QueryRow(ctx, "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM "+schema+".canary").Scan(&names); err != nil {
			t.Fatal(err)
		}
		if err := admin(t).QueryRow(ctx, "SELECT last_value FROM "+schema+".canary_seq").Scan(&seq); err != nil {
			t.Fatal(err)
		}
		if err := admin(t).QueryRow(ctx, "SELECT count(*) FROM pg_largeobject_metadata").Scan(&los); err != nil {
			t.Fatal(err)
		}
		return names, seq, los
	}
	names0, seq0, los0 := state()

	var stmts []string
	for _, p := range corpusPayloads(t) {
		stmts = append(stmts, injectionContexts(p)...)
	}
	stmts = append(stmts, ownAttacks...)
	var rejected, failed, ran int
	var slowest time.Duration
	for _, q := range stmts {
		start := time.Now()
		_, err := db.Query(ctx, q, sqldb.Limits{Timeout: 2 * time.Second, MaxRows: 5})
		d := time.Since(start)
		slowest = max(slowest, d)
		switch kind := sqldb.KindOf(err); {
		case err == nil:
			ran++
		case kind == sqldb.KindRejected || kind == sqldb.KindSyntax && d < 50*time.Millisecond && !isServerError(err):
			rejected++
		case kind == sqldb.KindTimeout:
			t.Errorf("%q ran into the timeout: it slept or ran long", q)
		default:
			failed++
		}
		if d > time.Second {
			t.Errorf("%q took %s", q, d)
		}
	}
	if names, seq, los := state(); names != names0 || seq != seq0 || los != los0 {
		t.Errorf("state changed: canary %q -> %q, sequence %d -> %d, large objects %d -> %d", names0, names, seq0, seq, los0, los)
	}
	for _, f := range files {
		if _, err := os.Stat(f); err == nil && !existed[f] {
			t.Errorf("attack wrote %s", f)
		}
	}
	// The connections are healthy and read-only afterwards.
	res, err := db.Query(ctx, "SELECT count(*) FROM canary", sqldb.Limits{})
	if err != nil || res.Rows[0][0] != int64(3) {
		t.Fatalf("after the attacks: %v %v", res, err)
	}
	t.Logf("%d attack statements against PostgreSQL: %d refused before the server, %d failed on the server, %d ran as plain reads; slowest %s; canary, sequence, large objects and files unchanged",
		len(stmts), rejected, failed, ran, slowest.Round(time.Millisecond))
}

func isServerError(err error) bool {
	e, ok := err.(*sqldb.Error)
	return ok && e.Code != ""
}
