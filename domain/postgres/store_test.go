package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// seedGenerating stores a session and a generating assistant message.
func seedGenerating(t *testing.T, r domain.Repositories, tenant string) (domain.Session, domain.Message) {
	t.Helper()
	sess := domain.Session{ID: domain.NewID(), TenantID: tenant, OwnerID: "alice", Title: "Chat"}
	if err := r.Sessions.CreateSession(t.Context(), &sess); err != nil {
		t.Fatal(err)
	}
	m := domain.Message{ID: domain.NewID(), TenantID: tenant, SessionID: sess.ID, Role: domain.RoleAssistant,
		Status: domain.StatusGenerating}
	if err := r.Messages.CreateMessages(t.Context(), &m); err != nil {
		t.Fatal(err)
	}
	return sess, m
}

// TestClaimRace100 runs 100 goroutines against Claim and ClaimRun of one
// message each, on a pool with enough connections for them to really
// race in the server: exactly one wins.
func TestClaimRace100(t *testing.T) {
	p := pgtest.NewPool(t, 40)
	s := newStoreOn(t, p, postgres.Options{})
	r := s.Repositories()
	for _, c := range []struct {
		name  string
		claim func(ctx context.Context, tenant, msg, run string) error
	}{
		{"Claim", r.Messages.Claim},
		{"ClaimRun", func(ctx context.Context, tenant, msg, run string) error {
			return r.Runs.ClaimRun(ctx, tenant, msg, run, time.Now().Add(time.Minute))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for round := range 3 {
				_, m := seedGenerating(t, r, "acme")
				const n = 100
				errs := make([]error, n)
				runs := make([]string, n)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i := range n {
					runs[i] = domain.NewID()
					wg.Go(func() {
						<-start
						errs[i] = c.claim(t.Context(), "acme", m.ID, runs[i])
					})
				}
				close(start)
				wg.Wait()
				winner := -1
				for i, err := range errs {
					switch {
					case err == nil:
						if winner >= 0 {
							t.Fatalf("round %d: claims %d and %d both succeeded", round, winner, i)
						}
						winner = i
					case !errors.Is(err, domain.ErrConflict):
						t.Errorf("round %d: claim %d: %v, want nil or ErrConflict", round, i, err)
					}
				}
				if winner < 0 {
					t.Fatalf("round %d: no claim succeeded", round)
				}
				got, err := r.Messages.GetMessage(t.Context(), "acme", m.ID)
				if err != nil || got.RunID != runs[winner] {
					t.Errorf("round %d: RunID = %q (%v), want the winner's %q", round, got.RunID, err, runs[winner])
				}
			}
		})
	}
}

// TestEveryTableIsTenantScoped is the schema-level half of the
// cross-tenant probe (domaintest's TenantIsolation calls every
// tenant-scoped method with another tenant's ids): every table of the
// store has a tenant_id column that leads its primary key, so no row can
// be addressed without a tenant.
func TestEveryTableIsTenantScoped(t *testing.T) {
	s := newStore(t, postgres.Options{})
	p := testPool(t)
	rows, err := p.Query(t.Context(), `
		SELECT c.relname,
		       (SELECT a.attname FROM pg_attribute a
		        WHERE a.attrelid = c.oid AND a.attnum = (SELECT i.indkey[0] FROM pg_index i
		                                                 WHERE i.indrelid = c.oid AND i.indisprimary))
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname <> 'schema_version'
		ORDER BY 1`, s.Schema())
	if err != nil {
		t.Fatal(err)
	}
	type table struct {
		name  string
		first *string
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (table, error) {
		var tb table
		return tb, r.Scan(&tb.name, &tb.first)
	})
	if err != nil {
		t.Fatal(err)
	}
	// 9 tables of versions 1-3, then the cost ledger (2), data sources
	// (1), the audit chain (2) and quotas (2).
	if len(tables) != 16 {
		t.Errorf("found %d tables, want 16: %+v", len(tables), tables)
	}
	for _, tb := range tables {
		if tb.first == nil || *tb.first != "tenant_id" {
			t.Errorf("table %s: primary key does not start with tenant_id", tb.name)
		}
	}
}

