package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/domaintest"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Environment of the child processes of TestMigrateConcurrentProcesses.
const (
	childSchemaEnv = "BICHAT_PG_MIGRATE_CHILD_SCHEMA"
	childStartEnv  = "BICHAT_PG_MIGRATE_CHILD_START" // unix nanoseconds to start at
)

func TestMain(m *testing.M) {
	if schema := os.Getenv(childSchemaEnv); schema != "" {
		os.Exit(migrateChild(schema))
	}
	code := m.Run()
	pgtest.CloseSharedPool()
	os.Exit(code)
}

// migrateChild is the body of a child process: wait for the agreed start
// time, then migrate schema on a pool of its own.
func migrateChild(schema string) int {
	ns, _ := strconv.ParseInt(os.Getenv(childStartEnv), 10, 64)
	time.Sleep(time.Until(time.Unix(0, ns)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pgxpool.New(ctx, os.Getenv(pgtest.DSNEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: connect:", err)
		return 2
	}
	defer p.Close()
	if err := postgres.Migrate(ctx, p, schema); err != nil {
		fmt.Fprintln(os.Stderr, "child: migrate:", err)
		return 1
	}
	return 0
}

// versions returns the versions recorded in schema's schema_version.
func versions(t *testing.T, p *pgxpool.Pool, schema string) []int {
	t.Helper()
	rows, err := p.Query(t.Context(), "SELECT version FROM "+pgx.Identifier{schema}.Sanitize()+".schema_version ORDER BY version")
	if err != nil {
		t.Fatalf("read schema_version: %v", err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatalf("read schema_version: %v", err)
	}
	return vs
}

func wantVersions(t *testing.T, p *pgxpool.Pool, schema string, n int) {
	t.Helper()
	got := versions(t, p, schema)
	if len(got) != n {
		t.Fatalf("schema_version holds %v, want versions 1 to %d", got, n)
	}
	for i, v := range got {
		if v != i+1 {
			t.Fatalf("schema_version holds %v, want versions 1 to %d", got, n)
		}
	}
}

func TestMigrateConcurrentProcesses(t *testing.T) {
	p := testPool(t)
	schema := pgtest.Schema(t, p)
	start := time.Now().Add(time.Second).UnixNano()
	cmds := make([]*exec.Cmd, 2)
	outs := make([]*limitedBuffer, 2)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		outs[i] = &limitedBuffer{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		cmd.Env = append(os.Environ(), childSchemaEnv+"="+schema, childStartEnv+"="+strconv.FormatInt(start, 10))
		if err := cmd.Start(); err != nil {
			t.Fatalf("start child %d: %v", i, err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, outs[i].String())
		}
	}
	wantVersions(t, p, schema, postgres.LatestVersion())
	// One schema: each table exists once, and the store works on it.
	var tables int
	if err := p.QueryRow(t.Context(), `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1`, schema).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if want := 17; tables != want { // schema_version + 16 tables
		t.Errorf("schema %s holds %d tables, want %d", schema, tables, want)
	}
	s, err := postgres.New(p, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CheckSchema(t.Context()); err != nil {
		t.Errorf("CheckSchema after concurrent migrations: %v", err)
	}
}

// limitedBuffer collects a child's output for the failure message.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if len(l.b) < 64<<10 {
		l.b = append(l.b, p...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

func TestMigrateIdempotent(t *testing.T) {
	p := testPool(t)
	schema := pgtest.Schema(t, p)
	for i := range 3 {
		if err := postgres.Migrate(t.Context(), p, schema); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	wantVersions(t, p, schema, postgres.LatestVersion())
	v, err := postgres.SchemaVersion(t.Context(), p, schema)
	if err != nil || v != postgres.LatestVersion() {
		t.Errorf("SchemaVersion = %d, %v; want %d", v, err, postgres.LatestVersion())
	}
}

func TestMigrateRejectsBadSchema(t *testing.T) {
	p := testPool(t)
	for _, schema := range []string{"Bichat", "bi-chat", "1bichat", `bichat"; drop schema public; --`, "a234567890123456789012345678901234567890x"} {
		if err := postgres.Migrate(t.Context(), p, schema); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Migrate(%q): %v, want ErrInvalid", schema, err)
		}
		if _, err := postgres.New(p, postgres.Options{Schema: schema}); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("New(%q): %v, want ErrInvalid", schema, err)
		}
	}
}

func TestCheckSchemaBeforeMigrate(t *testing.T) {
	p := testPool(t)
	schema := pgtest.Schema(t, p)
	s, err := postgres.New(p, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CheckSchema(t.Context()); err == nil {
		t.Fatal("CheckSchema of an unmigrated schema succeeded")
	}
	if err := postgres.MigrateTo(t.Context(), p, schema, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSchema(t.Context()); err == nil {
		t.Fatal("CheckSchema of a schema at version 1 succeeded")
	}
}

func TestMigrationsFS(t *testing.T) {
	var names []string
	err := fs.WalkDir(postgres.Migrations(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			names = append(names, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0001_init.sql", "0002_runs_results_content.sql", "0003_recipes.sql", "0004_costs.sql",
		"0005_datasources.sql", "0006_audit.sql", "0007_quotas.sql", "0008_recipes_verified.sql"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("Migrations() holds %v, want %v", names, want)
	}
	if postgres.LatestVersion() != len(want) {
		t.Errorf("LatestVersion() = %d, want %d", postgres.LatestVersion(), len(want))
	}
	b, err := fs.ReadFile(postgres.Migrations(), "0001_init.sql")
	if err != nil || len(b) == 0 {
		t.Errorf("read 0001_init.sql: %d bytes, %v", len(b), err)
	}
}

// repositoryVersion is the last migration that changes a table the
// domain repositories use (TestLaterMigrationsLeaveRepositoryTables
// holds it): from any later version the repository tables are those of
// this one, so the conformance suite on upgraded schemas runs from the
// versions up to it only.
const repositoryVersion = 2

// repositoryTables are the tables of the domain repositories.
var repositoryTables = []string{"sessions", "messages", "checkpoints", "artifacts", "run_events", "results",
	"artifact_content", "artifact_chunks"}

// TestLaterMigrationsLeaveRepositoryTables checks that no migration after
// repositoryVersion names a repository table; one that does must raise
// repositoryVersion so the conformance suite runs from it.
func TestLaterMigrationsLeaveRepositoryTables(t *testing.T) {
	t.Parallel()
	for v := repositoryVersion + 1; v <= postgres.LatestVersion(); v++ {
		matches, err := fs.Glob(postgres.Migrations(), fmt.Sprintf("%04d_*.sql", v))
		if err != nil || len(matches) != 1 {
			t.Fatalf("migration %d: %v, %v", v, matches, err)
		}
		b, err := fs.ReadFile(postgres.Migrations(), matches[0])
		if err != nil {
			t.Fatal(err)
		}
		var code strings.Builder // the statements, comments dropped
		for _, line := range strings.Split(string(b), "\n") {
			line, _, _ = strings.Cut(line, "--")
			code.WriteString(line + "\n")
		}
		words := map[string]bool{}
		for _, w := range strings.FieldsFunc(strings.ToLower(code.String()), func(r rune) bool {
			return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		}) {
			words[w] = true
		}
		for _, table := range repositoryTables {
			if words[table] {
				t.Errorf("%s names the repository table %s: raise repositoryVersion to %d", matches[0], table, v)
			}
		}
	}
}

// TestMigrateFromEachVersion brings a schema to each earlier version,
// stores data the way that version's tables hold it, migrates to the
// latest, and checks that the data reads back through the repositories
// and that the new features work on it; from the versions that still
// change repository tables (up to repositoryVersion), the whole
// conformance suite runs on upgraded schemas too.
func TestMigrateFromEachVersion(t *testing.T) {
	p := testPool(t)
	for k := 1; k < postgres.LatestVersion(); k++ {
		t.Run(fmt.Sprintf("FromVersion%d", k), func(t *testing.T) {
			schema := pgtest.Schema(t, p)
			if err := postgres.MigrateTo(t.Context(), p, schema, k); err != nil {
				t.Fatalf("MigrateTo(%d): %v", k, err)
			}
			wantVersions(t, p, schema, k)
			seed := seedVersion1(t, p, schema)
			if k >= 2 {
				seed.addVersion2(t, p, schema)
			}
			if err := postgres.Migrate(t.Context(), p, schema); err != nil {
				t.Fatalf("Migrate from version %d: %v", k, err)
			}
			wantVersions(t, p, schema, postgres.LatestVersion())
			s, err := postgres.New(p, postgres.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			seed.check(t, s)
			if k > repositoryVersion {
				return
			}

			t.Run("Suite", func(t *testing.T) {
				domaintest.RunRepositoryTests(t, func(t *testing.T) domain.Repositories {
					schema := pgtest.Schema(t, p)
					if err := postgres.MigrateTo(t.Context(), p, schema, k); err != nil {
						t.Fatalf("MigrateTo(%d): %v", k, err)
					}
					return newStoreOn(t, p, postgres.Options{Schema: schema,
						ResultsPerSession: suiteOptions.ResultsKeep, MaxResultBytes: suiteOptions.ResultBytes}).Repositories()
				}, suiteOptions)
			})
		})
	}
}

// v1Seed is data written with version 1's columns.
type v1Seed struct {
	tenant, sessionID, userMsg, asstMsg, runID string
	created                                    time.Time
	// v2 is set when addVersion2 added version 2 data.
	v2       bool
	leaseRun string
}

// seedVersion1 inserts a session, a user message, a generating assistant
// message, a checkpoint, an artifact and run events with the columns of
// version 1 (no leases, no results).
func seedVersion1(t *testing.T, p *pgxpool.Pool, schema string) v1Seed {
	t.Helper()
	d := v1Seed{tenant: "acme", sessionID: domain.NewID(), userMsg: domain.NewID(), asstMsg: domain.NewID(), runID: domain.NewID(),
		created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	q := pgx.Identifier{schema}.Sanitize()
	ctx := t.Context()
	stmts := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO ` + q + `.sessions (tenant_id, id, owner_id, title, model, created_at, updated_at)
			VALUES ($1, $2, 'alice', 'Q3 revenue', 'model-large', $3, $3)`, []any{d.tenant, d.sessionID, d.created}},
		{`INSERT INTO ` + q + `.messages (tenant_id, id, session_id, role, status, parts, metadata, created_at, updated_at)
			VALUES ($1, $2, $3, 'user', 'complete', '[{"type":"text","text":"How did Q3 go?"}]', '{"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}', $4, $4)`,
			[]any{d.tenant, d.userMsg, d.sessionID, d.created}},
		{`INSERT INTO ` + q + `.messages (tenant_id, id, session_id, role, status, run_id, parts, metadata, created_at, updated_at)
			VALUES ($1, $2, $3, 'assistant', 'generating', '', '[]', '{"model":"model-large","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}', $4, $4)`,
			[]any{d.tenant, d.asstMsg, d.sessionID, d.created.Add(time.Second)}},
		{`INSERT INTO ` + q + `.checkpoints (tenant_id, message_id, id, session_id, owner_id, run_id, kind, data, created_at, expires_at)
			VALUES ($1, $2, $3, $4, 'alice', $5, 'question', '{"v":1}', $6, $7)`,
			[]any{d.tenant, d.asstMsg, domain.NewID(), d.sessionID, d.runID, d.created, d.created.Add(time.Hour)}},
		{`INSERT INTO ` + q + `.artifacts (tenant_id, id, session_id, message_id, kind, name, media_type, sha256, size, uri, metadata, created_at)
			VALUES ($1, $2, $3, $4, 'table', 'q3.csv', 'text/csv', $5, 3, '', '{"rows":"1"}', $6)`,
			[]any{d.tenant, domain.NewID(), d.sessionID, d.asstMsg, domain.ContentHash([]byte("a,b")), d.created}},
		{`INSERT INTO ` + q + `.run_events (tenant_id, run_id, seq, session_id, message_id, type, time, data)
			VALUES ($1, $2, 1, $3, $4, 'start', $5, '{"type":"start"}')`,
			[]any{d.tenant, d.runID, d.sessionID, d.asstMsg, d.created}},
	}
	for _, st := range stmts {
		if _, err := p.Exec(ctx, st.sql, st.args...); err != nil {
			t.Fatalf("seed version 1 data: %v\n%s", err, st.sql)
		}
	}
	return d
}

// addVersion2 adds data only version 2's tables hold: a lease, a named
// result and artifact content.
func (d *v1Seed) addVersion2(t *testing.T, p *pgxpool.Pool, schema string) {
	t.Helper()
	q := pgx.Identifier{schema}.Sanitize()
	ctx := t.Context()
	d.v2 = true
	d.leaseRun = domain.NewID()
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE ` + q + `.messages SET run_id = $3, lease_until = $4 WHERE tenant_id = $1 AND id = $2`,
			[]any{d.tenant, d.asstMsg, d.leaseRun, d.created.Add(time.Hour)}},
		{`UPDATE ` + q + `.sessions SET last_result = 1 WHERE tenant_id = $1 AND id = $2`, []any{d.tenant, d.sessionID}},
		{`INSERT INTO ` + q + `.results (tenant_id, session_id, name, size, data, created_at) VALUES ($1, $2, 'result_1', 2, '[]', $3)`,
			[]any{d.tenant, d.sessionID, d.created}},
		{`INSERT INTO ` + q + `.artifact_content (tenant_id, sha256, size, media_type, chunks, created_at) VALUES ($1, $2, 3, 'text/csv', 1, $3)`,
			[]any{d.tenant, domain.ContentHash([]byte("a,b")), d.created}},
		{`INSERT INTO ` + q + `.artifact_chunks (tenant_id, sha256, idx, data) VALUES ($1, $2, 0, 'a,b')`,
			[]any{d.tenant, domain.ContentHash([]byte("a,b"))}},
	} {
		if _, err := p.Exec(ctx, st.sql, st.args...); err != nil {
			t.Fatalf("seed version 2 data: %v\n%s", err, st.sql)
		}
	}
}

// check reads the seeded data through the repositories of the migrated
// store and uses the features of later versions on it.
func (d v1Seed) check(t *testing.T, s *postgres.Store) {
	t.Helper()
	ctx := t.Context()
	r := s.Repositories()
	sess, err := r.Sessions.GetSession(ctx, d.tenant, d.sessionID)
	if err != nil || sess.Title != "Q3 revenue" || !sess.CreatedAt.Equal(d.created) {
		t.Fatalf("GetSession after the upgrade = %+v, %v", sess, err)
	}
	msgs, err := r.Messages.ListMessages(ctx, d.tenant, d.sessionID, domain.MessageListOptions{})
	if err != nil || len(msgs) != 2 || msgs[0].Text() != "How did Q3 go?" || msgs[1].Status != domain.StatusGenerating {
		t.Fatalf("ListMessages after the upgrade = %+v, %v", msgs, err)
	}
	if !d.v2 && (!msgs[1].LeaseUntil.IsZero() || msgs[1].CancelRequested) {
		t.Errorf("old message has lease %v, cancel %v; want none", msgs[1].LeaseUntil, msgs[1].CancelRequested)
	}
	cp, err := r.Checkpoints.GetCheckpoint(ctx, d.tenant, d.asstMsg)
	if err != nil || string(cp.Data) != `{"v":1}` {
		t.Errorf("GetCheckpoint after the upgrade = %+v, %v", cp, err)
	}
	evs, err := r.RunEvents.ListRunEvents(ctx, d.tenant, d.runID, 0, 0)
	if err != nil || len(evs) != 1 || string(evs[0].Data) != `{"type":"start"}` {
		t.Errorf("ListRunEvents after the upgrade = %+v, %v", evs, err)
	}
	arts, err := r.Artifacts.ListArtifacts(ctx, d.tenant, d.asstMsg)
	if err != nil || len(arts) != 1 || arts[0].Metadata["rows"] != "1" {
		t.Errorf("ListArtifacts after the upgrade = %+v, %v", arts, err)
	}
	if d.v2 {
		d.checkVersion2(t, s)
		return
	}
	// Version 2's features on version 1's rows.
	run := domain.NewID()
	if err := r.Runs.ClaimRun(ctx, d.tenant, d.asstMsg, run, time.Now().Add(time.Minute)); err != nil {
		t.Errorf("ClaimRun of an old message: %v", err)
	}
	if err := r.Runs.RequestCancel(ctx, d.tenant, d.asstMsg); err != nil {
		t.Errorf("RequestCancel of an old message: %v", err)
	}
	if c, err := r.Runs.RenewLease(ctx, d.tenant, d.asstMsg, run, time.Now().Add(2*time.Minute)); err != nil || !c {
		t.Errorf("RenewLease of an old message = %v, %v; want cancel requested", c, err)
	}
	name, err := r.Results.PutResult(ctx, &domain.StoredResult{TenantID: d.tenant, SessionID: d.sessionID, Data: []byte(`{"rows":[]}`)})
	if err != nil || name != "result_1" {
		t.Errorf("PutResult in an old session = %q, %v; want result_1", name, err)
	}
	if err := r.Sessions.DeleteSession(ctx, d.tenant, d.sessionID); err != nil {
		t.Errorf("DeleteSession of an old session: %v", err)
	}
}

// checkVersion2 reads version 2's data through the migrated store.
func (d v1Seed) checkVersion2(t *testing.T, s *postgres.Store) {
	t.Helper()
	ctx := t.Context()
	r := s.Repositories()
	m, err := r.Messages.GetMessage(ctx, d.tenant, d.asstMsg)
	if err != nil || m.RunID != d.leaseRun || !m.LeaseUntil.Equal(d.created.Add(time.Hour)) {
		t.Errorf("leased message after the upgrade = %+v, %v", m, err)
	}
	if c, err := r.Runs.RenewLease(ctx, d.tenant, d.asstMsg, d.leaseRun, time.Now().Add(time.Minute)); err != nil || c {
		t.Errorf("RenewLease after the upgrade = %v, %v", c, err)
	}
	res, err := r.Results.GetResult(ctx, d.tenant, d.sessionID, "result_1")
	if err != nil || string(res.Data) != "[]" {
		t.Errorf("GetResult after the upgrade = %+v, %v", res, err)
	}
	if name, err := r.Results.PutResult(ctx, &domain.StoredResult{TenantID: d.tenant, SessionID: d.sessionID, Data: []byte("{}")}); err != nil || name != "result_2" {
		t.Errorf("PutResult after the upgrade = %q, %v; want result_2", name, err)
	}
	rc, a, err := s.ArtifactStore(0).Get(ctx, d.tenant, domain.ContentHash([]byte("a,b")))
	if err != nil {
		t.Fatalf("artifact content after the upgrade: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "a,b" || a.MediaType != "text/csv" {
		t.Errorf("artifact content after the upgrade = %q (%s)", b, a.MediaType)
	}
	// The seeded artifact refers to the content: deleting the session frees it.
	if err := r.Sessions.DeleteSession(ctx, d.tenant, d.sessionID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArtifactStore(0).Stat(ctx, d.tenant, a.SHA256); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("content after the session was deleted: %v, want ErrNotFound", err)
	}
}
