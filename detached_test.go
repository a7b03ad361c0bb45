package bichat_test

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/providers/scripted"
)

// streamModel answers every request with text of n characters, one
// character per chunk (so one TextDelta each), waiting delay before each.
func streamModel(n int, delay time.Duration) (*scripted.Model, string) {
	// Non-ASCII letters: the default redactor holds back runs of the
	// ASCII characters a secret could contain until they end, and would
	// send a run of ASCII letters as one delta at its end.
	text := string([]rune(strings.Repeat("абвгдежзий", n/10+1))[:n])
	return &scripted.Model{ChunkSize: 1, Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: text, Delay: delay}, nil
	}}, text
}

// gatedModel signals entered when a request arrives, then waits for
// release (or the run's end) before answering "Gated answer."; with a nil
// release it waits until the run's context ends.
func gatedModel(entered chan<- struct{}, release <-chan struct{}) *scripted.Model {
	var once sync.Once
	return &scripted.Model{ChunkSize: 4, Respond: func(ctx context.Context, _ *agents.Request) (scripted.Turn, error) {
		once.Do(func() { close(entered) })
		select {
		case <-release:
			return scripted.Turn{Text: "Gated answer."}, nil
		case <-ctx.Done():
			return scripted.Turn{}, ctx.Err()
		}
	}}
}

func wait(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(guard):
		t.Fatalf("%s did not happen within %s", what, guard)
	}
}

// background ranges over seq on another goroutine; the returned function
// waits for the items.
func background(t testing.TB, seq func(func(agents.Event, error) bool)) func() []item {
	ch := make(chan []item, 1)
	go func() {
		var out []item
		for ev, err := range seq {
			out = append(out, item{ev, err})
		}
		ch <- out
	}()
	return func() []item {
		t.Helper()
		select {
		case out := <-ch:
			return out
		case <-time.After(guard):
			t.Fatalf("stream did not end within %s", guard)
			return nil
		}
	}
}

// consecutive requires events numbered after+1, after+2, ... with exactly
// one terminal event, at the end, and returns it.
func consecutive(t testing.TB, evs []agents.Event, after int64) agents.Event {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	for i, ev := range evs {
		if got, want := ev.Header().Seq, after+int64(i)+1; got != want {
			t.Fatalf("event %d (%s) has seq %d, want %d: a gap or a duplicate", i, ev.Type(), got, want)
		}
		if term := isTerminalEvent(ev); term != (i == len(evs)-1) {
			t.Fatalf("event %d of %d is %s: the terminal event must be last and only last", i, len(evs), ev.Type())
		}
	}
	return evs[len(evs)-1]
}

func isTerminalEvent(ev agents.Event) bool {
	switch ev.(type) {
	case *agents.RunFinished, *agents.RunFailed, *agents.Interrupted:
		return ev.Header().ParentRunID == ""
	}
	return false
}

// firstEvent ranges over seq until its first event and stops watching.
func firstEvent(t testing.TB, seq func(func(agents.Event, error) bool)) *agents.RunStarted {
	t.Helper()
	seen := rangeUntil(t, seq, func(agents.Event) bool { return true })
	if len(seen) == 0 {
		t.Fatal("the stream yielded no event")
	}
	rs, ok := seen[0].(*agents.RunStarted)
	if !ok {
		t.Fatalf("first event is %T", seen[0])
	}
	return rs
}