// TestCreateMessagesAllOrNothing: a batch whose last message collides
// with a stored one stores none of its messages.
func TestCreateMessagesAllOrNothing(t *testing.T) {
	s := newStore(t, postgres.Options{})
	r := s.Repositories()
	sess, stored := seedGenerating(t, r, "acme")
	var batch []*domain.Message
	for range 5 {
		batch = append(batch, &domain.Message{ID: domain.NewID(), TenantID: "acme", SessionID: sess.ID,
			Role: domain.RoleUser, Status: domain.StatusComplete, Parts: []domain.Part{domain.TextPart("x")}})
	}
	batch[4].ID = stored.ID
	if err := r.Messages.CreateMessages(t.Context(), batch...); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("CreateMessages with a stored id: %v, want ErrConflict", err)
	}
	list, err := r.Messages.ListMessages(t.Context(), "acme", sess.ID, domain.MessageListOptions{})
	if err != nil || len(list) != 1 || list[0].ID != stored.ID {
		t.Fatalf("messages after the failed batch = %d (%v), want only the stored one", len(list), err)
	}
}

// putArtifact stores content in the artifact store and an artifact row
// of message m referring to it.
func putArtifact(t *testing.T, s *postgres.Store, m domain.Message, content []byte) domain.Artifact {
	t.Helper()
	a, err := s.ArtifactStore(0).Put(t.Context(), m.TenantID, domain.Artifact{Kind: domain.ArtifactFile, Name: "f.bin"}, bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	a.ID, a.SessionID, a.MessageID = domain.NewID(), m.SessionID, m.ID
	if err := s.Repositories().Artifacts.SaveArtifact(t.Context(), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func statErr(t *testing.T, s *postgres.Store, tenant, sum string) error {
	t.Helper()
	_, err := s.ArtifactStore(0).Stat(t.Context(), tenant, sum)
	return err
}

// TestDeleteSessionFreesUnreferencedContent: deleting a session frees the
// content only its artifacts used (several chunks of it), keeps content
// another session's artifact shares, and keeps another tenant's copy.
func TestDeleteSessionFreesUnreferencedContent(t *testing.T) {
	s := newStore(t, postgres.Options{})
	r := s.Repositories()
	_, m1 := seedGenerating(t, r, "acme")
	_, m2 := seedGenerating(t, r, "acme")
	_, other := seedGenerating(t, r, "globex")
	own := bytes.Repeat([]byte("only session 1 "), 50000) // three chunks
	shared := []byte("used by both sessions")
	aOwn := putArtifact(t, s, m1, own)
	putArtifact(t, s, m1, own) // a second reference in the same session
	aShared := putArtifact(t, s, m1, shared)
	putArtifact(t, s, m2, shared)
	putArtifact(t, s, other, own)

	if err := r.Sessions.DeleteSession(t.Context(), "acme", m1.SessionID); err != nil {
		t.Fatal(err)
	}
	if err := statErr(t, s, "acme", aOwn.SHA256); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("content only the deleted session used: Stat = %v, want ErrNotFound", err)
	}
	var chunks int
	if err := testPool(t).QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{s.Schema()}.Sanitize()+
		`.artifact_chunks WHERE tenant_id = 'acme' AND sha256 = $1`, aOwn.SHA256).Scan(&chunks); err != nil || chunks != 0 {
		t.Errorf("chunks of the freed content: %d (%v), want 0", chunks, err)
	}
	if err := statErr(t, s, "acme", aShared.SHA256); err != nil {
		t.Errorf("content another session shares: Stat = %v, want it kept", err)
	}
	rc, _, err := s.ArtifactStore(0).Get(t.Context(), "globex", aOwn.SHA256)
	if err != nil {
		t.Fatalf("the other tenant's copy: %v", err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, own) {
		t.Errorf("the other tenant's copy has %d bytes, want %d", len(got), len(own))
	}
	// DeleteArtifact frees content with its last reference too.
	arts, err := r.Artifacts.ListArtifacts(t.Context(), "acme", m2.ID)
	if err != nil || len(arts) != 1 {
		t.Fatalf("ListArtifacts = %v, %v", arts, err)
	}
	if err := r.Artifacts.DeleteArtifact(t.Context(), "acme", arts[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := statErr(t, s, "acme", aShared.SHA256); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("content after its last artifact was deleted: Stat = %v, want ErrNotFound", err)
	}
}

// TestDeleteSessionAtomic makes the last step of the cascade (freeing
// artifact content) fail with a trigger and checks that nothing was
// deleted: session, messages, checkpoint, artifact, run events, results
// and content are all still there.
func TestDeleteSessionAtomic(t *testing.T) {
	s := newStore(t, postgres.Options{})
	r := s.Repositories()
	ctx := t.Context()
	sess, m := seedGenerating(t, r, "acme")
	a := putArtifact(t, s, m, []byte("content"))
	cp := domain.Checkpoint{ID: domain.NewID(), TenantID: "acme", SessionID: sess.ID, MessageID: m.ID, Kind: domain.CheckpointQuestion, Data: []byte(`{}`)}
	if err := r.Checkpoints.SaveCheckpoint(ctx, &cp); err != nil {
		t.Fatal(err)
	}
	run := domain.NewID()
	if err := r.RunEvents.AppendRunEvents(ctx, domain.RunEvent{TenantID: "acme", RunID: run, SessionID: sess.ID, MessageID: m.ID, Seq: 1, Type: "start"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Results.PutResult(ctx, &domain.StoredResult{TenantID: "acme", SessionID: sess.ID, Data: []byte(`[]`)}); err != nil {
		t.Fatal(err)
	}
	q := pgx.Identifier{s.Schema()}.Sanitize()
	if _, err := testPool(t).Exec(ctx, `
		CREATE FUNCTION `+q+`.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
		CREATE TRIGGER refuse BEFORE DELETE ON `+q+`.artifact_content FOR EACH ROW EXECUTE FUNCTION `+q+`.refuse();`); err != nil {
		t.Fatal(err)
	}
	if err := r.Sessions.DeleteSession(ctx, "acme", sess.ID); err == nil {
		t.Fatal("DeleteSession succeeded although freeing the content failed")
	}
	if _, err := r.Sessions.GetSession(ctx, "acme", sess.ID); err != nil {
		t.Errorf("session after the failed delete: %v", err)
	}
	if _, err := r.Messages.GetMessage(ctx, "acme", m.ID); err != nil {
		t.Errorf("message after the failed delete: %v", err)
	}
	if _, err := r.Checkpoints.GetCheckpoint(ctx, "acme", m.ID); err != nil {
		t.Errorf("checkpoint after the failed delete: %v", err)
	}
	if _, err := r.Artifacts.GetArtifact(ctx, "acme", a.ID); err != nil {
		t.Errorf("artifact after the failed delete: %v", err)
	}
	if evs, err := r.RunEvents.ListRunEvents(ctx, "acme", run, 0, 0); err != nil || len(evs) != 1 {
		t.Errorf("run events after the failed delete: %d, %v", len(evs), err)
	}
	if names, err := r.Results.ListResults(ctx, "acme", sess.ID); err != nil || len(names) != 1 {
		t.Errorf("results after the failed delete: %v, %v", names, err)
	}
	if err := statErr(t, s, "acme", a.SHA256); err != nil {
		t.Errorf("content after the failed delete: %v", err)
	}
	if _, err := testPool(t).Exec(ctx, `DROP TRIGGER refuse ON `+q+`.artifact_content`); err != nil {
		t.Fatal(err)
	}
	if err := r.Sessions.DeleteSession(ctx, "acme", sess.ID); err != nil {
		t.Fatalf("DeleteSession without the trigger: %v", err)
	}
	if err := statErr(t, s, "acme", a.SHA256); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("content after the delete: %v, want ErrNotFound", err)
	}
}

// TestResultSessionByteCap: with MaxSessionResultBytes set, the oldest
// results go until the rest fit, and the newest always stays.
func TestResultSessionByteCap(t *testing.T) {
	s := newStore(t, postgres.Options{ResultsPerSession: 10, MaxResultBytes: 100, MaxSessionResultBytes: 250})
	r := s.Repositories()
	sess, _ := seedGenerating(t, r, "acme")
	put := func(n int) string {
		name, err := r.Results.PutResult(t.Context(), &domain.StoredResult{TenantID: "acme", SessionID: sess.ID, Data: bytes.Repeat([]byte("x"), n)})
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	put(100)
	put(100)
	put(40)
	names, _ := r.Results.ListResults(t.Context(), "acme", sess.ID)
	if want := []string{"result_1", "result_2", "result_3"}; !equalStrings(names, want) {
		t.Fatalf("results at 240 bytes = %v, want %v", names, want)
	}
	put(100) // 340 bytes: result_1 must go
	names, _ = r.Results.ListResults(t.Context(), "acme", sess.ID)
	if want := []string{"result_2", "result_3", "result_4"}; !equalStrings(names, want) {
		t.Fatalf("results after going over the byte cap = %v, want %v", names, want)
	}
	if _, err := r.Results.PutResult(t.Context(), &domain.StoredResult{TenantID: "acme", SessionID: sess.ID, Data: make([]byte, 101)}); !errors.Is(err, domain.ErrTooLarge) {
		t.Errorf("PutResult over MaxResultBytes: %v, want ErrTooLarge", err)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestExample runs Example's steps against the test server, in a schema
// of its own.
func TestExample(t *testing.T) {
	p := testPool(t)
	total, title, err := exampleRun(t.Context(), p, pgtest.Schema(t, p))
	if err != nil || total != 1 || title != "Q3 revenue" {
		t.Fatalf("exampleRun = %d, %q, %v; want 1, \"Q3 revenue\"", total, title, err)
	}
}
