package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const dsnEnv = "BICHAT_TEST_POSTGRES_DSN"

var (
	poolOnce sync.Once
	pool     *pgxpool.Pool
	poolErr  error
)

// requireDSN returns the test server's DSN, or skips the test (fails it
// under BICHAT_REQUIRE_INTEGRATION=1) when there is none.
func requireDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("%s is not set and BICHAT_REQUIRE_INTEGRATION=1: run make setup and source .ci/test.env", dsnEnv)
		}
		t.Skipf("PostgreSQL integration test: set %s (see .ci/test.env) to run it", dsnEnv)
	}
	return dsn
}

// testPool returns the pool shared by the tests of this package.
func testPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dsn := requireDSN(t)
	poolOnce.Do(func() {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			poolErr = err
			return
		}
		cfg.MaxConns = 24
		pool, poolErr = pgxpool.NewWithConfig(context.Background(), cfg)
		if poolErr == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			poolErr = pool.Ping(ctx)
			cancel()
		}
	})
	if poolErr != nil {
		t.Fatalf("connect to the test server: %v", poolErr)
	}
	return pool
}

// newPool returns a pool of its own with at most maxConns connections,
// closed when the test ends.
func newPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(requireDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// freshSchema returns the name of a schema that no test uses, dropped
// (with everything in it) when the test ends. It does not create it.
func freshSchema(t testing.TB, p *pgxpool.Pool) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "bichat_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := p.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop test schema %s: %v", schema, err)
		}
	})
	return schema
}

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
		opts.Schema = freshSchema(t, p)
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
