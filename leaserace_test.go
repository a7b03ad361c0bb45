package bichat_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// reapingRuns is a RunRepository whose next RenewLease, once armed, lets
// the run's lease expire and runs a reaper sweep right after renewing: a
// reap in the round trip between the runner's last lease check and the
// save of its outcome.
type reapingRuns struct {
	domain.RunRepository
	svc   *bichat.Service
	clock *fakeClock
	lease time.Duration
	armed atomic.Bool
	reaps atomic.Int32
}

func (r *reapingRuns) RenewLease(ctx context.Context, tenantID, messageID, runID string, until time.Time) (bool, error) {
	cancel, err := r.RunRepository.RenewLease(ctx, tenantID, messageID, runID, until)
	if err == nil && r.armed.CompareAndSwap(true, false) {
		r.clock.Advance(2 * r.lease)
		res, rerr := r.svc.Reap(ctx)
		if rerr == nil && res.Expired == 1 {
			r.reaps.Add(1)
		}
	}
	return cancel, err
}

// TestOutcomeAfterReap: a runner that checked its lease just before a
// reaper failed its message does not overwrite the failure with its
// outcome (complete, awaiting input or failed), writes no second terminal
// event, and its stream ends with the reaper's RunFailed and an error
// matching ErrConflict. An interrupted run's checkpoint is dropped.
func TestOutcomeAfterReap(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		model    *scripted.Model
		question string
	}{
		{"complete", textModel("Revenue was flat."), "How was revenue?"},
		{"awaiting input", brainModel(), "[ask] revenue"},
		{"failed", &scripted.Model{Turns: []scripted.Turn{{Err: errors.New("400 bad request")}, {Text: "Fresh answer."}}}, "How was revenue?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rr := &reapingRuns{lease: bichat.DefaultRunLease}
			f := newFixture(t, c.model, []agents.Tool{salesTool(nil)}, func(cfg *bichat.Config) {
				rr.RunRepository = cfg.Store.Runs
				cfg.Store.Runs = rr
			})
			rr.svc, rr.clock = f.svc, f.clock
			rr.armed.Store(true)
			ctx := t.Context()
			sess := f.session(t, alice, "")
			items := collect(t, f.svc.Send(ctx, alice, sess.ID, c.question))
			if rr.reaps.Load() != 1 {
				t.Fatalf("the reaper failed %d runs in the lease check before the outcome, want 1", rr.reaps.Load())
			}
			if len(items) < 2 || !errors.Is(items[len(items)-1].err, domain.ErrConflict) {
				t.Fatalf("stream = %s, want it to end with an error matching ErrConflict", describe(items))
			}
			evs := events(t, items[:len(items)-1])
			if rf, ok := evs[len(evs)-1].(*agents.RunFailed); !ok || rf.Code != "lease_expired" {
				t.Fatalf("stream = %s, want the reaper's RunFailed lease_expired before the error", describe(items))
			}
			msgs := f.messages(t, alice, sess.ID)
			asst := msgs[len(msgs)-1]
			if asst.Status != domain.StatusFailed || asst.Metadata.Error == nil || asst.Metadata.Error.Code != "lease_expired" ||
				!strings.Contains(asst.Metadata.Error.Message, "stopped responding") {
				t.Fatalf("message = %s %+v, want still failed by the reaper (lease_expired)", asst.Status, asst.Metadata.Error)
			}
			replayed, err := f.svc.Replay(ctx, alice, asst.RunID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rf, ok := consecutive(t, replayed, 0).(*agents.RunFailed); !ok || rf.Code != "lease_expired" {
				t.Errorf("run log ends with %T, want exactly one terminal event, the reaper's RunFailed", replayed[len(replayed)-1])
			}
			if _, err := f.store.GetCheckpoint(ctx, alice.TenantID, asst.ID); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("checkpoint of the reaped message: %v, want none (ErrNotFound)", err)
			}
			// The session takes the next question.
			finished(t, collect(t, f.svc.Send(ctx, alice, sess.ID, "And now?")))
		})
	}
}

// cancelRacingCheckpoints stores a cancel request for the message whose
// checkpoint is saved, once armed, as if Cancel arrived from another
// process just as the run reached its question (the checkpoint is saved
// right before the message).
type cancelRacingCheckpoints struct {
	domain.CheckpointRepository
	runs  domain.RunRepository
	armed atomic.Bool
}

