package domaintest

import (
	"context"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// How long the notifier cases wait: for a signal that must come (a
// notification may cross a database round trip), and for one that must
// not.
const (
	signalTimeout = 10 * time.Second
	quietPeriod   = 300 * time.Millisecond
)

// notifier returns the RunEvents repository as a RunEventNotifier, or
// skips the test when it is not one.
func (e *env) notifier() domain.RunEventNotifier {
	e.t.Helper()
	n, ok := e.RunEvents.(domain.RunEventNotifier)
	if !ok {
		e.t.Skipf("domaintest: RunEvents (%T) does not implement domain.RunEventNotifier", e.RunEvents)
	}
	return n
}

// subscribe subscribes to a run and stops the subscription at the end of
// the test.
func (e *env) subscribe(ctx context.Context, tenant, runID string) (<-chan struct{}, func()) {
	e.t.Helper()
	ch, stop, err := e.notifier().SubscribeRunEvents(ctx, tenant, runID)
	must(e.t, "SubscribeRunEvents", err)
	if ch == nil || stop == nil {
		e.t.Fatalf("SubscribeRunEvents returned a nil channel or stop function")
	}
	if c := cap(ch); c != 1 {
		e.t.Errorf("SubscribeRunEvents returned a channel with capacity %d, want 1 (signals coalesce into one pending value)", c)
	}
	e.t.Cleanup(stop)
	return ch, stop
}

// waitSignal fails the test unless ch delivers a signal in time.
func waitSignal(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Errorf("%s: the signal channel was closed, want a signal", what)
		}
	case <-time.After(signalTimeout):
		t.Errorf("%s: no signal within %v", what, signalTimeout)
	}
}

// quiet reports whether ch delivers no signal during d. A closed channel
// counts as quiet: the subscription has ended.
func quiet(ch <-chan struct{}, d time.Duration) bool {
	select {
	case _, ok := <-ch:
		return !ok
	case <-time.After(d):
		return true
	}
}

// drain empties ch of a pending signal.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

func (s *suite) notifierTests(t *testing.T) {
	s.run(t, "SignalsAppend", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		run := domain.NewID()
		ch, _ := e.subscribe(e.ctx, tenantA, run)
		other, _ := e.subscribe(e.ctx, tenantA, run) // a second watcher of the same run
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(m, run, 1)...))
		waitSignal(t, "first subscriber after AppendRunEvents", ch)
		waitSignal(t, "second subscriber after AppendRunEvents", other)

		// Several appends while nobody reads: coalesced, at least one
		// signal, and the log holds everything.
		for seq := int64(2); seq <= 4; seq++ {
			must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(m, run, seq)...))
		}
		waitSignal(t, "subscriber after three more appends", ch)
		evs, err := e.RunEvents.ListRunEvents(e.ctx, tenantA, run, 1, 0)
		must(t, "ListRunEvents", err)
		equalIDs(t, "events after the signal", eventSeqs(evs), []int64{2, 3, 4})
	})

	s.run(t, "OnlyItsRun", func(t *testing.T, e *env) {
		_, mA := e.seedMessage(tenantA)
		_, mB := e.seedMessage(tenantB)
		run, otherRun, barrierRun := domain.NewID(), domain.NewID(), domain.NewID()
		ch, _ := e.subscribe(e.ctx, tenantA, run)
		inB, _ := e.subscribe(e.ctx, tenantB, run) // same run id, other tenant
		barrier, _ := e.subscribe(e.ctx, tenantA, barrierRun)

		// Another run of the tenant, and the same run id in another
		// tenant, then a run whose signal shows the others had time to
		// arrive.
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(mA, otherRun, 1)...))
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(mB, run, 1)...))
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(mA, barrierRun, 1)...))
		waitSignal(t, "subscriber of the barrier run", barrier)
		waitSignal(t, "subscriber of the run in tenant B", inB)
		if !quiet(ch, quietPeriod) {
			t.Errorf("subscriber of run %s in tenant A got a signal for appends to other runs and tenants", run)
		}
	})

	s.run(t, "Stop", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		run := domain.NewID()
		ch, stop := e.subscribe(e.ctx, tenantA, run)
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(m, run, 1)...))
		waitSignal(t, "subscriber before stop", ch)
		stop()
		stop() // idempotent
		drain(ch)
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(m, run, 2)...))
		if !quiet(ch, quietPeriod) {
			t.Errorf("stopped subscription got a signal")
		}
	})

	s.run(t, "ContextEnds", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		run := domain.NewID()
		ctx, cancel := context.WithCancel(e.ctx)
		ch, _ := e.subscribe(ctx, tenantA, run)
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(m, run, 1)...))
		waitSignal(t, "subscriber before its context ends", ch)
		cancel()
		// The subscription may take a moment to end; it must end well
		// within the signal timeout.
		deadline := time.Now().Add(signalTimeout)
		for seq := int64(2); ; seq++ {
			drain(ch)
			must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(m, run, seq)...))
			if quiet(ch, quietPeriod) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("subscription still signals %v after its context ended", signalTimeout)
			}
		}
	})
}
