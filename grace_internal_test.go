package bichat

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/providers/scripted"
)

// countingRunEvents is a run log that counts how often it is read.
type countingRunEvents struct {
	domain.RunEventRepository
	lists atomic.Int64
}

func (c *countingRunEvents) ListRunEvents(ctx context.Context, tenantID, runID string, afterSeq int64, limit int) ([]domain.RunEvent, error) {
	c.lists.Add(1)
	return c.RunEventRepository.ListRunEvents(ctx, tenantID, runID, afterSeq, limit)
}

// offsetClock is a clock that runs with the real one, plus an offset a
// test moves forward.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *offsetClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// graceService returns a Service on a fresh in-memory store whose run log
// counts its reads, whose clock the test moves, and whose model answers
// every question with n text deltas.
func graceService(t *testing.T, n int) (*Service, *countingRunEvents, *offsetClock) {
	t.Helper()
	store := memory.New()
	repos := store.Repositories()
	events := &countingRunEvents{RunEventRepository: repos.RunEvents}
	repos.RunEvents = events
	clock := &offsetClock{}
	m := &scripted.Model{ChunkSize: 8, Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
		// Chunks end with a space: the default redactor passes each on
		// as it comes (see costService).
		return scripted.Turn{Text: strings.Repeat("abcdefg ", n)}, nil
	}}
	svc, err := New(Config{Agent: agents.Config{Model: m, System: "You are a test analyst."}, Store: repos,
		Logger: slog.New(slog.DiscardHandler), Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := svc.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return svc, events, clock
}

// askAndWait sends a question, reads its stream to the end and returns
// the assistant message id and run id.
func askAndWait(t *testing.T, s *Service, p domain.Principal) (messageID, runID string) {
	t.Helper()
	ctx := t.Context()
	sess, err := s.CreateSession(ctx, p, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range s.Send(ctx, p, sess.ID, "How are sales?") {
		if err != nil {
			t.Fatal(err)
		}
		h := ev.Header()
		if h.ParentRunID == "" {
			messageID, runID = h.MessageID, h.RunID
		}
	}
	if messageID == "" || runID == "" {
		t.Fatal("the stream of Send named no message or run")
	}
	return messageID, runID
}

// watchAll collects what Watch yields, failing on an error.
func watchAll(t *testing.T, s *Service, p domain.Principal, messageID string, afterSeq int64) []agents.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []agents.Event
	for ev, err := range s.Watch(ctx, p, messageID, afterSeq) {
		if err != nil {
			t.Fatalf("watch %s after %d: %v", messageID, afterSeq, err)
		}
		out = append(out, ev)
	}
	return out
}

// sameEvents fails unless got and want encode to the same JSON, event by
// event.
func sameEvents(t *testing.T, what string, got, want []agents.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, err := agents.MarshalEvent(got[i])
		if err != nil {
			t.Fatal(err)
		}
		w, err := agents.MarshalEvent(want[i])
		if err != nil {
			t.Fatal(err)
		}
		if string(g) != string(w) {
			t.Fatalf("%s: event %d = %s, want %s", what, i, g, w)
		}
	}
	if len(got) == 0 || !isTerminal(got[len(got)-1]) {
		t.Fatalf("%s: the stream does not end with a terminal event", what)
	}
}

