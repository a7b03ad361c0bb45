package quota_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat/quota"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newMemory(t *testing.T, p quota.Policy, maxKeys int) (*quota.Memory, *fakeClock) {
	t.Helper()
	c := newClock()
	m, err := quota.NewMemory(p, quota.MemoryOptions{Now: c.Now, MaxKeys: maxKeys})
	if err != nil {
		t.Fatal(err)
	}
	return m, c
}

var runSeq atomic.Int64

func nextRun() string { return fmt.Sprintf("run-%d", runSeq.Add(1)) }

// admit admits a new run and releases it at once.
func admit(t *testing.T, l quota.Limiter, tenant, user string) error {
	t.Helper()
	release, err := l.Admit(context.Background(), tenant, user, nextRun())
	if err == nil {
		release()
	}
	return err
}

// exceeded asserts that err is an *ExceededError of scope and limit, and
// returns it.
func exceeded(t *testing.T, err error, scope, limit string) *quota.ExceededError {
	t.Helper()
	if !errors.Is(err, quota.ErrExceeded) {
		t.Fatalf("err = %v, want one matching ErrExceeded", err)
	}
	var e *quota.ExceededError
	if !errors.As(err, &e) {
		t.Fatalf("err = %T %v, want an *ExceededError", err, err)
	}
	if e.Scope != scope || e.Limit != limit {
		t.Fatalf("refused by %s %s, want %s %s (%v)", e.Scope, e.Limit, scope, limit, e)
	}
	return e
}

func TestMemoryRequestsEdge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		scope string
		rpm   int
		retry time.Duration // 60s/rpm rounded up to the nanosecond
	}{
		{"tenant 1 per minute", quota.ScopeTenant, 1, time.Minute},
		{"tenant 7 per minute", quota.ScopeTenant, 7, 8571428572},
		{"user 60 per minute", quota.ScopeUser, 60, time.Second},
		{"user 1000 per minute", quota.ScopeUser, 1000, 60 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var p quota.Policy
			if tc.scope == quota.ScopeTenant {
				p.Tenant.RequestsPerMinute = tc.rpm
			} else {
				p.User.RequestsPerMinute = tc.rpm
			}
			m, clock := newMemory(t, p, 0)
			for i := range tc.rpm {
				if err := admit(t, m, "acme", "ann"); err != nil {
					t.Fatalf("request %d of %d: %v", i+1, tc.rpm, err)
				}
			}
			e := exceeded(t, admit(t, m, "acme", "ann"), tc.scope, quota.LimitRequests)
			if e.RetryAfter != tc.retry || e.Max != tc.rpm || e.Current != tc.rpm {
				t.Fatalf("refusal %+v, want RetryAfter %v, Max and Current %d", e, tc.retry, tc.rpm)
			}
			clock.Advance(tc.retry - 1)
			e = exceeded(t, admit(t, m, "acme", "ann"), tc.scope, quota.LimitRequests)
			if e.RetryAfter != 1 {
				t.Fatalf("1ns before the refill: RetryAfter %v, want 1ns", e.RetryAfter)
			}
			clock.Advance(1)
			if err := admit(t, m, "acme", "ann"); err != nil {
				t.Fatalf("after RetryAfter: %v", err)
			}
			exceeded(t, admit(t, m, "acme", "ann"), tc.scope, quota.LimitRequests)
		})
	}
}

func TestMemoryRefill(t *testing.T) {
	t.Parallel()
	m, clock := newMemory(t, quota.Policy{Tenant: quota.Limits{RequestsPerMinute: 60}}, 0)
	for range 60 {
		if err := admit(t, m, "acme", "ann"); err != nil {
			t.Fatal(err)
		}
	}
	exceeded(t, admit(t, m, "acme", "ann"), quota.ScopeTenant, quota.LimitRequests)
	clock.Advance(10 * time.Second) // refills 10 requests
	for i := range 10 {
		if err := admit(t, m, "acme", "ann"); err != nil {
			t.Fatalf("refilled request %d: %v", i+1, err)
		}
	}
	exceeded(t, admit(t, m, "acme", "ann"), quota.ScopeTenant, quota.LimitRequests)
	clock.Advance(time.Hour) // refills to the capacity, not beyond
	for range 60 {
		if err := admit(t, m, "acme", "ann"); err != nil {
			t.Fatal(err)
		}
	}
	exceeded(t, admit(t, m, "acme", "ann"), quota.ScopeTenant, quota.LimitRequests)
}

