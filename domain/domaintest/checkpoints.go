package domaintest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

func (s *suite) checkpointTests(t *testing.T) {
	s.run(t, "SaveGetRoundTrip", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		want := newCheckpoint(m, at(time.Minute))
		in := want
		must(t, "SaveCheckpoint", e.Checkpoints.SaveCheckpoint(e.ctx, &in))
		got, err := e.Checkpoints.GetCheckpoint(e.ctx, tenantA, m.ID)
		must(t, "GetCheckpoint", err)
		equal(t, "GetCheckpoint", *got, want, canonCheckpoint)
	})

	s.run(t, "SaveReplaces", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		first := newCheckpoint(m, at(time.Minute))
		must(t, "SaveCheckpoint", e.Checkpoints.SaveCheckpoint(e.ctx, &first))
		second := newCheckpoint(m, at(2*time.Minute))
		second.Kind = domain.CheckpointConfirmation
		second.Data = []byte(`{"tool":"delete_rows","approved":null}`)
		second.ExpiresAt = time.Time{}
		in := second
		must(t, "second SaveCheckpoint", e.Checkpoints.SaveCheckpoint(e.ctx, &in))
		got, err := e.Checkpoints.GetCheckpoint(e.ctx, tenantA, m.ID)
		must(t, "GetCheckpoint", err)
		equal(t, "GetCheckpoint after the second save", *got, second, canonCheckpoint)
	})

	s.run(t, "GetMissing", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		_, err := e.Checkpoints.GetCheckpoint(e.ctx, tenantA, m.ID)
		wantErr(t, "GetCheckpoint of a message without one", err, domain.ErrNotFound)
		_, err = e.Checkpoints.TakeCheckpoint(e.ctx, tenantA, m.ID)
		wantErr(t, "TakeCheckpoint of a message without one", err, domain.ErrNotFound)
	})

	s.run(t, "Take", func(t *testing.T, e *env) {
		sess, m := e.seedMessage(tenantA)
		other := e.createMessages(newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusAwaitingInput, at(time.Minute)))[0]
		want := newCheckpoint(m, at(time.Minute))
		in := want
		must(t, "SaveCheckpoint", e.Checkpoints.SaveCheckpoint(e.ctx, &in))
		kept := newCheckpoint(other, at(2*time.Minute))
		in = kept
		must(t, "SaveCheckpoint", e.Checkpoints.SaveCheckpoint(e.ctx, &in))

		got, err := e.Checkpoints.TakeCheckpoint(e.ctx, tenantA, m.ID)
		must(t, "TakeCheckpoint", err)
		equal(t, "TakeCheckpoint", *got, want, canonCheckpoint)
		_, err = e.Checkpoints.GetCheckpoint(e.ctx, tenantA, m.ID)
		wantErr(t, "GetCheckpoint after Take", err, domain.ErrNotFound)
		_, err = e.Checkpoints.TakeCheckpoint(e.ctx, tenantA, m.ID)
		wantErr(t, "second TakeCheckpoint", err, domain.ErrNotFound)

		got, err = e.Checkpoints.GetCheckpoint(e.ctx, tenantA, other.ID)
		must(t, "GetCheckpoint of the other message", err)
		equal(t, "other message's checkpoint", *got, kept, canonCheckpoint)
	})

	s.run(t, "Delete", func(t *testing.T, e *env) {
		sess, m := e.seedMessage(tenantA)
		other := e.createMessages(newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusAwaitingInput, at(time.Minute)))[0]
		cp := newCheckpoint(m, at(time.Minute))
		must(t, "SaveCheckpoint", e.Checkpoints.SaveCheckpoint(e.ctx, &cp))
		kept := newCheckpoint(other, at(2*time.Minute))
		in := kept
		must(t, "SaveCheckpoint", e.Checkpoints.SaveCheckpoint(e.ctx, &in))

		must(t, "DeleteCheckpoint", e.Checkpoints.DeleteCheckpoint(e.ctx, tenantA, m.ID))
		_, err := e.Checkpoints.GetCheckpoint(e.ctx, tenantA, m.ID)
		wantErr(t, "GetCheckpoint after Delete", err, domain.ErrNotFound)
		wantErr(t, "second DeleteCheckpoint", e.Checkpoints.DeleteCheckpoint(e.ctx, tenantA, m.ID), domain.ErrNotFound)

		got, err := e.Checkpoints.GetCheckpoint(e.ctx, tenantA, other.ID)
		must(t, "GetCheckpoint of the other message", err)
		equal(t, "other message's checkpoint", *got, kept, canonCheckpoint)
	})

	s.group(t, "SaveInvalid", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			modify func(*domain.Checkpoint)
		}{
			{"EmptyID", func(cp *domain.Checkpoint) { cp.ID = "" }},
			{"EmptyTenant", func(cp *domain.Checkpoint) { cp.TenantID = "" }},
			{"EmptyMessage", func(cp *domain.Checkpoint) { cp.MessageID = "" }},
		} {
			s.run(t, c.name, func(t *testing.T, e *env) {
				_, m := e.seedMessage(tenantA)
				cp := newCheckpoint(m, at(time.Minute))
				c.modify(&cp)
				wantErr(t, "SaveCheckpoint", e.Checkpoints.SaveCheckpoint(e.ctx, &cp), domain.ErrInvalid)
				_, err := e.Checkpoints.GetCheckpoint(e.ctx, cp.TenantID, cp.MessageID)
				wantErr(t, "GetCheckpoint after the rejected save", err, domain.ErrNotFound)
			})
		}
	})

	s.run(t, "TakeRace", func(t *testing.T, e *env) {
		// Several rounds, each on a fresh message, make a double take
		// likely to show even when the scheduler is busy.
		sess, _ := e.seedMessage(tenantA)
		for round := range 5 {
			m := e.createMessages(newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusAwaitingInput, at(time.Duration(round)*time.Minute)))[0]
			want := newCheckpoint(m, at(time.Minute))
			in := want
			must(t, "SaveCheckpoint", e.Checkpoints.SaveCheckpoint(e.ctx, &in))
			const n = 50
			got := make([]*domain.Checkpoint, n)
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					got[i], errs[i] = e.Checkpoints.TakeCheckpoint(e.ctx, tenantA, m.ID)
				})
			}
			close(start)
			wg.Wait()
			wins := 0
			for i, err := range errs {
				switch {
				case err == nil:
					wins++
					if got[i] == nil {
						t.Errorf("round %d: TakeCheckpoint %d returned nil and no error", round, i)
					} else {
						equal(t, "the winner's checkpoint", *got[i], want, canonCheckpoint)
					}
				case !errors.Is(err, domain.ErrNotFound):
					t.Errorf("round %d: TakeCheckpoint %d: got error %v, want nil or one matching %q", round, i, err, domain.ErrNotFound)
				}
			}
			if wins != 1 {
				t.Errorf("round %d: %d of %d concurrent takes got the checkpoint, want exactly 1", round, wins, n)
			}
			_, err := e.Checkpoints.GetCheckpoint(e.ctx, tenantA, m.ID)
			wantErr(t, "GetCheckpoint after the race", err, domain.ErrNotFound)
		}
	})
}
