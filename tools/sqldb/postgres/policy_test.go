package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/tools/sqldb"
)

func TestPolicyFileParses(t *testing.T) {
	t.Parallel()
	p, err := parsePolicy(policyFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.funcs) < 2500 || len(p.ops) < 50 || len(p.types) < 80 {
		t.Errorf("policy.txt too small: %d functions, %d operators, %d types", len(p.funcs), len(p.ops), len(p.types))
	}
	for _, bad := range []string{
		"allow x math",                         // before a section
		"[functions]\nallow x",                 // no family
		"[functions]\ndeny x files",            // no reason
		"[functions]\nmaybe x math",            // verdict
		"[functions]\nallow x math\nallow x a", // duplicate
		"[functions]\nallow f/x math",          // bad arity
		"[functions]\nallow f math\nallow f/2 math",
		"[nonsense]",
	} {
		if _, err := parsePolicy(bad); err == nil {
			t.Errorf("malformed policy accepted: %q", bad)
		}
	}
}

// TestReviewHoles: the holes of the outside review, refused with the
// family of the function in the message.
func TestReviewHoles(t *testing.T) {
	t.Parallel()
	v := NewValidator(Policy{})
	for _, tc := range []struct{ sql, want string }{
		{"SELECT ts_rewrite('a'::tsquery, 'SELECT keyword, sample FROM other_table')", "query-text"},
		{"SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, pg_sleep(3)::text::tsquery')", "query-text"},
		{"SELECT ts_rewrite(query => 'a'::tsquery, target => 'SELECT 1')", "query-text"},
		{"SELECT pg_catalog.ts_rewrite('a'::tsquery, 'SELECT 1')", "query-text"},
		{"SELECT ts_rewrite(VARIADIC ARRAY['a'])", "VARIADIC"},
		{"SELECT pg_stat_reset_shared('bgwriter')", "statistics"},
		{"SELECT pg_stat_reset_single_table_counters(1259)", "statistics"},
		{"SELECT pg_stat_reset_slru('clog')", "statistics"},
		{"SELECT ts_stat('SELECT to_tsvector(name) FROM t')", "query-text"},
		{"SELECT cursor_to_xml('bichat_cursor', 10, true, true, '')", "query-text"},
		{"SELECT table_to_xml('secret', true, true, '')", "table-read"},
		{"SELECT currtid2('secret', '(0,1)')", "table-read"},
	} {
		_, err := v.Validate(tc.sql, nil)
		if err == nil || !errors.Is(err, sqldb.ErrRejected) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: want a rejection naming %q, got %v", tc.sql, tc.want, err)
		}
	}
	// ts_rewrite with three tsquery arguments rewrites a query and runs no SQL.
	if _, err := v.Validate("SELECT ts_rewrite('a & b'::tsquery, 'a'::tsquery, 'c'::tsquery)", nil); err != nil {
		t.Errorf("three-argument ts_rewrite: %v", err)
	}
}

// dangerousCalls are calls of each denied family; attackShapes put each
// into every place of a statement where an expression can stand.
var dangerousCalls = []string{
	"ts_rewrite('a'::tsquery, 'SELECT 1')",
	"ts_stat('SELECT 1')",
	"query_to_xml('SELECT 1', true, true, '')",
	"table_to_xml('canary', true, true, '')",
	"pg_sleep(3)",
	"pg_read_file('/etc/passwd')",
	"lo_import('/etc/passwd')",
	"pg_advisory_lock(42)",
	"nextval('canary_seq')",
	"set_config('statement_timeout', '0', false)",
	"current_setting('data_directory')",
	"pg_stat_reset_shared('bgwriter')",
	"pg_stat_get_activity(NULL)",
	"pg_terminate_backend(1)",
	"pg_switch_wal()",
	"pg_notify('c', 'x')",
	"txid_current()",
	"has_table_privilege('canary', 'SELECT')",
	"to_regclass('pg_authid')",
	"pg_relation_size('canary')",
	"brin_summarize_new_values(1)",
	"dblink_exec('host=x', 'SELECT 1')",
	"setseed(0.5)",
	"pg_backend_pid()",
	"version()",
}

