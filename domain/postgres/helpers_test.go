package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// testPool returns the pool shared by the tests of this package.
func testPool(t testing.TB) *pgxpool.Pool { return pgtest.SharedPool(t, 24) }

// newStore migrates a fresh schema and returns a Store over it, closed
// when the test ends.
func newStore(t testing.TB, opts postgres.Options) *postgres.Store {
	t.Helper()
	p := testPool(t)
	return newStoreOn(t, p, opts)
}

func newStoreOn(t testing.TB, p *pgxpool.Pool, opts postgres.Options) *postgres.Store {
	t.Helper()
	if opts.Schema == "" {
		opts.Schema = pgtest.Schema(t, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := postgres.Migrate(ctx, p, opts.Schema); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	s, err := postgres.New(p, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}
