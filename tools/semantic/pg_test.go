package semantic_test

import (
	"context"
	"os"
	"testing"

	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/bichat-go/bichat/tools/sqldb/postgres"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

// TestPostgres runs the adapter checks on the sample data loaded into a
// schema of its own (dropped at the end).
func TestPostgres(t *testing.T) {
	t.Parallel()
	pool := pgtest.SharedPool(t, 8)
	schema := pgtest.Schema(t, pool)
	ctx := context.Background()
	if err := sampledata.Load(ctx, "postgres", sampledata.Options{Schema: schema}, func(ctx context.Context, s string) error {
		_, err := pool.Exec(ctx, s)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The test server's role owns the schema; the statements still run in
	// the adapter's READ ONLY transactions after its statement check.
	db, err := postgres.New(pool, postgres.Options{
		AllowPrivilegedRole: true,
		Schemas:             []string{schema},
		Policy:              postgres.Policy{SearchPath: []string{schema}},
	})
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, db)
}

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.CloseSharedPool()
	os.Exit(code)
}
