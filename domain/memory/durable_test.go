package memory_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
)

// TestSubscriptionsLeaveNothingBehind checks that ended subscriptions,
// by stop or by their context, are removed from the store and leave no
// goroutine running.
func TestSubscriptionsLeaveNothingBehind(t *testing.T) {
	s := memory.New()
	goroutines := runtime.NumGoroutine()
	const n = 200
	stops := make([]func(), 0, n)
	cancels := make([]context.CancelFunc, 0, n)
	for i := range n {
		ctx, cancel := context.WithCancel(t.Context())
		cancels = append(cancels, cancel)
		_, stop, err := s.SubscribeRunEvents(ctx, tenant, runID)
		mustNil(t, "SubscribeRunEvents", err)
		if i%2 == 0 {
			stops = append(stops, stop)
		}
	}
	if got := s.SubscriberCount(); got != n {
		t.Fatalf("%d live subscriptions, want %d", got, n)
	}
	if g := runtime.NumGoroutine(); g > goroutines+5 {
		t.Errorf("%d goroutines with %d subscriptions, started with %d: subscriptions must not start goroutines", g, n, goroutines)
	}
	for _, stop := range stops {
		stop()
		stop()
	}
	if got := s.SubscriberCount(); got != n/2 {
		t.Errorf("%d live subscriptions after stopping half, want %d", got, n/2)
	}
	for _, cancel := range cancels {
		cancel()
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.SubscriberCount() != 0 || runtime.NumGoroutine() > goroutines+5 {
		if time.Now().After(deadline) {
			t.Fatalf("after every context ended: %d live subscriptions, %d goroutines (started with %d)",
				s.SubscriberCount(), runtime.NumGoroutine(), goroutines)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSubscribeRunEventsInvalid(t *testing.T) {
	s := memory.New()
	for _, c := range []struct{ tenant, run string }{{"", runID}, {tenant, ""}} {
		if _, _, err := s.SubscribeRunEvents(t.Context(), c.tenant, c.run); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("SubscribeRunEvents(%q, %q) = %v, want ErrInvalid", c.tenant, c.run, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := s.SubscribeRunEvents(ctx, tenant, runID); !errors.Is(err, context.Canceled) {
		t.Errorf("SubscribeRunEvents with a done context = %v, want context.Canceled", err)
	}
	if n := s.SubscriberCount(); n != 0 {
		t.Errorf("%d live subscriptions after rejected calls, want 0", n)
	}
}

// TestDeleteSessionSignalsWatchers checks that a watcher of a run whose
// session is deleted is woken, so it reads the log and finds it gone.
func TestDeleteSessionSignalsWatchers(t *testing.T) {
	ctx := t.Context()
	s := seed(t)
	ch, stop, err := s.SubscribeRunEvents(ctx, tenant, runID)
	mustNil(t, "SubscribeRunEvents", err)
	defer stop()
	mustNil(t, "DeleteSession", s.DeleteSession(ctx, tenant, sessionID))
	select {
	case <-ch:
	default:
		t.Fatal("no signal after DeleteSession removed the run's events")
	}
	evs, err := s.ListRunEvents(ctx, tenant, runID, 0, 0)
	mustNil(t, "ListRunEvents", err)
	if len(evs) != 0 {
		t.Errorf("%d events after DeleteSession, want none", len(evs))
	}
}

// TestResultsAreCopied checks that PutResult copies its input and
// GetResult returns copies.
func TestResultsAreCopied(t *testing.T) {
	ctx := t.Context()
	s := seed(t)
	data := []byte(`{"rows":[[1]]}`)
	in := domain.StoredResult{TenantID: tenant, SessionID: sessionID, Data: data, CreatedAt: t0}
	name, err := s.PutResult(ctx, &in)
	mustNil(t, "PutResult", err)
	if in.Name != "" {
		t.Errorf("PutResult set the caller's Name to %q, want it left alone", in.Name)
	}
	scribble(data)
	want := domain.StoredResult{TenantID: tenant, SessionID: sessionID, Name: name, Data: []byte(`{"rows":[[1]]}`), CreatedAt: t0}
	got, err := s.GetResult(ctx, tenant, sessionID, name)
	mustNil(t, "GetResult", err)
	check(t, "result after scribbling the input", *got, want)
	scribble(got.Data)
	got, err = s.GetResult(ctx, tenant, sessionID, name)
	mustNil(t, "GetResult", err)
	check(t, "result after scribbling an output", *got, want)
}

// TestResultDefaults checks the documented defaults of New and that
// NewWithOptions treats zero and negative values as the defaults.
func TestResultDefaults(t *testing.T) {
	for name, s := range map[string]*memory.Store{
		"New":      memory.New(),
		"Zero":     memory.NewWithOptions(memory.Options{}),
		"Negative": memory.NewWithOptions(memory.Options{ResultsPerSession: -1, MaxResultBytes: -1}),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			sess := fixtureSession()
			mustNil(t, "CreateSession", s.CreateSession(ctx, &sess))
			put := func(data []byte) (string, error) {
				return s.PutResult(ctx, &domain.StoredResult{TenantID: tenant, SessionID: sessionID, Data: data})
			}
			if _, err := put(make([]byte, memory.DefaultMaxResultBytes+1)); !errors.Is(err, domain.ErrTooLarge) {
				t.Errorf("PutResult of %d bytes = %v, want ErrTooLarge", memory.DefaultMaxResultBytes+1, err)
			}
			if _, err := put(make([]byte, memory.DefaultMaxResultBytes)); err != nil {
				t.Errorf("PutResult of %d bytes = %v, want success", memory.DefaultMaxResultBytes, err)
			}
			for range memory.DefaultResultsPerSession + 2 {
				_, err := put([]byte(`1`))
				mustNil(t, "PutResult", err)
			}
			names, err := s.ListResults(ctx, tenant, sessionID)
			mustNil(t, "ListResults", err)
			if len(names) != memory.DefaultResultsPerSession {
				t.Errorf("%d results kept, want %d", len(names), memory.DefaultResultsPerSession)
			}
		})
	}
}

// TestRepositoriesBundle checks that Repositories fills every field.
func TestRepositoriesBundle(t *testing.T) {
	s := memory.New()
	r := s.Repositories()
	if r.Runs != s || r.Results != s || r.Sessions != s || r.Messages != s || r.Checkpoints != s || r.Artifacts != s || r.RunEvents != s {
		t.Errorf("Repositories() = %+v, want the store in every field", r)
	}
	if _, ok := r.RunEvents.(domain.RunEventNotifier); !ok {
		t.Error("Repositories().RunEvents does not implement domain.RunEventNotifier")
	}
}