var attackShapes = []string{
	"SELECT %s",
	"SELECT * FROM (SELECT %s) s",
	"WITH c AS (SELECT %s) SELECT * FROM c",
	"SELECT * FROM canary c, LATERAL (SELECT %s) l",
	"SELECT * FROM canary ORDER BY (%s)::text",
	"SELECT count(*) FILTER (WHERE (%s)::text IS NULL) FROM canary",
	"SELECT sum(id) OVER (PARTITION BY (%s)::text) FROM canary",
	"SELECT sum(id) OVER w FROM canary WINDOW w AS (ORDER BY (%s)::text)",
	"SELECT make_interval(secs => length((%s)::text))",
	"SELECT id FROM canary GROUP BY id HAVING (%s)::text IS NULL",
	"SELECT coalesce(NULL, (%s)::text)",
	"SELECT * FROM canary WHERE name = ANY (SELECT (%s)::text)",
	"SELECT jsonb_build_object('k', %s)",
	"SELECT * FROM canary LIMIT (SELECT length((%s)::text))",
	"SELECT CASE WHEN true THEN (%s)::text END",
	"SELECT ARRAY[(%s)::text]",
}

// TestAttackFamiliesRejected sweeps every denied family through every
// place of a statement.
func TestAttackFamiliesRejected(t *testing.T) {
	t.Parallel()
	v := NewValidator(Policy{})
	for _, stmt := range attackStatements() {
		if _, err := v.Validate(stmt, nil); !errors.Is(err, sqldb.ErrRejected) {
			t.Errorf("not rejected: %q: %v", stmt, err)
		}
	}
}

// attackStatements are the sweep: families times places, and the ways to
// reach a function without calling it by name.
func attackStatements() []string {
	var out []string
	for _, call := range dangerousCalls {
		for _, shape := range attackShapes {
			out = append(out, strings.ReplaceAll(shape, "%s", call))
		}
	}
	return append(out,
		// casts and types whose input function looks catalog objects up
		"SELECT 'pg_authid'::regclass",
		"SELECT CAST('pg_sleep' AS regproc)",
		"SELECT 'pg_catalog.pg_sleep(double precision)'::regprocedure::oid",
		"SELECT 1259::regclass::text",
		"SELECT 'pg_read_server_files'::regrole",
		"SELECT x FROM jsonb_to_record('{\"x\": \"pg_authid\"}') AS t(x regclass)",
		"SELECT * FROM json_populate_record(NULL::pg_catalog.pg_class, '{}')",
		"SELECT ARRAY['pg_authid']::regclass[]",
		"SELECT '1'::_regclass",
		"SELECT '(1,2)'::refcursor",
		"SELECT x::information_schema.sql_identifier FROM canary",
		// SQL keywords that name the session
		"SELECT current_user", "SELECT session_user", "SELECT current_role", "SELECT user",
		"SELECT current_catalog", "SELECT current_schema",
		// functions outside pg_catalog or unlisted, TABLESAMPLE methods
		"SELECT public.lower('x')",
		"SELECT information_schema._pg_expandarray(ARRAY[1])",
		"SELECT * FROM canary TABLESAMPLE system_time (1000)",
		"SELECT * FROM canary TABLESAMPLE public.system (10)",
		// operators qualified with another schema, unknown operators
		"SELECT 1 OPERATOR(public.+) 1",
		"SELECT 1 WHERE 1 OPERATOR(pg_catalog.===) 1",
		"SELECT * FROM canary ORDER BY id USING OPERATOR(public.<)",
		"SELECT 1 WHERE 1 OPERATOR(public.=) ANY (SELECT 1)",
	)
}

// TestAnalyticSQLAccepted: ordinary analysis still passes.
func TestAnalyticSQLAccepted(t *testing.T) {
	t.Parallel()
	v := NewValidator(Policy{})
	for _, q := range analyticSQL {
		if _, err := v.Validate(q, nil); err != nil {
			t.Errorf("rejected %q: %v", q, err)
		}
	}
}

