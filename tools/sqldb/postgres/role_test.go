package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// Open and New refuse a role with more than read access, name what they
// found, and accept it only with AllowPrivilegedRole; a read-only role
// opens and queries.
func TestRoleCheck(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	other := newSchema(t)
	exec(t,
		"CREATE TABLE "+schema+".facts (id int, v text)",
		"INSERT INTO "+schema+".facts VALUES (1, 'a')",
		"CREATE TABLE "+other+".scratch (id int)",
	)
	// readOnly gives role what the package documentation recommends.
	readOnly := func(role string) {
		exec(t, "GRANT USAGE ON SCHEMA "+schema+" TO "+role, "GRANT SELECT ON ALL TABLES IN SCHEMA "+schema+" TO "+role)
	}
	// A NOLOGIN role in between: membership through it is inherited.
	mid := randomName("bichat_mid_")
	exec(t, "CREATE ROLE "+mid+" NOLOGIN")
	createdRoleMu.Lock()
	createdRoles = append(createdRoles, mid)
	createdRoleMu.Unlock()
	exec(t, "GRANT pg_read_server_files TO "+mid)

	for _, tc := range []struct {
		name    string
		clauses string
		grants  func(role string)
		opts    Options
		want    []string // findings the error must name; none: accepted
	}{
		{name: "read-only", grants: readOnly, opts: Options{Schemas: []string{schema}}},
		{name: "read-only, every schema in reach", grants: readOnly},
		{name: "write grants", grants: func(role string) {
			readOnly(role)
			exec(t, "GRANT INSERT, UPDATE ON "+schema+".facts TO "+role)
		}, opts: Options{Schemas: []string{schema}}, want: []string{"INSERT, UPDATE on table " + schema + ".facts"}},
		{name: "column-level update", grants: func(role string) {
			readOnly(role)
			exec(t, "GRANT UPDATE (v) ON "+schema+".facts TO "+role)
		}, opts: Options{Schemas: []string{schema}}, want: []string{"UPDATE on table " + schema + ".facts"}},
		{name: "delete and truncate", grants: func(role string) {
			readOnly(role)
			exec(t, "GRANT DELETE, TRUNCATE ON "+schema+".facts TO "+role)
		}, want: []string{"DELETE, TRUNCATE on table " + schema + ".facts"}},
		{name: "create in schema", grants: func(role string) {
			readOnly(role)
			exec(t, "GRANT CREATE ON SCHEMA "+schema+" TO "+role)
		}, opts: Options{Policy: Policy{SearchPath: []string{schema}}}, want: []string{"CREATE on schema " + schema}},
		{name: "writes only outside the schemas in reach", grants: func(role string) {
			readOnly(role)
			exec(t, "GRANT USAGE ON SCHEMA "+other+" TO "+role, "GRANT INSERT ON "+other+".scratch TO "+role)
		}, opts: Options{Schemas: []string{schema}, Policy: Policy{SearchPath: []string{schema}}}},
		{name: "the same writes in reach", grants: func(role string) {
			readOnly(role)
			exec(t, "GRANT USAGE ON SCHEMA "+other+" TO "+role, "GRANT INSERT ON "+other+".scratch TO "+role)
		}, want: []string{"INSERT on table " + other + ".scratch"}},
		{name: "pg_read_server_files", grants: func(role string) {
			readOnly(role)
			exec(t, "GRANT pg_read_server_files TO "+role)
		}, want: []string{"member of pg_read_server_files"}},
		{name: "pg_read_server_files through another role", grants: func(role string) {
			readOnly(role)
			exec(t, "GRANT "+mid+" TO "+role)
		}, want: []string{"member of pg_read_server_files"}},
		{name: "pg_signal_backend and pg_execute_server_program", grants: func(role string) {
			readOnly(role)
			exec(t, "GRANT pg_signal_backend, pg_execute_server_program TO "+role)
		}, want: []string{"member of pg_execute_server_program", "member of pg_signal_backend"}},
		{name: "createrole", clauses: "CREATEROLE", grants: readOnly, want: []string{"CREATEROLE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			role, dsn := newRole(t, "bichat_rc_", tc.clauses)
			tc.grants(role)
			ctx := context.Background()
			db, err := Open(ctx, dsn, tc.opts)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("read-only role refused: %v", err)
				}
				defer db.Close()
				res, err := db.Query(ctx, "SELECT v FROM "+schema+".facts", sqldb.Limits{})
				if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != "a" {
					t.Fatalf("query as the read-only role: %v %v", res, err)
				}
				return
			}
			if err == nil {
				db.Close()
				t.Fatalf("privileged role accepted; want a refusal naming %q", tc.want)
			}
			var pr *PrivilegedRoleError
			if !errors.Is(err, ErrPrivilegedRole) || !errors.As(err, &pr) || pr.Role != role {
				t.Fatalf("error %v does not match ErrPrivilegedRole for role %s", err, role)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q: %v", w, err)
				}
			}
			if !strings.Contains(err.Error(), "AllowPrivilegedRole") || strings.Contains(err.Error(), dsn) {
				t.Errorf("error without the way out, or with the DSN: %v", err)
			}
			// The same check through New on a pool of that role.
			pool := func() *DB {
				opts := tc.opts
				opts.AllowPrivilegedRole = true
				db, err := Open(ctx, dsn, opts)
				if err != nil {
					t.Fatalf("AllowPrivilegedRole: %v", err)
				}
				return db
			}()
			defer pool.Close()
			if _, err := New(pool.Pool(), tc.opts); !errors.Is(err, ErrPrivilegedRole) {
				t.Errorf("New accepted the role: %v", err)
			}
			if err := CheckRole(ctx, pool.Pool(), tc.opts); !errors.Is(err, ErrPrivilegedRole) {
				t.Errorf("CheckRole: %v", err)
			}
			// Accepted on request, and still read-only in the transaction.
			res, err := pool.Query(ctx, "SELECT v FROM "+schema+".facts", sqldb.Limits{})
			if err != nil || len(res.Rows) != 1 {
				t.Fatalf("query with AllowPrivilegedRole: %v %v", res, err)
			}
		})
	}
}

// The role the test database belongs to owns tables and may create
// roles: exactly what the check exists for.
func TestRoleCheckRefusesTheOwner(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	exec(t, "CREATE TABLE "+schema+".owned (id int)")
	_, err := New(admin(t), Options{Schemas: []string{schema}})
	for _, w := range []string{"CREATEROLE", "CREATE on the database", "CREATE on schema " + schema,
		"INSERT, UPDATE, DELETE, TRUNCATE on table " + schema + ".owned"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("refusal of the owner does not name %q: %v", w, err)
		}
	}
	if !errors.Is(err, ErrPrivilegedRole) {
		t.Errorf("want ErrPrivilegedRole, got %v", err)
	}
	// Many writable tables are counted, not listed one by one.
	for i := range 8 {
		exec(t, "CREATE TABLE "+schema+".t"+string(rune('a'+i))+" (id int)")
	}
	var pr *PrivilegedRoleError
	if err := CheckRole(context.Background(), admin(t), Options{Schemas: []string{schema}}); !errors.As(err, &pr) ||
		!strings.Contains(pr.Findings[len(pr.Findings)-1], "more tables") || len(pr.Findings) > 12 {
		t.Errorf("findings %v", err)
	}
}