func (c *cancelRacingCheckpoints) SaveCheckpoint(ctx context.Context, cp *domain.Checkpoint) error {
	if c.armed.CompareAndSwap(true, false) {
		if err := c.runs.RequestCancel(ctx, cp.TenantID, cp.MessageID); err != nil {
			return err
		}
	}
	return c.CheckpointRepository.SaveCheckpoint(ctx, cp)
}

// TestResumeStartsWithoutOldCancel: a cancel request that reached a run
// just as it stopped at a question is not inherited by the run that
// resumes the message: the resumed run renews its lease several times and
// completes.
func TestResumeStartsWithoutOldCancel(t *testing.T) {
	t.Parallel()
	const lease = 60 * time.Millisecond
	model := &scripted.Model{Respond: func(ctx context.Context, req *agents.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == domain.RoleUser {
			return scripted.Turn{Text: "One question first.", ToolCalls: []scripted.Call{{Name: agents.ToolAskUserQuestion, Args: askArgs}}}, nil
		}
		// The resumed run works for several lease renewals.
		select {
		case <-ctx.Done():
			return scripted.Turn{}, ctx.Err()
		case <-time.After(5 * lease):
		}
		return scripted.Turn{Text: "Q3 revenue was flat."}, nil
	}}
	cr := &cancelRacingCheckpoints{}
	f := newFixture(t, model, nil, func(c *bichat.Config) {
		c.Limits.RunLease = lease
		cr.CheckpointRepository, cr.runs = c.Store.Checkpoints, c.Store.Runs
		c.Store.Checkpoints = cr
	})
	cr.armed.Store(true)
	ctx := t.Context()
	sess := f.session(t, alice, "")
	evs, _ := interrupted(t, collect(t, f.svc.Send(ctx, alice, sess.ID, "Revenue?")))
	msgID := evs[0].Header().MessageID
	if cr.armed.Load() {
		t.Fatal("no checkpoint was saved")
	}
	if m, err := f.store.GetMessage(ctx, alice.TenantID, msgID); err != nil || m.CancelRequested || !m.LeaseUntil.IsZero() {
		t.Fatalf("awaiting message = %+v, %v; want no cancel request and no lease: its run is over", m, err)
	}
	_, fin := finished(t, collect(t, f.svc.Resume(ctx, alice, msgID, validAnswers)))
	if fin.Text != "Q3 revenue was flat." {
		t.Errorf("resumed answer = %q", fin.Text)
	}
	if m := f.message(t, alice, msgID); m.Status != domain.StatusComplete {
		t.Errorf("resumed message = %s %+v, want complete", m.Status, m.Metadata.Error)
	}
}

// TestCancelUnclaimed: Cancel of a generating message that no run has
// claimed yet (its run is about to start in another process) cannot leave
// a cancel request for that run, since claiming clears it; it claims the
// message itself and fails it, so the run that was about to start finds
// it taken.
func TestCancelUnclaimed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted.Model{}, nil)
	ctx := t.Context()
	sess := f.session(t, alice, "")
	id := generating(t, f, sess, f.clock.Now())
	if err := f.svc.Cancel(ctx, alice, id); err != nil {
		t.Fatalf("Cancel of an unclaimed message: %v", err)
	}
	failureCode(t, f, id, "cancelled")
	m := f.message(t, alice, id)
	if m.RunID == "" || m.CancelRequested || !m.LeaseUntil.IsZero() {
		t.Errorf("cancelled message: run %q, cancel requested %v, lease %v; want claimed by the cancel, with no request or lease left",
			m.RunID, m.CancelRequested, m.LeaseUntil)
	}
	if err := f.store.ClaimRun(ctx, alice.TenantID, id, domain.NewID(), time.Now().Add(time.Minute)); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("the run about to start claims the cancelled message: %v, want ErrConflict", err)
	}
	evs := events(t, collect(t, f.svc.Watch(ctx, alice, id, 0)))
	if rf, ok := consecutive(t, evs, 0).(*agents.RunFailed); !ok || rf.Code != "cancelled" {
		t.Errorf("watch of the cancelled message = %d events ending with %T, want one RunFailed cancelled", len(evs), evs[len(evs)-1])
	}
	if err := f.svc.Cancel(ctx, alice, id); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("second Cancel: %v, want ErrConflict", err)
	}
}
