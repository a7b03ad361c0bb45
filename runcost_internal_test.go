package bichat

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/providers/scripted"
)

// costService returns a Service on a fresh in-memory store whose model
// answers every question with n text deltas. Each chunk ends with a space,
// so the default redactor, which holds back runs of characters a secret
// could contain until they end, passes every chunk on as it comes.
func costService(t *testing.T, n int) (*Service, *memory.Store) {
	t.Helper()
	store := memory.New()
	m := &scripted.Model{ChunkSize: 8, Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: strings.Repeat("abcdefg ", n)}, nil
	}}
	svc, err := New(Config{Agent: agents.Config{Model: m, System: "You are a test analyst."}, Store: store.Repositories(),
		Logger: slog.New(slog.DiscardHandler)})
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
	return svc, store
}

// TestRunLogBatchAllocations checks that writing a batch of the run log
// costs a few allocations, not one encoded buffer per event (the events
// are encoded into one reused buffer, which the store copies in one
// block), and that what was written reads back intact.
func TestRunLogBatchAllocations(t *testing.T) {
	s, store := costService(t, 1)
	ctx := t.Context()
	asst := &domain.Message{ID: domain.NewID(), TenantID: "acme", SessionID: domain.NewID(), RunID: domain.NewID()}
	l := s.newRunLog(ctx, asst)
	defer l.close()
	t0 := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	seq := int64(0)
	events := make([]agents.Event, 0, 64*50)
	for range cap(events) {
		seq++
		events = append(events, &agents.TextDelta{EventHeader: agents.EventHeader{RunID: asst.RunID, SessionID: asst.SessionID,
			MessageID: asst.ID, Seq: seq, Time: t0.Add(time.Duration(seq) * time.Millisecond)}, Text: fmt.Sprintf("delta %d ", seq)})
	}
	next := 0
	allocs := testing.AllocsPerRun(49, func() {
		for range runLogBatch { // the last add writes the batch
			l.add(events[next])
			next++
		}
	})
	// The batch's timeout context, the store's chunk and data block and
	// the amortised growth of its list of chunks; a pool emptied by the
	// garbage collector (or by the race detector, which drops pooled
	// values at random) costs the batch's three buffers again.
	if limit := 10.0; allocs > limit {
		t.Errorf("writing %d events to the run log: %.1f allocations, want at most %.0f", runLogBatch, allocs, limit)
	}
	recs, err := store.ListRunEvents(ctx, asst.TenantID, asst.RunID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != next {
		t.Fatalf("%d events in the log, want %d", len(recs), next)
	}
	for i, rec := range recs {
		want, err := agents.MarshalEvent(events[i])
		if err != nil {
			t.Fatal(err)
		}
		if string(rec.Data) != string(want) || rec.Seq != int64(i+1) || rec.Type != string(agents.EventTextDelta) ||
			rec.SessionID != asst.SessionID || rec.MessageID != asst.ID {
			t.Fatalf("log event %d = %+v (data %s), want seq %d and data %s", i, rec, rec.Data, i+1, want)
		}
	}
}

// TestLiveRunBroadcastAllocations checks that a live run's broadcaster
// does not grow buffers event by event: the ring is made once, and a
// watcher takes items a few at a time into a fixed array, however far
// behind it is.
func TestLiveRunBroadcastAllocations(t *testing.T) {
	s, _ := costService(t, 1)
	ctx := t.Context()
	const n = 200 // fewer than ringSize: the watcher reads them all from the ring
	events := make([]agents.Event, n)
	for i := range events {
		events[i] = &agents.TextDelta{EventHeader: agents.EventHeader{RunID: "r", Seq: int64(i + 1)}, Text: "x"}
	}
	terminal := &agents.RunFinished{EventHeader: agents.EventHeader{RunID: "r", Seq: n + 1}}
	got := 0
	allocs := testing.AllocsPerRun(20, func() {
		r := &liveRun{id: "r", subs: map[*watcher]struct{}{}, finished: make(chan struct{})}
		w := r.subscribe(0, false)
		for _, ev := range events {
			r.publish(ev)
		}
		r.publishEnd([]ringItem{{ev: terminal}})
		got = 0
		res := s.follow(ctx, r, w, func(agents.Event, error) bool { got++; return true })
		if res != followEnded {
			t.Fatalf("follow = %v, want followEnded", res)
		}
	})
	if got != n+1 {
		t.Fatalf("the watcher got %d events, want %d", got, n+1)
	}
	// The liveRun, its map of watchers and the map's first bucket, its
	// finished channel, the ring, the watcher and its signal channel, the
	// tail: 8, and room for a runtime that allocates one or two more.
	// Growing the ring and a watcher's buffer event by event cost 25.
	if limit := 10.0; allocs > limit {
		t.Errorf("publishing and following %d events: %.1f allocations, want at most %.0f", n, allocs, limit)
	}
}

// TestFirstEventsComeFirst starts many runs at once and checks that the
// runs' first events are not queued behind the runs already streaming:
// when the last run gets its first event, most runs must still be
// running. Before runs yielded to starting runs, each run, once started,
// ran to its end before the next one got its first event.
func TestFirstEventsComeFirst(t *testing.T) {
	const runs, deltas = 200, 300
	s, _ := costService(t, deltas)
	ctx := t.Context()
	p := domain.Principal{TenantID: "acme", UserID: "alice", Roles: []domain.AccessRole{domain.AccessContributor}}
	sessions := make([]string, runs)
	for i := range sessions {
		sess, err := s.CreateSession(ctx, p, SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sessions[i] = sess.ID
	}
	var (
		firsts, finished atomic.Int64
		// finishedAtLastFirst is the number of runs that had finished when
		// the last run got its first event.
		finishedAtLastFirst atomic.Int64
		wg                  sync.WaitGroup
	)
	gate := make(chan struct{})
	errs := make(chan error, runs)
	for _, id := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			n := 0
			for _, err := range s.Send(ctx, p, id, "How are sales?") {
				if err != nil {
					errs <- err
					return
				}
				if n++; n == 1 && firsts.Add(1) == runs {
					finishedAtLastFirst.Store(finished.Load())
				}
			}
			finished.Add(1)
		}()
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := startsPending.Load(); got != 0 {
		t.Errorf("startsPending = %d after every run ended, want 0", got)
	}
	t.Logf("%d of %d runs had finished when the last run got its first event", finishedAtLastFirst.Load(), runs)
	if done := finishedAtLastFirst.Load(); done > runs/20 {
		t.Errorf("%d of %d runs had finished before the last run got its first event, want at most %d", done, runs, runs/20)
	}
}

// TestStartsPendingSettles checks that every Send stops counting in
// startsPending, whether its run published events or it failed before.
func TestStartsPendingSettles(t *testing.T) {
	s, _ := costService(t, 3)
	ctx := t.Context()
	p := domain.Principal{TenantID: "acme", UserID: "alice", Roles: []domain.AccessRole{domain.AccessContributor}}
	sess, err := s.CreateSession(ctx, p, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	drain := func(seq func(func(agents.Event, error) bool)) (events int, err error) {
		for ev, e := range seq {
			if e != nil {
				err = e
				continue
			}
			_ = ev
			events++
		}
		return events, err
	}
	if n, err := drain(s.Send(ctx, p, sess.ID, "a question")); err != nil || n == 0 {
		t.Fatalf("Send: %d events, %v", n, err)
	}
	if _, err := drain(s.Send(ctx, p, sess.ID, "")); err == nil {
		t.Fatal("Send of an empty question succeeded")
	}
	if _, err := drain(s.Send(ctx, p, domain.NewID(), "unknown session")); err == nil {
		t.Fatal("Send to an unknown session succeeded")
	}
	for range s.Send(ctx, p, sess.ID, "stop after the first event") {
		break
	}
	if got := startsPending.Load(); got != 0 {
		t.Errorf("startsPending = %d after every Send returned, want 0", got)
	}
}
