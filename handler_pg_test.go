package bichat_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ---------------------------------------------------------------------------
// The HTTP API on real PostgreSQL: the handler fixture of handler_test.go
// with every repository and the artifact content in a PostgreSQL schema
// of its own. Two fixtures on separate pools over one schema are two
// replicas of a host behind one database.
// ---------------------------------------------------------------------------

// longText is the answer of a [long] question: 138 chunks 10 ms apart,
// well over the time a cancel takes to reach another replica (a third of
// pgLease).
var longText = strings.Repeat("long words ", 100)

// pgHTTPFixture is newHTTPFixture with its Service on a PostgreSQL store
// over pool and schema (migrated by the caller) with the lease of the
// PostgreSQL tests, closed when the test ends. Its model also answers
// [long] questions, slowly, with longText.
func pgHTTPFixture(t *testing.T, pool *pgxpool.Pool, schema string) *httpFixture {
	t.Helper()
	f := newHTTPFixture(t, func(c *bichat.Config, _ *bichat.HandlerOptions) {
		store, err := postgres.New(pool, postgres.Options{Schema: schema})
		if err != nil {
			t.Fatalf("postgres.New: %v", err)
		}
		t.Cleanup(store.Close)
		c.Store = store.Repositories()
		c.ArtifactStore = store.ArtifactStore(0)
		c.Limits.RunLease = pgLease
		m := c.Agent.Model.(*scripted.Model)
		respond := m.Respond
		m.Respond = func(ctx context.Context, r *agents.Request) (scripted.Turn, error) {
			if last := r.Messages[len(r.Messages)-1]; last.Role == domain.RoleUser && strings.Contains(last.Text(), "[long]") {
				return scripted.Turn{Text: longText, Delay: 10 * time.Millisecond}, nil
			}
			return respond(ctx, r)
		}
	})
	closeAtEnd(t, f.svc)
	return f
}

// pgHTTP is one handler on a fresh PostgreSQL schema.
func pgHTTP(t *testing.T) *httpFixture {
	t.Helper()
	p := pgPool(t, pgDSN(t))
	return pgHTTPFixture(t, p, pgSchema(t, p))
}

// pgReplicas is two handlers on two Services with separate pools over one
// schema: two replicas of a host.
func pgReplicas(t *testing.T) (a, b *httpFixture) {
	t.Helper()
	dsn := pgDSN(t)
	poolA, poolB := pgPool(t, dsn), pgPool(t, dsn)
	schema := pgSchema(t, poolA)
	return pgHTTPFixture(t, poolA, schema), pgHTTPFixture(t, poolB, schema)
}