// A loop that stops reading stops watching, not the run: the run goes on,
// is recorded and completes, and Watch and Replay show all of it.
func TestDetachedRun(t *testing.T) {
	t.Parallel()
	t.Run("break after the first event", func(t *testing.T) {
		t.Parallel()
		model, text := streamModel(60, 2*time.Millisecond)
		f := newFixture(t, model, nil)
		sess := f.session(t, alice, "")
		rs := firstEvent(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?"))
		evs := events(t, collect(t, f.svc.Watch(t.Context(), alice, rs.MessageID, 0)))
		rf, ok := consecutive(t, evs, 0).(*agents.RunFinished)
		if !ok || rf.Text != text {
			t.Fatalf("watched run ends with %T %+v, want RunFinished with the whole text", evs[len(evs)-1], rf)
		}
		if got, want := len(ofType[*agents.TextDelta](evs)), utf8.RuneCountInString(text); got != want {
			t.Errorf("watched %d text deltas, want %d", got, want)
		}
		m := f.message(t, alice, rs.MessageID)
		if m.Status != domain.StatusComplete || m.Text() != text {
			t.Errorf("message = %s %q, want complete with the whole text", m.Status, m.Text())
		}
		replayed, err := f.svc.Replay(t.Context(), alice, rs.RunID, 0)
		if err != nil || len(replayed) != len(evs) {
			t.Fatalf("Replay = %d events, %v; want the %d watched", len(replayed), err, len(evs))
		}
		consecutive(t, replayed, 0)
	})
	t.Run("context cancelled", func(t *testing.T) {
		t.Parallel()
		entered, release := make(chan struct{}), make(chan struct{})
		f := newFixture(t, gatedModel(entered, release), nil)
		sess := f.session(t, alice, "")
		ctx, cancel := context.WithCancel(t.Context())
		items := background(t, f.svc.Send(ctx, alice, sess.ID, "Revenue?"))
		wait(t, entered, "the model call")
		cancel()
		got := items()
		last := got[len(got)-1]
		if last.ev != nil || !errors.Is(last.err, context.Canceled) {
			t.Fatalf("stream = %s, want it to end with the context's error", describe(got))
		}
		msgID := got[0].ev.Header().MessageID
		if m := f.message(t, alice, msgID); m.Status != domain.StatusGenerating {
			t.Fatalf("message after the caller left = %s, want still generating", m.Status)
		}
		close(release)
		evs := events(t, collect(t, f.svc.Watch(t.Context(), alice, msgID, 0)))
		if rf, ok := consecutive(t, evs, 0).(*agents.RunFinished); !ok || rf.Text != "Gated answer." {
			t.Fatalf("watched run ends with %T, want RunFinished", evs[len(evs)-1])
		}
		if m := f.message(t, alice, msgID); m.Status != domain.StatusComplete || m.Text() != "Gated answer." {
			t.Errorf("message = %s %q, want complete", m.Status, m.Text())
		}
	})
	t.Run("the session stays busy until the run ends", func(t *testing.T) {
		t.Parallel()
		entered, release := make(chan struct{}), make(chan struct{})
		f := newFixture(t, gatedModel(entered, release), nil)
		sess := f.session(t, alice, "")
		rs := firstEvent(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?"))
		wait(t, entered, "the model call")
		if err := onlyErr(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Again?"))); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("Send while the detached run goes on: %v, want ErrConflict", err)
		}
		close(release)
		events(t, collect(t, f.svc.Watch(t.Context(), alice, rs.MessageID, 0)))
		// The session is free as soon as the terminal event is out.
		finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Again?")))
	})
}

// Watch replays the log after afterSeq and follows the live run without a
// gap or a duplicate, up to the terminal event.
func TestWatch(t *testing.T) {
	t.Parallel()
	t.Run("finished run", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, brainModel(), []agents.Tool{salesTool(nil)})
		sess := f.session(t, alice, "")
		sent, _ := finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "[chart] EMEA revenue")))
		msgID := sent[0].Header().MessageID
		for _, after := range []int64{0, 1, int64(len(sent)) / 2, int64(len(sent)) - 1} {
			evs := events(t, collect(t, f.svc.Watch(t.Context(), alice, msgID, after)))
			if _, ok := consecutive(t, evs, after).(*agents.RunFinished); !ok || len(evs) != len(sent)-int(after) {
				t.Errorf("Watch after %d: %d events ending with %T, want %d ending with RunFinished", after, len(evs), evs[len(evs)-1], len(sent)-int(after))
			}
		}
		// Past the end: nothing, and the watch ends at once.
		if items := collect(t, f.svc.Watch(t.Context(), alice, msgID, int64(len(sent)))); len(items) != 0 {
			t.Errorf("Watch after the last seq = %s, want nothing", describe(items))
		}
		if err := streamErr(t, f.svc.Watch(t.Context(), alice, msgID, -1)); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Watch after -1: %v, want ErrInvalid", err)
		}
	})
	t.Run("awaiting input ends with Interrupted", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		evs := events(t, collect(t, w.svc.Watch(t.Context(), alice, w.askMsg, 0)))
		in, ok := consecutive(t, evs, 0).(*agents.Interrupted)
		if !ok || len(in.Questions) == 0 || in.Checkpoint != nil {
			t.Fatalf("watched run ends with %T %+v, want Interrupted with the questions and no checkpoint", evs[len(evs)-1], in)
		}
	})
	t.Run("live run from the start and from the middle", func(t *testing.T) {
		t.Parallel()
		model, text := streamModel(300, time.Millisecond)
		f := newFixture(t, model, nil)
		sess := f.session(t, alice, "")
		started := make(chan string, 1)
		var n atomic.Int32
		sent := background(t, func(yield func(agents.Event, error) bool) {
			for ev, err := range f.svc.Send(t.Context(), alice, sess.ID, "Revenue?") {
				if n.Add(1) == 40 {
					started <- ev.Header().MessageID
				}
				if !yield(ev, err) {
					return
				}
			}
		})
		var msgID string
		select {
		case msgID = <-started:
		case <-time.After(guard):
			t.Fatal("the run did not stream")
		}
		fromStart := background(t, f.svc.Watch(t.Context(), alice, msgID, 0))
		fromMiddle := background(t, f.svc.Watch(t.Context(), alice, msgID, 20))
		all := events(t, sent())
		if m := f.message(t, alice, msgID); m.Status != domain.StatusComplete || m.Text() != text {
			t.Fatalf("message = %s, want complete", m.Status)
		}
		for name, c := range map[string]struct {
			got   func() []item
			after int64
		}{"from 0": {fromStart, 0}, "from 20": {fromMiddle, 20}} {
			evs := events(t, c.got())
			if _, ok := consecutive(t, evs, c.after).(*agents.RunFinished); !ok || len(evs) != len(all)-int(c.after) {
				t.Errorf("watch %s: %d events, want %d ending with RunFinished", name, len(evs), len(all)-int(c.after))
			}
		}
	})
	t.Run("slow watcher catches up from the log", func(t *testing.T) {
		t.Parallel()
		entered, release := make(chan struct{}), make(chan struct{})
		long := strings.Repeat("ж", 3*bichat.RingSize) // non-ASCII: streamed char by char (see streamModel)
		var once sync.Once
		model := &scripted.Model{ChunkSize: 1, Respond: func(ctx context.Context, _ *agents.Request) (scripted.Turn, error) {
			once.Do(func() { close(entered) })
			select {
			case <-release:
			case <-ctx.Done():
				return scripted.Turn{}, ctx.Err()
			}
			return scripted.Turn{Text: long}, nil
		}}
		f := newFixture(t, model, nil)
		sess := f.session(t, alice, "")
		rs := firstEvent(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?"))
		wait(t, entered, "the model call")
		var evs []agents.Event
		for ev, err := range f.svc.Watch(t.Context(), alice, rs.MessageID, 0) {
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
			if len(evs) == 1 {
				// The run streams its 768 deltas while this watcher
				// sleeps: it falls out of the ring.
				close(release)
				time.Sleep(300 * time.Millisecond)
			}
		}
		if rf, ok := consecutive(t, evs, 0).(*agents.RunFinished); !ok || rf.Text != long {
			t.Fatalf("slow watcher: %d events ending with %T, want the whole run", len(evs), evs[len(evs)-1])
		}
	})
}

