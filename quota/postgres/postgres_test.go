package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dpg "github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/bichat-go/bichat/quota"
	"github.com/bichat-go/bichat/quota/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.CloseSharedPool()
	os.Exit(code)
}

// setup migrates a schema of its own for t and returns a Limiter on it.
func setup(t *testing.T, p quota.Policy, opts postgres.Options) (*postgres.Limiter, *pgxpool.Pool, string) {
	t.Helper()
	pool := pgtest.SharedPool(t, 16)
	schema := pgtest.Schema(t, pool)
	if err := dpg.Migrate(t.Context(), pool, schema); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	opts.Schema = schema
	l, err := postgres.New(pool, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l, pool, schema
}

var runSeq atomic.Int64

func nextRun() string { return fmt.Sprintf("run-%d", runSeq.Add(1)) }

func admit(t *testing.T, l quota.Limiter, tenant, user string) error {
	t.Helper()
	release, err := l.Admit(t.Context(), tenant, user, nextRun())
	if err == nil {
		release()
	}
	return err
}

func exceeded(t *testing.T, err error, scope, limit string) *quota.ExceededError {
	t.Helper()
	var e *quota.ExceededError
	if !errors.Is(err, quota.ErrExceeded) || !errors.As(err, &e) {
		t.Fatalf("err = %v, want an *ExceededError matching ErrExceeded", err)
	}
	if e.Scope != scope || e.Limit != limit {
		t.Fatalf("refused by %s %s, want %s %s (%v)", e.Scope, e.Limit, scope, limit, e)
	}
	return e
}

// age moves the scope rows of tenant back by d, as if d had passed.
func age(t *testing.T, pool *pgxpool.Pool, schema, tenant string, d time.Duration) {
	t.Helper()
	if _, err := pool.Exec(t.Context(), `UPDATE `+pgx.Identifier{schema, "quota_scopes"}.Sanitize()+
		` SET updated_at = updated_at - $2::interval WHERE tenant_id = $1`, tenant, d); err != nil {
		t.Fatal(err)
	}
}

func within(t *testing.T, what string, got, lo, hi time.Duration) {
	t.Helper()
	if got < lo || got > hi {
		t.Fatalf("%s = %v, want within [%v, %v]", what, got, lo, hi)
	}
}

func TestRequestsEdgeAndRefill(t *testing.T) {
	t.Parallel()
	for _, scope := range []string{quota.ScopeTenant, quota.ScopeUser} {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			lim := quota.Limits{RequestsPerMinute: 6} // one per 10s
			p := quota.Policy{Tenant: lim}
			if scope == quota.ScopeUser {
				p = quota.Policy{User: lim}
			}
			l, pool, schema := setup(t, p, postgres.Options{})
			for i := range 6 {
				if err := admit(t, l, "acme", "ann"); err != nil {
					t.Fatalf("request %d: %v", i+1, err)
				}
			}
			start := time.Now()
			e := exceeded(t, admit(t, l, "acme", "ann"), scope, quota.LimitRequests)
			if e.Max != 6 || e.Current != 6 {
				t.Fatalf("refusal %+v", e)
			}
			within(t, "RetryAfter", e.RetryAfter, 10*time.Second-time.Since(start)-2*time.Second, 10*time.Second)
			age(t, pool, schema, "acme", 30*time.Second) // refills 3
			for i := range 3 {
				if err := admit(t, l, "acme", "ann"); err != nil {
					t.Fatalf("refilled request %d: %v", i+1, err)
				}
			}
			exceeded(t, admit(t, l, "acme", "ann"), scope, quota.LimitRequests)
			age(t, pool, schema, "acme", time.Hour) // to the capacity, not beyond
			for range 6 {
				if err := admit(t, l, "acme", "ann"); err != nil {
					t.Fatal(err)
				}
			}
			exceeded(t, admit(t, l, "acme", "ann"), scope, quota.LimitRequests)
		})
	}
}

func TestUsersShareTenant(t *testing.T) {
	t.Parallel()
	l, _, _ := setup(t, quota.Policy{
		Tenant: quota.Limits{RequestsPerMinute: 3},
		User:   quota.Limits{RequestsPerMinute: 2},
	}, postgres.Options{})
	for i, s := range []struct{ user, scope string }{
		{"ann", ""}, {"ann", ""}, {"ann", quota.ScopeUser},
		{"bob", ""}, {"bob", quota.ScopeTenant}, {"cyd", quota.ScopeTenant},
	} {
		err := admit(t, l, "acme", s.user)
		if s.scope == "" {
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			continue
		}
		exceeded(t, err, s.scope, quota.LimitRequests)
	}
	if err := admit(t, l, "globex", "ann"); err != nil {
		t.Fatalf("other tenant: %v", err)
	}
}