func TestMemoryUsersShareTenant(t *testing.T) {
	t.Parallel()
	m, _ := newMemory(t, quota.Policy{
		Tenant: quota.Limits{RequestsPerMinute: 3},
		User:   quota.Limits{RequestsPerMinute: 2},
	}, 0)
	steps := []struct {
		user  string
		scope string // "" admitted
	}{
		{"ann", ""}, {"ann", ""}, {"ann", quota.ScopeUser}, // ann's own 2
		{"bob", ""},                // the tenant's third
		{"bob", quota.ScopeTenant}, // bob has 1 left, the tenant none
		{"cyd", quota.ScopeTenant},
	}
	for i, s := range steps {
		err := admit(t, m, "acme", s.user)
		if s.scope == "" {
			if err != nil {
				t.Fatalf("step %d (%s): %v", i, s.user, err)
			}
			continue
		}
		exceeded(t, err, s.scope, quota.LimitRequests)
	}
	// Another tenant has its own buckets.
	if err := admit(t, m, "globex", "ann"); err != nil {
		t.Fatalf("other tenant: %v", err)
	}
}

func TestMemoryTokenDebt(t *testing.T) {
	t.Parallel()
	for _, scope := range []string{quota.ScopeTenant, quota.ScopeUser} {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			l := quota.Limits{TokensPerMinute: 60} // 1 token per second
			p := quota.Policy{Tenant: l}
			if scope == quota.ScopeUser {
				p = quota.Policy{User: l}
			}
			m, clock := newMemory(t, p, 0)
			ctx := context.Background()
			if err := m.Charge(ctx, "acme", "ann", 60); err != nil { // exactly the capacity: level 0
				t.Fatal(err)
			}
			if err := admit(t, m, "acme", "ann"); err != nil {
				t.Fatalf("at level 0 (not in debt): %v", err)
			}
			if err := m.Charge(ctx, "acme", "ann", 30); err != nil { // charge never refuses: 30 in debt
				t.Fatal(err)
			}
			e := exceeded(t, admit(t, m, "acme", "ann"), scope, quota.LimitTokens)
			if e.RetryAfter != 30*time.Second || e.Max != 60 || e.Current != 90 {
				t.Fatalf("refusal %+v, want RetryAfter 30s, Max 60, Current 90", e)
			}
			clock.Advance(30*time.Second - 1)
			e = exceeded(t, admit(t, m, "acme", "ann"), scope, quota.LimitTokens)
			if e.RetryAfter != 1 {
				t.Fatalf("RetryAfter %v, want 1ns", e.RetryAfter)
			}
			clock.Advance(1)
			if err := admit(t, m, "acme", "ann"); err != nil {
				t.Fatalf("out of debt: %v", err)
			}
			if scope == quota.ScopeUser {
				if err := admit(t, m, "acme", "bob"); err != nil {
					t.Fatalf("another user is not in ann's debt: %v", err)
				}
			}
		})
	}
}