// Cancel stops a run explicitly; its watchers, and watchers that start
// later, get RunFailed "cancelled".
func TestCancel(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	f := newFixture(t, gatedModel(entered, nil), nil)
	ctx := t.Context()
	sess := f.session(t, alice, "")
	stream := background(t, f.svc.Send(ctx, alice, sess.ID, "Revenue?"))
	wait(t, entered, "the model call")
	msgs := f.messages(t, alice, sess.ID)
	msgID := msgs[len(msgs)-1].ID
	watcher := background(t, f.svc.Watch(ctx, alice, msgID, 0))

	if err := f.svc.Cancel(ctx, aliceViewer, msgID); !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("Cancel by a viewer: %v, want ErrForbidden", err)
	}
	if err := f.svc.Cancel(ctx, bob, msgID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Cancel by another user: %v, want ErrNotFound", err)
	}
	if err := f.svc.Cancel(ctx, alice, msgID); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	// Cancel returned after the outcome was recorded: no wait.
	failureCode(t, f, msgID, "cancelled")
	_, rf, err := failedRun(t, stream())
	if rf.Code != "cancelled" || !errors.Is(err, context.Canceled) {
		t.Errorf("the starter's stream ends with %q, %v; want RunFailed cancelled", rf.Code, err)
	}
	for name, items := range map[string][]item{"watcher": watcher(), "later watcher": collect(t, f.svc.Watch(ctx, alice, msgID, 0))} {
		evs := events(t, items)
		if rf, ok := consecutive(t, evs, 0).(*agents.RunFailed); !ok || rf.Code != "cancelled" {
			t.Errorf("%s: ends with %T, want RunFailed cancelled", name, evs[len(evs)-1])
		}
	}
	err = f.svc.Cancel(ctx, alice, msgID)
	if !errors.Is(err, domain.ErrConflict) || !strings.Contains(err.Error(), "over") {
		t.Errorf("Cancel of a cancelled run: %v, want ErrConflict saying the run is over", err)
	}
	// The session takes the next question; cancelling its finished
	// answer is a conflict too.
	f.model.Respond = func(context.Context, *agents.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "Next."}, nil
	}
	evs, _ := finished(t, collect(t, f.svc.Send(ctx, alice, sess.ID, "Next?")))
	if err := f.svc.Cancel(ctx, alice, evs[0].Header().MessageID); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("Cancel of a finished run: %v, want ErrConflict", err)
	}
}

