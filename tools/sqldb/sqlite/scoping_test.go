package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// scopedDB creates a database whose orders are exposed to the agent only
// through the view my_orders, which keeps the caller's rows with
// bichat_attr, and opens it read-only requiring tenant_id and user_id.
func scopedDB(t *testing.T, opts Options) *DB {
	t.Helper()
	if err := RegisterAttrFunction(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "scoped.db")
	w, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant TEXT, owner TEXT, amount INTEGER)",
		"INSERT INTO orders VALUES (1, 't1', 'alice', 10), (2, 't1', 'alice', 20), (3, 't1', 'bob', 300), (4, 't2', 'dave', 4000), (5, 't2', 'alice', 50000)",
		"CREATE VIEW my_orders AS SELECT id, amount FROM orders WHERE tenant = bichat_attr('tenant_id') AND owner = bichat_attr('user_id')",
		"CREATE VIEW region_orders AS SELECT id FROM orders WHERE owner = bichat_attr('region')",
	} {
		if _, err := w.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	// Outside DB.Query the function has no caller.
	if _, err := w.Query("SELECT * FROM my_orders"); err == nil {
		t.Error("bichat_attr answered outside DB.Query")
	}
	w.Close()
	db, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func who(tenant, user string) sqldb.Limits {
	return sqldb.Limits{Tables: []string{"my_orders", "region_orders"}, Attributes: map[string]string{"tenant_id": tenant, "user_id": user}}
}

func rowIDs(t *testing.T, db *DB, q string, lim sqldb.Limits) []int64 {
	t.Helper()
	res, err := db.Query(context.Background(), q, lim)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out := []int64{}
	for _, r := range res.Rows {
		out = append(out, r[0].(int64))
	}
	return out
}

// Two users of one tenant ask the same question of the view and get
// their own rows; a user of another tenant gets none of theirs; the base
// table (not in the allowlist) is refused however it is reached.
func TestAttributesScopeViews(t *testing.T) {
	t.Parallel()
	db := scopedDB(t, Options{Attributes: []string{"tenant_id", "user_id"}})
	const question = "SELECT id FROM my_orders ORDER BY id"
	for _, tc := range []struct {
		tenant, user string
		want         []int64
	}{
		{"t1", "alice", []int64{1, 2}},
		{"t1", "bob", []int64{3}},
		{"t2", "dave", []int64{4}},
		{"t2", "alice", []int64{5}},
		{"t3", "alice", []int64{}},
	} {
		if got := rowIDs(t, db, question, who(tc.tenant, tc.user)); !slices.Equal(got, tc.want) {
			t.Errorf("%s of %s sees %v, want %v", tc.user, tc.tenant, got, tc.want)
		}
	}
	for _, q := range []string{
		"SELECT * FROM orders",
		"SELECT m.id FROM my_orders m JOIN orders o ON o.id = m.id",
		"SELECT id FROM my_orders WHERE id IN (SELECT id FROM orders)",
		"WITH my_orders AS (SELECT * FROM orders) SELECT * FROM my_orders",
		"WITH x AS (SELECT 1), my_orders(id, amount) AS (SELECT id, amount FROM orders) SELECT * FROM my_orders",
		"WITH \"My_Orders\" AS MATERIALIZED (SELECT * FROM orders) SELECT * FROM my_orders",
		"WITH [my_orders] AS NOT MATERIALIZED (SELECT * FROM orders) SELECT * FROM main.my_orders, my_orders",
		"WITH x AS (SELECT * FROM orders) SELECT * FROM x",
		"SELECT * FROM main.orders",
	} {
		if _, err := db.Query(context.Background(), q, who("t1", "alice")); !errors.Is(err, sqldb.ErrRejected) {
			t.Errorf("%s: %v, want a refusal", q, err)
		}
	}
	// Missing attributes refuse the statement before it runs (Options)
	// and, for an attribute Options does not list, in bichat_attr.
	for _, tc := range []struct {
		name string
		lim  sqldb.Limits
		q    string
		want string
	}{
		{"no attributes", sqldb.Limits{Tables: []string{"my_orders"}}, question, `"tenant_id" is missing`},
		{"empty user", who("t1", ""), question, `"user_id" is missing`},
		{"NUL byte", who("t1", "alice\x00"), question, "NUL byte"},
		{"an attribute the call lacks", who("t1", "alice"), "SELECT id FROM region_orders", `"region" is missing`},
	} {
		_, err := db.Query(context.Background(), tc.q, tc.lim)
		if !errors.Is(err, sqldb.ErrRejected) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a refusal naming %s", tc.name, err, tc.want)
		}
	}
}

// Each connection sees the attributes of its own statement: many callers
// at once, on a pool of several connections, each get their own rows.
func TestAttributesAreBoundPerConnection(t *testing.T) {
	t.Parallel()
	db := scopedDB(t, Options{MaxConns: 4})
	want := map[string][]int64{"alice": {1, 2}, "bob": {3}}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		user := []string{"alice", "bob"}[i%2]
		wg.Go(func() {
			res, err := db.Query(context.Background(), "SELECT id FROM my_orders ORDER BY id", who("t1", user))
			if err != nil {
				errs <- err
				return
			}
			var got []int64
			for _, r := range res.Rows {
				got = append(got, r[0].(int64))
			}
			if !slices.Equal(got, want[user]) {
				errs <- fmt.Errorf("%s saw %v", user, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The data tools hand the call's attributes to the database: the same
// tool call by two users returns different rows; Sample uses the call's
// attributes too.
func TestToolsPassCallAttributes(t *testing.T) {
	t.Parallel()
	db := scopedDB(t, Options{Attributes: []string{"tenant_id", "user_id"}})
	dt, err := sqldb.New(sqldb.Config{DB: db, Limits: sqldb.Limits{Tables: []string{"my_orders"}}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(user string) (*sqldb.QueryPayload, error) {
		ctx := agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "t1", UserID: user, SessionID: "s-" + user, CallID: "c1",
			Attributes: map[string]string{"tenant_id": "t1", "user_id": user}})
		res, err := dt.QueryTool().Call(ctx, []byte(`{"sql":"SELECT sum(amount) AS total FROM my_orders"}`))
		if err != nil {
			return nil, err
		}
		return res.Payload.(*sqldb.QueryPayload), nil
	}
	for user, want := range map[string]int64{"alice": 30, "bob": 300} {
		p, err := call(user)
		if err != nil || p.Table.Rows[0][0] != want {
			t.Errorf("%s: %v %v, want %d", user, p, err, want)
		}
	}
	ctx := agents.WithCallInfo(context.Background(), agents.CallInfo{Attributes: map[string]string{"tenant_id": "t1", "user_id": "bob"}})
	if res, err := db.Sample(ctx, "my_orders", 5); err != nil || len(res.Rows) != 1 || res.Rows[0][0] != int64(3) {
		t.Errorf("bob's sample: %v %v", res, err)
	}
	if _, err := db.Sample(context.Background(), "my_orders", 5); !errors.Is(err, sqldb.ErrRejected) {
		t.Errorf("a sample without a caller: %v", err)
	}
}
