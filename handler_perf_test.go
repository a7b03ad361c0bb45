package bichat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// readCounter wraps a store's sessions and messages, counting the reads
// that check ownership and list messages (the round trips of a database
// store), and delays GetMessage of the ids in slow.
type readCounter struct {
	reads atomic.Int64
	mu    sync.Mutex
	slow  map[string]time.Duration
}

type countedSessions struct {
	domain.SessionRepository
	c *readCounter
}

func (s countedSessions) GetSession(ctx context.Context, tenantID, id string) (*domain.Session, error) {
	s.c.reads.Add(1)
	return s.SessionRepository.GetSession(ctx, tenantID, id)
}

type countedMessages struct {
	domain.MessageRepository
	c *readCounter
}

func (m countedMessages) GetMessage(ctx context.Context, tenantID, id string) (*domain.Message, error) {
	m.c.reads.Add(1)
	m.c.mu.Lock()
	d := m.c.slow[id]
	m.c.mu.Unlock()
	if d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return m.MessageRepository.GetMessage(ctx, tenantID, id)
}

func (m countedMessages) ListMessages(ctx context.Context, tenantID, sessionID string, opts domain.MessageListOptions) ([]domain.Message, error) {
	m.c.reads.Add(1)
	return m.MessageRepository.ListMessages(ctx, tenantID, sessionID, opts)
}

// countedFixture is the handler fixture over a store whose reads c
// counts.
func countedFixture(t *testing.T, tweak ...func(*bichat.Config, *bichat.HandlerOptions)) (*httpFixture, *readCounter) {
	t.Helper()
	c := &readCounter{slow: map[string]time.Duration{}}
	f := newHTTPFixture(t, append([]func(*bichat.Config, *bichat.HandlerOptions){func(cfg *bichat.Config, _ *bichat.HandlerOptions) {
		cfg.Store.Sessions = countedSessions{cfg.Store.Sessions, c}
		cfg.Store.Messages = countedMessages{cfg.Store.Messages, c}
	}}, tweak...)...)
	return f, c
}

// TestHandlerPostMessageReads: posting a question answers from one
// listing of the session's last two messages, so the handler adds two
// store reads (the session's ownership and the listing) to what starting
// the run costs, not four (reloading the answer and listing the message
// before it, each checking the session again).
func TestHandlerPostMessageReads(t *testing.T) {
	t.Parallel()
	called := make(chan struct{}, 4)
	release := make(chan struct{})
	model := &scripted.Model{Respond: func(ctx context.Context, _ *agents.Request) (scripted.Turn, error) {
		called <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return scripted.Turn{Text: "Answer."}, nil
	}}
	f, c := countedFixture(t, func(cfg *bichat.Config, _ *bichat.HandlerOptions) { cfg.Agent.Model = model })
	defer close(release)
	alice := httpPrincipals["alice"]
	waitCalled := func() {
		t.Helper()
		select {
		case <-called:
		case <-time.After(httpGuard):
			t.Fatal("the model was not called")
		}
	}

	// Starting a run directly, read up to the model call (the run does
	// no counted read while the model holds it).
	direct := f.session(t, "alice")
	before := c.reads.Load()
	for ev, err := range f.svc.Send(t.Context(), alice, direct.ID, "How much?") {
		if err != nil || ev.Header().MessageID == "" {
			t.Fatalf("Send: %v %v", ev, err)
		}
		break
	}
	waitCalled()
	sendReads := c.reads.Load() - before

	viaHTTP := f.session(t, "alice")
	before = c.reads.Load()
	out := f.ask(t, "alice", viaHTTP.ID, "How much?")
	waitCalled()
	postReads := c.reads.Load() - before
	if out.UserMessage.Role != domain.RoleUser || out.UserMessage.SessionID != viaHTTP.ID ||
		out.AssistantMessage.Role != domain.RoleAssistant || out.AssistantMessage.Status != domain.StatusGenerating {
		t.Fatalf("response %+v", out)
	}
	if added := postReads - sendReads; added > 2 {
		t.Errorf("posting a message read the store %d times, %d more than starting the run (want at most 2)", postReads, added)
	}
}

