package bichat_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	pgDSNEnv = "BICHAT_TEST_POSTGRES_DSN"
	// childEnv makes the test binary a child process that runs one
	// question against a PostgreSQL schema (see TestPostgresChildRun).
	childEnv = "BICHAT_TEST_CHILD_RUN"
	// pgLease is the lease of the PostgreSQL tests.
	pgLease = time.Second
)

// pgDSN returns the test server's DSN, or skips the test (fails it under
// BICHAT_REQUIRE_INTEGRATION=1) when there is none.
func pgDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("%s is not set and BICHAT_REQUIRE_INTEGRATION=1: run make setup and source .ci/test.env", pgDSNEnv)
		}
		t.Skipf("PostgreSQL integration test: set %s (see .ci/test.env) to run it", pgDSNEnv)
	}
	return dsn
}

// pgPool opens a pool of its own (one per simulated process), closed when
// the test ends.
func pgPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 6
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// pgSchema migrates a schema no other test uses and drops it when the test
// ends.
func pgSchema(t testing.TB, p *pgxpool.Pool) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "bichat_svc_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := p.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop test schema %s: %v", schema, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := postgres.Migrate(ctx, p, schema); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return schema
}

// pgService builds a Service over its own store on pool p.
func pgService(t testing.TB, p *pgxpool.Pool, schema string, model *scripted.Model, cleanup bool) *bichat.Service {
	t.Helper()
	store, err := postgres.New(p, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := bichat.New(bichat.Config{
		Agent:  agents.Config{Model: model, System: "You are a test analyst."},
		Store:  store.Repositories(),
		Logger: slog.New(slog.DiscardHandler),
		Limits: bichat.Limits{RunLease: pgLease},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cleanup {
		t.Cleanup(store.Close)
		closeAtEnd(t, svc)
	}
	return svc
}

// pgPair is two Service values on separate pools sharing one schema: two
// processes of one host.
func pgPair(t *testing.T, modelA, modelB *scripted.Model) (a, b *bichat.Service) {
	t.Helper()
	dsn := pgDSN(t)
	poolA, poolB := pgPool(t, dsn), pgPool(t, dsn)
	schema := pgSchema(t, poolA)
	return pgService(t, poolA, schema, modelA, true), pgService(t, poolB, schema, modelB, true)
}

func answerOf(t testing.TB, svc *bichat.Service, sessionID string) string {
	t.Helper()
	for deadline := time.Now().Add(guard); ; {
		msgs, err := svc.Messages(t.Context(), alice, sessionID, domain.MessageListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 2 && msgs[1].RunID != "" {
			return msgs[1].ID
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer started")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Two services on separate pools: one runs, the other watches (through
// LISTEN/NOTIFY and the log), cancels, and reaps a run whose lease ran
// out.
func TestPostgresRunsAcrossServices(t *testing.T) {
	t.Parallel()
	t.Run("watch", func(t *testing.T) {
		t.Parallel()
		model, text := streamModel(150, 2*time.Millisecond)
		a, b := pgPair(t, model, &scripted.Model{})
		sess, err := a.CreateSession(t.Context(), alice, bichat.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sent := background(t, a.Send(t.Context(), alice, sess.ID, "Revenue?"))
		msgID := answerOf(t, b, sess.ID)
		watched := events(t, collect(t, b.Watch(t.Context(), alice, msgID, 0)))
		all := events(t, sent())
		if rf, ok := consecutive(t, watched, 0).(*agents.RunFinished); !ok || rf.Text != text || len(watched) != len(all) {
			t.Fatalf("watched from the other pool: %d events ending with %T, want the %d streamed", len(watched), watched[len(watched)-1], len(all))
		}
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		entered := make(chan struct{})
		a, b := pgPair(t, gatedModel(entered, nil), &scripted.Model{})
		sess, err := a.CreateSession(t.Context(), alice, bichat.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stream := background(t, a.Send(t.Context(), alice, sess.ID, "Revenue?"))
		wait(t, entered, "the model call")
		msgID := answerOf(t, b, sess.ID)
		watcher := background(t, b.Watch(t.Context(), alice, msgID, 0))
		start := time.Now()
		if err := b.Cancel(t.Context(), alice, msgID); err != nil {
			t.Fatalf("Cancel from the other pool: %v", err)
		}
		_, rf, _ := failedRun(t, stream())
		t.Logf("run stopped %s after the cancel request", time.Since(start))
		if rf.Code != "cancelled" {
			t.Errorf("run ended with %q, want cancelled", rf.Code)
		}
		evs := events(t, watcher())
		if rf, ok := consecutive(t, evs, 0).(*agents.RunFailed); !ok || rf.Code != "cancelled" {
			t.Errorf("watcher on the other pool ends with %T, want RunFailed cancelled", evs[len(evs)-1])
		}
		if err := b.Cancel(t.Context(), alice, msgID); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("second Cancel: %v, want ErrConflict", err)
		}
	})
	t.Run("lease expiry", func(t *testing.T) {
		t.Parallel()
		entered := make(chan struct{})
		a, b := pgPair(t, gatedModel(entered, nil), textModel("Fresh answer."))
		bichat.PauseHeartbeat(a, true)
		sess, err := a.CreateSession(t.Context(), alice, bichat.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		background(t, a.Send(t.Context(), alice, sess.ID, "Revenue?"))
		wait(t, entered, "the model call")
		msgID := answerOf(t, b, sess.ID)
		watcher := background(t, b.Watch(t.Context(), alice, msgID, 0))
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		go func() { _ = b.RunReaper(ctx) }()
		evs := events(t, watcher())
		if rf, ok := consecutive(t, evs, 0).(*agents.RunFailed); !ok || rf.Code != "lease_expired" {
			t.Fatalf("watcher ends with %T, want RunFailed lease_expired", evs[len(evs)-1])
		}
		finished(t, collect(t, b.Send(t.Context(), alice, sess.ID, "Anyone?")))
	})
}

// TestPostgresChildRun is the child process of TestPostgresKilledProcess:
// it asks a question whose model never answers, prints the answer's id
// and waits to be killed.
func TestPostgresChildRun(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("child process of TestPostgresKilledProcess")
	}
	schema, sessionID, _ := strings.Cut(spec, ",")
	p := pgPool(t, pgDSN(t))
	entered := make(chan struct{})
	svc := pgService(t, p, schema, gatedModel(entered, nil), false)
	ctx := context.Background()
	go func() {
		for range svc.Send(ctx, alice, sessionID, "Revenue?") {
		}
	}()
	<-entered
	msgs, err := svc.Messages(ctx, alice, sessionID, domain.MessageListOptions{})
	if err != nil || len(msgs) != 2 {
		fmt.Printf("ERROR %v %d\n", err, len(msgs))
		return
	}
	time.Sleep(2 * bichat.RunLogWindow) // the log has RunStarted
	fmt.Printf("STARTED %s\n", msgs[1].ID)
	time.Sleep(time.Hour)
}

// A process killed with SIGKILL mid-run: after about one lease the
// reaper of another process fails its answer, the watcher of the dead run
// gets the failure and the session takes a new question.
func TestPostgresKilledProcess(t *testing.T) {
	t.Parallel()
	dsn := pgDSN(t)
	p := pgPool(t, dsn)
	schema := pgSchema(t, p)
	svc := pgService(t, p, schema, textModel("Fresh answer."), true)
	sess, err := svc.CreateSession(t.Context(), alice, bichat.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPostgresChildRun$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+schema+","+sess.ID)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "STARTED ") || strings.HasPrefix(l, "ERROR ") {
				lines <- l
				return
			}
		}
		close(lines)
	}()
	var msgID string
	select {
	case l, ok := <-lines:
		if !ok || !strings.HasPrefix(l, "STARTED ") {
			t.Fatalf("child process: %q", l)
		}
		msgID = strings.TrimPrefix(l, "STARTED ")
	case <-time.After(guard):
		t.Fatal("the child process did not start its run")
	}
	watcher := background(t, svc.Watch(t.Context(), alice, msgID, 0))
	if err := onlyErr(t, collect(t, svc.Send(t.Context(), alice, sess.ID, "Anyone?"))); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("Send while the child's run holds the lease: %v, want ErrConflict", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	go func() { _ = svc.RunReaper(ctx) }()
	evs := events(t, watcher())
	took := time.Since(killed)
	t.Logf("the killed run was failed %s after SIGKILL (lease %s)", took, pgLease)
	if rf, ok := consecutive(t, evs, 0).(*agents.RunFailed); !ok || rf.Code != "lease_expired" {
		t.Fatalf("watcher of the dead run ends with %T, want RunFailed lease_expired", evs[len(evs)-1])
	}
	if _, ok := evs[0].(*agents.RunStarted); !ok {
		t.Errorf("watcher saw %s first, want the RunStarted the child logged", evs[0].Type())
	}
	if took > 2*pgLease+time.Second {
		t.Errorf("failing the dead run took %s, want about one lease (%s)", took, pgLease)
	}
	m, err := svc.Message(t.Context(), alice, msgID)
	if err != nil || m.Status != domain.StatusFailed || m.Metadata.Error.Code != "lease_expired" {
		t.Fatalf("answer of the killed process = %+v, %v; want failed lease_expired", m, err)
	}
	finished(t, collect(t, svc.Send(t.Context(), alice, sess.ID, "Anyone?")))
}
