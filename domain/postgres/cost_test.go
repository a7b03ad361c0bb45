package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/domaintest"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/internal/pgtest"
)

// replicaStore opens a second Store, on a pool of its own, over the
// schema of l, so that the suite's concurrency case adds through two
// Stores on two pools, as two replicas would.
func replicaStore(t *testing.T, l domain.CostLedger) domain.CostLedger {
	t.Helper()
	p := pgtest.NewPool(t, 2)
	s, err := postgres.New(p, postgres.Options{Schema: l.(*postgres.Store).Schema()})
	if err != nil {
		t.Fatalf("New replica: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestCostLedger(t *testing.T) {
	testPool(t)
	domaintest.RunCostLedgerTests(t, func(t *testing.T) domain.CostLedger {
		return newStore(t, postgres.Options{})
	}, domaintest.CostSuiteOptions{Replica: replicaStore})
}

func TestPruneCosts(t *testing.T) {
	t.Parallel()
	s := newStore(t, postgres.Options{})
	ctx := t.Context()
	today := domain.CostDay(time.Now())
	old, kept := domain.NewID(), domain.NewID()
	for _, e := range []domain.CostEntry{
		{TenantID: "acme", Time: today.AddDate(0, 0, -10), USD: 1},
		{TenantID: "globex", Time: today.AddDate(0, 0, -3), USD: 2},
		{TenantID: "acme", Time: today.AddDate(0, 0, -2), USD: 4},
		{TenantID: "acme", SessionID: kept, Time: today, USD: 8},
	} {
		if err := s.AddCost(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// A session last updated long ago (updated_at is the server's clock).
	if err := s.AddCost(ctx, domain.CostEntry{TenantID: "acme", SessionID: old, Time: today, USD: 16}); err != nil {
		t.Fatal(err)
	}
	p := testPool(t)
	if _, err := p.Exec(ctx, `UPDATE `+s.Schema()+`.cost_sessions SET updated_at = now() - interval '30 days' WHERE session_id = $1`, old); err != nil {
		t.Fatal(err)
	}
	sessions, days, err := s.PruneCosts(ctx, today.AddDate(0, 0, -2).Add(5*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if sessions != 1 || days != 2 {
		t.Errorf("PruneCosts deleted %d sessions and %d days, want 1 and 2", sessions, days)
	}
	ds, err := s.TenantDays(ctx, "acme", today.AddDate(0, 0, -30), today)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || !ds[0].Day.Equal(today.AddDate(0, 0, -2)) || ds[0].USD != 4 || !ds[1].Day.Equal(today) || ds[1].USD != 24 {
		t.Errorf("acme days after pruning = %+v, want day -2 (4) and today (24)", ds)
	}
	for id, want := range map[string]float64{old: 0, kept: 8} {
		if got, err := s.SessionCost(ctx, "acme", id); err != nil || got != want {
			t.Errorf("SessionCost(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
	if _, _, err := s.PruneCosts(ctx, time.Time{}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("PruneCosts(zero time): %v, want ErrInvalid", err)
	}
}

func TestAddCostOverflow(t *testing.T) {
	t.Parallel()
	s := newStore(t, postgres.Options{})
	ctx := t.Context()
	sess := domain.NewID()
	at := time.Now()
	// Bring the totals near the int64 limit directly, then add past it.
	if err := s.AddCost(ctx, domain.CostEntry{TenantID: "acme", SessionID: sess, Time: at, USD: 1}); err != nil {
		t.Fatal(err)
	}
	p := testPool(t)
	const near = int64(9_223_000_000_000_000_000)
	for _, table := range []string{"cost_sessions", "cost_days"} {
		if _, err := p.Exec(ctx, `UPDATE `+s.Schema()+`.`+table+` SET usd_nanos = $1`, near); err != nil {
			t.Fatal(err)
		}
	}
	err := s.AddCost(ctx, domain.CostEntry{TenantID: "acme", SessionID: sess, Time: at, USD: domain.MaxCostUSD})
	if err == nil || errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("AddCost past int64: %v, want an out-of-range error", err)
	}
	want := domain.FromNanoUSD(near)
	if got, _ := s.SessionCost(ctx, "acme", sess); got != want {
		t.Errorf("session = %v, want %v (unchanged)", got, want)
	}
	if got, _ := s.TenantDayCost(ctx, "acme", at); got != want {
		t.Errorf("day = %v, want %v (unchanged)", got, want)
	}
}

func BenchmarkCostAddCost(b *testing.B) {
	domaintest.BenchmarkAddCost(b, newStoreOn(b, pgtest.NewPool(b, 1), postgres.Options{}), 100)
}

func BenchmarkCostTenantDayCost(b *testing.B) {
	domaintest.BenchmarkTenantDayCost(b, newStoreOn(b, pgtest.NewPool(b, 1), postgres.Options{}))
}

// BenchmarkCostBaseline is the baseline of the two cost benchmarks: one
// round trip (SELECT 1) on the same kind of one-connection pool, and one
// autocommitted single-row UPDATE (a commit, as AddCost pays).
func BenchmarkCostBaseline(b *testing.B) {
	p := pgtest.NewPool(b, 1)
	s := newStoreOn(b, p, postgres.Options{})
	ctx := context.Background()
	b.Run("select1", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.Exec(ctx, "SELECT 1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	if err := s.AddCost(ctx, domain.CostEntry{TenantID: "acme", Time: time.Now(), USD: 1}); err != nil {
		b.Fatal(err)
	}
	b.Run("update_commit", func(b *testing.B) {
		q := `UPDATE ` + s.Schema() + `.cost_days SET calls = calls + 1 WHERE tenant_id = 'acme'`
		for b.Loop() {
			if _, err := p.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
}
