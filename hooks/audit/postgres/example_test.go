package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"

	dpg "github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/hooks/audit"
	"github.com/bichat-go/bichat/hooks/audit/postgres"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Example records two entries in PostgreSQL and verifies the chain. It
// needs a server: it does nothing when BICHAT_TEST_POSTGRES_DSN is not
// set (the package's tests run against the test server).
func Example() {
	dsn := os.Getenv("BICHAT_TEST_POSTGRES_DSN")
	if dsn == "" {
		return
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn) // the host's pool
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	const schema = "bichat_example_audit"
	if err := dpg.Migrate(ctx, pool, schema); err != nil { // creates audit_entries and audit_heads
		log.Fatal(err)
	}
	defer pool.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE") //nolint:errcheck // example clean-up
	sink, err := postgres.New(pool, postgres.Options{Schema: schema})
	if err != nil {
		log.Fatal(err)
	}
	rec, err := audit.New(sink, audit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range []string{"Revenue in 2025?", "And in 2024?"} {
		if _, err := rec.Record(ctx, "acme", audit.Entry{Type: audit.TypeQuestion, Data: []byte(fmt.Sprintf(`{"text":%q}`, q))}); err != nil {
			log.Fatal(err)
		}
	}
	head, err := sink.Head(ctx, "acme")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("head seq:", head.Seq, "verify:", audit.VerifyTenant(ctx, sink, "acme"))
	// With a server, it prints:
	// head seq: 2 verify: <nil>
}