// Every route's success path and its usual errors (the walk the OpenAPI
// test records) on PostgreSQL, then the ask-stream-download path checked
// in detail: the events, the stored messages, the artifact served from
// the database with its protective headers.
func TestHandlerPostgresRoutes(t *testing.T) {
	t.Parallel()
	f := pgHTTP(t)
	exerciseAll(t, f)

	s := f.session(t, "alice")
	out := f.ask(t, "alice", s.ID, "Revenue by region? [chart]")
	a := out.AssistantMessage
	evs := f.watch(t, "viewer", a.ID)
	sseConsecutive(t, evs, 1)
	want := []string{"message_start", "text", "token_update", "tool_call", "tool_result", "text", "token_update", "message_complete"}
	if got := compact(names(evs)); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if st := payload[bichat.EventStart](t, evs[0]); st.MessageID != a.ID || st.SessionID != s.ID || st.RunID != a.RunID {
		t.Errorf("message_start = %+v", st)
	}
	if done := payload[bichat.EventComplete](t, last(evs)); done.Text != "Done." || done.ToolCalls != 1 || textOf(evs, t) != "Drawing.Done." {
		t.Errorf("message_complete = %+v, text %q", done, textOf(evs, t))
	}
	f.waitStatus(t, "alice", a.ID, domain.StatusComplete)
	var list bichat.MessageList
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/messages", user: "viewer"}).decode(t, &list)
	if len(list.Items) != 2 || list.Items[0].ID != out.UserMessage.ID || list.Items[1].ID != a.ID {
		t.Fatalf("messages = %+v", list)
	}
	// A replay from seq 2 gives the rest, and one after the end is 204.
	rest := f.openStream(t, "alice", a.ID, 2, true).all(t)
	sseConsecutive(t, rest, 3)
	if len(rest) != len(evs)-2 {
		t.Fatalf("Last-Event-ID 2 replayed %d events, want %d", len(rest), len(evs)-2)
	}
	st := f.openStream(t, "alice", a.ID, int64(len(evs)), false)
	if st.res.StatusCode != http.StatusNoContent {
		t.Errorf("stream after the end: %d, want 204", st.res.StatusCode)
	}
	st.close()

	var arts bichat.ArtifactList
	f.want(t, http.StatusOK, req{method: "GET", path: "/messages/" + a.ID + "/artifacts", user: "viewer"}).decode(t, &arts)
	if len(arts.Items) != 1 || arts.Items[0].MediaType != "image/svg+xml" || arts.Items[0].Size != int64(len(svgContent)) {
		t.Fatalf("artifacts = %+v", arts)
	}
	dl := f.want(t, http.StatusOK, req{method: "GET", path: "/artifacts/" + arts.Items[0].ID + "/content", user: "viewer"})
	if string(dl.body) != svgContent || dl.header.Get("X-Content-Type-Options") != "nosniff" ||
		dl.header.Get("Content-Security-Policy") != "default-src 'none'; sandbox" ||
		!strings.HasPrefix(dl.header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("download: %q %v", dl.body, dl.header)
	}
	// The session's deletion takes its messages and artifacts with it.
	f.want(t, http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + s.ID, user: "alice"})
	f.want(t, http.StatusNotFound, req{method: "GET", path: "/messages/" + a.ID, user: "alice"})
	f.want(t, http.StatusNotFound, req{method: "GET", path: "/messages/" + a.ID + "/events", user: "alice"})
	f.want(t, http.StatusNotFound, req{method: "GET", path: "/artifacts/" + arts.Items[0].ID + "/content", user: "alice"})
}

// readN reads n events of an open stream.
func readN(t *testing.T, st *sseStream, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	for len(out) < n {
		ev, err := st.next()
		if err != nil {
			t.Fatalf("read event %d: %v", len(out)+1, err)
		}
		out = append(out, ev)
	}
	return out
}

// A real SSE client disconnects mid-stream and resumes with Last-Event-ID:
// on the same handler, and on another replica (a reload that lands on
// another process), with no gap and no duplicate.
func TestHandlerPostgresResumeAfterDisconnect(t *testing.T) {
	t.Parallel()
	a, b := pgReplicas(t)
	t.Run("same handler", func(t *testing.T) { resumeAcross(t, a, a) })
	t.Run("other replica", func(t *testing.T) { resumeAcross(t, a, b) })
}

// One run per session, enforced by the database: a second question while
// the first is answered is a 409 through the same handler and through
// another replica; once it is over the session takes the next one.
func TestHandlerPostgresSecondRunConflict(t *testing.T) {
	t.Parallel()
	a, b := pgReplicas(t)
	s := a.session(t, "alice")
	first := a.ask(t, "alice", s.ID, "First [slow]")
	for _, f := range []*httpFixture{a, b} {
		e := f.want(t, http.StatusConflict, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice",
			body: bichat.PostMessageRequest{Text: "Second"}}).errBody(t)
		if e.Code != "conflict" || strings.Contains(e.Message, "bichat:") {
			t.Fatalf("409 body: %+v", e)
		}
	}
	// Another session is not blocked.
	other := b.session(t, "alice")
	if evs := b.watch(t, "alice", b.ask(t, "alice", other.ID, "Meanwhile").AssistantMessage.ID); last(evs).name != bichat.SSEMessageComplete {
		t.Fatalf("other session: %v", compact(names(evs)))
	}
	if evs := b.watch(t, "alice", first.AssistantMessage.ID); last(evs).name != bichat.SSEMessageComplete {
		t.Fatalf("first run: %v", compact(names(evs)))
	}
	b.waitStatus(t, "alice", first.AssistantMessage.ID, domain.StatusComplete)
	next := b.ask(t, "alice", s.ID, "Second")
	if evs := a.watch(t, "alice", next.AssistantMessage.ID); last(evs).name != bichat.SSEMessageComplete {
		t.Fatalf("second run: %v", compact(names(evs)))
	}
	var list bichat.MessageList
	a.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/messages", user: "alice"}).decode(t, &list)
	if len(list.Items) != 4 {
		t.Fatalf("session holds %d messages after two answered questions and two refused ones, want 4", len(list.Items))
	}
}