// TestHandlerPostMessageAfterEarlierExchange: the question and answer
// of the response are the new ones, not an earlier exchange's.
func TestHandlerPostMessageAfterEarlierExchange(t *testing.T) {
	t.Parallel()
	f, _ := countedFixture(t)
	s := f.session(t, "alice")
	first := f.ask(t, "alice", s.ID, "First?")
	f.watch(t, "alice", first.AssistantMessage.ID)
	second := f.ask(t, "alice", s.ID, "Second?")
	if second.UserMessage.Role != domain.RoleUser || second.AssistantMessage.ID == first.AssistantMessage.ID ||
		second.UserMessage.ID == first.UserMessage.ID || second.UserMessage.SessionID != s.ID {
		t.Fatalf("second exchange %+v (first %+v)", second, first)
	}
	var list bichat.MessageList
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/messages", user: "alice"}).decode(t, &list)
	if n := len(list.Items); n != 4 || list.Items[2].ID != second.UserMessage.ID || list.Items[3].ID != second.AssistantMessage.ID {
		t.Fatalf("messages %+v", list.Items)
	}
	if q, _ := json.Marshal(list.Items[2].Parts); !bytes.Contains(q, []byte("Second?")) {
		t.Fatalf("the new question's parts %s", q)
	}
}

// TestHandlerStreamReads: the events route checks the message once
// (Service.Watch does), so streaming through the handler reads the store
// as often as Service.Watch alone.
func TestHandlerStreamReads(t *testing.T) {
	t.Parallel()
	f, c := countedFixture(t)
	s := f.session(t, "alice")
	msg := f.ask(t, "alice", s.ID, "Chart please [chart]").AssistantMessage.ID
	want := f.watch(t, "alice", msg)

	before := c.reads.Load()
	n := 0
	for _, err := range f.svc.Watch(t.Context(), httpPrincipals["alice"], msg, 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	watchReads := c.reads.Load() - before
	before = c.reads.Load()
	got := f.watch(t, "alice", msg)
	streamReads := c.reads.Load() - before
	if len(got) != len(want) || n != len(want) {
		t.Fatalf("streamed %d events, then %d, watched %d", len(want), len(got), n)
	}
	if streamReads != watchReads {
		t.Errorf("the events route read the store %d times, Service.Watch %d", streamReads, watchReads)
	}
}

// TestHandlerStreamErrorStatusWithSlowStore: an unknown message, or
// another user's, is still a JSON 404 when the store takes longer to say
// so than WriteSSE's first wait (no 200 stream with a stream_error).
func TestHandlerStreamErrorStatusWithSlowStore(t *testing.T) {
	t.Parallel()
	f, c := countedFixture(t)
	s := f.session(t, "alice")
	msg := f.ask(t, "alice", s.ID, "Hello").AssistantMessage.ID
	f.watch(t, "alice", msg)
	missing := domain.NewID()
	c.mu.Lock()
	c.slow[missing] = 700 * time.Millisecond
	c.slow[msg] = 700 * time.Millisecond
	c.mu.Unlock()
	var bodies []string
	for _, probe := range []struct{ user, id string }{{"alice", missing}, {"bob", msg}, {"mallory", msg}} {
		r := f.do(t, req{method: "GET", path: "/messages/" + probe.id + "/events", user: probe.user})
		if r.status != http.StatusNotFound {
			t.Fatalf("%s streaming %s: %d %s", probe.user, probe.id, r.status, r.body)
		}
		if e := r.errBody(t); e.Code != "not_found" {
			t.Fatalf("%s: error %+v", probe.user, e)
		}
		bodies = append(bodies, string(r.body))
	}
	if bodies[1] != bodies[0] || bodies[2] != bodies[0] {
		t.Errorf("another user's message answers differently from a missing one: %q", bodies)
	}
	// alice still streams it.
	if evs := f.watch(t, "alice", msg); len(evs) == 0 || evs[len(evs)-1].name != bichat.SSEMessageComplete {
		t.Fatalf("alice's stream: %v", names(evs))
	}
}