var analyticSQL = []string{
	"SELECT region, date_trunc('month', ts) AS m, sum(amount), count(DISTINCT customer) FROM sales GROUP BY 1, 2 ORDER BY 1, 2",
	"SELECT id, amount, rank() OVER (PARTITION BY region ORDER BY amount DESC), lag(amount) OVER w, avg(amount) OVER (w ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM sales WINDOW w AS (ORDER BY ts)",
	"SELECT to_char(ts, 'YYYY-MM'), extract(year FROM ts), date_part('dow', ts), ts::date, ts AT TIME ZONE 'UTC' FROM sales",
	"SELECT now() - interval '30 days', current_date - 7, age(now(), ts), justify_interval(interval '40 days'), make_date(2024, 1, 1) FROM sales",
	"SELECT data->>'name', data->'tags'->0, data #>> '{a,b}', data ? 'k', data @> '{\"a\": 1}'::jsonb, jsonb_array_length(data->'tags') FROM events",
	"SELECT jsonb_path_query_first(data, '$.a'), jsonb_build_object('n', count(*)), jsonb_agg(id), json_agg(name ORDER BY name) FROM events GROUP BY data",
	"SELECT string_agg(name, ', ' ORDER BY name), array_agg(DISTINCT id), percentile_cont(0.5) WITHIN GROUP (ORDER BY amount), mode() WITHIN GROUP (ORDER BY region) FROM sales",
	"SELECT * FROM generate_series(DATE '2024-01-01', DATE '2024-12-01', interval '1 month') AS g(month)",
	"SELECT coalesce(a, 0), nullif(b, 0), greatest(a, b), least(a, b), CASE WHEN a > b THEN 'x' ELSE 'y' END FROM t",
	"SELECT name ~ '^a', name ~* 'B', name !~ 'c', name LIKE 'a%', name ILIKE '%b', name NOT LIKE 'x', name SIMILAR TO '(a|b)%', regexp_replace(name, '\\s+', ' ', 'g'), split_part(name, '-', 2) FROM t",
	"SELECT ARRAY[1, 2] || 3, tags @> ARRAY['a'], tags && ARRAY['b'], cardinality(tags), unnest(tags), array_position(tags, 'c') FROM t",
	"SELECT id FROM t WHERE id IN (1, 2) AND id NOT IN (SELECT id FROM u) AND id = ANY (ARRAY[1, 2]) AND id BETWEEN 1 AND 10 AND a IS DISTINCT FROM b",
	"SELECT round(amount::numeric, 2), trunc(amount), ceil(amount), floor(amount), abs(amount), power(2, 3), sqrt(16), ln(10), mod(7, 3), width_bucket(amount, 0, 100, 10), random() FROM sales",
	"SELECT upper(name), lower(name), initcap(name), length(name), substring(name FROM 2 FOR 3), trim(both ' ' FROM name), position('a' IN name), concat_ws('-', a, b), format('%s-%s', a, b), left(name, 3), md5(name) FROM t",
	"SELECT int4range(1, 10) @> 5, tstzrange(now(), now() + interval '1 day') && tstzrange(now(), NULL), lower(int4range(1, 3)), upper_inf(int4range(1, NULL))",
	"SELECT '192.168.0.1'::inet << '192.168.0.0/16'::cidr, host('10.0.0.1'::inet), masklen('10.0.0.0/8'::cidr)",
	"SELECT to_tsvector('english', body) @@ plainto_tsquery('english', 'sales report'), ts_rank(to_tsvector(body), to_tsquery('a & b')), ts_headline(body, websearch_to_tsquery('x')) FROM docs",
	"SELECT gen_random_uuid(), id::text::uuid FROM t",
	"SELECT point(1, 2) <-> point(3, 4), area(box '((0,0),(1,1))'), circle '((0,0),2)' @> point '(1,1)'",
	"SELECT ntile(4) OVER (ORDER BY amount), cume_dist() OVER (ORDER BY amount), first_value(id) OVER (PARTITION BY region ORDER BY ts), row_number() OVER () FROM sales",
	"SELECT corr(a, b), stddev(a), var_pop(b), regr_slope(a, b), bool_and(a > 0), bit_or(id), every(a > 0) FROM t",
	"SELECT x FROM jsonb_to_recordset('[{\"x\": 1}]') AS r(x int, y text, z timestamptz, w numeric(10, 2), v varchar(20)[])",
	"SELECT CAST(a AS double precision), a::bigint, a::smallint, b::timestamp with time zone, b::time without time zone, c::character varying(10), d::bit(3), e::boolean, f::json, CAST(g AS decimal(10, 2)) FROM t",
	"SELECT name COLLATE \"C\" FROM t ORDER BY name COLLATE \"C\"",
	"SELECT xmlelement(name x, name), xmlforest(id, name), xpath('/a/text()', '<a>1</a>'::xml) FROM t",
	"SELECT pg_typeof(amount), pg_size_pretty(1024::bigint), to_hex(255), to_number('12,454.8-', '99G999D9S') FROM sales",
	"SELECT CURRENT_DATE, CURRENT_TIMESTAMP(3), LOCALTIME, LOCALTIMESTAMP(0), CURRENT_TIME",
	"SELECT * FROM sales TABLESAMPLE BERNOULLI (10) REPEATABLE (1)",
	"SELECT * FROM sales TABLESAMPLE SYSTEM (5)",
	"SELECT a.* FROM sales a JOIN LATERAL (SELECT max(amount) AS m FROM sales b WHERE b.region = a.region) x ON x.m = a.amount",
	"SELECT id FROM t ORDER BY name USING <",
	"SELECT 1 OPERATOR(pg_catalog.+) 1",
}