// pair is two Service values over one store, like two processes sharing a
// database, with real clocks and a short lease.
type pair struct {
	store *memory.Store
	a, b  *bichat.Service
}

const testLease = 300 * time.Millisecond

func newPair(t testing.TB, modelA, modelB *scripted.Model) *pair {
	t.Helper()
	store := memory.New()
	mk := func(m *scripted.Model) *bichat.Service {
		svc, err := bichat.New(bichat.Config{
			Agent:  agents.Config{Model: m, System: "You are a test analyst."},
			Store:  store.Repositories(),
			Logger: slog.New(slog.DiscardHandler),
			Limits: bichat.Limits{RunLease: testLease, ReapInterval: testLease / 4},
		})
		if err != nil {
			t.Fatal(err)
		}
		closeAtEnd(t, svc)
		return svc
	}
	return &pair{store: store, a: mk(modelA), b: mk(modelB)}
}

func (p *pair) session(t testing.TB) *domain.Session {
	t.Helper()
	s, err := p.a.CreateSession(t.Context(), alice, bichat.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func lastMessage(t testing.TB, svc *bichat.Service, sessionID string) *domain.Message {
	t.Helper()
	msgs, err := svc.Messages(t.Context(), alice, sessionID, domain.MessageListOptions{})
	if err != nil || len(msgs) == 0 {
		t.Fatalf("Messages: %d, %v", len(msgs), err)
	}
	return &msgs[len(msgs)-1]
}

// A run in one process is watched and cancelled from another one.
func TestRunAcrossServices(t *testing.T) {
	t.Parallel()
	t.Run("watch", func(t *testing.T) {
		t.Parallel()
		model, text := streamModel(150, 2*time.Millisecond)
		p := newPair(t, model, &scripted.Model{})
		sess := p.session(t)
		sent := background(t, p.a.Send(t.Context(), alice, sess.ID, "Revenue?"))
		var msgID string
		for deadline := time.Now().Add(guard); msgID == ""; {
			msgs, err := p.b.Messages(t.Context(), alice, sess.ID, domain.MessageListOptions{})
			switch {
			case err != nil:
				t.Fatal(err)
			case len(msgs) == 2 && msgs[1].RunID != "":
				msgID = msgs[1].ID
			case time.Now().After(deadline):
				t.Fatal("no answer started")
			default:
				time.Sleep(5 * time.Millisecond)
			}
		}
		watched := events(t, collect(t, p.b.Watch(t.Context(), alice, msgID, 0)))
		all := events(t, sent())
		if rf, ok := consecutive(t, watched, 0).(*agents.RunFinished); !ok || rf.Text != text || len(watched) != len(all) {
			t.Fatalf("watched from the other service: %d events ending with %T, want the %d streamed", len(watched), watched[len(watched)-1], len(all))
		}
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		entered := make(chan struct{})
		p := newPair(t, gatedModel(entered, nil), &scripted.Model{})
		sess := p.session(t)
		stream := background(t, p.a.Send(t.Context(), alice, sess.ID, "Revenue?"))
		wait(t, entered, "the model call")
		msgID := lastMessage(t, p.b, sess.ID).ID
		watcher := background(t, p.b.Watch(t.Context(), alice, msgID, 0))
		start := time.Now()
		if err := p.b.Cancel(t.Context(), alice, msgID); err != nil {
			t.Fatalf("Cancel from the other service: %v", err)
		}
		_, rf, _ := failedRun(t, stream())
		if rf.Code != "cancelled" {
			t.Errorf("the run ended with %q, want cancelled", rf.Code)
		}
		if d := time.Since(start); d > 2*testLease {
			t.Errorf("the run stopped %s after the cancel request, want about one lease renewal (%s)", d, testLease/3)
		}
		evs := events(t, watcher())
		if rf, ok := consecutive(t, evs, 0).(*agents.RunFailed); !ok || rf.Code != "cancelled" {
			t.Errorf("watcher in the other service ends with %T, want RunFailed cancelled", evs[len(evs)-1])
		}
		if m := lastMessage(t, p.b, sess.ID); m.Status != domain.StatusFailed || m.Metadata.Error.Code != "cancelled" {
			t.Errorf("message = %s %+v", m.Status, m.Metadata.Error)
		}
		if err := p.b.Cancel(t.Context(), alice, msgID); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("second Cancel: %v, want ErrConflict", err)
		}
	})
}

// A run whose process stops renewing its lease is failed by the reaper of
// another process; its watchers get the failure and the session takes a
// new question. The hung runner then writes nothing.
func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	t.Run("reaper", func(t *testing.T) {
		t.Parallel()
		entered := make(chan struct{})
		p := newPair(t, gatedModel(entered, nil), textModel("Fresh answer."))
		bichat.PauseHeartbeat(p.a, true)
		sess := p.session(t)
		stream := background(t, p.a.Send(t.Context(), alice, sess.ID, "Revenue?"))
		wait(t, entered, "the model call")
		msg := lastMessage(t, p.b, sess.ID)
		watcher := background(t, p.b.Watch(t.Context(), alice, msg.ID, 0))
		if err := onlyErr(t, collect(t, p.b.Send(t.Context(), alice, sess.ID, "Anyone?"))); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("Send while the lease is valid: %v, want ErrConflict", err)
		}
		ctx, stop := context.WithCancel(t.Context())
		reaper := make(chan error, 1)
		go func() { reaper <- p.b.RunReaper(ctx) }()
		start := time.Now()
		evs := events(t, watcher())
		if rf, ok := consecutive(t, evs, 0).(*agents.RunFailed); !ok || rf.Code != "lease_expired" || !strings.Contains(rf.Message, "stopped responding") {
			t.Fatalf("watcher ends with %T %+v, want RunFailed lease_expired", evs[len(evs)-1], evs[len(evs)-1])
		}
		if d := time.Since(start); d > 3*testLease {
			t.Errorf("the expired run was failed after %s, want about one lease (%s)", d, testLease)
		}
		m, err := p.b.Message(t.Context(), alice, msg.ID)
		if err != nil || m.Status != domain.StatusFailed || m.Metadata.Error.Code != "lease_expired" {
			t.Fatalf("message = %+v, %v; want failed lease_expired", m, err)
		}
		finished(t, collect(t, p.b.Send(t.Context(), alice, sess.ID, "Anyone?")))
		stop()
		if err := <-reaper; err != nil {
			t.Errorf("RunReaper = %v, want nil when its context ends", err)
		}
		// The hung process ends (here: it shuts down); its run lost the
		// lease, so it overwrites nothing.
		if err := p.a.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		items := stream()
		if last := items[len(items)-1]; !errors.Is(last.err, domain.ErrConflict) {
			t.Errorf("the hung run's stream = %s, want it to end with the lost lease", describe(items))
		}
		if rf := ofType[*agents.RunFailed](events(t, items[:len(items)-1])); len(rf) != 1 || rf[0].Code != "lease_expired" {
			t.Errorf("the hung run's stream ends with %+v, want RunFailed lease_expired", rf)
		}
		if m, _ := p.b.Message(t.Context(), alice, msg.ID); m.Status != domain.StatusFailed || m.Metadata.Error.Code != "lease_expired" {
			t.Errorf("message after the hung run stopped = %s %+v, want still lease_expired", m.Status, m.Metadata.Error)
		}
		replayed, err := p.b.Replay(t.Context(), alice, msg.RunID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if rf, ok := consecutive(t, replayed, 0).(*agents.RunFailed); !ok || rf.Code != "lease_expired" {
			t.Errorf("run log ends with %T, want one RunFailed lease_expired", replayed[len(replayed)-1])
		}
	})
	t.Run("slow runner", func(t *testing.T) {
		t.Parallel()
		// The runner keeps streaming (and writing its log) while its
		// heartbeat is stopped: the reaper's RunFailed and the runner's
		// batches race for the same seqs; the log stays one consecutive
		// run ending with the reaper's event, and the runner's outcome is
		// not saved over the failure.
		model, _ := streamModel(400, 5*time.Millisecond)
		p := newPair(t, model, &scripted.Model{})
		bichat.PauseHeartbeat(p.a, true)
		sess := p.session(t)
		stream := background(t, p.a.Send(t.Context(), alice, sess.ID, "Revenue?"))
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		go func() { _ = p.b.RunReaper(ctx) }()
		items := stream()
		if last := items[len(items)-1]; !errors.Is(last.err, domain.ErrConflict) {
			t.Fatalf("the slow run's stream = %s, want it to end with the lost lease", describe(items[len(items)-3:]))
		}
		evs := events(t, items[:len(items)-1])
		if rf, ok := consecutive(t, evs, 0).(*agents.RunFailed); !ok || rf.Code != "lease_expired" {
			t.Fatalf("the slow run's stream ends with %T, want RunFailed lease_expired", evs[len(evs)-1])
		}
		if len(ofType[*agents.TextDelta](evs)) >= 400 {
			t.Fatalf("the run streamed all its text: the lease never expired")
		}
		msg := lastMessage(t, p.b, sess.ID)
		if msg.Status != domain.StatusFailed || msg.Metadata.Error.Code != "lease_expired" {
			t.Errorf("message = %s %+v, want failed lease_expired", msg.Status, msg.Metadata.Error)
		}
		replayed, err := p.b.Replay(t.Context(), alice, msg.RunID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if rf, ok := consecutive(t, replayed, 0).(*agents.RunFailed); !ok || rf.Code != "lease_expired" {
			t.Errorf("run log ends with %T, want one RunFailed lease_expired", replayed[len(replayed)-1])
		}
	})
	t.Run("send takes over a dead session", func(t *testing.T) {
		t.Parallel()
		entered := make(chan struct{})
		p := newPair(t, gatedModel(entered, nil), textModel("Fresh answer."))
		bichat.PauseHeartbeat(p.a, true)
		sess := p.session(t)
		background(t, p.a.Send(t.Context(), alice, sess.ID, "Revenue?"))
		wait(t, entered, "the model call")
		msg := lastMessage(t, p.b, sess.ID)
		time.Sleep(testLease + 50*time.Millisecond)
		finished(t, collect(t, p.b.Send(t.Context(), alice, sess.ID, "Anyone?")))
		m, _ := p.b.Message(t.Context(), alice, msg.ID)
		if m.Status != domain.StatusFailed || m.Metadata.Error.Code != "lease_expired" {
			t.Errorf("dead answer = %s %+v, want failed lease_expired", m.Status, m.Metadata.Error)
		}
		evs := events(t, collect(t, p.b.Watch(t.Context(), alice, msg.ID, 0)))
		if rf, ok := consecutive(t, evs, 0).(*agents.RunFailed); !ok || rf.Code != "lease_expired" {
			t.Errorf("watch of the dead run ends with %T, want RunFailed lease_expired", evs[len(evs)-1])
		}
	})
}

// An interrupt nobody answers expires: answering it afterwards is refused
// with ErrExpired, and the reaper fails messages whose interrupt expired.
func TestInterruptExpiry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, brainModel(), []agents.Tool{salesTool(nil), discountTool(new(atomic.Int32))},
		func(c *bichat.Config) { c.Limits.InterruptTTL = time.Hour })
	ctx := t.Context()
	evs, _ := interrupted(t, collect(t, f.svc.Send(ctx, alice, f.session(t, alice, "").ID, "[ask] revenue")))
	ask := evs[0].Header().MessageID
	evs, in := interrupted(t, collect(t, f.svc.Send(ctx, alice, f.session(t, alice, "").ID, "[write] discount")))
	conf := evs[0].Header().MessageID
	cp, err := f.store.GetCheckpoint(ctx, alice.TenantID, ask)
	if err != nil || !cp.ExpiresAt.Equal(f.clock.Now().Add(time.Hour)) {
		t.Fatalf("checkpoint expiry = %v, %v; want one InterruptTTL from now", cp.ExpiresAt, err)
	}
	if res, err := f.svc.Reap(ctx); err != nil || res.Interrupts != 0 {
		t.Fatalf("Reap before expiry = %+v, %v", res, err)
	}
	f.clock.Advance(time.Hour + time.Second)

	err = onlyErr(t, collect(t, f.svc.Resume(ctx, alice, ask, validAnswers)))
	if !errors.Is(err, bichat.ErrExpired) || !errors.Is(err, domain.ErrConflict) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("Resume after expiry: %v, want ErrExpired", err)
	}
	failureCode(t, f, ask, "expired")
	if m := f.message(t, alice, ask); !strings.Contains(m.Metadata.Error.Message, "expired") {
		t.Errorf("expired message says %q", m.Metadata.Error.Message)
	}
	if _, err := f.svc.PendingInterrupt(ctx, alice, conf); !errors.Is(err, bichat.ErrExpired) {
		t.Errorf("PendingInterrupt after expiry: %v, want ErrExpired", err)
	}
	res, err := f.svc.Reap(ctx)
	if err != nil || res.Interrupts != 1 {
		t.Fatalf("Reap after expiry = %+v, %v; want the confirmation expired", res, err)
	}
	failureCode(t, f, conf, "expired")
	if err := onlyErr(t, collect(t, f.svc.Approve(ctx, alice, conf, in.Confirmation.Token))); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("Approve after the reaper: %v, want ErrConflict", err)
	}
}

