package memory_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/domaintest"
	"github.com/bichat-go/bichat/domain/memory"
)

func TestCostLedger(t *testing.T) {
	domaintest.RunCostLedgerTests(t, func(t *testing.T) domain.CostLedger {
		return memory.NewCostLedger(memory.CostLedgerOptions{})
	})
}

// fakeClock is a settable clock for CostLedgerOptions.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func sessionCost(t *testing.T, l *memory.CostLedger, session string) float64 {
	t.Helper()
	v, err := l.SessionCost(t.Context(), "acme", session)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCostLedgerMaxSessions(t *testing.T) {
	t.Parallel()
	l := memory.NewCostLedger(memory.CostLedgerOptions{MaxSessions: 3})
	at := time.Now()
	ids := make([]string, 5)
	for i := range ids {
		ids[i] = domain.NewID()
	}
	add := func(i int, usd float64) {
		t.Helper()
		if err := l.AddCost(t.Context(), domain.CostEntry{TenantID: "acme", SessionID: ids[i], Time: at, USD: usd}); err != nil {
			t.Fatal(err)
		}
	}
	add(0, 1)
	add(1, 2)
	add(2, 4)
	// Reading does not count as an update: session 0 stays the oldest.
	if got := sessionCost(t, l, ids[0]); got != 1 {
		t.Fatalf("session 0 = %v, want 1", got)
	}
	add(3, 8) // evicts 0, the least recently updated
	if n, _ := l.Len(); n != 3 {
		t.Errorf("Len sessions = %d, want 3", n)
	}
	for i, want := range []float64{0, 2, 4, 8} {
		if got := sessionCost(t, l, ids[i]); got != want {
			t.Errorf("after adding to 3: session %d = %v, want %v", i, got, want)
		}
	}
	add(1, 16) // session 1 becomes the most recently updated
	add(4, 32) // so 2 is evicted, not 1
	for i, want := range []float64{0, 18, 0, 8, 32} {
		if got := sessionCost(t, l, ids[i]); got != want {
			t.Errorf("after adding to 1 and 4: session %d = %v, want %v", i, got, want)
		}
	}
	if n, _ := l.Len(); n != 3 {
		t.Errorf("Len sessions = %d, want 3", n)
	}
	// Eviction forgets the session, not the tenant's day.
	day, err := l.TenantDayCost(t.Context(), "acme", at)
	if err != nil || day != 63 {
		t.Errorf("TenantDayCost = %v, %v; want 63", day, err)
	}
}