func TestMemoryConcurrentRuns(t *testing.T) {
	t.Parallel()
	for _, scope := range []string{quota.ScopeTenant, quota.ScopeUser} {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			l := quota.Limits{ConcurrentRuns: 2}
			p := quota.Policy{Tenant: l}
			if scope == quota.ScopeUser {
				p = quota.Policy{User: l}
			}
			m, _ := newMemory(t, p, 0)
			ctx := context.Background()
			r1, err := m.Admit(ctx, "acme", "ann", "r1")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Admit(ctx, "acme", "ann", "r2"); err != nil {
				t.Fatal(err)
			}
			_, err = m.Admit(ctx, "acme", "ann", "r3")
			e := exceeded(t, err, scope, quota.LimitConcurrent)
			if e.RetryAfter != quota.ConcurrentRetryAfter || e.Max != 2 || e.Current != 2 {
				t.Fatalf("refusal %+v", e)
			}
			// Re-admitting a run that holds a slot does not take a second one.
			r2again, err := m.Admit(ctx, "acme", "ann", "r2")
			if err != nil {
				t.Fatalf("re-admit r2: %v", err)
			}
			r1()
			r1() // idempotent: frees one slot only
			if _, err := m.Admit(ctx, "acme", "ann", "r3"); err != nil {
				t.Fatalf("after release: %v", err)
			}
			_, err = m.Admit(ctx, "acme", "ann", "r4")
			exceeded(t, err, scope, quota.LimitConcurrent)
			r2again()
			if _, err := m.Admit(ctx, "acme", "ann", "r4"); err != nil {
				t.Fatalf("after releasing r2: %v", err)
			}
		})
	}
}

func TestMemoryReadmitMovesSlot(t *testing.T) {
	t.Parallel()
	m, _ := newMemory(t, quota.Policy{Tenant: quota.Limits{ConcurrentRuns: 1}}, 0)
	ctx := context.Background()
	first, err := m.Admit(ctx, "acme", "ann", "r1")
	if err != nil {
		t.Fatal(err)
	}
	second, err := m.Admit(ctx, "acme", "ann", "r1")
	if err != nil {
		t.Fatalf("re-admit: %v", err)
	}
	first() // the earlier admission's release no longer frees the slot
	if _, err := m.Admit(ctx, "acme", "ann", "r2"); err == nil {
		t.Fatal("r2 admitted while r1 holds the only slot")
	}
	second()
	if _, err := m.Admit(ctx, "acme", "ann", "r2"); err != nil {
		t.Fatalf("after the current release: %v", err)
	}
}

func TestMemoryAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		user  quota.Limits
		limit string
		prep  func(m *quota.Memory) // drives ann's user scope to refusal
		left  int                   // tenant requests and slots left after prep
	}{
		{"user requests", quota.Limits{RequestsPerMinute: 1}, quota.LimitRequests, func(m *quota.Memory) {
			_, _ = m.Admit(context.Background(), "acme", "ann", "prep")
		}, 2},
		{"user tokens", quota.Limits{TokensPerMinute: 10}, quota.LimitTokens, func(m *quota.Memory) {
			_ = m.Charge(context.Background(), "acme", "ann", 11)
		}, 3},
		{"user runs", quota.Limits{ConcurrentRuns: 1}, quota.LimitConcurrent, func(m *quota.Memory) {
			_, _ = m.Admit(context.Background(), "acme", "ann", "prep")
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, _ := newMemory(t, quota.Policy{
				Tenant: quota.Limits{RequestsPerMinute: 3, ConcurrentRuns: 3},
				User:   tc.user,
			}, 0)
			tc.prep(m)
			ctx := context.Background()
			for range 5 {
				_, err := m.Admit(ctx, "acme", "ann", nextRun())
				exceeded(t, err, quota.ScopeUser, tc.limit)
			}
			// The refusals took nothing from the tenant: other users get
			// exactly what the tenant had left (each holds its slot).
			for i := range tc.left {
				if _, err := m.Admit(ctx, "acme", fmt.Sprint("other-", i), nextRun()); err != nil {
					t.Fatalf("other user %d: %v", i, err)
				}
			}
			_, err := m.Admit(ctx, "acme", "last", nextRun())
			e := exceeded(t, err, quota.ScopeTenant, quota.LimitRequests)
			if e.Current != 3 {
				t.Fatalf("tenant refusal %+v, want Current 3", e)
			}
		})
	}
}