// TestHostExtendsAndNarrows: Policy.AllowFunctions, AllowOperators and
// AllowTypes extend the allowlist; DeniedFunctions narrows it.
func TestHostExtendsAndNarrows(t *testing.T) {
	t.Parallel()
	def := NewValidator(Policy{})
	host := NewValidator(Policy{
		AllowFunctions:  []string{"analytics.fiscal_quarter", "score"},
		AllowOperators:  []string{"<%>"},
		AllowTypes:      []string{"sales.order_status", "mood"},
		DeniedFunctions: []string{"md5", "sha*"},
	})
	for _, tc := range []struct {
		sql           string
		defOK, hostOK bool
	}{
		{"SELECT analytics.fiscal_quarter(now())", false, true},
		{"SELECT fiscal_quarter(now())", false, false}, // qualified entry: qualified calls only
		{"SELECT other.fiscal_quarter(now())", false, false},
		{"SELECT score(1), public.score(2)", false, true},
		{"SELECT 'a' <%> 'b'", false, true},
		{"SELECT status::sales.order_status FROM t", false, true},
		{"SELECT status::order_status FROM t", false, false},
		{"SELECT enum_range(NULL::mood)", false, true},
		{"SELECT md5('x')", true, false},
		{"SELECT sha256('x'::bytea)", true, false},
		{"SELECT upper('x')", true, true},
	} {
		if _, err := def.Validate(tc.sql, nil); (err == nil) != tc.defOK {
			t.Errorf("default policy, %q: ok=%v, err=%v", tc.sql, tc.defOK, err)
		}
		if _, err := host.Validate(tc.sql, nil); (err == nil) != tc.hostOK {
			t.Errorf("host policy, %q: ok=%v, err=%v", tc.sql, tc.hostOK, err)
		}
	}
}

// TestSyntaxErrorPosition: a syntax error names the parser's position and
// shows the line with a caret under it, and stays KindSyntax.
func TestSyntaxErrorPosition(t *testing.T) {
	t.Parallel()
	v := NewValidator(Policy{})
	for _, tc := range []struct {
		sql     string
		pos     int
		excerpt string
	}{
		{"SELEC 1", 1, "LINE 1: SELEC 1\n        ^"},
		{"SELECT id FROM orders WHERE", 28, "LINE 1: SELECT id FROM orders WHERE\n                                   ^"},
		{"SELECT id,\n  name,\n  FROM orders", 22, "LINE 3:   FROM orders\n          ^"},
		{"SELECT 'é' || x FROM t WHERE y = = 1", 34, "LINE 1: ...ECT 'é' || x FROM t WHERE y = = 1\n                                         ^"},
	} {
		_, err := v.Validate(tc.sql, nil)
		var e *sqldb.Error
		if !errors.As(err, &e) || e.Kind != sqldb.KindSyntax {
			t.Errorf("%q: want a syntax error, got %v", tc.sql, err)
			continue
		}
		if e.Position != tc.pos {
			t.Errorf("%q: position %d, want %d", tc.sql, e.Position, tc.pos)
		}
		if e.Excerpt != tc.excerpt || !strings.Contains(e.Error(), tc.excerpt) {
			t.Errorf("%q: excerpt\n%s\nerror\n%s\nwant the excerpt\n%s", tc.sql, e.Excerpt, e.Error(), tc.excerpt)
		}
	}
	// A long line is cut around the position.
	long := "SELECT " + strings.Repeat("a + ", 40) + "FROM t"
	_, err := v.Validate(long, nil)
	var e *sqldb.Error
	if !errors.As(err, &e) || e.Position == 0 {
		t.Fatalf("long line: %v", err)
	}
	lines := strings.Split(e.Excerpt, "\n")
	if len(lines) != 2 || len([]rune(lines[0])) > 90 || !strings.Contains(lines[0], "...") || !strings.HasSuffix(lines[1], "^") {
		t.Fatalf("long line excerpt:\n%s", e.Excerpt)
	}
	caret := len([]rune(lines[1])) - 1
	if got := string([]rune(lines[0])[caret:]); !strings.HasPrefix(got, "FROM t") || e.Position != len(long)-5 {
		t.Errorf("caret points at %q, want the FROM after the dangling +:\n%s", got, e.Excerpt)
	}
}