func TestCostLedgerMaxSessionsUnderLoad(t *testing.T) {
	t.Parallel()
	const maxSessions = 50
	l := memory.NewCostLedger(memory.CostLedgerOptions{MaxSessions: maxSessions})
	at := time.Now()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				e := domain.CostEntry{TenantID: fmt.Sprintf("t%d", w), SessionID: domain.NewID(), Time: at, USD: 0.01}
				if err := l.AddCost(context.Background(), e); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					if n, _ := l.Len(); n > maxSessions {
						t.Errorf("Len sessions = %d, want at most %d", n, maxSessions)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if n, _ := l.Len(); n != maxSessions {
		t.Errorf("Len sessions = %d, want %d", n, maxSessions)
	}
	// Every tenant's day total is still exact: 100 calls of 0.01.
	for w := range 8 {
		got, err := l.TenantDayCost(t.Context(), fmt.Sprintf("t%d", w), at)
		if err != nil || got != 1 {
			t.Errorf("tenant t%d day = %v, %v; want 1", w, got, err)
		}
	}
}

func TestCostLedgerKeepDays(t *testing.T) {
	t.Parallel()
	today := time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: today}
	l := memory.NewCostLedger(memory.CostLedgerOptions{KeepDays: 3, Now: clock.Now})
	ctx := t.Context()
	s := domain.NewID()
	day := func(n int) time.Time { return domain.CostDay(today).AddDate(0, 0, n) }
	// Days -4..+1 around today: -4 and -3 are older than the 3 kept
	// days (-2, -1, 0); tomorrow (+1) is kept.
	for n := -4; n <= 1; n++ {
		for _, tenant := range []string{"acme", "globex"} {
			if err := l.AddCost(ctx, domain.CostEntry{TenantID: tenant, SessionID: s, Time: day(n).Add(time.Hour), USD: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	list := func() []time.Time {
		t.Helper()
		ds, err := l.TenantDays(ctx, "acme", day(-10), day(10))
		if err != nil {
			t.Fatal(err)
		}
		var out []time.Time
		for _, d := range ds {
			out = append(out, d.Day)
		}
		return out
	}
	wantList := func(what string, want ...time.Time) {
		t.Helper()
		got := list()
		if len(got) != len(want) {
			t.Fatalf("%s: days %v, want %v", what, got, want)
		}
		for i := range got {
			if !got[i].Equal(want[i]) {
				t.Fatalf("%s: days %v, want %v", what, got, want)
			}
		}
	}
	wantList("today", day(-2), day(-1), day(0), day(1))
	if _, n := l.Len(); n != 8 {
		t.Errorf("Len tenant days = %d, want 8 (4 days × 2 tenants)", n)
	}
	// Old entries still count towards their session.
	if got := sessionCost(t, l, s); got != 6 {
		t.Errorf("session = %v, want 6 (its own tenant's six calls)", got)
	}
	// A new UTC day: the first AddCost drops the day that fell out.
	clock.Set(today.AddDate(0, 0, 1))
	if err := l.AddCost(ctx, domain.CostEntry{TenantID: "acme", Time: day(1), USD: 1}); err != nil {
		t.Fatal(err)
	}
	wantList("tomorrow", day(-1), day(0), day(1))
	if _, n := l.Len(); n != 6 {
		t.Errorf("Len tenant days = %d, want 6", n)
	}
	if got, _ := l.TenantDayCost(ctx, "acme", day(1)); got != 2 {
		t.Errorf("tomorrow = %v, want 2", got)
	}
	// Much later: every tenant's days go, and empty tenants with them.
	clock.Set(today.AddDate(1, 0, 0))
	if err := l.AddCost(ctx, domain.CostEntry{TenantID: "initech", Time: clock.Now(), USD: 1}); err != nil {
		t.Fatal(err)
	}
	wantList("a year later")
	if _, n := l.Len(); n != 1 {
		t.Errorf("Len tenant days = %d, want 1", n)
	}
}

func TestCostLedgerOverflow(t *testing.T) {
	t.Parallel()
	l := memory.NewCostLedger(memory.CostLedgerOptions{})
	ctx := t.Context()
	s := domain.NewID()
	at := time.Now()
	// 9223 calls of MaxCostUSD fit in int64 nano-dollars; the next does not.
	for i := range 9223 {
		if err := l.AddCost(ctx, domain.CostEntry{TenantID: "acme", SessionID: s, Time: at, USD: domain.MaxCostUSD}); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	before, _ := l.SessionCost(ctx, "acme", s)
	err := l.AddCost(ctx, domain.CostEntry{TenantID: "acme", SessionID: s, Time: at, USD: domain.MaxCostUSD})
	if err == nil || errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("AddCost past int64: %v, want an out-of-range error", err)
	}
	if after, _ := l.SessionCost(ctx, "acme", s); after != before {
		t.Errorf("session changed by a failed add: %v → %v", before, after)
	}
	if day, _ := l.TenantDayCost(ctx, "acme", at); day != before {
		t.Errorf("day = %v, want %v (unchanged)", day, before)
	}
}

func ExampleNewCostLedger() {
	ctx := context.Background()
	ledger := memory.NewCostLedger(memory.CostLedgerOptions{MaxSessions: 10_000, KeepDays: 90})
	session := domain.NewID()
	at := time.Now()
	for range 10 {
		_ = ledger.AddCost(ctx, domain.CostEntry{
			TenantID: "acme", UserID: "alice", SessionID: session, Time: at,
			Provider: "openai", Model: "gpt-4o-mini", USD: 0.1,
			Usage: domain.Usage{PromptTokens: 900, CompletionTokens: 100, TotalTokens: 1000},
		})
	}
	spent, _ := ledger.SessionCost(ctx, "acme", session)
	today, _ := ledger.TenantDayCost(ctx, "acme", at)
	days, _ := ledger.TenantDays(ctx, "acme", at.AddDate(0, 0, -6), at)
	fmt.Println("session:", spent, "today:", today)
	fmt.Println("days:", len(days), "calls:", days[0].Calls, "tokens:", days[0].Usage.TotalTokens)
	fmt.Println("over a 1.00 budget:", spent > 1.0)
	// Output:
	// session: 1 today: 1
	// days: 1 calls: 10 tokens: 10000
	// over a 1.00 budget: false
}

func BenchmarkCostLedgerAddCost(b *testing.B) {
	domaintest.BenchmarkAddCost(b, memory.NewCostLedger(memory.CostLedgerOptions{}), 1000)
}

func BenchmarkCostLedgerTenantDayCost(b *testing.B) {
	domaintest.BenchmarkTenantDayCost(b, memory.NewCostLedger(memory.CostLedgerOptions{}))
}
