package postgres

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/bichat-go/bichat/tools/sqldb"
)

func TestValidateAcceptsReadOnlySelects(t *testing.T) {
	t.Parallel()
	v := NewValidator(Policy{})
	for _, q := range []string{
		"SELECT 1",
		"select * from orders",
		"SELECT * FROM retail.orders;",
		"SELECT * FROM retail.orders; -- trailing comment",
		"VALUES (1, 'a'), (2, 'b')",
		"TABLE orders",
		"(SELECT 1) UNION ALL (SELECT 2) EXCEPT SELECT 3",
		"WITH t AS (SELECT id FROM orders) SELECT count(*) FROM t",
		"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) SELECT sum(i) FROM n",
		"SELECT o.id, sum(oi.quantity) OVER (PARTITION BY o.customer_id ORDER BY o.ordered_at) FROM orders o JOIN order_items oi ON oi.order_id = o.id",
		"SELECT * FROM orders o, LATERAL (SELECT * FROM order_items i WHERE i.order_id = o.id LIMIT 1) x",
		"SELECT date_trunc('month', ordered_at), count(*) FROM orders GROUP BY 1 ORDER BY 1",
		"SELECT $$pg_sleep(10)$$ AS s, 'pg_read_file' AS t", // names in literals are data
		"SELECT CURRENT_DATE, now(), LOCALTIMESTAMP",
		"SELECT generate_series(1, 3)",
	} {
		if _, err := v.Validate(q, nil); err != nil {
			t.Errorf("rejected %q: %v", q, err)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	v := NewValidator(Policy{})
	for _, tc := range []struct{ sql, want string }{
		{"", "empty"},
		{"-- only a comment", "empty"},
		{"SELECT 1; SELECT 2", "2 statements"},
		{"SELECT 1; DROP TABLE orders", "2 statements"},
		{"SELECT 1;/* x */DELETE FROM orders", "2 statements"},
		{"INSERT INTO orders VALUES (1)", "INSERT statements"},
		{"UPDATE orders SET id = 1", "UPDATE statements"},
		{"DELETE FROM orders", "DELETE statements"},
		{"MERGE INTO orders o USING x ON true WHEN MATCHED THEN DELETE", "MERGE statements"},
		{"CREATE TABLE x (a int)", "CREATE statements"},
		{"CREATE TABLE x AS SELECT 1", "CREATE TABLE AS statements"},
		{"DROP TABLE orders", "DROP statements"},
		{"TRUNCATE orders", "TRUNCATE statements"},
		{"COPY orders TO '/tmp/x'", "COPY statements"},
		{"COPY (SELECT 1) TO PROGRAM 'id'", "COPY statements"},
		{"SET statement_timeout = 0", "VARIABLE SET statements"},
		{"RESET ALL", "VARIABLE SET statements"},
		{"SHOW is_superuser", "VARIABLE SHOW statements"},
		{"CALL p()", "CALL statements"},
		{"DO $$ BEGIN PERFORM 1; END $$", "DO statements"},
		{"EXPLAIN ANALYZE DELETE FROM orders", "EXPLAIN statements"},
		{"EXPLAIN SELECT 1", "EXPLAIN statements"},
		{"BEGIN", "TRANSACTION statements"},
		{"COMMIT", "TRANSACTION statements"},
		{"LISTEN x", "LISTEN statements"},
		{"NOTIFY x", "NOTIFY statements"},
		{"PREPARE p AS SELECT 1", "PREPARE statements"},
		{"EXECUTE p", "EXECUTE statements"},
		{"DECLARE c CURSOR FOR SELECT 1", "DECLARE CURSOR statements"},
		{"LOCK orders", "LOCK statements"},
		{"VACUUM orders", "VACUUM statements"},
		{"GRANT SELECT ON orders TO public", "GRANT statements"},
		{"WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d", "DELETE statements are not allowed, not even inside WITH"},
		{"WITH i AS (INSERT INTO orders VALUES (1) RETURNING 1) SELECT 1", "INSERT"},
		{"WITH a AS (SELECT 1), u AS (UPDATE orders SET id = 2 RETURNING 1) SELECT * FROM a", "UPDATE"},
		{"SELECT * INTO copy_of_orders FROM orders", "SELECT INTO"},
		{"SELECT * FROM orders FOR UPDATE", "locking"},
		{"SELECT * FROM orders FOR SHARE SKIP LOCKED", "locking"},
		{"SELECT * FROM (SELECT * FROM orders FOR NO KEY UPDATE) x", "locking"},
		{"SELECT pg_sleep(5)", "pg_sleep"},
		{"SELECT PG_SLEEP(5)", "pg_sleep"},
		{`SELECT "pg_sleep"(5)`, "pg_sleep"},
		{"SELECT pg_catalog.pg_sleep(5)", "pg_sleep"},
		{`SELECT U&"pg\005fsleep"(5)`, "pg_sleep"},
		{"SELECT * FROM orders ORDER BY pg_sleep(1)", "pg_sleep"},
		{"SELECT * FROM orders WHERE id IN (SELECT 1 FROM pg_sleep(1))", "pg_sleep"},
		{"SELECT * FROM orders o, LATERAL (SELECT pg_sleep(1)) x", "pg_sleep"},
		{"SELECT * FROM orders o JOIN LATERAL pg_read_file('/etc/passwd') f ON true", "pg_read_file"},
		{"WITH x AS (SELECT pg_read_binary_file('/etc/passwd')) SELECT * FROM x", "pg_read_binary_file"},
		{"SELECT CASE WHEN true THEN pg_sleep_for('5 seconds') END", "pg_sleep_for"},
		{"SELECT count(*) FILTER (WHERE pg_try_advisory_lock(1)) FROM orders", "pg_try_advisory_lock"},
		{"SELECT nextval('s')", "nextval"},
		{"SELECT setval('s', 1)", "setval"},
		{"SELECT set_config('statement_timeout', '0', false)", "set_config"},
		{"SELECT current_setting('data_directory')", "current_setting"},
		{"SELECT version()", "version"},
		{"SELECT current_user", "CURRENT_USER"},
		{"SELECT session_user", "SESSION_USER"},
		{"SELECT user", "USER"},
		{"SELECT lo_import('/etc/passwd')", "lo_import"},
		{"SELECT lo_export(1, '/tmp/x')", "lo_export"},
		{"SELECT dblink_exec('host=x', 'DROP TABLE t')", "dblink_exec"},
		{"SELECT query_to_xml('delete from orders', true, true, '')", "query_to_xml"},
		{"SELECT table_to_xml('orders', true, true, '')", "table_to_xml"},
		{"SELECT pg_terminate_backend(1)", "pg_terminate_backend"},
		{"SELECT pg_cancel_backend(1)", "pg_cancel_backend"},
		{"SELECT pg_reload_conf()", "pg_reload_conf"},
		{"SELECT pg_ls_dir('.')", "pg_ls_dir"},
		{"SELECT txid_current()", "txid_current"},
		{"SELECT * FROM pg_shadow", "system catalog pg_catalog.pg_shadow"},
		{"SELECT * FROM pg_catalog.pg_authid", "system catalog"},
		{"SELECT * FROM information_schema.tables", "system catalog information_schema.tables"},
		{"SELECT * FROM pg_stat_activity", "system catalog"},
		{"SELECT * FROM otherdb.public.orders", "another database"},
	} {
		_, err := v.Validate(tc.sql, nil)
		if err == nil {
			t.Errorf("accepted %q", tc.sql)
			continue
		}
		if !errors.Is(err, sqldb.ErrRejected) && tc.want != "" {
			t.Errorf("%q: not a rejection: %v", tc.sql, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %q does not mention %q", tc.sql, err, tc.want)
		}
	}
	if _, err := v.Validate("SELEC 1", nil); sqldb.KindOf(err) != sqldb.KindSyntax {
		t.Errorf("syntax error kind: %v", err)
	}
}

func TestValidateAllowlist(t *testing.T) {
	t.Parallel()
	v := NewValidator(Policy{SearchPath: []string{"sales", "public"}})
	allow := []string{"sales.orders", "public.regions"}
	for _, tc := range []struct {
		sql string
		ok  bool
	}{
		{"SELECT * FROM orders", true},       // resolves to sales.orders
		{"SELECT * FROM sales.orders", true}, // qualified
		{"SELECT * FROM public.regions", true},
		{"SELECT * FROM regions", false}, // resolves to sales.regions, not allowed
		{"SELECT * FROM public.orders", false},
		{"SELECT * FROM sales.customers", false},
		{"WITH customers AS (SELECT 1) SELECT * FROM customers", true},
		{"WITH x AS (SELECT * FROM sales.customers) SELECT * FROM x", false},
		// A CTE name is not visible outside its own query.
		{"SELECT * FROM (WITH customers AS (SELECT 1) SELECT * FROM customers) a, customers", false},
		{"SELECT * FROM (WITH customers AS (SELECT 1) SELECT * FROM customers) a, orders", true},
		// Without RECURSIVE a CTE cannot see later siblings: b here is a table.
		{"WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", false},
		{"WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", true},
		{"WITH a AS (SELECT 1), b AS (SELECT * FROM a) SELECT * FROM b", true},
		{"SELECT * FROM orders WHERE id IN (SELECT id FROM sales.secret)", false},
		{"SELECT (SELECT max(id) FROM public.secret) FROM orders", false},
		{"SELECT * FROM orders o JOIN LATERAL (SELECT * FROM sales.secret s WHERE s.id = o.id) x ON true", false},
	} {
		st, err := v.Validate(tc.sql, allow)
		if tc.ok != (err == nil) {
			t.Errorf("%q: ok=%v, err=%v", tc.sql, tc.ok, err)
		}
		if err == nil && tc.sql == "SELECT * FROM orders" && strings.Join(st.Relations, ",") != "sales.orders" {
			t.Errorf("relations %v", st.Relations)
		}
	}
}

func TestValidatePolicy(t *testing.T) {
	t.Parallel()
	// System catalogs can be allowed; the host allows its own functions
	// (and may allow one policy.txt denies) and denies more on top, and
	// the deny patterns win.
	v := NewValidator(Policy{AllowSystemCatalogs: true, AllowFunctions: []string{"version", "not_my_func", "my_func", "secret_fn"}, DeniedFunctions: []string{"my_*", "secret_fn"}})
	for q, ok := range map[string]bool{
		"SELECT * FROM pg_class":             true,
		"SELECT version()":                   true,
		"SELECT my_func()":                   false,
		"SELECT public.secret_fn(1)":         false,
		"SELECT not_my_func()":               true,
		"SELECT public.not_my_func()":        true,
		"SELECT other_func()":                false, // default deny
		"SELECT pg_sleep(1)":                 false,
		"SELECT * FROM x FOR UPDATE":         false, // structural rules stay
		"SELECT 1 INTO t":                    false,
		"WITH d AS (DELETE FROM x) SELECT 1": false,
	} {
		if _, err := v.Validate(q, nil); ok != (err == nil) {
			t.Errorf("%q: ok=%v err=%v", q, ok, err)
		}
	}
	if !NewValidator(Policy{}).Denied("pg_ls_waldir") || !NewValidator(Policy{}).Denied("pg_stat_statements_reset") || NewValidator(Policy{}).Denied("sum") {
		t.Error("default deny list patterns")
	}
	st, err := NewValidator(Policy{}).Validate("  SELECT 1 ;  -- done", nil)
	if err != nil || st.SQL != "SELECT 1" {
		t.Errorf("statement text %q %v", st.SQL, err)
	}
}

func TestFastFloatMatchesParsing(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"1.25", "0.1", "-3.3", "123456789.987654321", "9007199254740993", "0.0000001", "12345678901234567890.5", "-0.000000000000000000000001"} {
		var n pgtype.Numeric
		if err := n.Scan(s); err != nil {
			t.Fatal(err)
		}
		want, _ := strconv.ParseFloat(s, 64)
		got := pgValue(n)
		if got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
}
