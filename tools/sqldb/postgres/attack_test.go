package postgres

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// ownAttacks are payloads written for this validator: each must be refused.
var ownAttacks = []string{
	// writable CTEs
	"WITH d AS (DELETE FROM canary RETURNING *) SELECT count(*) FROM d",
	"WITH i AS (INSERT INTO canary VALUES (999, 'x') RETURNING 1) SELECT * FROM i",
	"WITH u AS (UPDATE canary SET name = 'owned' RETURNING 1) SELECT 1",
	"WITH RECURSIVE r AS (SELECT 1 UNION ALL SELECT 1 FROM r), m AS (MERGE INTO canary c USING (SELECT 1 AS id) s ON c.id = s.id WHEN MATCHED THEN DELETE RETURNING 1) SELECT 1",
	"SELECT * FROM (WITH d AS (DELETE FROM canary RETURNING 1) SELECT * FROM d) x",
	// SELECT INTO
	"SELECT * INTO canary_copy FROM canary",
	"SELECT * INTO TEMP canary_copy FROM canary",
	"WITH x AS (SELECT 1) SELECT * INTO UNLOGGED t2 FROM x",
	// comment and dollar-quote tricks, stacked statements
	"SELECT 1; DELETE FROM canary",
	"SELECT 1;DELETE FROM canary;--",
	"SELECT 1 /* ; */ ; DELETE FROM canary",
	"SELECT 1 -- \n; DELETE FROM canary",
	"SELECT $$;$$; DELETE FROM canary",
	"SELECT $a$ $$ $a$; DELETE FROM canary; SELECT $b$x$b$",
	"SELECT 'it''s'; DELETE FROM canary",
	"SELECT E'\\'; DELETE FROM canary; --'",
	"/* comment */ DELETE FROM canary",
	"SELECT 1 /* nested /* comment */ ; DELETE FROM canary */; DELETE FROM canary",
	"DELETE/**/FROM canary",
	"BEGIN; DELETE FROM canary; COMMIT",
	"COMMIT; DELETE FROM canary",
	"ROLLBACK; SET TRANSACTION READ WRITE; DELETE FROM canary",
	"SET TRANSACTION READ WRITE",
	"SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
	"SET LOCAL statement_timeout = 0",
	// EXPLAIN ANALYZE of DML
	"EXPLAIN ANALYZE DELETE FROM canary",
	"EXPLAIN (ANALYZE, BUFFERS) UPDATE canary SET name = 'x'",
	"EXPLAIN ANALYZE SELECT pg_sleep(3)",
	// lock clauses
	"SELECT * FROM canary FOR UPDATE",
	"SELECT * FROM canary FOR NO KEY UPDATE NOWAIT",
	"SELECT * FROM canary FOR SHARE",
	"SELECT * FROM canary FOR KEY SHARE SKIP LOCKED",
	"SELECT * FROM (SELECT * FROM canary FOR UPDATE) s",
	"WITH l AS (SELECT * FROM canary FOR UPDATE) SELECT * FROM l",
	// unicode escapes and quoting
	`SELECT U&"pg\005fsleep"(3)`,
	`SELECT U&"\0070g_sleep"(3)`,
	`SELECT U&"pg!005fsleep" UESCAPE '!' (3)`,
	`SELECT "pg_sleep"(3)`,
	`SELECT pg_catalog."pg_sleep"(3)`,
	"SELECT PG_CATALOG.PG_SLEEP(3)",
	// functions hidden in subqueries, lateral joins, ORDER BY, etc.
	"SELECT * FROM canary WHERE id = (SELECT 1 FROM pg_sleep(3))",
	"SELECT * FROM canary WHERE EXISTS (SELECT pg_sleep(3))",
	"SELECT * FROM canary c, LATERAL (SELECT pg_sleep(3)) s",
	"SELECT * FROM canary c CROSS JOIN LATERAL pg_sleep(3)",
	"SELECT * FROM canary ORDER BY pg_sleep(3)",
	"SELECT * FROM canary ORDER BY (SELECT pg_sleep(3))",
	"SELECT * FROM canary GROUP BY id, name HAVING pg_sleep(3) IS NULL",
	"SELECT count(*) FILTER (WHERE pg_sleep(3) IS NULL) FROM canary",
	"SELECT sum(id) OVER (ORDER BY pg_sleep(3)::text) FROM canary",
	"SELECT * FROM canary LIMIT (SELECT 1 FROM pg_sleep(3))",
	"SELECT * FROM canary WHERE id IN (VALUES ((SELECT 1 FROM pg_sleep(3))))",
	"SELECT ARRAY(SELECT pg_sleep(3))",
	"SELECT CASE WHEN id > 0 THEN pg_sleep(3) END FROM canary",
	"SELECT coalesce(NULL, pg_sleep(3)::text)",
	"SELECT * FROM ROWS FROM (pg_sleep(3), generate_series(1, 2))",
	"SELECT * FROM canary TABLESAMPLE SYSTEM (pg_sleep(3)::text::int)",
	"VALUES (pg_sleep(3))",
	"SELECT 1 UNION SELECT 1 FROM pg_sleep(3)",
	"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE pg_sleep(1) IS NULL) SELECT * FROM r",
	"SELECT xmlelement(name x, pg_sleep(3))",
	"SELECT json_build_object('a', pg_sleep(3))",
	"SELECT (pg_sleep(3)).*",
	// every denied family
	"SELECT pg_sleep_for('3 seconds')",
	"SELECT pg_sleep_until(now() + interval '3 seconds')",
	"SELECT pg_read_file('/etc/passwd')",
	"SELECT pg_read_binary_file('/etc/passwd')",
	"SELECT pg_ls_dir('.')",
	"SELECT * FROM pg_ls_waldir()",
	"SELECT pg_stat_file('postgresql.conf')",
	"SELECT lo_import('/etc/passwd')",
	"SELECT lo_export(1, '/tmp/bichat_attack')",
	"SELECT lo_from_bytea(0, 'x')",
	"SELECT lo_create(0)",
	"SELECT loread(lo_open(1, 262144), 100)",
	"SELECT dblink('dbname=postgres', 'SELECT 1')",
	"SELECT dblink_exec('dbname=postgres', 'DELETE FROM canary')",
	"SELECT query_to_xml('DELETE FROM canary', true, true, '')",
	"SELECT database_to_xml(true, true, '')",
	"SELECT table_to_xml('canary', true, true, '')",
	"SELECT ts_stat('SELECT to_tsvector(name) FROM canary')",
	"SELECT pg_terminate_backend(pid) FROM (SELECT 1 AS pid) x",
	"SELECT pg_cancel_backend(1)",
	"SELECT pg_reload_conf()",
	"SELECT pg_rotate_logfile()",
	"SELECT set_config('statement_timeout', '0', true)",
	"SELECT set_config('default_transaction_read_only', 'off', false)",
	"SELECT pg_advisory_lock(1)",
	"SELECT pg_advisory_xact_lock(1)",
	"SELECT pg_try_advisory_lock(1)",
	"SELECT nextval('canary_seq')",
	"SELECT setval('canary_seq', 1000)",
	"SELECT currval('canary_seq')",
	"SELECT txid_current()",
	"SELECT pg_current_xact_id()",
	"SELECT pg_notify('chan', 'x')",
	"SELECT pg_create_restore_point('x')",
	"SELECT pg_switch_wal()",
	"SELECT pg_stat_reset()",
	"SELECT pg_stat_reset_shared('bgwriter')",
	"SELECT pg_stat_reset_single_table_counters('canary'::regclass)",
	"SELECT pg_stat_reset_slru('clog')",
	"SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, name::tsquery FROM canary')",
	"SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, pg_sleep(3)::text::tsquery')",
	"SELECT 'canary'::regclass::oid",
	"SELECT version()",
	"SELECT current_setting('data_directory')",
	"SELECT current_user",
	"SELECT current_database()",
	// system catalogs
	"SELECT usename, passwd FROM pg_shadow",
	"SELECT * FROM pg_catalog.pg_authid",
	"SELECT query FROM pg_stat_activity",
	"SELECT * FROM pg_settings",
	"SELECT * FROM pg_largeobject",
	"SELECT table_name FROM information_schema.tables",
	// other statements
	"COPY canary TO '/tmp/bichat_attack'",
	"COPY (SELECT '') TO PROGRAM 'touch /tmp/bichat_attack'",
	"CREATE TABLE bichat_attack (t text)",
	"DROP TABLE canary",
	"TRUNCATE canary",
	"ALTER TABLE canary ADD COLUMN x int",
	"GRANT ALL ON canary TO PUBLIC",
	"DO $$ BEGIN DELETE FROM canary; END $$",
	"CALL some_procedure()",
	"PREPARE p AS DELETE FROM canary",
	"EXECUTE p",
	"LISTEN chan",
	"NOTIFY chan",
	"LOCK TABLE canary",
	"VACUUM canary",
	"CHECKPOINT",
	"REFRESH MATERIALIZED VIEW mv",
	"CREATE FUNCTION f() RETURNS int AS 'SELECT 1' LANGUAGE sql",
	"SECURITY LABEL ON TABLE canary IS 'x'",
	"IMPORT FOREIGN SCHEMA s FROM SERVER x INTO y",
	"DISCARD ALL",
	"RESET ALL",
	"LOAD 'libc.so.6'",
}

