package agents_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/providers/scripted"
)

// recordingTool is an instant tool that records whether it was called and
// with which context state; it ignores its context, as a careless tool
// does.
type recordingTool struct {
	calls         atomic.Int32
	withCancelled atomic.Int32
}

func (r *recordingTool) tool(name string, opts ...agents.ToolOption) agents.Tool {
	return mustTool(agents.NewTool(name, "Records that it ran.", func(ctx context.Context, _ emptyIn) (string, error) {
		r.calls.Add(1)
		if ctx.Err() != nil {
			r.withCancelled.Add(1)
		}
		return "ran", nil
	}, opts...))
}

// notRunCancelled checks that every listed call finished as cancelled and
// not run, and that the run failed as cancelled.
func notRunCancelled(t *testing.T, items []item, ids ...string) {
	t.Helper()
	evs, rf, err := failed(t, items)
	if rf.Code != "cancelled" || !errors.Is(err, context.Canceled) {
		t.Errorf("RunFailed = %+v, err = %v; want cancelled", rf, err)
	}
	for _, id := range ids {
		f := finishedByID(t, evs, id)
		if f.ErrorCode != "cancelled" || !strings.Contains(f.Error, "not run") {
			t.Errorf("call %s finished with %q (%s), want cancelled and not run", id, f.Error, f.ErrorCode)
		}
	}
}

// cancelOnStart ranges over a run and cancels ctx when the first
// ToolCallStarted arrives, as a host whose user hits stop right then.
func cancelOnStart(t *testing.T, seq func(func(agents.Event, error) bool), cancel context.CancelFunc) []item {
	t.Helper()
	return drain(t, func(yield func(agents.Event, error) bool) {
		for ev, err := range seq {
			if _, ok := ev.(*agents.ToolCallStarted); ok {
				cancel()
			}
			if !yield(ev, err) {
				return
			}
		}
	})
}

// After the run's context is cancelled no tool starts: not the next call
// of a sequential batch, not the calls of a parallel group, not an
// approved call on resume. Each is reported as cancelled and not run.
func TestNoToolStartsAfterCancel(t *testing.T) {
	t.Parallel()
	t.Run("sequential call after ToolCallStarted", func(t *testing.T) {
		t.Parallel()
		var rec recordingTool
		m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{call("a", "instant", `{}`)}}, {Text: "never"}}}
		e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{rec.tool("instant")}})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		items := cancelOnStart(t, e.Run(ctx, agents.Input{Message: agents.UserMessage("q")}), cancel)
		if n := rec.calls.Load(); n != 0 {
			t.Errorf("tool called %d times (%d with a cancelled context), want 0", n, rec.withCancelled.Load())
		}
		notRunCancelled(t, items, "a")
	})
	t.Run("second call of a sequential batch", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var rec recordingTool
		first := mustTool(agents.NewTool("stop_button", "The user hits stop while it runs.", func(context.Context, emptyIn) (string, error) {
			cancel()
			return "done anyway", nil
		}))
		m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{call("a", "stop_button", `{}`), call("b", "instant", `{}`)}}, {Text: "never"}}}
		e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{first, rec.tool("instant")}})
		items := drain(t, e.Run(ctx, agents.Input{Message: agents.UserMessage("q")}))
		if n := rec.calls.Load(); n != 0 {
			t.Errorf("tool called %d times (%d with a cancelled context), want 0", n, rec.withCancelled.Load())
		}
		notRunCancelled(t, items, "b")
		if m.Calls() != 1 {
			t.Errorf("model called %d times, want 1", m.Calls())
		}
	})
	for _, limit := range []int{1, 4} {
		t.Run(fmt.Sprintf("parallel group/MaxParallelTools=%d", limit), func(t *testing.T) {
			t.Parallel()
			var rec recordingTool
			m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{
				call("p1", "fast", `{}`), call("p2", "fast", `{}`), call("p3", "fast", `{}`)}}, {Text: "never"}}}
			bus, br := newBus(t)
			e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{rec.tool("fast", agents.WithParallel())},
				MaxParallelTools: limit, Bus: bus})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			items := cancelOnStart(t, e.Run(ctx, agents.Input{Message: agents.UserMessage("q")}), cancel)
			if n := rec.calls.Load(); n != 0 {
				t.Errorf("tool called %d times (%d with a cancelled context), want 0", n, rec.withCancelled.Load())
			}
			notRunCancelled(t, items, "p1", "p2", "p3")
			if ts := br.ofKind(hooks.KindToolStart); len(ts) != 0 {
				t.Errorf("bus got %d tool.start events for calls that never started", len(ts))
			}
			if te := br.ofKind(hooks.KindToolError); len(te) != 3 {
				t.Errorf("bus got %d tool.error events, want 3", len(te))
			}
		})
	}
	t.Run("approved call with a cancelled context", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		m := &scripted.Model{Turns: []scripted.Turn{
			{ToolCalls: []scripted.Call{call("w1", "delete_rows", `{"table":"orders"}`)}},
			{Text: "never"},
		}}
		e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{writeTool(&n)}})
		_, intr := interrupted(t, drain(t, e.Run(t.Context(), agents.Input{TenantID: "t1", UserID: "u1",
			Message: agents.UserMessage("delete orders")})))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		items := drain(t, e.Approve(ctx, intr.Checkpoint, agents.Decision{Token: intr.Confirmation.Token, TenantID: "t1", UserID: "u1"}))
		if n.Load() != 0 {
			t.Errorf("approved tool ran %d times after cancellation, want 0", n.Load())
		}
		notRunCancelled(t, items, "w1")
	})
	t.Run("approved call, cancelled on ToolCallStarted", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		m := &scripted.Model{Turns: []scripted.Turn{
			{ToolCalls: []scripted.Call{call("w1", "delete_rows", `{"table":"orders"}`)}},
			{Text: "never"},
		}}
		e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{writeTool(&n)}})
		_, intr := interrupted(t, drain(t, e.Run(t.Context(), agents.Input{TenantID: "t1", UserID: "u1",
			Message: agents.UserMessage("delete orders")})))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		items := cancelOnStart(t, e.Approve(ctx, intr.Checkpoint, agents.Decision{Token: intr.Confirmation.Token, TenantID: "t1", UserID: "u1"}), cancel)
		if n.Load() != 0 {
			t.Errorf("approved tool ran %d times after cancellation, want 0", n.Load())
		}
		notRunCancelled(t, items, "w1")
	})
}
