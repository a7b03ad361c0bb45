package bichat_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// replayEnds replays a whole run and checks that its log is numbered 1..n
// without gaps and ends with exactly one terminal event, a RunFailed with
// the given code; it returns the replayed events.
func replayEnds(t *testing.T, f *fixture, runID, code string) []agents.Event {
	t.Helper()
	evs, err := f.svc.Replay(t.Context(), alice, runID, 0)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if len(evs) == 0 {
		t.Fatal("Replay returned no events")
	}
	terminals := 0
	for i, ev := range evs {
		if h := ev.Header(); h.Seq != int64(i+1) || h.RunID != runID {
			t.Errorf("replayed event %d: seq %d run %s, want seq %d run %s", i, h.Seq, h.RunID, i+1, runID)
		}
		switch ev.(type) {
		case *agents.RunFinished, *agents.RunFailed, *agents.Interrupted:
			terminals++
		}
	}
	rf, ok := evs[len(evs)-1].(*agents.RunFailed)
	if !ok || terminals != 1 {
		t.Fatalf("replayed run ends with %T (%d terminal events), want exactly one RunFailed at the end", evs[len(evs)-1], terminals)
	}
	if rf.Code != code || rf.Message == "" {
		t.Errorf("final RunFailed = %q %q, want code %q and a message", rf.Code, rf.Message, code)
	}
	if h := rf.Header(); h.MessageID == "" || h.SessionID == "" {
		t.Errorf("final RunFailed header = %+v, want the message and session ids", h)
	}
	return evs
}

// A run whose stream owns it (CancelOnStop) and whose consumer stops
// reading, or whose context is cancelled, is cancelled and ends its run log
// with RunFailed "cancelled", so a client that replays it knows the run is
// over. (Without CancelOnStop the run goes on: see TestDetachedRun.)
func TestRunLogEndsWithTerminalEvent(t *testing.T) {
	t.Parallel()
	slowText := &scripted.Model{ChunkSize: 3, Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "A long answer that the consumer stops reading half way.", Delay: 5 * time.Millisecond}, nil
	}}
	t.Run("break after RunStarted", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, textModel("An answer nobody reads."), nil)
		sess := f.session(t, alice, "")
		seen := rangeUntil(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?", bichat.CancelOnStop()), func(agents.Event) bool { return true })
		rs := seen[0].(*agents.RunStarted)
		evs := replayEnds(t, f, rs.RunID, "cancelled")
		if len(evs) != 2 {
			t.Errorf("replayed %d events, want RunStarted and RunFailed", len(evs))
		}
		failureCode(t, f, rs.MessageID, "cancelled")
	})
	t.Run("break during the text", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, slowText, nil)
		sess := f.session(t, alice, "")
		deltas := 0
		seen := rangeUntil(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?", bichat.CancelOnStop()), func(ev agents.Event) bool {
			if _, ok := ev.(*agents.TextDelta); ok {
				deltas++
			}
			return deltas == 2
		})
		evs := replayEnds(t, f, seen[0].Header().RunID, "cancelled")
		if got := len(ofType[*agents.TextDelta](evs)); got != 2 {
			t.Errorf("replayed %d text deltas, want the 2 the consumer read", got)
		}
	})
	t.Run("break after a tool call started", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, brainModel(), []agents.Tool{salesTool(nil)})
		sess := f.session(t, alice, "")
		seen := rangeUntil(t, f.svc.Send(t.Context(), alice, sess.ID, "[chart] EMEA revenue", bichat.CancelOnStop()), func(ev agents.Event) bool {
			_, ok := ev.(*agents.ToolCallStarted)
			return ok
		})
		replayEnds(t, f, seen[0].Header().RunID, "cancelled")
	})
	t.Run("context cancelled", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, &scripted.Model{Turns: []scripted.Turn{{Text: "never streamed", Delay: time.Hour}}}, nil)
		sess := f.session(t, alice, "")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		seen := rangeUntil(t, f.svc.Send(ctx, alice, sess.ID, "Revenue?", bichat.CancelOnStop()), func(ev agents.Event) bool {
			if _, ok := ev.(*agents.RunStarted); ok {
				cancel() // the model is waiting for its first chunk
			}
			return false
		})
		replayEnds(t, f, seen[0].Header().RunID, "cancelled")
	})
	t.Run("context cancelled and consumer gone", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, slowText, nil)
		sess := f.session(t, alice, "")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		seen := rangeUntil(t, f.svc.Send(ctx, alice, sess.ID, "Revenue?", bichat.CancelOnStop()), func(ev agents.Event) bool {
			if _, ok := ev.(*agents.TextDelta); ok {
				cancel() // the request ends and nobody reads any more
				return true
			}
			return false
		})
		replayEnds(t, f, seen[0].Header().RunID, "cancelled")
	})
	t.Run("break in a resumed run", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		seen := rangeUntil(t, w.svc.Resume(t.Context(), alice, w.askMsg, validAnswers, bichat.CancelOnStop()), func(agents.Event) bool { return true })
		rs := seen[0].(*agents.RunStarted)
		replayEnds(t, w.fixture, rs.RunID, "cancelled")
		failureCode(t, w.fixture, w.askMsg, "cancelled")
	})
	t.Run("break in an approved run", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		seen := rangeUntil(t, w.svc.Approve(t.Context(), alice, w.confMsg, w.token, bichat.CancelOnStop()), func(agents.Event) bool { return true })
		replayEnds(t, w.fixture, seen[0].Header().RunID, "cancelled")
	})
	t.Run("answer could not be saved", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, textModel("Revenue was flat."), nil, func(c *bichat.Config) {
			c.Store.Messages = failingMessages{c.Store.Messages}
			c.Store.Runs = failingRuns{c.Store.Runs}
		})
		sess := f.session(t, alice, "")
		items := collect(t, f.svc.Send(t.Context(), alice, sess.ID, "How was revenue?"))
		if last := items[len(items)-1]; !errors.Is(last.err, errDiskFull) {
			t.Fatalf("stream = %s, want the save error last", describe(items))
		}
		replayEnds(t, f, items[0].ev.Header().RunID, "internal")
	})
	t.Run("completed run is not touched", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, textModel("Short."), nil)
		sess := f.session(t, alice, "")
		seen := rangeUntil(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?"), func(ev agents.Event) bool {
			_, last := ev.(*agents.RunFinished)
			return last
		})
		evs, err := f.svc.Replay(t.Context(), alice, seen[0].Header().RunID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := evs[len(evs)-1].(*agents.RunFinished); !ok || len(evs) != len(seen) {
			t.Errorf("replayed %d events ending with %T, want the %d streamed ending with RunFinished", len(evs), evs[len(evs)-1], len(seen))
		}
		if m := f.message(t, alice, seen[0].(*agents.RunStarted).MessageID); m.Status != domain.StatusComplete {
			t.Errorf("answer = %s", m.Status)
		}
	})
}
