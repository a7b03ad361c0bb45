package domaintest

import (
	"fmt"
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

	s.group(t, "TakeExpired", s.takeExpiredTests)

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
			concurrently(n, func(i int) { got[i], errs[i] = e.Checkpoints.TakeCheckpoint(e.ctx, tenantA, m.ID) })
			if i := oneWinner(t, fmt.Sprintf("round %d: TakeCheckpoint", round), errs, domain.ErrNotFound); i >= 0 {
				if got[i] == nil {
					t.Errorf("round %d: TakeCheckpoint %d returned nil and no error", round, i)
				} else {
					equal(t, "the winner's checkpoint", *got[i], want, canonCheckpoint)
				}
			}
			_, err := e.Checkpoints.GetCheckpoint(e.ctx, tenantA, m.ID)
			wantErr(t, "GetCheckpoint after the race", err, domain.ErrNotFound)
		}
	})
}

func (s *suite) takeExpiredTests(t *testing.T) {
	// expiring stores, for each expiry, a checkpoint of a new awaiting
	// message in sess, and returns the checkpoints.
	expiring := func(e *env, sess domain.Session, expiries ...time.Time) []domain.Checkpoint {
		e.t.Helper()
		out := make([]domain.Checkpoint, len(expiries))
		for i, exp := range expiries {
			m := e.createMessages(newMessage(sess.TenantID, sess.ID, domain.RoleAssistant, domain.StatusAwaitingInput, at(time.Duration(i)*time.Second)))[0]
			cp := newCheckpoint(m, at(time.Duration(i)*time.Second))
			cp.ExpiresAt = exp
			in := cp
			must(e.t, "SaveCheckpoint", e.Checkpoints.SaveCheckpoint(e.ctx, &in))
			out[i] = cp
		}
		return out
	}

	s.run(t, "TakesOnlyExpired", func(t *testing.T, e *env) {
		sessA := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		sessB := e.createSession(tenantB, ownerA, "Chat", at(0), at(0))
		now := at(time.Hour)
		// Stored out of expiry order, across two tenants.
		a := expiring(e, sessA, at(30*time.Minute), now, time.Time{}, now.Add(-time.Millisecond), at(2*time.Hour))
		b := expiring(e, sessB, at(10*time.Minute), time.Time{})
		taken := []domain.Checkpoint{b[0], a[0], a[3]}
		kept := []domain.Checkpoint{a[1], a[2], a[4], b[1]}

		got, err := e.Checkpoints.TakeExpiredCheckpoints(e.ctx, now, 0)
		must(t, "TakeExpiredCheckpoints", err)
		equalSlices(t, "TakeExpiredCheckpoints (oldest expiry first)", got, taken, canonCheckpoint)
		for _, cp := range taken {
			_, err := e.Checkpoints.GetCheckpoint(e.ctx, cp.TenantID, cp.MessageID)
			wantErr(t, "GetCheckpoint of a taken checkpoint", err, domain.ErrNotFound)
		}
		for _, cp := range kept {
			got, err := e.Checkpoints.GetCheckpoint(e.ctx, cp.TenantID, cp.MessageID)
			must(t, "GetCheckpoint of a kept checkpoint", err)
			equal(t, fmt.Sprintf("checkpoint expiring at %v", cp.ExpiresAt), *got, cp, canonCheckpoint)
		}
		got, err = e.Checkpoints.TakeExpiredCheckpoints(e.ctx, now, 0)
		must(t, "second TakeExpiredCheckpoints", err)
		equalSlices(t, "second TakeExpiredCheckpoints", got, nil, canonCheckpoint)
		// A zero expiry is never taken, however late it is.
		got, err = e.Checkpoints.TakeExpiredCheckpoints(e.ctx, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 0)
		must(t, "TakeExpiredCheckpoints far in the future", err)
		equalSlices(t, "TakeExpiredCheckpoints far in the future", got, []domain.Checkpoint{a[1], a[4]}, canonCheckpoint)
	})

	s.run(t, "Limit", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		cps := expiring(e, sess, at(5*time.Minute), at(4*time.Minute), at(3*time.Minute), at(2*time.Minute), at(time.Minute))
		_, err := e.Checkpoints.TakeExpiredCheckpoints(e.ctx, at(time.Hour), -1)
		wantErr(t, "TakeExpiredCheckpoints with a negative limit", err, domain.ErrInvalid)
		for _, c := range []struct {
			limit int
			want  []domain.Checkpoint
		}{
			{1, []domain.Checkpoint{cps[4]}},
			{2, []domain.Checkpoint{cps[3], cps[2]}},
			{0, []domain.Checkpoint{cps[1], cps[0]}},
			{2, nil},
		} {
			got, err := e.Checkpoints.TakeExpiredCheckpoints(e.ctx, at(time.Hour), c.limit)
			must(t, "TakeExpiredCheckpoints", err)
			equalSlices(t, fmt.Sprintf("TakeExpiredCheckpoints(limit %d)", c.limit), got, c.want, canonCheckpoint)
		}
	})

	s.run(t, "Race", func(t *testing.T, e *env) {
		want := e.acrossTenants(20, func(i int, sess domain.Session) string {
			return expiring(e, sess, at(time.Duration(i)*time.Second))[0].ID
		})
		all := drainConcurrently(t, "TakeExpiredCheckpoints", 8, func() ([]string, error) {
			cps, err := e.Checkpoints.TakeExpiredCheckpoints(e.ctx, at(time.Hour), 3)
			return keys(cps, func(cp domain.Checkpoint) string { return cp.ID }), err
		})
		sameSet(t, "checkpoints returned by concurrent TakeExpiredCheckpoints calls (each exactly once)", all, want)
	})
}
