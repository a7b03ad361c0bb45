package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// runEvents returns events seq first..last of run in session, each with
// a distinct Data.
func runEvents(session, run string, first, last int64) []domain.RunEvent {
	out := make([]domain.RunEvent, 0, last-first+1)
	for seq := first; seq <= last; seq++ {
		out = append(out, domain.RunEvent{TenantID: "acme", RunID: run, SessionID: session, MessageID: "m-" + session,
			Seq: seq, Type: "text.delta", Time: time.Unix(1767258000+seq, 0).UTC(),
			Data: fmt.Appendf(nil, `{"type":"text.delta","run_id":%q,"seq":%d,"text":"chunk %d"}`, run, seq, seq)})
	}
	return out
}

func mustOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// checkEvents fails unless got are copies of want (the same fields and
// Data bytes).
func checkEvents(t *testing.T, what string, got, want []domain.RunEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.TenantID != w.TenantID || g.RunID != w.RunID || g.SessionID != w.SessionID || g.MessageID != w.MessageID ||
			g.Seq != w.Seq || g.Type != w.Type || !g.Time.Equal(w.Time) || string(g.Data) != string(w.Data) {
			t.Fatalf("%s: event %d = %+v (data %s), want %+v (data %s)", what, i, g, g.Data, w, w.Data)
		}
	}
}

// TestRunEventsDoNotWaitForOtherWriters checks that a run's log is
// written and read while the store's other writers hold the store (a
// slow CreateMessages, DeleteSession of another tenant...) and while
// another run's append is under way: with one lock for everything,
// 1,000 concurrent runs queued behind each other on every batch.
func TestRunEventsDoNotWaitForOtherWriters(t *testing.T) {
	s := New()
	ctx := t.Context()
	mustOK(t, "append run-b", s.AppendRunEvents(ctx, runEvents("s1", "run-b", 1, 1)...))
	s.mu.Lock() // the other repositories' writers
	busy := s.runLog(runKey{"acme", "run-b"})
	busy.mu.Lock() // an append to run-b in progress

	done := make(chan error, 1)
	go func() {
		evs := runEvents("s1", "run-a", 1, 3)
		if err := s.AppendRunEvents(ctx, evs...); err != nil {
			done <- err
			return
		}
		got, err := s.ListRunEvents(ctx, "acme", "run-a", 1, 0)
		if err == nil && len(got) != 2 {
			err = fmt.Errorf("listed %d events, want 2", len(got))
		}
		done <- err
	}()
	select {
	case err := <-done:
		mustOK(t, "append and list run-a", err)
	case <-time.After(10 * time.Second):
		t.Fatal("AppendRunEvents/ListRunEvents of run-a waited for the store's lock or for run-b's append")
	}

	// An append to run-b waits for the one in progress, and then goes on.
	blocked := make(chan error, 1)
	go func() { blocked <- s.AppendRunEvents(ctx, runEvents("s1", "run-b", 2, 2)...) }()
	select {
	case err := <-blocked:
		t.Fatalf("append to run-b returned (%v) while another append to run-b held its log", err)
	case <-time.After(50 * time.Millisecond):
	}
	busy.mu.Unlock()
	s.mu.Unlock()
	select {
	case err := <-blocked:
		mustOK(t, "append to run-b", err)
	case <-time.After(10 * time.Second):
		t.Fatal("append to run-b still blocked after the other append ended")
	}
}

// TestAppendRunEventsCopiesABatchInOneBlock checks that an append costs
// a few allocations whatever the size of its batch (one block for the
// batch's data, one chunk of events), not one per event, and that the
// log does not copy what it holds to grow; and that a listing copies its
// data in one block too.
func TestAppendRunEventsCopiesABatchInOneBlock(t *testing.T) {
	s := New()
	ctx := t.Context()
	const batch = 64
	batches := make([][]domain.RunEvent, 200)
	for i := range batches {
		batches[i] = runEvents("s1", "run", int64(i*batch+1), int64((i+1)*batch))
	}
	next := 0
	allocs := testing.AllocsPerRun(len(batches)-1, func() {
		if err := s.AppendRunEvents(ctx, batches[next]...); err != nil {
			t.Fatal(err)
		}
		next++
	})
	// The data block, the chunk, and the amortised growth of the list of
	// chunks.
	if allocs > 3 {
		t.Errorf("AppendRunEvents of %d events: %.1f allocations, want at most 3", batch, allocs)
	}
	var list []domain.RunEvent
	allocs = testing.AllocsPerRun(20, func() {
		var err error
		if list, err = s.ListRunEvents(ctx, "acme", "run", 100, batch); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("ListRunEvents of %d events: %.1f allocations, want at most 2", batch, allocs)
	}
	checkEvents(t, "listed events", list, slices.Concat(batches...)[100:100+batch])
	// The listed events' data are separate: appending to one does not
	// change the next.
	list[0].Data = append(list[0].Data, "xyz"...)
	if string(list[1].Data) != string(batches[1][101-batch].Data) {
		t.Errorf("appending to a listed event's data changed the next one: %s", list[1].Data)
	}
}

// TestRunEventLogChunks appends a log in batches of varied sizes, one
// event at a time included, and reads it back with every afterSeq and a
// few limits.
func TestRunEventLogChunks(t *testing.T) {
	s := New()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(1, 2))
	var all []domain.RunEvent
	seq := int64(0)
	for len(all) < 600 {
		n := []int{1, 1, 2, 5, 17, 64, 100}[rng.IntN(7)]
		evs := runEvents("s1", "run", seq+1, seq+int64(n))
		if rng.IntN(5) == 0 { // gaps are allowed
			for i := range evs {
				evs[i].Seq += 3
			}
		}
		mustOK(t, "AppendRunEvents", s.AppendRunEvents(ctx, evs...))
		all = append(all, evs...)
		seq = evs[len(evs)-1].Seq
	}
	for after := int64(-1); after <= seq+1; after++ {
		i := 0
		for i < len(all) && all[i].Seq <= after {
			i++
		}
		for _, limit := range []int{0, 1, 7, 64, 1000} {
			want := all[i:]
			if limit > 0 && len(want) > limit {
				want = want[:limit]
			}
			got, err := s.ListRunEvents(ctx, "acme", "run", after, limit)
			mustOK(t, "ListRunEvents", err)
			checkEvents(t, fmt.Sprintf("ListRunEvents(after %d, limit %d)", after, limit), got, want)
		}
	}
}

