package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// lookupTypes are the reg* types whose input function looks a catalog
// object up by name; regconfig and regdictionary (text search
// configurations) are the ones full-text search needs.
func lookupType(typ string) bool {
	typ = strings.TrimSuffix(typ, "[]")
	return strings.HasPrefix(typ, "reg") && typ != "regconfig" && typ != "regdictionary"
}

// TestFunctionPolicyCoversServer enumerates every function of the real
// server's pg_catalog and information_schema (and of installed
// extensions) and fails on one policy.txt does not classify, so that a new
// server version forces a review. It also checks the promises of the
// families: the functions that run query text, read tables by name, touch
// files, lock, use sequences, settings, statistics, replication or
// backends are denied with that family, and no allowed function takes a
// reg* argument that would look objects up by name.
func TestFunctionPolicyCoversServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rows, err := admin(t).Query(ctx, `
SELECT p.proname, p.pronargs, p.pronargdefaults, p.provariadic <> 0,
       coalesce(array_agg(format_type(a.t, NULL) ORDER BY a.n) FILTER (WHERE a.t IS NOT NULL), '{}')
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
LEFT JOIN LATERAL unnest(p.proargtypes::oid[]) WITH ORDINALITY a(t, n) ON true
WHERE n.nspname IN ('pg_catalog', 'information_schema')
   OR EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
GROUP BY p.oid, p.proname, p.pronargs, p.pronargdefaults, p.provariadic
ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	v := NewValidator(Policy{})
	var total, allowed int
	families := map[string]int{}
	for rows.Next() {
		var (
			name        string
			nargs, ndef int
			variadic    bool
			args        []string
		)
		if err := rows.Scan(&name, &nargs, &ndef, &variadic, &args); err != nil {
			t.Fatal(err)
		}
		total++
		lname := strings.ToLower(name)
		var r rule
		if byArgs, ok := builtins.arity[lname]; ok {
			if ndef > 0 || variadic {
				t.Errorf("%s(%s): listed by argument count, but this overload has defaults or VARIADIC; classify the name as a whole", name, strings.Join(args, ", "))
				continue
			}
			if r, ok = byArgs[nargs]; !ok {
				t.Errorf("%s(%s): not classified in policy.txt (the name is listed only for other argument counts)", name, strings.Join(args, ", "))
				continue
			}
		} else if r, ok = builtins.funcs[lname]; !ok {
			t.Errorf("%s(%s): not classified in policy.txt; add \"allow %s FAMILY\" or \"deny %s FAMILY: REASON\"", name, strings.Join(args, ", "), lname, lname)
			continue
		}
		families[r.family]++
		if !r.allow {
			continue
		}
		allowed++
		for _, a := range args {
			if lookupType(a) {
				t.Errorf("allowed %s(%s) takes %s, whose input looks objects up by name", name, strings.Join(args, ", "), a)
			}
		}
		if ok, why := v.funcVerdict("", name, nargs, false); !ok {
			t.Errorf("allowed in policy.txt but refused: %s: %s", name, why)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// The families the issue names, each with functions of this server.
	for name, family := range map[string]string{
		"ts_stat": "query-text", "query_to_xml": "query-text", "query_to_xml_and_xmlschema": "query-text",
		"query_to_xmlschema": "query-text", "cursor_to_xml": "query-text", "cursor_to_xmlschema": "query-text",
		"table_to_xml": "table-read", "table_to_xmlschema": "table-read", "table_to_xml_and_xmlschema": "table-read",
		"schema_to_xml": "table-read", "database_to_xml": "table-read", "currtid2": "table-read",
		"pg_read_file": "files", "pg_read_binary_file": "files", "pg_ls_dir": "files", "pg_stat_file": "files",
		"lo_import": "large-object", "lo_export": "large-object", "lo_from_bytea": "large-object",
		"pg_advisory_lock": "lock", "pg_try_advisory_xact_lock": "lock", "pg_advisory_unlock_all": "lock",
		"nextval": "sequence", "setval": "sequence", "currval": "sequence", "lastval": "sequence",
		"set_config": "setting", "current_setting": "setting", "pg_reload_conf": "setting", "setseed": "setting",
		"pg_stat_reset": "statistics", "pg_stat_reset_shared": "statistics", "pg_stat_reset_single_table_counters": "statistics",
		"pg_stat_reset_slru": "statistics", "pg_stat_reset_single_function_counters": "statistics", "pg_stat_get_activity": "statistics",
		"pg_switch_wal": "replication", "pg_create_logical_replication_slot": "replication", "pg_backup_start": "replication",
		"pg_promote": "replication", "pg_logical_emit_message": "replication",
		"pg_terminate_backend": "backend", "pg_cancel_backend": "backend", "pg_backend_pid": "backend",
		"pg_sleep": "sleep", "pg_sleep_for": "sleep", "pg_sleep_until": "sleep",
		"pg_notify": "notify", "txid_current": "transaction", "version": "server",
		"current_user": "session", "has_table_privilege": "privilege", "to_regclass": "catalog", "pg_relation_size": "catalog",
		"brin_summarize_new_values": "index-maintenance",
	} {
		r, ok := builtins.funcs[name]
		if !ok || r.allow || r.family != family || r.reason == "" {
			t.Errorf("%s: want denied as %s with a reason, policy.txt has %+v (listed %v)", name, family, r, ok)
		}
		if !v.Denied(name) {
			t.Errorf("%s is not denied", name)
		}
	}
	if r := builtins.arity["ts_rewrite"][2]; r.allow || r.family != "query-text" {
		t.Errorf("ts_rewrite(tsquery, text) must be denied as query-text: %+v", r)
	}
	t.Logf("pg_proc: %d functions classified, %d allowed; by family: %v", total, allowed, families)
	if total < 3000 {
		t.Errorf("only %d functions enumerated", total)
	}
}

// TestOperatorPolicy: every operator of the server is listed, and every
// operator name policy.txt allows is implemented (pg_operator.oprcode) by
// allowed functions only, none of them on reg* operands.
func TestOperatorPolicy(t *testing.T) {
	t.Parallel()
	rows, err := admin(t).Query(context.Background(), `
SELECT o.oprname, p.proname, p.pronargs, format_type(o.oprleft, NULL), format_type(o.oprright, NULL)
FROM pg_operator o JOIN pg_proc p ON p.oid = o.oprcode JOIN pg_namespace n ON n.oid = o.oprnamespace
WHERE n.nspname = 'pg_catalog' ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	v := NewValidator(Policy{})
	var n int
	for rows.Next() {
		var op, fn, left, right string
		var nargs int
		if err := rows.Scan(&op, &fn, &nargs, &left, &right); err != nil {
			t.Fatal(err)
		}
		n++
		r, listed := builtins.ops[op]
		if !listed {
			t.Errorf("operator %s (%s, %s) is not classified in policy.txt", op, left, right)
			continue
		}
		if !r.allow {
			continue
		}
		if ok, why := v.funcVerdict("", fn, nargs, false); !ok {
			t.Errorf("operator %s (%s, %s) is allowed but implemented by %s, which is refused: %s", op, left, right, fn, why)
		}
		if lookupType(left) || lookupType(right) {
			t.Errorf("operator %s (%s, %s) is allowed on a reg* operand", op, left, right)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("pg_operator: %d operators, %d names in policy.txt", n, len(builtins.ops))
}

// TestCastPolicy: every base, range, enum and pseudo type of pg_catalog
// is classified; casts to an allowed type use allowed cast functions; no
// allowed type's input function looks objects up by name.
func TestCastPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := NewValidator(Policy{})
	types, err := admin(t).Query(ctx, `
SELECT t.typname, t.typinput::regproc::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE n.nspname = 'pg_catalog' AND t.typrelid = 0
  AND NOT (t.typelem <> 0 AND t.typsubscript = 'array_subscript_handler'::regproc) ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var ntypes int
	for types.Next() {
		var name, input string
		if err := types.Scan(&name, &input); err != nil {
			t.Fatal(err)
		}
		ntypes++
		r, ok := builtins.types[name]
		switch {
		case !ok:
			t.Errorf("type %s is not classified in policy.txt", name)
		case r.allow && strings.HasPrefix(input, "reg") && input != "regconfigin" && input != "regdictionaryin":
			t.Errorf("type %s is allowed, but its input function %s looks objects up by name", name, input)
		}
	}
	types.Close()
	if err := types.Err(); err != nil {
		t.Fatal(err)
	}
	casts, err := admin(t).Query(ctx, `
SELECT format_type(c.castsource, NULL), t.typname, p.proname, p.pronargs
FROM pg_cast c JOIN pg_type t ON t.oid = c.casttarget JOIN pg_namespace n ON n.oid = t.typnamespace
JOIN pg_proc p ON p.oid = c.castfunc WHERE n.nspname = 'pg_catalog' ORDER BY 2, 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer casts.Close()
	var ncasts int
	for casts.Next() {
		var source, target, fn string
		var nargs int
		if err := casts.Scan(&source, &target, &fn, &nargs); err != nil {
			t.Fatal(err)
		}
		ncasts++
		if ok, _ := v.typeVerdict("", target); !ok {
			continue
		}
		if ok, why := v.funcVerdict("", fn, nargs, false); !ok {
			t.Errorf("cast %s -> %s is allowed, but its function %s is refused: %s", source, target, fn, why)
		}
	}
	if err := casts.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pg_catalog types classified, %d casts with a function checked", ntypes, ncasts)
}

// TestTsRewriteHoleIsClosed shows on the real server what the review
// found: ts_rewrite(query, text) runs its text as SQL (here it reads a
// table no request allowed and names the session's user), and that
// DB.Query refuses it, and the whole attack sweep, before the server.
func TestTsRewriteHoleIsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	exec(t,
		"CREATE TABLE "+schema+".canary (id int PRIMARY KEY, name text)",
		"INSERT INTO "+schema+".canary VALUES (1, 'alpha')",
		"CREATE TABLE "+schema+".secret (word text)",
		"INSERT INTO "+schema+".secret VALUES ('hunter2')",
		"CREATE SEQUENCE "+schema+".canary_seq",
	)
	probe := fmt.Sprintf("SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, (SELECT word FROM %s.secret)::tsquery')::text", schema)
	var leaked string
	if err := admin(t).QueryRow(ctx, probe).Scan(&leaked); err != nil || !strings.Contains(leaked, "hunter2") {
		t.Fatalf("the unchecked server should run ts_rewrite's text as SQL: %q %v", leaked, err)
	}
	db, err := New(admin(t), Options{Policy: Policy{SearchPath: []string{schema}}, AllowPrivilegedRole: true})
	if err != nil {
		t.Fatal(err)
	}
	lim := sqldb.Limits{Timeout: 2 * time.Second, MaxRows: 5, Tables: []string{schema + ".canary"}}
	if _, err := db.Query(ctx, probe, lim); !errors.Is(err, sqldb.ErrRejected) || !strings.Contains(err.Error(), "query-text") {
		t.Fatalf("ts_rewrite(query, text) through DB.Query: %v", err)
	}
	var seq0 int64
	if err := admin(t).QueryRow(ctx, "SELECT last_value FROM "+schema+".canary_seq").Scan(&seq0); err != nil {
		t.Fatal(err)
	}
	var resetBefore string
	if err := admin(t).QueryRow(ctx, "SELECT coalesce(stats_reset::text, '') FROM pg_stat_bgwriter").Scan(&resetBefore); err != nil {
		t.Fatal(err)
	}
	stmts := append(attackStatements(), probe,
		"SELECT pg_stat_reset_shared('bgwriter')",
		"SELECT pg_stat_reset_single_table_counters('"+schema+".canary'::regclass)",
		"SELECT pg_stat_reset_slru('clog')")
	start := time.Now()
	for _, q := range stmts {
		_, err := db.Query(ctx, q, lim)
		if !errors.Is(err, sqldb.ErrRejected) {
			t.Errorf("reached the server or ran: %q: %v", q, err)
		}
	}
	elapsed := time.Since(start)
	var seq int64
	var resetAfter string
	var advisory int
	if err := admin(t).QueryRow(ctx, "SELECT last_value FROM "+schema+".canary_seq").Scan(&seq); err != nil {
		t.Fatal(err)
	}
	if err := admin(t).QueryRow(ctx, "SELECT coalesce(stats_reset::text, '') FROM pg_stat_bgwriter").Scan(&resetAfter); err != nil {
		t.Fatal(err)
	}
	if err := admin(t).QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 42").Scan(&advisory); err != nil {
		t.Fatal(err)
	}
	if seq != seq0 || resetAfter != resetBefore || advisory != 0 {
		t.Errorf("state changed: sequence %d -> %d, bgwriter stats reset %v -> %v, advisory locks on 42: %d", seq0, seq, resetBefore, resetAfter, advisory)
	}
	if elapsed > 5*time.Second {
		t.Errorf("%d refused statements took %s: something slept", len(stmts), elapsed)
	}
	// Ordinary analysis over the same table still runs.
	res, err := db.Query(ctx, `SELECT name, upper(name) ~ '^A', to_char(now(), 'YYYY'), jsonb_build_object('n', count(*)) ->> 'n',
		string_agg(name, ',' ORDER BY id), percentile_cont(0.5) WITHIN GROUP (ORDER BY id), rank() OVER (ORDER BY id)
		FROM canary GROUP BY id, name`, lim)
	if err != nil || len(res.Rows) != 1 {
		t.Fatalf("analytic query: %v %v", res, err)
	}
	t.Logf("%d attack statements refused before the server in %s; sequence, statistics and advisory locks unchanged", len(stmts), elapsed.Round(time.Millisecond))
}
