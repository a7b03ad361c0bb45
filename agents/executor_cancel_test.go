package agents_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/providers/scripted"
)

// The tests in this file check for leaked goroutines, so they do not run in
// parallel with other tests; goroutines that existed before each test (other
// tests' leftovers) are ignored.

// watchedModel wraps a Model, counting the chunks it hands out and noting
// when the stream function has returned (its deferred cleanup ran).
type watchedModel struct {
	agents.Model
	chunks atomic.Int64
	closed atomic.Bool
}

func (m *watchedModel) Stream(ctx context.Context, req *agents.Request) iter.Seq2[agents.Chunk, error] {
	return func(yield func(agents.Chunk, error) bool) {
		defer m.closed.Store(true)
		for c, err := range m.Model.Stream(ctx, req) {
			if err == nil {
				m.chunks.Add(1)
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// endlessModel streams text until it is stopped; a deferred cleanup marks
// the stream closed, as a provider closes its HTTP body.
type endlessModel struct {
	produced atomic.Int64
	cleaned  atomic.Bool
}

func (m *endlessModel) Info() agents.ModelInfo {
	return agents.ModelInfo{Provider: "test", Name: "endless"}
}

func (m *endlessModel) Stream(ctx context.Context, _ *agents.Request) iter.Seq2[agents.Chunk, error] {
	return func(yield func(agents.Chunk, error) bool) {
		defer m.cleaned.Store(true)
		for {
			if err := ctx.Err(); err != nil {
				yield(agents.Chunk{}, err)
				return
			}
			m.produced.Add(1)
			if !yield(agents.TextChunk("more "), nil) {
				return
			}
		}
	}
}

// 11a: the consumer stops reading during a slow text stream.
func TestBreakDuringStream(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const delay = 200 * time.Millisecond
	inner := &scripted.Model{ChunkSize: 4, Turns: []scripted.Turn{{Text: strings.Repeat("slow text ", 10), Delay: delay}}}
	m := &watchedModel{Model: inner}
	bus, rec := newBus(t)
	e := newExec(t, agents.Config{Model: m, Bus: bus})

	var got []agents.Event
	var brokeAt time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range e.Run(context.Background(), agents.Input{Message: agents.UserMessage("q")}) {
			if err != nil {
				t.Errorf("unexpected error %v", err)
				return
			}
			got = append(got, ev)
			if _, ok := ev.(*agents.TextDelta); ok {
				brokeAt = time.Now()
				break
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("Run did not return after the consumer stopped")
	}
	// The remaining 24 chunks would take about 5 s; returning takes far
	// less than one chunk's delay.
	if d := time.Since(brokeAt); d > delay {
		t.Errorf("Run returned %s after the break", d)
	}
	if n := m.chunks.Load(); n != 1 {
		t.Errorf("model handed out %d chunks, want 1 (the one that was read)", n)
	}
	if !m.closed.Load() {
		t.Error("the model stream was not closed")
	}
	if len(got) != 2 {
		t.Errorf("events = %v", describe(got))
	}
	if ae := rec.ofKind(hooks.KindAgentError); len(ae) != 1 || ae[0].code != "cancelled" {
		t.Errorf("bus agent.error = %+v", ae)
	}
}

// 11e: the stream's deferred cleanup runs when the consumer breaks, even
// for a stream that would never end by itself.
func TestBreakRunsStreamCleanup(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	m := &endlessModel{}
	e := newExec(t, agents.Config{Model: m})
	var deltas int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range e.Run(context.Background(), agents.Input{Message: agents.UserMessage("q")}) {
			if _, ok := ev.(*agents.TextDelta); ok {
				deltas++
				if deltas == 3 {
					break
				}
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("Run did not stop an endless stream")
	}
	if !m.cleaned.Load() {
		t.Error("the stream's deferred cleanup did not run")
	}
	if p := m.produced.Load(); p != 3 {
		t.Errorf("stream produced %d chunks, want 3", p)
	}
}

// 11b: the consumer stops while a parallel tool is still running.
func TestBreakDuringParallelTools(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var (
		bStarted  = make(chan struct{})
		bStopped  = make(chan error, 1)
		bReturned atomic.Bool
	)
	fast := mustTool(agents.NewTool("fast", "Fast.", func(ctx context.Context, _ emptyIn) (string, error) {
		select { // return only once the slow tool is running
		case <-bStarted:
		case <-time.After(guard):
		}
		return "fast", nil
	}, agents.WithParallel()))
	slow := mustTool(agents.NewTool("slow", "Blocks until cancelled.", func(ctx context.Context, _ emptyIn) (string, error) {
		defer bReturned.Store(true)
		close(bStarted)
		select {
		case <-ctx.Done():
			bStopped <- ctx.Err()
			return "", ctx.Err()
		case <-time.After(guard):
			bStopped <- nil
			return "never cancelled", nil
		}
	}, agents.WithParallel()))
	m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{ID: "a", Name: "fast"}, {ID: "b", Name: "slow"}}}, {Text: "never"}}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{fast, slow}})

	var brokeOn *agents.ToolCallFinished
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range e.Run(context.Background(), agents.Input{Message: agents.UserMessage("q")}) {
			if f, ok := ev.(*agents.ToolCallFinished); ok {
				brokeOn = f
				break
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("Run did not return")
	}
	if brokeOn == nil || brokeOn.CallID != "a" {
		t.Fatalf("broke on %+v, want the fast tool's result", brokeOn)
	}
	// Run returns only after the running tool has returned.
	if !bReturned.Load() {
		t.Error("Run returned while the slow tool was still running")
	}
	select {
	case err := <-bStopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("slow tool's context ended with %v, want context.Canceled", err)
		}
	default:
		t.Error("slow tool did not observe the cancellation")
	}
	if m.Calls() != 1 {
		t.Errorf("model called %d times", m.Calls())
	}
}

// 11c: the caller cancels its context mid-run.
func TestCallerCancels(t *testing.T) {
	t.Run("during the stream", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		m := &watchedModel{Model: &scripted.Model{ChunkSize: 4, Turns: []scripted.Turn{{Text: strings.Repeat("slow text ", 10), Delay: 20 * time.Millisecond}}}}
		bus, rec := newBus(t)
		e := newExec(t, agents.Config{Model: m, Bus: bus})
		var items []item
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev, err := range e.Run(ctx, agents.Input{Message: agents.UserMessage("q")}) {
				items = append(items, item{ev, err})
				if _, ok := ev.(*agents.TextDelta); ok {
					cancel()
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(guard):
			t.Fatal("Run did not end after cancellation")
		}
		evs, rf, err := failed(t, items)
		if rf.Code != "cancelled" || !errors.Is(err, context.Canceled) {
			t.Errorf("RunFailed = %+v, err = %v", rf, err)
		}
		if len(ofType[*agents.TextDelta](evs)) != 1 {
			t.Errorf("events = %v", describe(evs))
		}
		if !m.closed.Load() || m.chunks.Load() != 1 {
			t.Errorf("stream closed %v after %d chunks", m.closed.Load(), m.chunks.Load())
		}
		if len(rf.Messages) != 1 {
			t.Errorf("RunFailed.Messages = %+v", rf.Messages)
		}
		if ae := rec.ofKind(hooks.KindAgentError); len(ae) != 1 || ae[0].code != "cancelled" {
			t.Errorf("bus agent.error = %+v", ae)
		}
	})
	t.Run("during a tool", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var sawCancel atomic.Bool
		tool := mustTool(agents.NewTool("wait", "Waits.", func(tctx context.Context, _ emptyIn) (string, error) {
			cancel() // the user hits stop while the tool runs
			select {
			case <-tctx.Done():
				sawCancel.Store(errors.Is(tctx.Err(), context.Canceled))
				return "", tctx.Err()
			case <-time.After(guard):
				return "not cancelled", nil
			}
		}))
		m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{ID: "w", Name: "wait"}}}, {Text: "never"}}}
		e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{tool}})
		evs, rf, err := failed(t, drain(t, e.Run(ctx, agents.Input{Message: agents.UserMessage("q")})))
		if f := finishedByID(t, evs, "w"); f.ErrorCode != "cancelled" {
			t.Errorf("tool result = %+v", f)
		}
		if rf.Code != "cancelled" || !errors.Is(err, context.Canceled) || !sawCancel.Load() {
			t.Errorf("RunFailed = %+v, err = %v, tool saw cancel %v", rf, err, sawCancel.Load())
		}
		if m.Calls() != 1 {
			t.Errorf("model called %d times after cancellation", m.Calls())
		}
		checkNoDangling(t, rf.Messages)
	})
	t.Run("before the run", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		m := &scripted.Model{Turns: []scripted.Turn{{Text: "never"}}}
		e := newExec(t, agents.Config{Model: m})
		_, rf, err := failed(t, drain(t, e.Run(ctx, agents.Input{Message: agents.UserMessage("q")})))
		if rf.Code != "cancelled" || !errors.Is(err, context.Canceled) {
			t.Errorf("RunFailed = %+v, err = %v", rf, err)
		}
	})
}