// TestDeleteSessionKeepsOtherSessionsEvents checks a log holding events of
// two sessions: DeleteSession removes one session's events, keeps the
// other's in order, and the log takes further appends after its last
// remaining Seq.
func TestDeleteSessionKeepsOtherSessionsEvents(t *testing.T) {
	s := New()
	ctx := t.Context()
	s1, s2 := domain.NewID(), domain.NewID()
	for _, id := range []string{s1, s2} {
		mustOK(t, "CreateSession", s.CreateSession(ctx, &domain.Session{ID: id, TenantID: "acme", OwnerID: "alice"}))
	}
	var kept []domain.RunEvent
	for seq := int64(1); seq <= 40; {
		sess := s1
		if seq%3 == 0 {
			sess = s2
		}
		evs := runEvents(sess, "run", seq, seq+int64(seq%4))
		mustOK(t, "AppendRunEvents", s.AppendRunEvents(ctx, evs...))
		if sess == s2 {
			kept = append(kept, evs...)
		}
		seq = evs[len(evs)-1].Seq + 1
	}
	mustOK(t, "DeleteSession", s.DeleteSession(ctx, "acme", s1))
	got, err := s.ListRunEvents(ctx, "acme", "run", 0, 0)
	mustOK(t, "ListRunEvents", err)
	checkEvents(t, "events after DeleteSession of s1", got, kept)
	last := kept[len(kept)-1].Seq
	err = s.AppendRunEvents(ctx, runEvents(s2, "run", last, last)...)
	if err == nil {
		t.Fatalf("append of seq %d after DeleteSession succeeded, want a conflict with the last kept seq", last)
	}
	more := runEvents(s2, "run", last+1, last+3)
	mustOK(t, "AppendRunEvents after DeleteSession", s.AppendRunEvents(ctx, more...))
	got, err = s.ListRunEvents(ctx, "acme", "run", 0, 0)
	mustOK(t, "ListRunEvents", err)
	checkEvents(t, "events after a later append", got, append(kept, more...))
}

// TestDeleteSessionRunEventsAtomic checks that DeleteSession removes the
// events of every run of a session in one step, while other runs append
// and readers read: a reader that saw one run's events gone never sees
// another run of the session afterwards, and each run's log is either
// whole or gone.
func TestDeleteSessionRunEventsAtomic(t *testing.T) {
	ctx := t.Context()
	for round := range 20 {
		s := New()
		gone := domain.NewID()
		mustOK(t, "CreateSession", s.CreateSession(ctx, &domain.Session{ID: gone, TenantID: "acme", OwnerID: "alice"}))
		const runs, events = 8, 40
		for r := range runs {
			mustOK(t, "AppendRunEvents", s.AppendRunEvents(ctx, runEvents(gone, fmt.Sprint("run-", r), 1, events)...))
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					other := fmt.Sprintf("other-%d-%d", g, i)
					if err := s.AppendRunEvents(ctx, runEvents("kept", other, 1, 3)...); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					seenGone := -1
					for k := range runs {
						r := (g + k) % runs
						got, err := s.ListRunEvents(ctx, "acme", fmt.Sprint("run-", r), 0, 0)
						if err != nil {
							errs <- err
							return
						}
						switch {
						case len(got) != 0 && len(got) != events:
							errs <- fmt.Errorf("run-%d listed with %d of its %d events", r, len(got), events)
							return
						case len(got) == 0 && seenGone < 0:
							seenGone = r
						case len(got) != 0 && seenGone >= 0:
							errs <- fmt.Errorf("run-%d listed whole after run-%d of the same session was gone", r, seenGone)
							return
						}
					}
				}
			}()
		}
		time.Sleep(time.Duration(round%4) * time.Millisecond)
		mustOK(t, "DeleteSession", s.DeleteSession(ctx, "acme", gone))
		time.Sleep(5 * time.Millisecond)
		stop.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		for r := range runs {
			got, err := s.ListRunEvents(ctx, "acme", fmt.Sprint("run-", r), 0, 0)
			mustOK(t, "ListRunEvents", err)
			if len(got) != 0 {
				t.Fatalf("round %d: run-%d has %d events after DeleteSession", round, r, len(got))
			}
		}
	}
}