// countingEvents counts AppendRunEvents calls and lets a test look at the
// log while the run goes on.
type countingEvents struct {
	domain.RunEventRepository
	calls atomic.Int32
}

func (c *countingEvents) AppendRunEvents(ctx context.Context, evs ...domain.RunEvent) error {
	c.calls.Add(1)
	return c.RunEventRepository.AppendRunEvents(ctx, evs...)
}

// The run log is written in batches, not once per event; an event is at
// most one batch ahead of the log, and a terminal event is in the log
// before anyone sees it.
func TestRunLogGroupCommit(t *testing.T) {
	t.Parallel()
	model, _ := streamModel(200, 0)
	var counter *countingEvents
	f := newFixture(t, model, nil, func(c *bichat.Config) {
		counter = &countingEvents{RunEventRepository: c.Store.RunEvents}
		c.Store.RunEvents = counter
	})
	sess := f.session(t, alice, "")
	n := 0
	for ev, err := range f.svc.Send(t.Context(), alice, sess.ID, "Revenue?") {
		if err != nil {
			t.Fatal(err)
		}
		n++
		h := ev.Header()
		logged, err := f.store.ListRunEvents(t.Context(), alice.TenantID, h.RunID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		last := int64(0)
		if len(logged) > 0 {
			last = logged[len(logged)-1].Seq
		}
		if isTerminalEvent(ev) && last != h.Seq {
			t.Fatalf("terminal %s seq %d yielded while the log ends at %d", ev.Type(), h.Seq, last)
		}
		if h.Seq-last > bichat.RunLogBatch {
			t.Fatalf("event %d yielded while the log ends at %d: more than one batch unwritten", h.Seq, last)
		}
	}
	calls := int(counter.calls.Load())
	limit := (n+bichat.RunLogBatch-1)/bichat.RunLogBatch + 3
	t.Logf("%d events written in %d appends", n, calls)
	if n < 200 || calls > limit {
		t.Errorf("%d events took %d appends, want at most %d", n, calls, limit)
	}
	// An interrupt is in the log before it is yielded, too.
	f2 := newFixture(t, brainModel(), []agents.Tool{salesTool(nil)})
	for ev, err := range f2.svc.Send(t.Context(), alice, f2.session(t, alice, "").ID, "[ask] revenue") {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.(*agents.Interrupted); ok {
			logged, _ := f2.store.ListRunEvents(t.Context(), alice.TenantID, ev.Header().RunID, ev.Header().Seq-1, 0)
			if len(logged) != 1 || logged[0].Type != string(agents.EventInterrupted) {
				t.Fatalf("Interrupted yielded before it was logged: %+v", logged)
			}
		}
	}
}

// Close cancels the runs of the service, records their outcome and
// refuses new ones.
func TestClose(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	f := newFixture(t, gatedModel(entered, nil), nil)
	sess := f.session(t, alice, "")
	stream := background(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?"))
	wait(t, entered, "the model call")
	if err := f.svc.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	evs, rf, _ := failedRun(t, stream())
	if rf.Code != "shutdown" {
		t.Errorf("run ended with %q, want shutdown", rf.Code)
	}
	msgID := evs[0].Header().MessageID
	failureCode(t, f, msgID, "shutdown")
	watched := events(t, collect(t, f.svc.Watch(t.Context(), alice, msgID, 0)))
	if rf, ok := consecutive(t, watched, 0).(*agents.RunFailed); !ok || rf.Code != "shutdown" {
		t.Errorf("log of the stopped run ends with %T", watched[len(watched)-1])
	}
	if err := onlyErr(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Again?"))); !errors.Is(err, bichat.ErrClosed) {
		t.Errorf("Send after Close: %v, want ErrClosed", err)
	}
	if msgs := f.messages(t, alice, sess.ID); len(msgs) != 2 {
		t.Errorf("Send after Close stored messages: %d in the session, want 2", len(msgs))
	}
	if err := f.svc.RunReaper(t.Context()); err != nil {
		t.Errorf("RunReaper after Close = %v, want nil at once", err)
	}
}

// A message whose run wrote no terminal event (its process died between
// saving the message and logging the event) or that never had a run still
// gives its watchers a terminal event, taken from the message.
func TestWatchWithoutTerminalEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted.Model{}, nil)
	ctx := t.Context()
	sess := f.session(t, alice, "")
	// Completed by a process that died before logging RunFinished.
	id := generating(t, f, sess, f.clock.Now())
	runID := domain.NewID()
	if err := f.store.ClaimRun(ctx, alice.TenantID, id, runID, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	data, _ := agents.MarshalEvent(&agents.RunStarted{EventHeader: agents.EventHeader{RunID: runID, SessionID: sess.ID, MessageID: id, Seq: 1}})
	if err := f.store.AppendRunEvents(ctx, domain.RunEvent{TenantID: alice.TenantID, RunID: runID, SessionID: sess.ID,
		MessageID: id, Seq: 1, Type: string(agents.EventRunStarted), Time: time.Now(), Data: data}); err != nil {
		t.Fatal(err)
	}
	m, _ := f.store.GetMessage(ctx, alice.TenantID, id)
	m.Status, m.Parts = domain.StatusComplete, []domain.Part{domain.TextPart("Saved, never logged.")}
	if err := f.store.UpdateMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	evs := events(t, collect(t, f.svc.Watch(ctx, alice, id, 0)))
	if rf, ok := consecutive(t, evs, 0).(*agents.RunFinished); !ok || rf.Text != "Saved, never logged." || len(evs) != 2 {
		t.Fatalf("watch = %d events ending with %T, want RunStarted and a RunFinished from the message", len(evs), evs[len(evs)-1])
	}
	if replayed, err := f.svc.Replay(ctx, alice, runID, 0); err != nil || len(replayed) != 2 {
		t.Errorf("Replay after the watch = %d events, %v; want the terminal event recorded", len(replayed), err)
	}
	// Failed before any run claimed it.
	failed := storeExchange(t, f, sess, domain.StatusFailed, f.clock.Now())
	evs = events(t, collect(t, f.svc.Watch(ctx, alice, failed, 0)))
	if _, ok := consecutive(t, evs, 0).(*agents.RunFailed); !ok || len(evs) != 1 {
		t.Errorf("watch of a message without a run = %d events ending with %T, want one RunFailed", len(evs), evs[len(evs)-1])
	}
}

// A store without a RunRepository (host repositories written before
// leases) keeps the earlier behaviour: runs are claimed without a lease,
// the session is guarded by StaleAfter, and only runs of this process can
// be cancelled.
func TestWithoutRunRepository(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	f := newFixture(t, gatedModel(entered, nil), nil, func(c *bichat.Config) { c.Store.Runs = nil })
	ctx := t.Context()
	sess := f.session(t, alice, "")
	rs := firstEvent(t, f.svc.Send(ctx, alice, sess.ID, "Revenue?"))
	wait(t, entered, "the model call")
	if m := f.message(t, alice, rs.MessageID); m.RunID != rs.RunID || !m.LeaseUntil.IsZero() {
		t.Errorf("claimed message = run %q lease %v, want claimed without a lease", m.RunID, m.LeaseUntil)
	}
	if err := f.svc.Cancel(ctx, alice, rs.MessageID); err != nil {
		t.Fatalf("Cancel of a run of this process: %v", err)
	}
	failureCode(t, f, rs.MessageID, "cancelled")
	other := generating(t, f, f.session(t, alice, ""), f.clock.Now())
	if err := f.svc.Cancel(ctx, alice, other); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Cancel of another process's run without Runs: %v, want ErrUnsupported", err)
	}
	if res, err := f.svc.Reap(ctx); err != nil || res.Expired != 0 {
		t.Errorf("Reap without Runs = %+v, %v", res, err)
	}
}

