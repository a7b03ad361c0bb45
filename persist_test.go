package bichat_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// TestInterruptedEventOmitsCheckpoint: the service stores the checkpoint and
// resumes by message id, so neither the stream nor the run log carries it
// (it holds the whole conversation); the confirmation token the host needs
// is still there.
func TestInterruptedEventOmitsCheckpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t, brainModel(), []agents.Tool{salesTool(nil), discountTool(nil)})
	ctx := t.Context()
	sess := f.session(t, alice, "")
	for _, q := range []string{"[ask] which?", "[write] discount"} {
		evs, in := interrupted(t, collect(t, f.svc.Send(ctx, alice, sess.ID, q)))
		if in.Checkpoint != nil {
			t.Fatalf("%s: streamed Interrupted carries the checkpoint", q)
		}
		if in.MessageID == "" || in.SessionID != sess.ID {
			t.Fatalf("%s: Interrupted header ids = %q, %q", q, in.MessageID, in.SessionID)
		}
		if strings.Contains(q, "[write]") && (in.Confirmation == nil || in.Confirmation.Token == "") {
			t.Fatalf("%s: confirmation token missing: %+v", q, in.Confirmation)
		}
		logged, err := f.svc.Replay(ctx, alice, evs[0].Header().RunID, 0)
		if err != nil {
			t.Fatal(err)
		}
		last, ok := logged[len(logged)-1].(*agents.Interrupted)
		if !ok || last.Checkpoint != nil {
			t.Fatalf("%s: logged last event = %#v, want an Interrupted without checkpoint", q, logged[len(logged)-1])
		}
		if _, err := f.svc.PendingInterrupt(ctx, alice, in.MessageID); err != nil {
			t.Fatalf("%s: the checkpoint must still be stored: %v", q, err)
		}
	}
}

// failingMessages fails UpdateMessage when it would mark a message complete.
type failingMessages struct {
	domain.MessageRepository
}

var errDiskFull = errors.New("disk full")

func (m failingMessages) UpdateMessage(ctx context.Context, msg *domain.Message) error {
	if msg.Status == domain.StatusComplete {
		return errDiskFull
	}
	return m.MessageRepository.UpdateMessage(ctx, msg)
}

// failingRuns fails FinishRun when it would mark a message complete: a
// run with a lease saves its outcome through the RunRepository.
type failingRuns struct {
	domain.RunRepository
}

func (r failingRuns) FinishRun(ctx context.Context, msg *domain.Message, runID string) error {
	if msg.Status == domain.StatusComplete {
		return errDiskFull
	}
	return r.RunRepository.FinishRun(ctx, msg, runID)
}

// TestSaveFailureMarksMessageFailed: when the answer cannot be saved the
// consumer gets the error and the message is failed with code "internal",
// not left generating and not reported as cancelled.
func TestSaveFailureMarksMessageFailed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, textModel("Revenue was flat."), nil, func(c *bichat.Config) {
		c.Store.Messages = failingMessages{c.Store.Messages}
		c.Store.Runs = failingRuns{c.Store.Runs}
	})
	ctx := t.Context()
	sess := f.session(t, alice, "")
	items := collect(t, f.svc.Send(ctx, alice, sess.ID, "How was revenue?"))
	last := items[len(items)-1]
	if !errors.Is(last.err, errDiskFull) {
		t.Fatalf("last element = %v, want the save error", describe(items))
	}
	msgs := f.messages(t, alice, sess.ID)
	a := msgs[len(msgs)-1]
	if a.Status != domain.StatusFailed || a.Metadata.Error == nil || a.Metadata.Error.Code != "internal" {
		t.Fatalf("assistant = %s %+v, want failed with code internal", a.Status, a.Metadata.Error)
	}
}

// TestDenyReasonValidation: the reason is checked after the caller, and
// counts characters.
func TestDenyReasonValidation(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	long := strings.Repeat("é", 2001)
	if err := streamErr(t, w.svc.Deny(ctx, aliceViewer, w.confMsg, w.token, long)); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("viewer with a long reason: %v, want ErrForbidden", err)
	}
	if err := streamErr(t, w.svc.Deny(ctx, alice, w.confMsg, w.token, long)); !hasField(err, "reason") {
		t.Fatalf("long reason: %v, want ErrInvalid on reason", err)
	}
	stillAwaiting(t, w.fixture, w.confMsg, domain.CheckpointConfirmation)
	ok := strings.Repeat("é", 2000)
	if _, fin := finished(t, collect(t, w.svc.Deny(ctx, alice, w.confMsg, w.token, ok))); fin == nil {
		t.Fatal("a 2000-character reason must be accepted")
	}
	if w.writes.Load() != 0 {
		t.Fatal("the denied tool ran")
	}
}
