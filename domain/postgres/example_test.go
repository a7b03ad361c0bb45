package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Example migrates a schema at start-up, opens the Store over the host's
// pool and creates a session. It needs a server: it does nothing when
// BICHAT_TEST_POSTGRES_DSN is not set (TestExample runs the same steps
// against the test server).
func Example() {
	dsn := os.Getenv("BICHAT_TEST_POSTGRES_DSN")
	if dsn == "" {
		return
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn) // the host's pool; bichat opens no connection of its own
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	total, title, err := exampleRun(ctx, pool, "bichat_example")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(total, title)
}

// exampleRun is the body of Example.
// It returns how many sessions alice had and the title of the newest.
func exampleRun(ctx context.Context, pool *pgxpool.Pool, schema string) (int, string, error) {
	if err := postgres.Migrate(ctx, pool, schema); err != nil {
		return 0, "", err
	}
	store, err := postgres.New(pool, postgres.Options{Schema: schema})
	if err != nil {
		return 0, "", err
	}
	defer store.Close()
	if err := store.CheckSchema(ctx); err != nil {
		return 0, "", err
	}
	repos := store.Repositories()
	sess := &domain.Session{ID: domain.NewID(), TenantID: "acme", OwnerID: "alice", Title: "Q3 revenue"}
	if err := repos.Sessions.CreateSession(ctx, sess); err != nil {
		return 0, "", err
	}
	page, err := repos.Sessions.ListSessions(ctx, "acme", "alice", domain.ListOptions{})
	if err != nil || len(page.Items) == 0 {
		return 0, "", fmt.Errorf("list sessions: %d items, %v", len(page.Items), err)
	}
	return page.Total, page.Items[0].Title, repos.Sessions.DeleteSession(ctx, "acme", sess.ID)
}