// harmlessTechniques are payloads that are, as PostgreSQL parses them,
// ordinary read-only SELECTs; the validator accepts them and
// TestAttackCorpusDoesNotExecute shows against the real server that they
// change nothing (and mostly fail). The value says why each is harmless.
var harmlessTechniques = map[string]string{
	// A technique to build strings without quotes, not an attack.
	"SELECT CHR(65)||CHR(66)||CHR(67);": "string building",
	// Read-back steps of multi-step attacks whose writing steps (CREATE
	// TABLE, COPY, CREATE FUNCTION) are refused: the objects never exist.
	"SELECT f();":                          "reads what a refused step would have created",
	"SELECT * FROM temp limit 1 offset 0;": "reads what a refused step would have created",
	"SELECT * FROM nc;":                    "reads what a refused step would have created",
	// The parser sees one string literal: E'\'' escapes the quote, so
	// "; DELETE FROM canary; --" is data, not a second statement.
	"SELECT E'\\'; DELETE FROM canary; --'": "the DELETE is inside a string literal",
}

var (
	mdCode  = regexp.MustCompile("`([^`]+)`")
	mdFence = regexp.MustCompile("(?s)```sql\n(.*?)```")
)

// corpusPayloads returns the PostgreSQL payloads of the sql-injection
// corpus: every line of the text lists (comments dropped), every line of
// the ```sql blocks and every inline `code` span of PostgreSQL_Injection.md.
func corpusPayloads(t testing.TB) []string {
	dir := datasetsDir(t, "sql-injection")
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s == "" || seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
	}
	for _, f := range []string{"FUZZDB_Postgres_Enumeration.txt", "Generic_TimeBased.txt", "Generic_UnionSelect.txt", "SQLi_Polyglots.txt"} {
		fh, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "# ") {
				continue
			}
			add(line)
		}
		fh.Close()
	}
	md, err := os.ReadFile(filepath.Join(dir, "PostgreSQL_Injection.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mdFence.FindAllStringSubmatch(string(md), -1) {
		add(m[1]) // the block as a whole (stacked statements) ...
		for _, line := range strings.Split(m[1], "\n") {
			add(line) // ... and each line
		}
	}
	for _, m := range mdCode.FindAllStringSubmatch(string(md), -1) {
		add(strings.ReplaceAll(m[1], `\|`, "|"))
	}
	return out
}