func TestMemoryLongestRetryAfterWins(t *testing.T) {
	t.Parallel()
	m, _ := newMemory(t, quota.Policy{
		Tenant: quota.Limits{RequestsPerMinute: 60},
		User:   quota.Limits{TokensPerMinute: 60},
	}, 0)
	for range 60 {
		if err := admit(t, m, "acme", "ann"); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Charge(context.Background(), "acme", "ann", 90); err != nil {
		t.Fatal(err)
	}
	// Tenant requests wait 1s; ann's tokens wait 30s.
	e := exceeded(t, admit(t, m, "acme", "ann"), quota.ScopeUser, quota.LimitTokens)
	if e.RetryAfter != 30*time.Second {
		t.Fatalf("RetryAfter %v, want 30s", e.RetryAfter)
	}
}

func TestMemoryPolicyFor(t *testing.T) {
	t.Parallel()
	calls := atomic.Int64{}
	m, _ := newMemory(t, quota.Policy{
		Tenant: quota.Limits{RequestsPerMinute: 1},
		For: func(tenantID string) (quota.Limits, quota.Limits, bool) {
			calls.Add(1)
			if tenantID == "big" {
				return quota.Limits{RequestsPerMinute: 5}, quota.Limits{RequestsPerMinute: 4}, true
			}
			return quota.Limits{}, quota.Limits{}, false
		},
	}, 0)
	for _, tc := range []struct {
		tenant  string
		allowed int
		scope   string
	}{{"small", 1, quota.ScopeTenant}, {"big", 4, quota.ScopeUser}} {
		for i := range tc.allowed {
			if err := admit(t, m, tc.tenant, "ann"); err != nil {
				t.Fatalf("%s request %d: %v", tc.tenant, i+1, err)
			}
		}
		e := exceeded(t, admit(t, m, tc.tenant, "ann"), tc.scope, quota.LimitRequests)
		if e.Max != tc.allowed {
			t.Fatalf("%s: Max %d, want %d", tc.tenant, e.Max, tc.allowed)
		}
	}
	if err := admit(t, m, "big", "bob"); err != nil { // the big tenant's fifth
		t.Fatal(err)
	}
	exceeded(t, admit(t, m, "big", "cyd"), quota.ScopeTenant, quota.LimitRequests)
	if calls.Load() == 0 {
		t.Fatal("Policy.For never called")
	}
}

func TestMemoryLoweredLimitCutsBucket(t *testing.T) {
	t.Parallel()
	var rpm atomic.Int64
	rpm.Store(10)
	m, _ := newMemory(t, quota.Policy{For: func(string) (quota.Limits, quota.Limits, bool) {
		return quota.Limits{RequestsPerMinute: int(rpm.Load())}, quota.Limits{}, true
	}}, 0)
	if err := admit(t, m, "acme", "ann"); err != nil { // 9 left of 10
		t.Fatal(err)
	}
	rpm.Store(2) // the plan shrinks: the bucket is cut to 2
	for range 2 {
		if err := admit(t, m, "acme", "ann"); err != nil {
			t.Fatal(err)
		}
	}
	exceeded(t, admit(t, m, "acme", "ann"), quota.ScopeTenant, quota.LimitRequests)
}

func TestMemoryUnlimited(t *testing.T) {
	t.Parallel()
	m, _ := newMemory(t, quota.Policy{}, 0)
	ctx := context.Background()
	for i := range 1000 {
		if _, err := m.Admit(ctx, "acme", fmt.Sprint("u", i), nextRun()); err != nil { // never released
			t.Fatal(err)
		}
		if err := m.Charge(ctx, "acme", "ann", 1_000_000); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Keys(); n != 0 {
		t.Fatalf("an unlimited policy keeps %d scopes, want 0", n)
	}
}

func TestMemoryMaxKeys(t *testing.T) {
	t.Parallel()
	t.Run("capped", func(t *testing.T) {
		t.Parallel()
		m, _ := newMemory(t, quota.Policy{User: quota.Limits{RequestsPerMinute: 1}}, 10)
		for i := range 1000 {
			if err := admit(t, m, "acme", fmt.Sprint("user-", i)); err != nil {
				t.Fatalf("user %d: %v", i, err)
			}
			if n := m.Keys(); n > 10 {
				t.Fatalf("after user %d: %d scopes, cap 10", i, n)
			}
		}
		// The most recent users are remembered: user-999 has used its request.
		exceeded(t, admit(t, m, "acme", "user-999"), quota.ScopeUser, quota.LimitRequests)
	})
	t.Run("idle full scopes forgotten", func(t *testing.T) {
		t.Parallel()
		m, clock := newMemory(t, quota.Policy{Tenant: quota.Limits{RequestsPerMinute: 10}, User: quota.Limits{RequestsPerMinute: 1}}, 0)
		for i := range 50 {
			if err := admit(t, m, fmt.Sprint("t", i%5), fmt.Sprint("user-", i)); err != nil {
				t.Fatal(err)
			}
		}
		if n := m.Keys(); n != 55 {
			t.Fatalf("%d scopes, want 55 (5 tenants, 50 users)", n)
		}
		clock.Advance(time.Minute) // every bucket refills
		// Any call sweeps.
		if err := admit(t, m, "t0", "user-0"); err != nil {
			t.Fatal(err)
		}
		if n := m.Keys(); n != 2 {
			t.Fatalf("%d scopes after a minute idle and one admission, want 2", n)
		}
	})
	t.Run("debt kept", func(t *testing.T) {
		t.Parallel()
		m, clock := newMemory(t, quota.Policy{User: quota.Limits{TokensPerMinute: 60}}, 0)
		ctx := context.Background()
		if err := m.Charge(ctx, "acme", "ann", 180); err != nil { // 120 in debt: 2 minutes
			t.Fatal(err)
		}
		clock.Advance(90 * time.Second)
		if err := m.Charge(ctx, "acme", "bob", 1); err != nil { // sweeps
			t.Fatal(err)
		}
		e := exceeded(t, admit(t, m, "acme", "ann"), quota.ScopeUser, quota.LimitTokens)
		if e.RetryAfter != 30*time.Second {
			t.Fatalf("RetryAfter %v, want 30s: the sweep forgot a scope in debt", e.RetryAfter)
		}
	})
	t.Run("slots pin scopes", func(t *testing.T) {
		t.Parallel()
		m, _ := newMemory(t, quota.Policy{User: quota.Limits{ConcurrentRuns: 1}}, 3)
		ctx := context.Background()
		var releases []func()
		for i := range 3 {
			r, err := m.Admit(ctx, "acme", fmt.Sprint("u", i), nextRun())
			if err != nil {
				t.Fatal(err)
			}
			releases = append(releases, r)
		}
		if _, err := m.Admit(ctx, "acme", "u3", nextRun()); !errors.Is(err, quota.ErrTooManyKeys) {
			t.Fatalf("a fourth scope with 3 pinned: %v, want ErrTooManyKeys", err)
		}
		// u0 still holds its slot: it was not forgotten.
		_, err := m.Admit(ctx, "acme", "u0", nextRun())
		exceeded(t, err, quota.ScopeUser, quota.LimitConcurrent)
		releases[1]()
		if _, err := m.Admit(ctx, "acme", "u3", nextRun()); err != nil {
			t.Fatalf("after a release: %v", err)
		}
		if n := m.Keys(); n != 3 {
			t.Fatalf("%d scopes, want 3", n)
		}
	})
}

func TestMemoryHammer(t *testing.T) {
	t.Parallel()
	t.Run("requests", func(t *testing.T) {
		t.Parallel()
		m, _ := newMemory(t, quota.Policy{Tenant: quota.Limits{RequestsPerMinute: 500}, User: quota.Limits{RequestsPerMinute: 100}}, 0)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for g := range 40 {
			wg.Go(func() {
				for range 50 {
					r, err := m.Admit(context.Background(), "acme", fmt.Sprint("u", g%8), nextRun())
					if err == nil {
						admitted.Add(1)
						r()
					} else if !errors.Is(err, quota.ErrExceeded) {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if n := admitted.Load(); n != 500 {
			t.Fatalf("%d admitted, want exactly the tenant's 500", n)
		}
	})
	t.Run("runs", func(t *testing.T) {
		t.Parallel()
		m, _ := newMemory(t, quota.Policy{Tenant: quota.Limits{ConcurrentRuns: 5}}, 0)
		var inFlight, peak, admitted atomic.Int64
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for range 200 {
					r, err := m.Admit(context.Background(), "acme", "ann", nextRun())
					if err != nil {
						continue
					}
					admitted.Add(1)
					n := inFlight.Add(1)
					for {
						p := peak.Load()
						if n <= p || peak.CompareAndSwap(p, n) {
							break
						}
					}
					time.Sleep(10 * time.Microsecond)
					inFlight.Add(-1)
					r()
				}
			})
		}
		wg.Wait()
		if p := peak.Load(); p > 5 {
			t.Fatalf("%d runs at once, limit 5", p)
		}
		if admitted.Load() == 0 {
			t.Fatal("nothing admitted")
		}
	})
}

func TestMemoryBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    quota.Policy
		max  int
		want string
	}{
		{"negative rpm", quota.Policy{Tenant: quota.Limits{RequestsPerMinute: -1}}, 0, "tenant limits: RequestsPerMinute -1"},
		{"huge tpm", quota.Policy{User: quota.Limits{TokensPerMinute: quota.MaxPerMinute + 1}}, 0, "user limits: TokensPerMinute"},
		{"negative runs", quota.Policy{User: quota.Limits{ConcurrentRuns: -2}}, 0, "ConcurrentRuns -2 is negative"},
		{"max keys 1", quota.Policy{}, 1, "MaxKeys 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := quota.NewMemory(tc.p, quota.MemoryOptions{MaxKeys: tc.max})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "quota: ") {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	m, _ := newMemory(t, quota.Policy{For: func(string) (quota.Limits, quota.Limits, bool) {
		return quota.Limits{RequestsPerMinute: -5}, quota.Limits{}, true
	}}, 0)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"empty tenant", func() error { _, err := m.Admit(ctx, "", "ann", "r"); return err }(), "quota: admit: tenant ID is empty"},
		{"empty user", func() error { _, err := m.Admit(ctx, "acme", "", "r"); return err }(), "quota: admit: user ID is empty"},
		{"empty run", func() error { _, err := m.Admit(ctx, "acme", "ann", ""); return err }(), "quota: admit: run ID is empty"},
		{"bad override", func() error { _, err := m.Admit(ctx, "acme", "ann", "r"); return err }(), `tenant limits of tenant "acme": RequestsPerMinute -5`},
		{"cancelled", func() error { _, err := m.Admit(cancelled, "acme", "ann", "r"); return err }(), "context canceled"},
		{"charge negative", m.Charge(ctx, "acme", "ann", -1), "quota: charge: tokens -1 is negative"},
		{"charge empty user", m.Charge(ctx, "acme", "", 1), "quota: charge: user ID is empty"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) || errors.Is(tc.err, quota.ErrExceeded) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
}

func TestExceededErrorMessage(t *testing.T) {
	t.Parallel()
	e := &quota.ExceededError{Scope: quota.ScopeUser, Limit: quota.LimitTokens, RetryAfter: 1500 * time.Millisecond, Max: 1000, Current: 1200}
	want := "quota: user tokens_per_minute exceeded (1200 of 1000): retry after 1.5s"
	if e.Error() != want {
		t.Fatalf("Error() = %q, want %q", e.Error(), want)
	}
	wrapped := fmt.Errorf("send: %w", e)
	if !errors.Is(wrapped, quota.ErrExceeded) || errors.Is(wrapped, errors.New("quota exceeded")) {
		t.Fatal("errors.Is does not single out ErrExceeded")
	}
}