func TestTokenDebt(t *testing.T) {
	t.Parallel()
	l, pool, schema := setup(t, quota.Policy{User: quota.Limits{TokensPerMinute: 60}}, postgres.Options{})
	ctx := t.Context()
	if err := l.Charge(ctx, "acme", "ann", 90); err != nil { // 30 in debt: 30s
		t.Fatal(err)
	}
	start := time.Now()
	e := exceeded(t, admit(t, l, "acme", "ann"), quota.ScopeUser, quota.LimitTokens)
	if e.Max != 60 || e.Current > 90 || e.Current < 89 {
		t.Fatalf("refusal %+v", e)
	}
	within(t, "RetryAfter", e.RetryAfter, 30*time.Second-time.Since(start)-2*time.Second, 30*time.Second)
	if err := admit(t, l, "acme", "bob"); err != nil {
		t.Fatalf("bob is not in ann's debt: %v", err)
	}
	age(t, pool, schema, "acme", 31*time.Second)
	if err := admit(t, l, "acme", "ann"); err != nil {
		t.Fatalf("out of debt: %v", err)
	}
}

func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	l, _, _ := setup(t, quota.Policy{Tenant: quota.Limits{ConcurrentRuns: 2}, User: quota.Limits{ConcurrentRuns: 1}}, postgres.Options{})
	ctx := t.Context()
	r1, err := l.Admit(ctx, "acme", "ann", "r1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Admit(ctx, "acme", "ann", "r2")
	e := exceeded(t, err, quota.ScopeUser, quota.LimitConcurrent)
	if e.RetryAfter != quota.ConcurrentRetryAfter || e.Current != 1 {
		t.Fatalf("refusal %+v", e)
	}
	again, err := l.Admit(ctx, "acme", "ann", "r1") // a resumed run takes no second slot
	if err != nil {
		t.Fatalf("re-admit r1: %v", err)
	}
	if _, err := l.Admit(ctx, "acme", "bob", "r3"); err != nil {
		t.Fatal(err)
	}
	_, err = l.Admit(ctx, "acme", "cyd", "r4")
	exceeded(t, err, quota.ScopeTenant, quota.LimitConcurrent)
	r1() // the earlier admission's release frees nothing now
	_, err = l.Admit(ctx, "acme", "cyd", "r4")
	exceeded(t, err, quota.ScopeTenant, quota.LimitConcurrent)
	again()
	again() // idempotent
	if _, err := l.Admit(ctx, "acme", "cyd", "r4"); err != nil {
		t.Fatalf("after release: %v", err)
	}
	_, err = l.Admit(ctx, "acme", "dan", "r5")
	exceeded(t, err, quota.ScopeTenant, quota.LimitConcurrent)
}

func TestSlotsExpireAndRenew(t *testing.T) {
	t.Parallel()
	// Generous: under a loaded machine a renewal round trip can take
	// hundreds of milliseconds, and each must land within the TTL.
	const ttl = 3 * time.Second
	l, _, _ := setup(t, quota.Policy{Tenant: quota.Limits{ConcurrentRuns: 1}}, postgres.Options{SlotTTL: ttl})
	ctx := t.Context()
	if _, err := l.Admit(ctx, "acme", "ann", "crashed"); err != nil { // never released: its replica died
		t.Fatal(err)
	}
	_, err := l.Admit(ctx, "acme", "bob", "r2")
	exceeded(t, err, quota.ScopeTenant, quota.LimitConcurrent)
	time.Sleep(ttl + 300*time.Millisecond)
	if err := l.Renew(ctx, "acme", "crashed"); !errors.Is(err, postgres.ErrNoSlot) {
		t.Fatalf("Renew of an expired slot: %v, want ErrNoSlot", err)
	}
	release, err := l.Admit(ctx, "acme", "bob", "r2")
	if err != nil {
		t.Fatalf("after the dead run's slot expired: %v", err)
	}
	defer release()
	// A renewed slot outlives its first TTL.
	for range 4 {
		time.Sleep(ttl / 3)
		if err := l.Renew(ctx, "acme", "r2"); err != nil {
			t.Fatal(err)
		}
	}
	_, err = l.Admit(ctx, "acme", "cyd", "r3")
	exceeded(t, err, quota.ScopeTenant, quota.LimitConcurrent)
}

func TestAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		user  quota.Limits
		limit string
		prep  func(t *testing.T, l *postgres.Limiter)
		left  int
	}{
		{"user requests", quota.Limits{RequestsPerMinute: 1}, quota.LimitRequests, func(t *testing.T, l *postgres.Limiter) {
			if _, err := l.Admit(t.Context(), "acme", "ann", "prep"); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"user tokens", quota.Limits{TokensPerMinute: 10}, quota.LimitTokens, func(t *testing.T, l *postgres.Limiter) {
			if err := l.Charge(t.Context(), "acme", "ann", 20); err != nil {
				t.Fatal(err)
			}
		}, 3},
		{"user runs", quota.Limits{ConcurrentRuns: 1}, quota.LimitConcurrent, func(t *testing.T, l *postgres.Limiter) {
			if _, err := l.Admit(t.Context(), "acme", "ann", "prep"); err != nil {
				t.Fatal(err)
			}
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, _, _ := setup(t, quota.Policy{Tenant: quota.Limits{RequestsPerMinute: 3, ConcurrentRuns: 3}, User: tc.user}, postgres.Options{})
			tc.prep(t, l)
			for range 5 {
				_, err := l.Admit(t.Context(), "acme", "ann", nextRun())
				exceeded(t, err, quota.ScopeUser, tc.limit)
			}
			for i := range tc.left {
				if _, err := l.Admit(t.Context(), "acme", fmt.Sprint("other-", i), nextRun()); err != nil {
					t.Fatalf("other user %d: %v", i, err)
				}
			}
			_, err := l.Admit(t.Context(), "acme", "last", nextRun())
			exceeded(t, err, quota.ScopeTenant, quota.LimitRequests)
		})
	}
}

func TestPolicyFor(t *testing.T) {
	t.Parallel()
	l, _, _ := setup(t, quota.Policy{
		Tenant: quota.Limits{RequestsPerMinute: 1},
		For: func(tenantID string) (quota.Limits, quota.Limits, bool) {
			if tenantID == "big" {
				return quota.Limits{RequestsPerMinute: 4}, quota.Limits{}, true
			}
			return quota.Limits{}, quota.Limits{}, false
		},
	}, postgres.Options{})
	for _, tc := range []struct {
		tenant  string
		allowed int
	}{{"small", 1}, {"big", 4}} {
		for i := range tc.allowed {
			if err := admit(t, l, tc.tenant, fmt.Sprint("u", i)); err != nil {
				t.Fatalf("%s %d: %v", tc.tenant, i, err)
			}
		}
		if e := exceeded(t, admit(t, l, tc.tenant, "ann"), quota.ScopeTenant, quota.LimitRequests); e.Max != tc.allowed {
			t.Fatalf("%s: Max %d", tc.tenant, e.Max)
		}
	}
}

