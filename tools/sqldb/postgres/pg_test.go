package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

// testDSN returns the DSN of the test server: skipped without one, failed
// when BICHAT_REQUIRE_INTEGRATION=1 (CI).
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("BICHAT_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("BICHAT_TEST_POSTGRES_DSN is not set; run `make test` (its setup starts PostgreSQL) or .ci/setup.d/10-postgres.sh")
		}
		t.Skip("BICHAT_TEST_POSTGRES_DSN is not set; PostgreSQL tests skipped (make test provides it)")
	}
	return dsn
}

var (
	adminOnce sync.Once
	adminPool *pgxpool.Pool
	adminErr  error
)

// admin is an unchecked pool for test setup.
func admin(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dsn := testDSN(t)
	adminOnce.Do(func() {
		adminPool, adminErr = pgxpool.New(context.Background(), dsn)
		if adminErr == nil {
			adminErr = adminPool.Ping(context.Background())
		}
	})
	if adminErr != nil {
		t.Fatalf("connect to the test database: %v", sqldb.Redact(adminErr.Error(), dsn))
	}
	return adminPool
}

var (
	readerOnce    sync.Once
	readerRole    string
	readerPool    *pgxpool.Pool
	readerErr     error
	grantsMu      sync.Mutex
	readerGrants  = map[string]bool{}
	createdRoles  []string
	createdRoleMu sync.Mutex
)

// roleDSN is the test DSN with another user and password.
func roleDSN(t testing.TB, role, password string) string {
	t.Helper()
	dsn := testDSN(t)
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal("the test DSN does not parse as a URL")
		}
		u.User = url.UserPassword(role, password)
		return u.String()
	}
	// key=value: later keys win.
	return dsn + " user=" + role + " password=" + password
}

// newRole creates a login role (with the given extra clauses) dropped in
// TestMain after every test, and returns its name and a DSN for it.
func newRole(t testing.TB, prefix, clauses string) (string, string) {
	t.Helper()
	name := randomName(prefix)
	password := randomName("pw")
	exec(t, "CREATE ROLE "+name+" LOGIN PASSWORD '"+password+"' "+clauses)
	createdRoleMu.Lock()
	createdRoles = append(createdRoles, name)
	createdRoleMu.Unlock()
	return name, roleDSN(t, name, password)
}

// reader is a pool connected as a read-only login role created once per
// test binary: the setup the package documentation recommends. Tests
// create their fixtures through admin and give reader a schema with
// grantRead.
func reader(t testing.TB) *pgxpool.Pool {
	t.Helper()
	admin(t)
	readerOnce.Do(func() {
		var dsn string
		readerRole, dsn = newRole(t, "bichat_ro_", "NOSUPERUSER NOCREATEDB NOCREATEROLE")
		if _, readerErr = admin(t).Exec(context.Background(), "ALTER ROLE "+readerRole+" SET default_transaction_read_only = on"); readerErr != nil {
			return
		}
		readerPool, readerErr = pgxpool.New(context.Background(), dsn)
		if readerErr == nil {
			readerErr = readerPool.Ping(context.Background())
		}
	})
	if readerErr != nil {
		t.Fatalf("connect as the read-only role: %v", readerErr)
	}
	return readerPool
}

// grantRead lets the reader role read every table of schema.
func grantRead(t testing.TB, schema string) {
	t.Helper()
	reader(t)
	// Once per schema, one at a time: concurrent GRANTs on one object
	// fail with "tuple concurrently updated".
	grantsMu.Lock()
	defer grantsMu.Unlock()
	if readerGrants[schema] {
		return
	}
	exec(t, "GRANT USAGE ON SCHEMA "+schema+" TO "+readerRole, "GRANT SELECT ON ALL TABLES IN SCHEMA "+schema+" TO "+readerRole)
	readerGrants[schema] = true
}