// Cross-tenant and cross-user probes on every route with an id, on
// PostgreSQL: another user of the tenant and alice's user id in another
// tenant get exactly the 404 of an id that does not exist, and nothing of
// alice's changes.
func TestHandlerPostgresCrossTenantProbes(t *testing.T) {
	t.Parallel()
	f := pgHTTP(t)
	s := f.session(t, "alice")
	msgID := f.ask(t, "alice", s.ID, "Chart please [chart]").AssistantMessage.ID
	f.watch(t, "alice", msgID)
	var arts bichat.ArtifactList
	f.want(t, http.StatusOK, req{method: "GET", path: "/messages/" + msgID + "/artifacts", user: "alice"}).decode(t, &arts)
	if len(arts.Items) != 1 {
		t.Fatalf("artifacts %+v", arts)
	}
	artID := arts.Items[0].ID
	ask := f.ask(t, "alice", f.session(t, "alice").ID, "Which? [ask]").AssistantMessage.ID
	f.watch(t, "alice", ask)
	f.waitStatus(t, "alice", ask, domain.StatusAwaitingInput)

	probeEveryIDRoute(t, f, map[string]string{"session_id": s.ID, "message_id": msgID, "artifact_id": artID}, ask)
	// Nothing changed for alice: the session, its messages, the
	// artifact, and the question still waits for her answer.
	var got bichat.SessionView
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: "alice"}).decode(t, &got)
	if got.Title == "mine now" {
		t.Fatal("another user renamed alice's session")
	}
	var list bichat.MessageList
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/messages", user: "alice"}).decode(t, &list)
	if len(list.Items) != 2 {
		t.Fatalf("alice's session holds %d messages, want 2", len(list.Items))
	}
	if dl := f.want(t, http.StatusOK, req{method: "GET", path: "/artifacts/" + artID + "/content", user: "alice"}); string(dl.body) != svgContent {
		t.Fatal("artifact changed")
	}
	f.waitStatus(t, "alice", ask, domain.StatusAwaitingInput)
	// The other tenant's listing is empty.
	var page bichat.SessionPage
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions", user: "mallory"}).decode(t, &page)
	if page.Total != 0 {
		t.Fatalf("mallory lists %+v", page)
	}
}