// 11d: the caller's deadline passes mid-run.
func TestCallerDeadline(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	m := &scripted.Model{ChunkSize: 4, Turns: []scripted.Turn{{Text: strings.Repeat("slow text ", 100), Delay: 20 * time.Millisecond}}}
	e := newExec(t, agents.Config{Model: m})
	_, rf, err := failed(t, drain(t, e.Run(ctx, agents.Input{Message: agents.UserMessage("q")})))
	if rf.Code != "timeout" || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("RunFailed = %+v, err = %v", rf, err)
	}
	if m.Calls() != 1 {
		t.Errorf("a timed-out call was retried: %d calls", m.Calls())
	}
}

// Cancellation during the retry back-off ends the wait at once.
func TestCancelDuringBackoff(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &scripted.Model{Turns: []scripted.Turn{{Err: agents.TransientError(errors.New("429"))}, {Text: "never"}}}
	bus := hooks.New(hooks.Options{})
	defer bus.Close()
	// Cancel shortly after the failed attempt is reported, while the run
	// waits out its hour-long back-off (or, if the timer wins, just before:
	// both must end the run at once).
	if _, err := hooks.Listen(bus, func(_ context.Context, e *hooks.LLMResponse) error {
		if e.Err != nil {
			time.AfterFunc(10*time.Millisecond, cancel)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e := newExec(t, agents.Config{Model: m, Bus: bus, Backoff: backoffHour})
	_, rf, err := failed(t, drain(t, e.Run(ctx, agents.Input{Message: agents.UserMessage("q")})))
	if rf.Code != "cancelled" || !errors.Is(err, context.Canceled) || m.Calls() != 1 {
		t.Errorf("RunFailed = %+v, err = %v, calls = %d", rf, err, m.Calls())
	}
}

// Every ordinary run leaves no goroutine behind, tools and sub-agents
// included.
func TestNoLeaksAfterCompletedRuns(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var n atomic.Int32
	cm := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{Name: "ping"}, {Name: "ping"}}}, {Text: "child done"}}}
	child := newExec(t, agents.Config{Model: cm, Tools: []agents.Tool{pingTool(t, "ping", &n, agents.WithParallel())}})
	task := must[agents.Tool](t)(agents.NewTaskTool(agents.SubAgent{Name: "c", Description: "Child.", Executor: child}))
	m := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{Name: "ping"}, {Name: "ping"}, {Name: "ping"}}},
		{ToolCalls: []scripted.Call{{Name: agents.ToolTask, Args: `{"task":"t"}`}}},
		{Text: "done"},
	}}
	bus, _ := newBus(t)
	e := newExec(t, agents.Config{Model: m, Bus: bus, Tools: []agents.Tool{pingTool(t, "ping", &n, agents.WithParallel()), task}})
	finished(t, drain(t, e.Run(context.Background(), agents.Input{Message: agents.UserMessage("q")})))
	if n.Load() != 5 {
		t.Errorf("ping ran %d times", n.Load())
	}
}

