package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DSNEnv is the environment variable that holds the test server's DSN.
const DSNEnv = "BICHAT_TEST_POSTGRES_DSN"

// RequireEnv is the environment variable that, set to 1, turns a skip for
// want of a server into a failure.
const RequireEnv = "BICHAT_REQUIRE_INTEGRATION"

// DSN returns the test server's DSN from BICHAT_TEST_POSTGRES_DSN. When
// it is unset it skips t, or fails t when BICHAT_REQUIRE_INTEGRATION=1.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(DSNEnv)
	if dsn == "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s is not set and %s=1: run make setup and source .ci/test.env", DSNEnv, RequireEnv)
		}
		t.Skipf("PostgreSQL integration test: set %s (see .ci/test.env) to run it", DSNEnv)
	}
	return dsn
}

// NewPool opens a pool of its own on the test server, with at most
// maxConns connections, checks that the server answers, and closes the
// pool when t ends. It skips or fails t like DSN when there is no server,
// and fails t when the server cannot be reached.
func NewPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	p, err := connect(DSN(t), maxConns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

var shared struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

// SharedPool returns the pool the tests of this test binary share,
// opened by the first call with at most maxConns connections (later
// calls get the same pool whatever maxConns they pass) and never closed
// before the binary exits. It skips or fails t like DSN when there is no
// server, and fails t when the server cannot be reached.
func SharedPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	dsn := DSN(t)
	shared.once.Do(func() { shared.pool, shared.err = connect(dsn, maxConns) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.pool
}

// CloseSharedPool closes the pool SharedPool opened, if it opened one.
// Call it from TestMain after m.Run; no test may use the pool after.
func CloseSharedPool() {
	if shared.pool != nil {
		shared.pool.Close()
	}
}

func connect(dsn string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgtest: parse %s: %w", DSNEnv, err)
	}
	cfg.MaxConns = maxConns
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = p.Ping(ctx)
	}
	if err != nil {
		if p != nil {
			p.Close()
		}
		return nil, fmt.Errorf("pgtest: connect to the test server: %w", err)
	}
	return p, nil
}

// SchemaPrefix starts the name of every schema Schema hands out, so a
// leftover from an interrupted run is easy to find.
const SchemaPrefix = "bichat_test_"

// Schema returns the name of a schema no other test uses (SchemaPrefix
// and 16 random hex digits) and registers its removal, with everything in
// it, through p when t ends; a failed removal fails t. It does not create
// the schema: migrating it (or CREATE SCHEMA) is the caller's.
func Schema(t testing.TB, p *pgxpool.Pool) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := SchemaPrefix + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := p.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop test schema %s: %v", schema, err)
		}
	})
	return schema
}