// TestNextQuestionAfterWatchedEnd: once a watcher in another process has
// the terminal event, the process that ran the answer takes the session's
// next question at once: it releases the session before the event reaches
// the log (a watcher on another replica used to see the end first, and the
// follow-up got a 409 about one time in five).
func TestNextQuestionAfterWatchedEnd(t *testing.T) {
	t.Parallel()
	model, _ := streamModel(20, 0)
	p := newPair(t, model, &scripted.Model{})
	sess := p.session(t)
	// start sends q through A, stops reading after the first event (the run
	// goes on) and returns the answer's message id.
	start := func(round int, q string) string {
		next, stop := iter.Pull2(p.a.Send(t.Context(), alice, sess.ID, q))
		defer stop()
		ev, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("round %d: Send(%q): %v", round, q, err)
		}
		return ev.Header().MessageID
	}
	watchEnd := func(svc *bichat.Service, round int, id string) {
		evs := events(t, collect(t, svc.Watch(t.Context(), alice, id, 0)))
		if _, ok := evs[len(evs)-1].(*agents.RunFinished); !ok {
			t.Fatalf("round %d: watcher ended with %T", round, evs[len(evs)-1])
		}
	}
	for round := range 30 {
		first := start(round, "Revenue?")
		watchEnd(p.b, round, first) // the other process sees the end in the log
		second := start(round, "And by month?")
		watchEnd(p.a, round, second)
	}
}