// A consumer that stops right after the run's last event has seen the whole
// run: the run finished (or was interrupted), it did not fail.
func TestBreakOnFinalEvent(t *testing.T) {
	cases := []struct {
		name       string
		turn       scripted.Turn
		stopAt     agents.EventType
		wantReason string
	}{
		{"RunFinished", scripted.Turn{Text: "done"}, agents.EventRunFinished, string(agents.FinishEndTurn)},
		{"final_answer", scripted.Turn{ToolCalls: []scripted.Call{{Name: agents.ToolFinalAnswer, Args: `{"answer":"42"}`}}},
			agents.EventRunFinished, string(agents.FinishFinalAnswer)},
		{"Interrupted", scripted.Turn{ToolCalls: []scripted.Call{{Name: agents.ToolAskUserQuestion, Args: `{"questions":[{"question":"?"}]}`}}},
			agents.EventInterrupted, "interrupted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			m := &scripted.Model{Turns: []scripted.Turn{tc.turn}}
			bus, rec := newBus(t)
			e := newExec(t, agents.Config{Model: m, Bus: bus})
			var last agents.Event
			done := make(chan struct{})
			go func() {
				defer close(done)
				for ev, err := range e.Run(context.Background(), agents.Input{Message: agents.UserMessage("q")}) {
					if err != nil {
						t.Errorf("unexpected error %v", err)
					}
					last = ev
					if ev != nil && ev.Type() == tc.stopAt {
						break
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(guard):
				t.Fatal("Run did not return")
			}
			if last == nil || last.Type() != tc.stopAt {
				t.Fatalf("last event = %v", last)
			}
			kinds := rec.kinds()
			if len(kinds) == 0 || kinds[len(kinds)-1] != hooks.KindAgentFinish {
				t.Errorf("bus kinds = %v, want agent.finish last", kinds)
			}
			if ae := rec.ofKind(hooks.KindAgentError); len(ae) != 0 {
				t.Errorf("a finished run also published agent.error %+v; bus kinds %v", ae, kinds)
			}
			if af := rec.ofKind(hooks.KindAgentFinish); len(af) != 1 || af[0].reason != tc.wantReason {
				t.Errorf("agent.finish = %+v", af)
			}
		})
	}
}