// TestWatchJustFinishedRunFromMemory checks that a watcher of a run of
// this process that just finished is served from memory (the run log is
// not read) with exactly the events of the log, from the start or from a
// seq within the run, and that after the grace period the run is
// forgotten and the log serves the same events.
func TestWatchJustFinishedRunFromMemory(t *testing.T) {
	s, events, clock := graceService(t, 20)
	p := domain.Principal{TenantID: "acme", UserID: "alice", Roles: []domain.AccessRole{domain.AccessContributor}}
	msgID, runID := askAndWait(t, s, p)
	logged, err := s.Replay(t.Context(), p, runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(logged) < 3 {
		t.Fatalf("the run logged %d events, want a few", len(logged))
	}

	before := events.lists.Load()
	sameEvents(t, "watch from 0 just after the end", watchAll(t, s, p, msgID, 0), logged)
	mid := logged[len(logged)/2].Header().Seq
	sameEvents(t, fmt.Sprintf("watch after %d just after the end", mid), watchAll(t, s, p, msgID, mid), logged[len(logged)/2+1:])
	if n := events.lists.Load() - before; n != 0 {
		t.Errorf("watching a run that just finished read the run log %d times, want 0 (served from memory)", n)
	}

	clock.advance(finishedGrace + time.Second)
	before = events.lists.Load()
	sameEvents(t, "watch from 0 after the grace period", watchAll(t, s, p, msgID, 0), logged)
	if n := events.lists.Load() - before; n == 0 {
		t.Error("watching a run after the grace period did not read the run log")
	}
	s.runMu.Lock()
	kept, order := len(s.recent.byMsg), len(s.recent.order)
	s.runMu.Unlock()
	if kept != 0 || order != 0 {
		t.Errorf("after the grace period %d runs (%d entries) are still kept, want none", kept, order)
	}
}

// TestWatchFinishedRunOfOtherRunID checks that a finished run kept in
// memory is served only to a watcher of that run: a message that names
// another run (it was resumed) is served from its log.
func TestWatchFinishedRunOfOtherRunID(t *testing.T) {
	s, events, _ := graceService(t, 5)
	p := domain.Principal{TenantID: "acme", UserID: "alice", Roles: []domain.AccessRole{domain.AccessContributor}}
	msgID, runID := askAndWait(t, s, p)
	logged, err := s.Replay(t.Context(), p, runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A finished run of the same message under another run id, as an
	// earlier run of a message that was resumed since would be.
	other := &liveRun{id: domain.NewID(), messageID: msgID, subs: map[*watcher]struct{}{}, finished: make(chan struct{})}
	other.publish(&agents.TextDelta{EventHeader: agents.EventHeader{RunID: other.id, MessageID: msgID, Seq: 1}, Text: "stale"})
	other.publishEnd([]ringItem{{ev: &agents.RunFinished{EventHeader: agents.EventHeader{RunID: other.id, MessageID: msgID, Seq: 2}}}})
	s.keepFinished(other)

	before := events.lists.Load()
	sameEvents(t, "watch a message whose kept run is another run", watchAll(t, s, p, msgID, 0), logged)
	if n := events.lists.Load() - before; n == 0 {
		t.Error("the watcher was not served from the log of the message's run")
	}
}

// TestKeptFinishedRunsBounded checks that at most finishedKeep finished
// runs are kept, the oldest dropped first, and that Close drops them all.
func TestKeptFinishedRunsBounded(t *testing.T) {
	s, _, _ := graceService(t, 1)
	runs := make([]*liveRun, finishedKeep+40)
	for i := range runs {
		runs[i] = &liveRun{id: fmt.Sprintf("run-%d", i), messageID: fmt.Sprintf("msg-%d", i),
			subs: map[*watcher]struct{}{}, finished: make(chan struct{})}
		s.keepFinished(runs[i])
	}
	s.runMu.Lock()
	kept, order := len(s.recent.byMsg), len(s.recent.order)
	s.runMu.Unlock()
	if kept != finishedKeep || order != finishedKeep {
		t.Fatalf("%d runs kept (%d entries), want %d", kept, order, finishedKeep)
	}
	if r := s.finishedByMessage(runs[39].messageID); r != nil {
		t.Errorf("run %s, among the oldest, is still kept", r.id)
	}
	if r := s.finishedByMessage(runs[40].messageID); r != runs[40] {
		t.Errorf("run %s, the oldest within the bound, is not kept", runs[40].id)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if r := s.finishedByMessage(runs[len(runs)-1].messageID); r != nil {
		t.Errorf("run %s is still kept after Close", r.id)
	}
	s.keepFinished(&liveRun{id: "late", messageID: "late", subs: map[*watcher]struct{}{}, finished: make(chan struct{})})
	if r := s.finishedByMessage("late"); r != nil {
		t.Error("a run finished after Close was kept")
	}
}

// TestWatchJustFinishedLongRun checks that a watcher of a just-finished
// run longer than its ring reads what fell out of the ring from the log
// once, then the rest from memory, with neither a gap nor a duplicate.
func TestWatchJustFinishedLongRun(t *testing.T) {
	s, events, _ := graceService(t, ringSize+100)
	p := domain.Principal{TenantID: "acme", UserID: "alice", Roles: []domain.AccessRole{domain.AccessContributor}}
	msgID, runID := askAndWait(t, s, p)
	logged, err := s.Replay(t.Context(), p, runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(logged) <= ringSize {
		t.Fatalf("the run logged %d events, want more than %d", len(logged), ringSize)
	}
	before := events.lists.Load()
	sameEvents(t, "watch a long run from 0", watchAll(t, s, p, msgID, 0), logged)
	if n := events.lists.Load() - before; n > 1 {
		t.Errorf("watching a long run that just finished read the run log %d times, want at most 1", n)
	}
	last := logged[len(logged)-1].Header().Seq
	before = events.lists.Load()
	sameEvents(t, "watch a long run near its end", watchAll(t, s, p, msgID, last-10), logged[len(logged)-10:])
	if n := events.lists.Load() - before; n != 0 {
		t.Errorf("watching the end of a long run (within its ring) read the run log %d times, want 0", n)
	}
}