// injectionContexts embeds a payload the way a vulnerable application
// would: as a string literal, a number and a trailing clause.
func injectionContexts(p string) []string {
	return []string{
		p,
		"SELECT * FROM canary WHERE name = '" + p + "'",
		"SELECT * FROM canary WHERE id = " + p,
		"SELECT * FROM canary WHERE id = 1 " + p,
	}
}

// TestAttackCorpusRejected: every standalone payload (the corpus and
// ownAttacks) is refused by the validator, except documented harmless
// techniques; payloads embedded in injection contexts are refused whenever
// they reach a denied function, a second statement or a write.
func TestAttackCorpusRejected(t *testing.T) {
	t.Parallel()
	v := NewValidator(Policy{})
	payloads := corpusPayloads(t)
	var standalone, refused, parseErr, embedded, embeddedAccepted int
	for _, p := range append(payloads, ownAttacks...) {
		standalone++
		_, err := v.Validate(p, nil)
		switch {
		case err == nil && harmlessTechniques[p] == "":
			t.Errorf("attack accepted: %q", p)
		case err == nil:
		default:
			refused++
			if _, perr := pg_query.Parse(p); perr != nil {
				parseErr++
			}
		}
	}
	for _, p := range payloads {
		for _, q := range injectionContexts(p)[1:] {
			embedded++
			if _, err := v.Validate(q, nil); err == nil {
				embeddedAccepted++
				if why := oracle(t, v, q); why != "" {
					t.Errorf("embedded attack with %s accepted: %q", why, q)
				}
			}
		}
	}
	t.Logf("attack corpus: %d corpus payloads + %d own = %d standalone, %d refused (%d of them do not parse as PostgreSQL), %d harmless techniques accepted; %d injection-context statements, %d accepted as plain reads of the canary table (executed harmlessly in TestAttackCorpusDoesNotExecute)",
		len(payloads), len(ownAttacks), standalone, refused, parseErr, standalone-refused, embedded, embeddedAccepted)
	if len(payloads) < 500 {
		t.Errorf("only %d payloads found in the corpus", len(payloads))
	}
}
