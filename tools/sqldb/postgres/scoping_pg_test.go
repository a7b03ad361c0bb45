package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// scopedSettings are the data-scoping settings the tests configure.
var scopedSettings = map[string]string{"tenant_id": "app.tenant_id", "user_id": "app.user_id", "roles": "app.roles"}

// scopedFixture is a schema with an orders table under row-level
// security (forced, so even its owner would be subject to it) whose
// policy reads app.tenant_id, app.user_id and app.roles, and a view "me"
// showing the settings a statement sees. It returns the schema and a DB
// over it as a fresh read-only login role (not the owner) with a pool of
// one connection, so consecutive statements share a session.
func scopedFixture(t *testing.T) (string, *DB) {
	t.Helper()
	schema := newSchema(t)
	exec(t,
		"CREATE TABLE "+schema+".orders (id int, tenant text, owner text, amount int)",
		"INSERT INTO "+schema+".orders VALUES (1, 't1', 'alice', 10), (2, 't1', 'alice', 20), (3, 't1', 'bob', 300), "+
			"(4, 't2', 'dave', 4000), (5, 't2', 'alice', 50000)",
		"ALTER TABLE "+schema+".orders ENABLE ROW LEVEL SECURITY",
		"ALTER TABLE "+schema+".orders FORCE ROW LEVEL SECURITY",
		"CREATE POLICY own_rows ON "+schema+".orders USING (tenant = current_setting('app.tenant_id', true) AND "+
			"(owner = current_setting('app.user_id', true) OR 'manager' = ANY(string_to_array(current_setting('app.roles', true), ','))))",
		"CREATE VIEW "+schema+".me AS SELECT coalesce(current_setting('app.tenant_id', true), '') AS tenant_id, "+
			"coalesce(current_setting('app.user_id', true), '') AS user_id, coalesce(current_setting('app.roles', true), '') AS roles",
	)
	role, dsn := newRole(t, "bichat_scope_", "NOSUPERUSER NOCREATEDB NOCREATEROLE")
	exec(t, "GRANT USAGE ON SCHEMA "+schema+" TO "+role, "GRANT SELECT ON ALL TABLES IN SCHEMA "+schema+" TO "+role)
	db, err := Open(context.Background(), oneConn(dsn), Options{Settings: scopedSettings, Policy: Policy{SearchPath: []string{schema}}, Schemas: []string{schema}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return schema, db
}

// oneConn is dsn with a pool of one connection.
func oneConn(dsn string) string {
	switch {
	case !strings.Contains(dsn, "://"):
		return dsn + " pool_max_conns=1"
	case strings.Contains(dsn, "?"):
		return dsn + "&pool_max_conns=1"
	}
	return dsn + "?pool_max_conns=1"
}

func caller(tenant, user, roles string) sqldb.Limits {
	return sqldb.Limits{Attributes: map[string]string{"tenant_id": tenant, "user_id": user, "roles": roles}}
}

// ids runs sql for lim and returns the first column as int64s.
func ids(t *testing.T, db *DB, sql string, lim sqldb.Limits) []int64 {
	t.Helper()
	res, err := db.Query(context.Background(), sql, lim)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out := []int64{}
	for _, r := range res.Rows {
		out = append(out, r[0].(int64))
	}
	return out
}

// Two users of one tenant ask the same question and get their own rows; a
// manager of the tenant sees the tenant's rows; a user of another tenant
// sees none of them; a call without a mapped attribute is refused.
func TestSettingsScopeRowsPerUser(t *testing.T) {
	t.Parallel()
	_, db := scopedFixture(t)
	const question = "SELECT id FROM orders ORDER BY id"
	for _, tc := range []struct {
		name string
		lim  sqldb.Limits
		want []int64
	}{
		{"alice of t1", caller("t1", "alice", "viewer"), []int64{1, 2}},
		{"bob of t1", caller("t1", "bob", "viewer"), []int64{3}},
		{"manager of t1", caller("t1", "carol", "viewer,manager"), []int64{1, 2, 3}},
		{"dave of t2", caller("t2", "dave", "viewer"), []int64{4}},
		{"alice of t2 (same user id, other tenant)", caller("t2", "alice", "viewer"), []int64{5}},
		{"tenant from Limits.TenantID", sqldb.Limits{TenantID: "t1", Attributes: map[string]string{"user_id": "bob", "roles": "viewer"}}, []int64{3}},
		{"a user of no tenant with rows", caller("t3", "alice", "manager"), []int64{}},
	} {
		if got := ids(t, db, question, tc.lim); !slices.Equal(got, tc.want) {
			t.Errorf("%s sees %v, want %v", tc.name, got, tc.want)
		}
	}
	// Missing, empty or unusable attributes refuse the statement; the
	// statement would fail with division by zero had it run.
	long := strings.Repeat("x", MaxSettingValueBytes+1)
	for _, tc := range []struct {
		name string
		lim  sqldb.Limits
		want string
	}{
		{"no attributes", sqldb.Limits{}, `"roles"`},
		{"no user_id", sqldb.Limits{Attributes: map[string]string{"tenant_id": "t1", "roles": "viewer"}}, `"user_id" (setting app.user_id) is missing`},
		{"empty user_id", caller("t1", "", "viewer"), `"user_id" (setting app.user_id) is missing`},
		{"no tenant at all", sqldb.Limits{Attributes: map[string]string{"user_id": "alice", "roles": "viewer"}}, `"tenant_id" (setting app.tenant_id) is missing`},
		{"two tenants", sqldb.Limits{TenantID: "t2", Attributes: map[string]string{"tenant_id": "t1", "user_id": "alice", "roles": "viewer"}}, "two different tenant ids"},
		{"NUL byte", caller("t1", "alice\x00bob", "viewer"), `"user_id" holds a NUL byte`},
		{"too long", caller("t1", long, "viewer"), `"user_id" is 1025 bytes long`},
		{"not UTF-8", caller("t1", "alice\xff", "viewer"), `"user_id" is not valid UTF-8`},
	} {
		_, err := db.Query(context.Background(), "SELECT id / 0 FROM orders", tc.lim)
		if !errors.Is(err, sqldb.ErrRejected) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "not run") {
			t.Errorf("%s: got %v, want a refusal naming %s", tc.name, err, tc.want)
		}
	}
	// Sample takes the attributes of the tool call the context carries.
	info := agents.CallInfo{TenantID: "t1", Attributes: map[string]string{"tenant_id": "t1", "user_id": "bob", "roles": "viewer"}}
	res, err := db.Sample(agents.WithCallInfo(context.Background(), info), "orders", 10)
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != int64(3) {
		t.Errorf("bob's sample: %v %v", res, err)
	}
	if _, err := db.Sample(context.Background(), "orders", 10); !errors.Is(err, sqldb.ErrRejected) {
		t.Errorf("a sample outside a tool call ran: %v", err)
	}
	// The settings are transaction-local: the session keeps none of them.
	var user *string
	if err := db.Pool().QueryRow(context.Background(), "SELECT nullif(current_setting('app.user_id', true), '')").Scan(&user); err != nil || user != nil {
		t.Errorf("the session holds app.user_id = %v after the statements (%v)", user, err)
	}
}

// The model cannot change the settings: every route to set_config, SET,
// RESET, pg_settings or a DO block is refused, and the next statement on
// the same session still sees the caller's own values.
func TestSettingsCannotBeChangedBySQL(t *testing.T) {
	t.Parallel()
	_, db := scopedFixture(t)
	alice := caller("t1", "alice", "viewer")
	const sc = "set_config('app.user_id', 'bob', false)"
	attacks := []string{
		"SELECT " + sc,
		"SELECT set_config('app.user_id', 'bob', true)",
		"SELECT set_config('app.roles', 'manager', false)",
		"SELECT pg_catalog." + sc,
		`SELECT "set_config"('app.user_id', 'bob', false)`,
		`SELECT "pg_catalog"."set_config"('app.user_id', 'bob', false)`,
		`SELECT U&"set\005fconfig"('app.user_id', 'bob', false)`,
		"SELECT SET_CONFIG('app.user_id', 'bob', false)",
		"WITH x AS (SELECT " + sc + " AS v) SELECT id FROM orders, x",
		"WITH x AS MATERIALIZED (SELECT " + sc + ") SELECT id FROM orders WHERE EXISTS (SELECT 1 FROM x)",
		"SELECT id FROM orders WHERE EXISTS (SELECT " + sc + ")",
		"SELECT id FROM orders WHERE owner = (SELECT " + sc + ")",
		"SELECT id FROM orders, LATERAL (SELECT " + sc + ") s",
		"SELECT id FROM orders WHERE owner = coalesce(" + sc + ", owner)",
		"SELECT * FROM " + sc,
		"SELECT upper(" + sc + ")",
		"SELECT (SELECT " + sc + ")",
		"VALUES (" + sc + ")",
		"SELECT owner FROM orders UNION ALL SELECT " + sc,
		"SELECT id FROM orders ORDER BY " + sc,
		"SELECT count(*) FILTER (WHERE " + sc + " = 'bob') FROM orders",
		"SELECT query_to_xml('SELECT " + strings.ReplaceAll(sc, "'", "''") + "', true, false, '')",
		"SET app.user_id = 'bob'",
		"SET LOCAL app.user_id = 'bob'",
		"SET SESSION app.user_id TO 'bob'",
		"SET app.roles = 'manager'",
		"RESET app.user_id",
		"RESET ALL",
		"SET ROLE NONE",
		"SET SESSION AUTHORIZATION DEFAULT",
		"SELECT 1; SET LOCAL app.user_id = 'bob'",
		"SET LOCAL app.user_id = 'bob'; SELECT id FROM orders",
		"SELECT id FROM orders; COMMIT; SET app.user_id = 'bob'",
		"ROLLBACK; SET app.user_id = 'bob'; BEGIN",
		"COMMIT",
		"UPDATE pg_settings SET setting = 'bob' WHERE name = 'app.user_id'",
		"WITH u AS (UPDATE pg_settings SET setting = 'bob' WHERE name = 'app.user_id' RETURNING 1) SELECT * FROM u",
		"SELECT * FROM pg_settings WHERE name = 'app.user_id'",
		"SELECT * FROM pg_catalog.pg_settings",
		"DO $$ BEGIN PERFORM set_config('app.user_id', 'bob', false); END $$",
		"DO $$ BEGIN EXECUTE 'SET app.user_id = ''bob'''; END $$",
		"PREPARE p AS SELECT " + sc,
		"EXECUTE p",
		"DECLARE c CURSOR FOR SELECT " + sc,
		"ALTER ROLE CURRENT_USER SET app.user_id = 'bob'",
		"ALTER DATABASE CURRENT SET app.user_id = 'bob'",
		"SELECT set_config(name, 'bob', false) FROM (VALUES ('app.user_id')) v(name)",
		"SELECT pg_catalog.current_setting('app.user_id')",
	}
	for _, a := range attacks {
		if res, err := db.Query(context.Background(), a, alice); err == nil {
			t.Errorf("ran: %s -> %v", a, res.Rows)
		}
		// The same session, the next statement: alice's values and rows.
		res, err := db.Query(context.Background(), "SELECT tenant_id, user_id, roles FROM me", alice)
		if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != "t1" || res.Rows[0][1] != "alice" || res.Rows[0][2] != "viewer" {
			t.Fatalf("after %q the next statement sees %v (%v)", a, res, err)
		}
		if got := ids(t, db, "SELECT id FROM orders ORDER BY id", alice); !slices.Equal(got, []int64{1, 2}) {
			t.Fatalf("after %q alice sees %v", a, got)
		}
	}
	// And another caller on the same session sees only its own.
	if got := ids(t, db, "SELECT id FROM orders ORDER BY id", caller("t1", "bob", "viewer")); !slices.Equal(got, []int64{3}) {
		t.Errorf("bob sees %v", got)
	}
}

// Bad settings are refused when the DB is built.
func TestSettingsAreCheckedAtOpen(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	exec(t, "CREATE TABLE "+schema+".facts (id int)")
	grantRead(t, schema)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no dot", Options{Settings: map[string]string{"user_id": "user_id"}}, "must look like prefix.name"},
		{"injection", Options{Settings: map[string]string{"user_id": "app.user_id'); DROP TABLE x; --"}}, "must look like prefix.name"},
		{"two dots", Options{Settings: map[string]string{"user_id": "app.a.b"}}, "must look like prefix.name"},
		{"reserved pg_", Options{Settings: map[string]string{"user_id": "pg_trgm.similarity_threshold"}}, `reserved prefix "pg_trgm"`},
		{"reserved plpgsql", Options{Settings: map[string]string{"user_id": "PLpgSQL.variable_conflict"}}, `reserved prefix "plpgsql"`},
		{"reserved auto_explain", Options{Settings: map[string]string{"region": "auto_explain.log_min_duration"}}, "reserved prefix"},
		{"shared setting", Options{Settings: map[string]string{"user_id": "app.who", "region": "APP.who"}}, "both map to setting"},
		{"empty attribute", Options{Settings: map[string]string{" ": "app.x"}}, "empty attribute name"},
		{"tenant setting taken", Options{TenantSetting: "app.t", Settings: map[string]string{"user_id": "app.t"}}, "TenantSetting"},
		{"bad tenant setting", Options{TenantSetting: "tenant; DROP"}, "tenant setting"},
	} {
		tc.opts.Schemas = []string{schema}
		if err := tc.opts.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want %q", tc.name, err, tc.want)
		}
		if _, err := New(reader(t), tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want %q", tc.name, err, tc.want)
		}
	}
	ok := Options{Schemas: []string{schema}, TenantSetting: "app.tenant_id", Settings: map[string]string{"tenant_id": "app.tenant_id", "user_id": "app.user_id"}}
	if _, err := New(reader(t), ok); err != nil {
		t.Errorf("good settings refused: %v", err)
	}
	// A loaded extension's setting is the server's, not a custom one: the
	// server is asked (plpgsql, loaded by a DO block on the one
	// connection of this pool, is also refused by prefix in Validate).
	pool, err := pgxpool.New(context.Background(), oneConn(testDSN(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(), "DO $$ BEGIN END $$"); err != nil {
		t.Fatal(err)
	}
	err = checkSettingNames(context.Background(), pool, []scoped{{attr: "x", setting: "app.mine"}, {attr: "y", setting: "PLPGSQL.variable_conflict"}})
	if err == nil || !strings.Contains(err.Error(), "plpgsql.variable_conflict is one of the server's own settings") {
		t.Errorf("checkSettingNames = %v", err)
	}
	if err := checkSettingNames(context.Background(), pool, []scoped{{attr: "x", setting: "app.mine"}}); err != nil {
		t.Errorf("a custom setting refused: %v", err)
	}
}