// readDB is a DB over schema as the read-only role.
func readDB(t testing.TB, schema string, opts Options) *DB {
	t.Helper()
	grantRead(t, schema)
	if opts.Policy.SearchPath == nil {
		opts.Policy.SearchPath = []string{schema}
	}
	db, err := New(reader(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func randomName(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// newSchema creates a schema dropped at the end of the test.
func newSchema(t testing.TB) string {
	t.Helper()
	pool := admin(t)
	name := randomName("t_")
	if _, err := pool.Exec(context.Background(), "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+name+" CASCADE")
	})
	return name
}

func exec(t testing.TB, sqls ...string) {
	t.Helper()
	for _, s := range sqls {
		if _, err := admin(t).Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

var (
	sampleOnce   sync.Once
	sampleSchema string
	sampleErr    error
)

// sample returns a DB whose search path is a schema holding the retail
// sample data, loaded once per test binary (dropped in TestMain).
func sample(t testing.TB, opts Options) *DB {
	t.Helper()
	pool := admin(t)
	sampleOnce.Do(func() {
		sampleSchema = randomName("sample_")
		sampleErr = sampledata.Load(context.Background(), "postgres", sampledata.Options{Schema: sampleSchema}, func(ctx context.Context, s string) error {
			_, err := pool.Exec(ctx, s)
			return err
		})
	})
	if sampleErr != nil {
		t.Fatal(sampleErr)
	}
	opts.Policy.SearchPath = []string{sampleSchema}
	return readDB(t, sampleSchema, opts)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if readerPool != nil {
		readerPool.Close()
	}
	if adminPool != nil {
		ctx := context.Background()
		if sampleSchema != "" {
			_, _ = adminPool.Exec(ctx, "DROP SCHEMA "+sampleSchema+" CASCADE")
		}
		// Schemas kept between runs (benchmarks, gold data) keep no grant
		// to a role that is about to go.
		for schema := range readerGrants {
			_, _ = adminPool.Exec(ctx, "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = '"+schema+"') THEN "+
				"REVOKE ALL ON ALL TABLES IN SCHEMA "+schema+" FROM "+readerRole+"; REVOKE ALL ON SCHEMA "+schema+" FROM "+readerRole+"; END IF; END $$")
		}
		for i := len(createdRoles) - 1; i >= 0; i-- {
			if _, err := adminPool.Exec(ctx, "DROP ROLE IF EXISTS "+createdRoles[i]); err != nil {
				fmt.Fprintf(os.Stderr, "drop test role %s: %v\n", createdRoles[i], err)
			}
		}
		adminPool.Close()
	}
	os.Exit(code)
}

func TestQueryFetchesTypedRows(t *testing.T) {
	t.Parallel()
	db := sample(t, Options{})
	ctx := context.Background()
	res, err := db.Query(ctx, `SELECT r.name AS region, count(*) AS orders, sum(oi.quantity * oi.unit_price) AS revenue,
		min(o.ordered_at) AS first, bool_and(true) AS ok, NULL::text AS nothing
		FROM orders o JOIN customers c ON c.id = o.customer_id JOIN regions r ON r.id = c.region_id
		JOIN order_items oi ON oi.order_id = o.id GROUP BY r.name ORDER BY r.name`, sqldb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	types := []string{}
	for _, c := range res.Columns {
		types = append(types, c.Name+":"+c.Type)
	}
	if got := strings.Join(types, " "); got != "region:text orders:int8 revenue:numeric first:timestamp ok:bool nothing:text" {
		t.Errorf("columns %s", got)
	}
	if len(res.Rows) != sampledata.Regions || res.Truncated {
		t.Fatalf("%d rows, truncated %v", len(res.Rows), res.Truncated)
	}
	row := res.Rows[0]
	if _, ok := row[0].(string); !ok {
		t.Errorf("region %T", row[0])
	}
	if _, ok := row[1].(int64); !ok {
		t.Errorf("count %T", row[1])
	}
	if _, ok := row[2].(float64); !ok {
		t.Errorf("numeric %T", row[2])
	}
	if _, ok := row[3].(time.Time); !ok {
		t.Errorf("timestamp %T", row[3])
	}
	if row[4] != true || row[5] != nil {
		t.Errorf("bool/null %v %v", row[4], row[5])
	}
	want := []string{sampleSchema + ".customers", sampleSchema + ".order_items", sampleSchema + ".orders", sampleSchema + ".regions"}
	if strings.Join(res.Datasets, ",") != strings.Join(want, ",") {
		t.Errorf("datasets %v", res.Datasets)
	}
	if res.Duration <= 0 {
		t.Error("no duration")
	}
}

// Types pgx does not know (an enum here) arrive as their text.
func TestQueryUnknownTypes(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	exec(t, "CREATE TYPE "+schema+".mood AS ENUM ('sad', 'happy')",
		"CREATE TABLE "+schema+".m (id int, mood "+schema+".mood, tags text[], span int4range, doc jsonb, u uuid, d interval)",
		"INSERT INTO "+schema+".m VALUES (1, 'happy', '{a,b}', '[1,5)', '{\"k\": [1, 2]}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '1 day 02:00:00')")
	db := readDB(t, schema, Options{})
	res, err := db.Query(context.Background(), "SELECT mood, tags, span, doc, u, d, 12.5::numeric(5,2) AS n FROM m", sqldb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%#v", res.Rows[0])
	want := `[]interface {}{"happy", "[\"a\",\"b\"]", "[1,5)", "{\"k\":[1,2]}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "1 day 02:00:00", 12.5}`
	if got != want {
		t.Errorf("row\n got %s\nwant %s", got, want)
	}
	if res.Columns[0].Type != schema+".mood" {
		t.Errorf("enum type name %q", res.Columns[0].Type)
	}
}

// The figures in the database equal those computed from the generator.
func TestSampleDataMatchesGenerator(t *testing.T) {
	t.Parallel()
	db := sample(t, Options{})
	d := sampledata.Generate(0)
	var items, qty int64
	var revenue float64
	for _, it := range d.OrderItems {
		items++
		qty += it[3].(int64)
		revenue += float64(it[3].(int64)) * it[4].(float64)
	}
	res, err := db.Query(context.Background(), "SELECT count(*), sum(quantity), round(sum(quantity * unit_price), 2)::float8, (SELECT count(*) FROM orders), (SELECT min(ordered_at) >= '2024-01-01' AND max(ordered_at) < '2026-01-01' FROM orders) FROM order_items", sqldb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Rows[0]
	if r[0] != items || r[1] != qty || fmt.Sprintf("%.2f", r[2]) != fmt.Sprintf("%.2f", revenue) || r[3] != int64(sampledata.Orders) || r[4] != true {
		t.Errorf("database %v; generator items=%d qty=%d revenue=%.2f", r, items, qty, revenue)
	}
}

// Layer 3 on its own: at most MaxRows rows are fetched through the cursor,
// so a 50-million-row result costs no more than its first rows.
func TestQueryFetchesAtMostMaxRows(t *testing.T) {
	t.Parallel()
	db := sample(t, Options{})
	start := time.Now()
	// 100 million rows (function scans are materialised, so two small
	// ones cross-joined stream the big result).
	res, err := db.Query(context.Background(), "SELECT a * 10000 + b AS n, repeat('x', 100) FROM generate_series(0, 9999) a, generate_series(0, 9999) b", sqldb.Limits{MaxRows: 7})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 7 || !res.Truncated {
		t.Fatalf("rows %d truncated %v last %v", len(res.Rows), res.Truncated, res.Rows[len(res.Rows)-1])
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s: the result was materialised", d)
	}
	// Exactly MaxRows rows is not truncation.
	res, err = db.Query(context.Background(), "SELECT g FROM generate_series(1, 7) g", sqldb.Limits{MaxRows: 7})
	if err != nil || len(res.Rows) != 7 || res.Truncated {
		t.Fatalf("exact: %v %v", res, err)
	}
	// Cells and total bytes are capped.
	res, err = db.Query(context.Background(), "SELECT repeat('é', 100) FROM generate_series(1, 100)", sqldb.Limits{MaxCellBytes: 11, MaxBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Rows[0][0].(string); s != strings.Repeat("é", 5) || res.CutCells != len(res.Rows) {
		t.Errorf("cut cell %q, %d cut", s, res.CutCells)
	}
	if !res.Truncated || len(res.Rows) != 20 {
		t.Errorf("byte cap: %d rows, truncated %v", len(res.Rows), res.Truncated)
	}
}

// Layer 2 on its own: statements the validator would refuse fail in the
// READ ONLY transaction, and the timeout is enforced by the server.
func TestTransactionIsReadOnlyAndTimed(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	exec(t, "CREATE TABLE "+schema+".canary (id int)", "INSERT INTO "+schema+".canary VALUES (1)", "CREATE SEQUENCE "+schema+".seq")
	// The owner of the tables, on purpose: the READ ONLY transaction, not
	// a missing privilege, must be what stops the writes.
	db, err := New(admin(t), Options{Policy: Policy{SearchPath: []string{schema}}, AllowPrivilegedRole: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lim := sqldb.Limits{}.WithDefaults()
	// run bypasses the validator. Writing functions fail in the READ ONLY
	// transaction ...
	for _, q := range []string{"SELECT nextval('seq')", "SELECT setval('seq', 5)"} {
		if _, err := db.run(ctx, q, lim); sqldb.KindOf(err) != sqldb.KindReadOnly || !errorsIs(err, sqldb.ErrReadOnlyViolation) {
			t.Errorf("%s: %v", q, err)
		}
	}
	// PostgreSQL lets a READ ONLY transaction create a large object (one
	// reason lo_* is on the deny list); the rollback undoes it.
	oid := 4000000 + time.Now().UnixNano()%1000000
	if _, err := db.run(ctx, fmt.Sprintf("SELECT lo_create(%d)", oid), lim); err != nil {
		t.Fatal(err)
	}
	var kept bool
	if err := admin(t).QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_largeobject_metadata WHERE oid = $1)", oid).Scan(&kept); err != nil || kept {
		t.Errorf("large object survived the rollback: %v %v", kept, err)
	}
	// ... and statements other than SELECT cannot even be declared as the
	// cursor the adapter reads through.
	for _, q := range []string{"INSERT INTO canary VALUES (2) RETURNING id", "WITH d AS (DELETE FROM canary RETURNING 1) SELECT * FROM d"} {
		if _, err := db.run(ctx, q, lim); err == nil {
			t.Errorf("%s ran", q)
		}
	}
	var n int
	if err := admin(t).QueryRow(ctx, "SELECT count(*) FROM "+schema+".canary").Scan(&n); err != nil || n != 1 {
		t.Fatalf("canary rows %d %v", n, err)
	}
	lim.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err = db.run(ctx, "SELECT pg_sleep(5)", lim)
	if sqldb.KindOf(err) != sqldb.KindTimeout || !strings.Contains(err.Error(), "describe_table") && !strings.Contains(err.Error(), "LIMIT") {
		t.Errorf("sleep: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timeout took %s", d)
	}
	// The connection is clean afterwards: no open transaction, no cursor.
	if _, err := db.Query(ctx, "SELECT id FROM canary", sqldb.Limits{}); err != nil {
		t.Fatal(err)
	}
}

// A query that runs past the timeout is cancelled on the server: it is not
// left running in pg_stat_activity.
func TestTimeoutCancelsOnServer(t *testing.T) {
	t.Parallel()
	db := sample(t, Options{})
	marker := randomName("slow_")
	q := "SELECT count(*) AS " + marker + " FROM generate_series(1, 100000000000) g"
	start := time.Now()
	_, err := db.Query(context.Background(), q, sqldb.Limits{Timeout: 500 * time.Millisecond})
	if sqldb.KindOf(err) != sqldb.KindTimeout || !errorsIs(err, sqldb.ErrTimeout) {
		t.Fatalf("want a timeout, got %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancellation took %s", d)
	}
	var running int
	for range 20 {
		if err := admin(t).QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%'", marker).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if running != 0 {
		t.Fatalf("the statement is still running on the server")
	}
	// The backend that ran it is idle, not idle in transaction.
	var stuck int
	if err := admin(t).QueryRow(context.Background(),
		"SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND query LIKE '%' || $1 || '%'", marker).Scan(&stuck); err != nil || stuck != 0 {
		t.Fatalf("idle in transaction: %d %v", stuck, err)
	}
}

func errorsIs(err, target error) bool {
	e, ok := err.(*sqldb.Error)
	return ok && e.Is(target)
}

// The tenant id reaches row-level security policies.
func TestTenantSettingForRowLevelSecurity(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	exec(t,
		"CREATE TABLE "+schema+".facts (tenant text, v int)",
		"INSERT INTO "+schema+".facts VALUES ('a', 1), ('a', 2), ('b', 40)",
		"ALTER TABLE "+schema+".facts ENABLE ROW LEVEL SECURITY",
		"ALTER TABLE "+schema+".facts FORCE ROW LEVEL SECURITY",
		"CREATE POLICY tenant_only ON "+schema+".facts USING (tenant = current_setting('app.tenant_id', true))",
	)
	db := readDB(t, schema, Options{TenantSetting: "app.tenant_id"})
	for tenant, want := range map[string]int64{"a": 3, "b": 40, "": 0} {
		res, err := db.Query(context.Background(), "SELECT coalesce(sum(v), 0)::int8 FROM facts", sqldb.Limits{TenantID: tenant})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows[0][0] != want {
			t.Errorf("tenant %q sees %v, want %d", tenant, res.Rows[0][0], want)
		}
	}
	if _, err := New(admin(t), Options{TenantSetting: "tenant; DROP"}); err == nil {
		t.Error("bad setting name accepted")
	}
}

func TestErrorsAreClassified(t *testing.T) {
	t.Parallel()
	db := sample(t, Options{})
	catalogs, err := New(reader(t), Options{Policy: Policy{AllowSystemCatalogs: true, SearchPath: []string{sampleSchema}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		db   *DB
		sql  string
		kind sqldb.Kind
		hint string
	}{
		{db, "SELECT FROM WHERE", sqldb.KindSyntax, "syntax"},
		{db, "SELECT * FROM no_such_table", sqldb.KindUndefinedTable, "describe_table"},
		{db, "SELECT no_such_column FROM orders", sqldb.KindUndefinedColumn, "no_such_column does not exist; call describe_table"},
		{db, "SELECT name + 1 FROM regions", sqldb.KindTypeMismatch, "cast"},
		// An allowed function with arguments of the wrong type reaches the
		// server (an unknown one is refused by the validator).
		{db, "SELECT lower(1)", sqldb.KindTypeMismatch, "cast"},
		{db, "SELECT 'x'::int", sqldb.KindTypeMismatch, "type"},
		{db, "SELECT region_id, count(*) FROM customers", sqldb.KindSyntax, "GROUP BY"},
		{db, "SELECT 1 / 0", sqldb.KindOther, ""},
		{db, "DELETE FROM orders", sqldb.KindRejected, "SELECT"},
		{catalogs, "SELECT rolpassword FROM pg_authid", sqldb.KindPermission, "may not read"},
	} {
		_, err := tc.db.Query(context.Background(), tc.sql, sqldb.Limits{})
		if sqldb.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.hint) {
			t.Errorf("%s: got %v (%s), want %s with %q", tc.sql, err, sqldb.KindOf(err), tc.kind, tc.hint)
		}
	}
	// Positions point into the statement as written.
	_, err = db.Query(context.Background(), "  SELECT nope FROM orders", sqldb.Limits{})
	if e, ok := err.(*sqldb.Error); !ok || e.Position != 10 {
		t.Errorf("position: %#v", err)
	}
	// ... with the line and a caret under the position, in the message.
	if e, ok := err.(*sqldb.Error); !ok || e.Excerpt != "LINE 1:   SELECT nope FROM orders\n"+strings.Repeat(" ", 17)+"^" ||
		!strings.HasSuffix(err.Error(), "\n"+e.Excerpt) {
		t.Errorf("excerpt: %q", err)
	}
}

func TestErrorsNeverContainTheDSN(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	const secret = "s3cret-Passw0rd"
	host := "127.0.0.1:5432"
	if i := strings.Index(dsn, "@"); i >= 0 {
		host = strings.SplitN(dsn[i+1:], "/", 2)[0]
	}
	for _, bad := range []string{
		"postgres://bichat:" + secret + "@" + host + "/bichat_test?sslmode=disable&connect_timeout=5", // wrong password
		"postgres://bichat:" + secret + "@127.0.0.1:1/bichat_test?sslmode=disable&connect_timeout=2",  // nothing listens
		"postgres://bichat:" + secret + "@[::1/bichat_test",                                           // malformed
		"host=127.0.0.1 port=5432 user=bichat password=" + secret + " dbname=nope sslmode=disable",    // key=value, bad database
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		db, err := Open(ctx, bad, Options{})
		cancel()
		if err == nil {
			db.Close()
			t.Errorf("connected with %q", bad)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), bad) {
			t.Errorf("error leaks the password: %v", err)
		}
	}
	// A working DSN's password never shows up in query errors either, nor
	// in the refusal of a privileged role.
	if _, err := Open(context.Background(), dsn, Options{}); err == nil || strings.Contains(err.Error(), dsn) ||
		testPassword(t, dsn) != "" && strings.Contains(err.Error(), testPassword(t, dsn)) {
		t.Errorf("the owner role was accepted, or its refusal leaks the password: %v", err)
	}
	_, readerDSN := newRole(t, "bichat_ro_", "")
	db, err := Open(context.Background(), readerDSN, Options{})
	if err != nil {
		t.Fatal(sqldb.Redact(err.Error(), readerDSN))
	}
	defer db.Close()
	pw := db.pool.Config().ConnConfig.Password
	_, err = db.Query(context.Background(), "SELECT '"+pw+"'::int", sqldb.Limits{})
	if err == nil || pw != "" && strings.Contains(err.Error(), pw) {
		t.Errorf("query error leaks the password: %v", err)
	}
}

// testPassword is the password in dsn, "" when it has none.
func testPassword(t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal("the test DSN does not parse")
	}
	return cfg.ConnConfig.Password
}

func TestIntrospect(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	if err := sampledata.Load(context.Background(), "postgres", sampledata.Options{Schema: schema}, func(ctx context.Context, s string) error {
		_, err := admin(t).Exec(ctx, s)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	exec(t, "CREATE VIEW "+schema+".big_orders AS SELECT * FROM "+schema+".orders WHERE id > 100",
		"COMMENT ON VIEW "+schema+".big_orders IS 'Orders after the first hundred.'")
	db := readDB(t, schema, Options{Schemas: []string{schema}})
	ds, err := db.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range ds {
		names = append(names, strings.TrimPrefix(d.Name, schema+"."))
		if err := d.Validate(); err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
	}
	if strings.Join(names, ",") != "big_orders,customers,order_items,orders,products,regions" {
		t.Fatalf("datasets %v", names)
	}
	items := ds[2]
	want := "name: " + schema + ".order_items\nsource: " + schema + ".order_items\nkind: table\n" +
		"description: \"Order lines: quantity times unit_price is the line revenue.\"\n"
	if y := items.YAML(); !strings.HasPrefix(y, want) {
		t.Errorf("YAML:\n%s", y)
	}
	if items.RowEstimate < 7000 || items.RowEstimate > 8000 {
		t.Errorf("row estimate %d", items.RowEstimate)
	}
	f, _ := items.Field("unit_price")
	if f.Type != "numeric(10,2)" || f.Description != "Price paid per unit, in EUR." || f.Nullable {
		t.Errorf("unit_price %+v", f)
	}
	if f, _ := items.Field("order_id"); !f.PrimaryKey {
		t.Error("order_id is part of the primary key")
	}
	if len(items.Relationships) != 2 || items.Relationships[0].To != schema+".orders" || items.Relationships[0].JoinCondition() != "order_id = id" {
		t.Errorf("relationships %+v", items.Relationships)
	}
	if ds[0].Kind != "view" || ds[0].Description != "Orders after the first hundred." {
		t.Errorf("view %+v", ds[0])
	}
	// Sample goes through the same checks.
	res, err := db.Sample(context.Background(), schema+".regions", 2)
	if err != nil || len(res.Rows) != 2 {
		t.Fatalf("sample %v %v", res, err)
	}
}
