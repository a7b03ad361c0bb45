package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// twoStores returns two Stores over the same schema on separate pools, as
// two processes of one deployment would have.
func twoStores(t *testing.T) (writer, watcher *postgres.Store, watcherPool *pgxpool.Pool) {
	t.Helper()
	pa, pb := pgtest.NewPool(t, 4), pgtest.NewPool(t, 4)
	writer = newStoreOn(t, pa, postgres.Options{})
	watcher, err := postgres.New(pb, postgres.Options{Schema: writer.Schema(), ListenRetry: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watcher.Close)
	return writer, watcher, pb
}

func subscribe(t *testing.T, s *postgres.Store, tenant, run string) (<-chan struct{}, func()) {
	t.Helper()
	n := s.Repositories().RunEvents.(domain.RunEventNotifier)
	ch, stop, err := n.SubscribeRunEvents(t.Context(), tenant, run)
	if err != nil {
		t.Fatalf("SubscribeRunEvents: %v", err)
	}
	t.Cleanup(stop)
	return ch, stop
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no signal within 5s", what)
	}
}

func noSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Errorf("%s: unexpected signal", what)
	case <-time.After(200 * time.Millisecond):
	}
}

func appendEvent(t *testing.T, s *postgres.Store, tenant, run string, seq int64) {
	t.Helper()
	err := s.Repositories().RunEvents.AppendRunEvents(t.Context(), domain.RunEvent{TenantID: tenant, RunID: run, Seq: seq, Type: "text_delta", Data: []byte(`{}`)})
	if err != nil {
		t.Fatalf("AppendRunEvents: %v", err)
	}
}

// TestNotifyAcrossPools: an append through one pool wakes a subscriber of
// a Store on another pool, only for its own tenant and run; a cancel
// request wakes it too.
func TestNotifyAcrossPools(t *testing.T) {
	writer, watcher, _ := twoStores(t)
	run := domain.NewID()
	ch, _ := subscribe(t, watcher, "acme", run)
	otherRun, _ := subscribe(t, watcher, "acme", domain.NewID())
	otherTenant, _ := subscribe(t, watcher, "globex", run)

	appendEvent(t, writer, "acme", run, 1)
	waitSignal(t, ch, "append in another pool")
	noSignal(t, otherRun, "subscriber of another run")
	noSignal(t, otherTenant, "subscriber of the same run id in another tenant")

	// A rejected append notifies nobody.
	err := writer.Repositories().RunEvents.AppendRunEvents(t.Context(), domain.RunEvent{TenantID: "acme", RunID: run, Seq: 1, Type: "x"})
	if err == nil {
		t.Fatal("append of a stored seq succeeded")
	}
	noSignal(t, ch, "rejected append")

	// RequestCancel of the run's message wakes the run's subscribers.
	r := writer.Repositories()
	_, m := seedGenerating(t, r, "acme")
	cancelRun := domain.NewID()
	if err := r.Runs.ClaimRun(t.Context(), "acme", m.ID, cancelRun, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	cch, _ := subscribe(t, watcher, "acme", cancelRun)
	if err := r.Runs.RequestCancel(t.Context(), "acme", m.ID); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, cch, "RequestCancel in another pool")

	// Deleting a session removes its runs' logs: their watchers are woken
	// to read them again (and find them gone).
	_, m2 := seedGenerating(t, r, "acme")
	delRun := domain.NewID()
	dch, _ := subscribe(t, watcher, "acme", delRun)
	if err := r.RunEvents.AppendRunEvents(t.Context(), domain.RunEvent{TenantID: "acme", RunID: delRun, SessionID: m2.SessionID, MessageID: m2.ID, Seq: 1, Type: "start"}); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, dch, "append before the delete")
	if err := r.Sessions.DeleteSession(t.Context(), "acme", m2.SessionID); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, dch, "DeleteSession of the run's session")
}

// listenerPID returns the backend pid of the watcher's LISTEN connection.
func listenerPID(t *testing.T, p *pgxpool.Pool, s *postgres.Store) int {
	t.Helper()
	var pid int
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := testPool(t).QueryRow(t.Context(), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'LISTEN "' || $1 || '"'`, s.Channel()).Scan(&pid)
		if err == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("find the LISTEN backend: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNotifyReconnects kills the LISTEN backend: subscribers get a signal
// (they may have missed events), the listener reconnects with backoff on
// the same pool, and later appends are signalled again.
func TestNotifyReconnects(t *testing.T) {
	writer, watcher, pb := twoStores(t)
	run := domain.NewID()
	ch, _ := subscribe(t, watcher, "acme", run)
	pid := listenerPID(t, pb, watcher)
	var ok bool
	if err := testPool(t).QueryRow(t.Context(), "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate the LISTEN backend: %v, %v", ok, err)
	}
	waitSignal(t, ch, "after the LISTEN connection broke")
	// Wait for the new LISTEN backend, then append.
	deadline := time.Now().Add(10 * time.Second)
	for listenerPID(t, pb, watcher) == pid {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not reconnect")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Drain the reconnect signal, then check a fresh append is delivered.
	select {
	case <-ch:
	case <-time.After(time.Second):
	}
	appendEvent(t, writer, "acme", run, 1)
	waitSignal(t, ch, "append after the reconnect")
}

// TestListenConnectionLifecycle: the Store holds one pool connection
// while subscriptions exist and gives it back after the last one ends
// (by stop or by its context), and after Close.
func TestListenConnectionLifecycle(t *testing.T) {
	_, watcher, pb := twoStores(t)
	acquired := func() int32 { return pb.Stat().AcquiredConns() }
	if n := acquired(); n != 0 {
		t.Fatalf("%d connections acquired before subscribing", n)
	}
	_, stop1 := subscribe(t, watcher, "acme", domain.NewID())
	ctx, cancel := context.WithCancel(t.Context())
	n := watcher.Repositories().RunEvents.(domain.RunEventNotifier)
	if _, _, err := n.SubscribeRunEvents(ctx, "acme", domain.NewID()); err != nil {
		t.Fatal(err)
	}
	if got := acquired(); got != 1 {
		t.Errorf("%d connections acquired with two subscriptions, want 1", got)
	}
	stop1()
	stop1() // twice is fine
	if got := acquired(); got != 1 {
		t.Errorf("%d connections acquired with one subscription left, want 1", got)
	}
	cancel()
	waitFor(t, "the LISTEN connection to return to the pool", func() bool { return acquired() == 0 })
	// A new subscription starts a new listener; Close ends it.
	subscribe(t, watcher, "acme", domain.NewID())
	if got := acquired(); got != 1 {
		t.Errorf("%d connections acquired after resubscribing, want 1", got)
	}
	watcher.Close()
	if got := acquired(); got != 0 {
		t.Errorf("%d connections acquired after Close, want 0", got)
	}
	if _, _, err := n.SubscribeRunEvents(t.Context(), "acme", domain.NewID()); err == nil {
		t.Error("SubscribeRunEvents after Close succeeded")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