// TestReplicas runs two Limiters over two pools (two replicas) on one
// schema: they share every limit.
func TestReplicas(t *testing.T) {
	t.Parallel()
	p := quota.Policy{Tenant: quota.Limits{RequestsPerMinute: 40, TokensPerMinute: 100, ConcurrentRuns: 3}}
	a, _, schema := setup(t, p, postgres.Options{})
	other := pgtest.NewPool(t, 8)
	b, err := postgres.New(other, p, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ra, err := a.Admit(ctx, "acme", "ann", "ra")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Admit(ctx, "acme", "bob", "rb"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Admit(ctx, "acme", "cyd", "rc"); err != nil {
		t.Fatal(err)
	}
	_, err = b.Admit(ctx, "acme", "dan", "rd")
	exceeded(t, err, quota.ScopeTenant, quota.LimitConcurrent)
	ra() // released on replica a, seen by b
	rd, err := b.Admit(ctx, "acme", "dan", "rd")
	if err != nil {
		t.Fatal(err)
	}
	rd()
	if err := a.Charge(ctx, "acme", "ann", 150); err != nil {
		t.Fatal(err)
	}
	_, err = b.Admit(ctx, "acme", "bob", nextRun())
	exceeded(t, err, quota.ScopeTenant, quota.LimitTokens)
}

// TestHammer runs many goroutines on two replicas against one tenant:
// never more admitted than the limit, never more runs at once.
func TestHammer(t *testing.T) {
	t.Parallel()
	p := quota.Policy{Tenant: quota.Limits{RequestsPerMinute: 100, ConcurrentRuns: 4}, User: quota.Limits{RequestsPerMinute: 30}}
	a, _, schema := setup(t, p, postgres.Options{})
	b, err := postgres.New(pgtest.NewPool(t, 8), p, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	var admitted, inFlight, peak atomic.Int64
	perUser := make([]atomic.Int64, 6)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range 24 {
		l := a
		if g%2 == 1 {
			l = b
		}
		wg.Go(func() {
			for range 12 {
				u := g % 6
				r, err := l.Admit(context.Background(), "acme", fmt.Sprint("u", u), nextRun())
				if err != nil {
					if !errors.Is(err, quota.ErrExceeded) {
						t.Error(err)
					}
					continue
				}
				admitted.Add(1)
				perUser[u].Add(1)
				n := inFlight.Add(1)
				for {
					pk := peak.Load()
					if n <= pk || peak.CompareAndSwap(pk, n) {
						break
					}
				}
				time.Sleep(2 * time.Millisecond)
				inFlight.Add(-1)
				r()
			}
		})
	}
	wg.Wait()
	// What refilled while the test ran is allowed on top of the burst.
	elapsed := time.Since(start)
	refilled := func(perMinute int) int64 { return int64(elapsed*time.Duration(perMinute)/time.Minute) + 1 }
	if n := admitted.Load(); n > 100+refilled(100) || n == 0 {
		t.Fatalf("%d admitted in %v, limit 100 per minute", n, elapsed)
	}
	for u := range perUser {
		if n := perUser[u].Load(); n > 30+refilled(30) {
			t.Fatalf("user %d: %d admitted in %v, limit 30 per minute", u, n, elapsed)
		}
	}
	if pk := peak.Load(); pk > 4 {
		t.Fatalf("%d runs at once, limit 4", pk)
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	l, pool, schema := setup(t, quota.Policy{User: quota.Limits{RequestsPerMinute: 5, TokensPerMinute: 60}}, postgres.Options{})
	ctx := t.Context()
	for _, u := range []string{"ann", "bob"} {
		if err := admit(t, l, "acme", u); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Charge(ctx, "acme", "bob", 600); err != nil { // deep in debt
		t.Fatal(err)
	}
	if n, err := l.Prune(ctx); err != nil || n != 0 {
		t.Fatalf("Prune of fresh rows: %d, %v; want 0", n, err)
	}
	age(t, pool, schema, "acme", 61*time.Second)
	if n, err := l.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("Prune: %d, %v; want 1 (ann's refilled row; bob is in debt)", n, err)
	}
	exceeded(t, admit(t, l, "acme", "bob"), quota.ScopeUser, quota.LimitTokens)
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "quota_scopes"}.Sanitize()).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Fatalf("%d scope rows, want bob's only", rows)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	pool := pgtest.SharedPool(t, 16)
	for _, tc := range []struct {
		name string
		pool *pgxpool.Pool
		p    quota.Policy
		o    postgres.Options
		want string
	}{
		{"nil pool", nil, quota.Policy{}, postgres.Options{}, "pool is nil"},
		{"bad limit", pool, quota.Policy{Tenant: quota.Limits{ConcurrentRuns: -1}}, postgres.Options{}, "ConcurrentRuns -1"},
		{"ttl", pool, quota.Policy{}, postgres.Options{SlotTTL: time.Microsecond}, "SlotTTL 1µs"},
		{"schema", pool, quota.Policy{}, postgres.Options{Schema: strings.Repeat("s", 64)}, "longer than 63"},
	} {
		if _, err := postgres.New(tc.pool, tc.p, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	l, _, _ := setup(t, quota.Policy{User: quota.Limits{RequestsPerMinute: 1}}, postgres.Options{})
	ctx := t.Context()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := l.Admit(ctx, "", "ann", "r"); return err }(), "admit: tenant ID is empty"},
		{func() error { _, err := l.Admit(ctx, "acme", "", "r"); return err }(), "admit: user ID is empty"},
		{func() error { _, err := l.Admit(ctx, "acme", "ann", ""); return err }(), "admit: run ID is empty"},
		{l.Charge(ctx, "acme", "ann", -3), "charge: tokens -3 is negative"},
		{l.Renew(ctx, "acme", "never"), "holds no slot"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("err = %v, want one containing %q", tc.err, tc.want)
		}
	}
}