// Two replicas (two handlers on two Services with separate pools over one
// schema): a question posted through A is streamed through B to the end
// while A runs it, and a cancel through B stops a run A executes.
func TestHandlerPostgresReplicas(t *testing.T) {
	t.Parallel()
	a, b := pgReplicas(t)

	t.Run("post on A, stream on B", func(t *testing.T) {
		s := a.session(t, "alice")
		id := a.ask(t, "alice", s.ID, "Take your time [slow]").AssistantMessage.ID
		// B follows the live run through the database.
		onB := b.watch(t, "viewer", id)
		sseConsecutive(t, onB, 1)
		if last(onB).name != bichat.SSEMessageComplete || textOf(onB, t) != slowText {
			t.Fatalf("stream on B: %v, text %q", compact(names(onB)), textOf(onB, t))
		}
		if st := payload[bichat.EventStart](t, onB[0]); st.MessageID != id || st.SessionID != s.ID {
			t.Fatalf("message_start on B = %+v", st)
		}
		// A's own replay is the same stream, event for event.
		onA := a.watch(t, "alice", id)
		if len(onA) != len(onB) {
			t.Fatalf("A replays %d events, B streamed %d", len(onA), len(onB))
		}
		for i := range onA {
			if onA[i].id != onB[i].id || onA[i].name != onB[i].name || string(onA[i].data) != string(onB[i].data) {
				t.Fatalf("event %d differs: A %s %s %s, B %s %s %s", i, onA[i].id, onA[i].name, onA[i].data, onB[i].id, onB[i].name, onB[i].data)
			}
		}
		b.waitStatus(t, "alice", id, domain.StatusComplete)

		// A chart drawn by A is listed and served by B.
		chart := a.ask(t, "alice", s.ID, "Chart [chart]").AssistantMessage.ID
		if evs := b.watch(t, "alice", chart); last(evs).name != bichat.SSEMessageComplete {
			t.Fatalf("chart on B: %v", compact(names(evs)))
		}
		var arts bichat.ArtifactList
		b.want(t, http.StatusOK, req{method: "GET", path: "/messages/" + chart + "/artifacts", user: "alice"}).decode(t, &arts)
		if len(arts.Items) != 1 {
			t.Fatalf("artifacts on B = %+v", arts)
		}
		if dl := b.want(t, http.StatusOK, req{method: "GET", path: "/artifacts/" + arts.Items[0].ID + "/content", user: "alice"}); string(dl.body) != svgContent {
			t.Fatalf("download on B = %q", dl.body)
		}
	})

	t.Run("start on A, cancel on B", func(t *testing.T) {
		s := a.session(t, "alice")
		id := a.ask(t, "alice", s.ID, "Long one [long]").AssistantMessage.ID
		onA := a.openStream(t, "alice", id, -1, false)
		if ev, err := onA.next(); err != nil || ev.name != bichat.SSEMessageStart {
			t.Fatalf("first event on A: %+v %v", ev, err)
		}
		onB := b.openStream(t, "alice", id, -1, false)
		if ev, err := onB.next(); err != nil || ev.name != bichat.SSEMessageStart {
			t.Fatalf("first event on B: %+v %v", ev, err)
		}
		b.want(t, http.StatusForbidden, req{method: "POST", path: "/messages/" + id + "/cancel", user: "viewer"})
		b.want(t, http.StatusNoContent, req{method: "POST", path: "/messages/" + id + "/cancel", user: "alice"})
		cancelled := time.Now()
		for name, st := range map[string]*sseStream{"A": onA, "B": onB} {
			rest := st.all(t)
			took := time.Since(cancelled)
			t.Logf("the stream on %s ended %s after the cancel on B (lease %s)", name, took, pgLease)
			if took > pgLease {
				t.Errorf("the cancel took %s to reach the run on A, want within a third of the lease (%s)", took, pgLease)
			}
			sseConsecutive(t, rest, 2)
			end := last(rest)
			if end.name != bichat.SSEMessageError || payload[bichat.EventError](t, end).Code != "cancelled" {
				t.Fatalf("stream on %s after the cancel ends with %s %s", name, end.name, end.data)
			}
			if textOf(rest, t) == longText {
				t.Fatalf("the whole answer streamed on %s despite the cancel", name)
			}
		}
		m := a.waitStatus(t, "alice", id, domain.StatusFailed)
		if m.Metadata.Error == nil || m.Metadata.Error.Code != "cancelled" {
			t.Fatalf("cancelled message = %+v", m.Metadata)
		}
		a.want(t, http.StatusConflict, req{method: "POST", path: "/messages/" + id + "/cancel", user: "alice"})
		// Both replicas replay the cancelled run to its message_error,
		// and the session takes a new question on B.
		for _, f := range []*httpFixture{a, b} {
			if evs := f.watch(t, "alice", id); last(evs).name != bichat.SSEMessageError {
				t.Fatalf("replay after the cancel: %v", compact(names(evs)))
			}
		}
		next := b.ask(t, "alice", s.ID, "Again")
		if evs := a.watch(t, "alice", next.AssistantMessage.ID); last(evs).name != bichat.SSEMessageComplete {
			t.Fatalf("next question: %v", compact(names(evs)))
		}
	})
}
