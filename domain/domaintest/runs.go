package domaintest

import (
	"fmt"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

func (s *suite) runTests(t *testing.T) {
	s.group(t, "ClaimRun", s.claimRunTests)
	s.group(t, "RenewLease", s.renewLeaseTests)
	s.group(t, "RequestCancel", s.requestCancelTests)
	s.group(t, "FailExpired", s.failExpiredTests)

	s.group(t, "FinishRun", s.finishRunTests)

	s.run(t, "UpdateMessageKeepsLeaseAndCancelWhileGenerating", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		run := domain.NewID()
		must(t, "ClaimRun", e.Runs.ClaimRun(e.ctx, tenantA, m.ID, run, at(time.Hour)))
		must(t, "RequestCancel", e.Runs.RequestCancel(e.ctx, tenantA, m.ID))
		claimed := e.getMessage(tenantA, m.ID)

		upd := claimed
		upd.Parts = []domain.Part{domain.TextPart("partial")}
		upd.LeaseUntil = time.Time{}
		upd.CancelRequested = false
		upd.UpdatedAt = at(2 * time.Hour)
		must(t, "UpdateMessage", e.Messages.UpdateMessage(e.ctx, &upd))
		want := upd
		want.LeaseUntil = claimed.LeaseUntil
		want.CancelRequested = true
		equal(t, "generating message after UpdateMessage", e.getMessage(tenantA, m.ID), want, canonMessage)
	})

	// A message that leaves generating, or is reopened without a run id,
	// holds no run: UpdateMessage clears its lease and cancel request
	// whatever m carries, so no reaper fails it for an old lease and no new
	// run inherits an old cancel request.
	for _, c := range []struct {
		name   string
		status domain.MessageStatus
		noRun  bool
	}{
		{"Complete", domain.StatusComplete, false},
		{"Failed", domain.StatusFailed, false},
		{"AwaitingInput", domain.StatusAwaitingInput, false},
		{"Reopened", domain.StatusGenerating, true},
	} {
		s.run(t, "UpdateMessageClearsLeaseAndCancel"+c.name, func(t *testing.T, e *env) {
			_, m := e.seedMessage(tenantA)
			run := domain.NewID()
			must(t, "ClaimRun", e.Runs.ClaimRun(e.ctx, tenantA, m.ID, run, at(time.Minute)))
			must(t, "RequestCancel", e.Runs.RequestCancel(e.ctx, tenantA, m.ID))
			upd := e.getMessage(tenantA, m.ID)
			upd.Status = c.status
			upd.Parts = []domain.Part{domain.TextPart("updated")}
			if c.noRun {
				upd.RunID = ""
			}
			upd.UpdatedAt = at(2 * time.Minute)
			must(t, "UpdateMessage", e.Messages.UpdateMessage(e.ctx, &upd))
			want := upd
			want.LeaseUntil, want.CancelRequested = time.Time{}, false
			equal(t, "message after UpdateMessage", e.getMessage(tenantA, m.ID), want, canonMessage)

			// The old lease ended long ago: a reaper sweep must not fail
			// the message for it.
			got, err := e.Runs.FailExpired(e.ctx, at(time.Hour), domain.MessageError{Code: "expired", Message: "lost"}, 0)
			must(t, "FailExpired", err)
			equalIDs(t, "FailExpired after UpdateMessage", messageIDs(got), []string{})
			equal(t, "message after FailExpired", e.getMessage(tenantA, m.ID), want, canonMessage)
			if !c.noRun {
				return
			}
			// The reopened message is claimed by a new run, which starts
			// without the old cancel request.
			next := domain.NewID()
			must(t, "ClaimRun of the reopened message", e.Runs.ClaimRun(e.ctx, tenantA, m.ID, next, at(3*time.Hour)))
			cancel, err := e.Runs.RenewLease(e.ctx, tenantA, m.ID, next, at(4*time.Hour))
			must(t, "RenewLease", err)
			if cancel {
				t.Errorf("the new run of a reopened message inherited the cancel request of the old one")
			}
		})
	}
}

// getMessage returns the stored message or stops the test.
func (e *env) getMessage(tenant, id string) domain.Message {
	e.t.Helper()
	m, err := e.Messages.GetMessage(e.ctx, tenant, id)
	must(e.t, "GetMessage", err)
	return *m
}

// claimedMessage stores a generating assistant message in a new session of
// tenant, claims it with ClaimRun and returns it as stored, with its run.
func (e *env) claimedMessage(tenant string, lease time.Time) (domain.Message, string) {
	e.t.Helper()
	_, m := e.seedMessage(tenant)
	run := domain.NewID()
	must(e.t, "ClaimRun", e.Runs.ClaimRun(e.ctx, tenant, m.ID, run, lease))
	return e.getMessage(tenant, m.ID), run
}

// checkStoreTime fails the test unless got is the store's current time,
// allowing for clock skew between the test and a database server.
func checkStoreTime(t *testing.T, what string, got, before, after time.Time) {
	t.Helper()
	if got.Before(before.Add(-time.Minute)) || got.After(after.Add(time.Minute)) {
		t.Errorf("%s = %v, want the store's current time, about %v", what, got, before)
	}
}

func (s *suite) claimRunTests(t *testing.T) {
	s.run(t, "Succeeds", func(t *testing.T, e *env) {
		_, orig := e.seedMessage(tenantA)
		run := domain.NewID()
		lease := at(time.Hour)
		before := time.Now()
		must(t, "ClaimRun", e.Runs.ClaimRun(e.ctx, tenantA, orig.ID, run, lease))
		after := time.Now()
		got := e.getMessage(tenantA, orig.ID)
		checkStoreTime(t, "UpdatedAt after ClaimRun", got.UpdatedAt, before, after)
		want := orig
		want.RunID = run
		want.LeaseUntil = lease
		want.UpdatedAt = got.UpdatedAt
		equal(t, "message after ClaimRun", got, want, canonMessage)

		for _, again := range []string{domain.NewID(), run} {
			wantErr(t, "second ClaimRun", e.Runs.ClaimRun(e.ctx, tenantA, orig.ID, again, at(2*time.Hour)), domain.ErrConflict)
		}
		wantErr(t, "Claim after ClaimRun", e.Messages.Claim(e.ctx, tenantA, orig.ID, domain.NewID()), domain.ErrConflict)
		equal(t, "message after rejected claims", e.getMessage(tenantA, orig.ID), got, canonMessage)
	})

	for _, c := range unclaimable {
		s.run(t, "Rejects"+c.name, func(t *testing.T, e *env) {
			orig := e.createUnclaimable(c.status, c.claimed)
			wantErr(t, "ClaimRun", e.Runs.ClaimRun(e.ctx, tenantA, orig.ID, domain.NewID(), at(time.Hour)), domain.ErrConflict)
			equal(t, "message after rejected ClaimRun", e.getMessage(tenantA, orig.ID), orig, canonMessage)
		})
	}

	s.run(t, "ClearsCancelRequest", func(t *testing.T, e *env) {
		// A cancel request stored with the message (or made before any
		// run claimed it) is not meant for the run that claims it now.
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		m := newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusGenerating, at(time.Second))
		m.CancelRequested = true
		orig := e.createMessages(m)[0]
		run := domain.NewID()
		before := time.Now()
		must(t, "ClaimRun", e.Runs.ClaimRun(e.ctx, tenantA, orig.ID, run, at(time.Hour)))
		after := time.Now()
		got := e.getMessage(tenantA, orig.ID)
		checkStoreTime(t, "UpdatedAt after ClaimRun", got.UpdatedAt, before, after)
		want := orig
		want.RunID, want.LeaseUntil, want.CancelRequested, want.UpdatedAt = run, at(time.Hour), false, got.UpdatedAt
		equal(t, "message after ClaimRun", got, want, canonMessage)
		cancel, err := e.Runs.RenewLease(e.ctx, tenantA, orig.ID, run, at(2*time.Hour))
		must(t, "RenewLease", err)
		if cancel {
			t.Errorf("RenewLease of the new run reported the cancel request made before the claim")
		}
		// A request made after the claim reaches the run.
		must(t, "RequestCancel", e.Runs.RequestCancel(e.ctx, tenantA, orig.ID))
		cancel, err = e.Runs.RenewLease(e.ctx, tenantA, orig.ID, run, at(3*time.Hour))
		must(t, "RenewLease", err)
		if !cancel {
			t.Errorf("RenewLease after RequestCancel reported no cancel request")
		}
	})

	s.run(t, "RejectsClaimed", func(t *testing.T, e *env) {
		_, orig := e.seedMessage(tenantA)
		must(t, "Claim", e.Messages.Claim(e.ctx, tenantA, orig.ID, domain.NewID()))
		claimed := e.getMessage(tenantA, orig.ID)
		wantErr(t, "ClaimRun after Claim", e.Runs.ClaimRun(e.ctx, tenantA, orig.ID, domain.NewID(), at(time.Hour)), domain.ErrConflict)
		equal(t, "message after rejected ClaimRun", e.getMessage(tenantA, orig.ID), claimed, canonMessage)
	})

	s.run(t, "Unknown", func(t *testing.T, e *env) {
		e.seedMessage(tenantA)
		err := e.Runs.ClaimRun(e.ctx, tenantA, domain.NewID(), domain.NewID(), at(time.Hour))
		wantErr(t, "ClaimRun of an unknown message", err, domain.ErrNotFound)
	})

	s.run(t, "Invalid", func(t *testing.T, e *env) {
		_, orig := e.seedMessage(tenantA)
		wantErr(t, "ClaimRun with an empty run id", e.Runs.ClaimRun(e.ctx, tenantA, orig.ID, "", at(time.Hour)), domain.ErrInvalid)
		wantErr(t, "ClaimRun with a zero lease", e.Runs.ClaimRun(e.ctx, tenantA, orig.ID, domain.NewID(), time.Time{}), domain.ErrInvalid)
		equal(t, "message after rejected ClaimRun", e.getMessage(tenantA, orig.ID), orig, canonMessage)
	})

	s.run(t, "Race", func(t *testing.T, e *env) {
		lease := func(i int) time.Time { return at(time.Hour + time.Duration(i)*time.Millisecond) }
		e.claimRaces("ClaimRun", func(messageID, runID string, i int) error {
			return e.Runs.ClaimRun(e.ctx, tenantA, messageID, runID, lease(i))
		}, func(round int, got domain.Message, runID string, winner int) {
			if got.RunID != runID || !got.LeaseUntil.Equal(lease(winner)) {
				t.Errorf("round %d: RunID, LeaseUntil after the race = %q, %v; want the winner's %q, %v",
					round, got.RunID, got.LeaseUntil, runID, lease(winner))
			}
		})
	})
}

func (s *suite) renewLeaseTests(t *testing.T) {
	s.run(t, "Succeeds", func(t *testing.T, e *env) {
		claimed, run := e.claimedMessage(tenantA, at(time.Minute))
		for _, until := range []time.Time{at(2 * time.Minute), at(3 * time.Minute)} {
			cancel, err := e.Runs.RenewLease(e.ctx, tenantA, claimed.ID, run, until)
			must(t, "RenewLease", err)
			if cancel {
				t.Errorf("RenewLease reported a cancel request nobody made")
			}
			want := claimed
			want.LeaseUntil = until
			equal(t, "message after RenewLease (only LeaseUntil changes)", e.getMessage(tenantA, claimed.ID), want, canonMessage)
		}
	})

	s.run(t, "RenewsExpiredLeaseNotYetReaped", func(t *testing.T, e *env) {
		claimed, run := e.claimedMessage(tenantA, at(time.Minute))
		_, err := e.Runs.RenewLease(e.ctx, tenantA, claimed.ID, run, at(time.Hour))
		must(t, "RenewLease", err)
		got, err := e.Runs.FailExpired(e.ctx, at(30*time.Minute), domain.MessageError{Code: "expired"}, 0)
		must(t, "FailExpired", err)
		equalIDs(t, "FailExpired after the renewal", messageIDs(got), []string{})
	})

	s.run(t, "ReportsCancel", func(t *testing.T, e *env) {
		claimed, run := e.claimedMessage(tenantA, at(time.Minute))
		must(t, "RequestCancel", e.Runs.RequestCancel(e.ctx, tenantA, claimed.ID))
		for i, until := range []time.Time{at(2 * time.Minute), at(3 * time.Minute)} {
			cancel, err := e.Runs.RenewLease(e.ctx, tenantA, claimed.ID, run, until)
			must(t, "RenewLease", err)
			if !cancel {
				t.Errorf("RenewLease %d after RequestCancel reported no cancel request", i+1)
			}
		}
		want := claimed
		want.LeaseUntil = at(3 * time.Minute)
		want.CancelRequested = true
		equal(t, "message after RequestCancel and RenewLease", e.getMessage(tenantA, claimed.ID), want, canonMessage)
	})

	// Each case leaves the claimed message in a state in which its run
	// must stop; RenewLease must say so and change nothing.
	for _, c := range lostRuns {
		s.run(t, "Conflict"+c.name, func(t *testing.T, e *env) {
			claimed, run := e.claimedMessage(tenantA, at(time.Minute))
			renewRun := c.setup(t, e, claimed, run)
			before := e.getMessage(tenantA, claimed.ID)
			_, err := e.Runs.RenewLease(e.ctx, tenantA, claimed.ID, renewRun, at(time.Hour))
			wantErr(t, "RenewLease", err, domain.ErrConflict)
			equal(t, "message after rejected RenewLease", e.getMessage(tenantA, claimed.ID), before, canonMessage)
		})
	}

	s.run(t, "ConflictUnclaimed", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		_, err := e.Runs.RenewLease(e.ctx, tenantA, m.ID, domain.NewID(), at(time.Hour))
		wantErr(t, "RenewLease of an unclaimed message", err, domain.ErrConflict)
		equal(t, "message after rejected RenewLease", e.getMessage(tenantA, m.ID), m, canonMessage)
	})

	s.run(t, "Unknown", func(t *testing.T, e *env) {
		e.claimedMessage(tenantA, at(time.Minute))
		_, err := e.Runs.RenewLease(e.ctx, tenantA, domain.NewID(), domain.NewID(), at(time.Hour))
		wantErr(t, "RenewLease of an unknown message", err, domain.ErrNotFound)
	})

	s.run(t, "Invalid", func(t *testing.T, e *env) {
		claimed, run := e.claimedMessage(tenantA, at(time.Minute))
		_, err := e.Runs.RenewLease(e.ctx, tenantA, claimed.ID, "", at(time.Hour))
		wantErr(t, "RenewLease with an empty run id", err, domain.ErrInvalid)
		_, err = e.Runs.RenewLease(e.ctx, tenantA, claimed.ID, run, time.Time{})
		wantErr(t, "RenewLease with a zero time", err, domain.ErrInvalid)
		equal(t, "message after rejected RenewLease", e.getMessage(tenantA, claimed.ID), claimed, canonMessage)
	})
}

func (s *suite) requestCancelTests(t *testing.T) {
	s.run(t, "Claimed", func(t *testing.T, e *env) {
		claimed, _ := e.claimedMessage(tenantA, at(time.Minute))
		for i := range 2 {
			must(t, fmt.Sprintf("RequestCancel %d", i+1), e.Runs.RequestCancel(e.ctx, tenantA, claimed.ID))
		}
		want := claimed
		want.CancelRequested = true
		equal(t, "message after RequestCancel (only CancelRequested changes)", e.getMessage(tenantA, claimed.ID), want, canonMessage)
	})

	s.run(t, "Unclaimed", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		must(t, "RequestCancel", e.Runs.RequestCancel(e.ctx, tenantA, m.ID))
		want := m
		want.CancelRequested = true
		equal(t, "message after RequestCancel", e.getMessage(tenantA, m.ID), want, canonMessage)
		// A run that claims the message afterwards starts without it
		// (ClaimRun clears it).
		run := domain.NewID()
		must(t, "ClaimRun", e.Runs.ClaimRun(e.ctx, tenantA, m.ID, run, at(time.Hour)))
		cancel, err := e.Runs.RenewLease(e.ctx, tenantA, m.ID, run, at(2*time.Hour))
		must(t, "RenewLease", err)
		if cancel {
			t.Errorf("RenewLease after the claim reported the cancel request made before it")
		}
	})

	for _, status := range []domain.MessageStatus{domain.StatusComplete, domain.StatusFailed, domain.StatusAwaitingInput} {
		s.run(t, "Conflict"+string(status), func(t *testing.T, e *env) {
			sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
			m := newMessage(tenantA, sess.ID, domain.RoleAssistant, status, at(time.Second))
			m.RunID = domain.NewID()
			orig := e.createMessages(m)[0]
			wantErr(t, "RequestCancel of a "+string(status)+" message", e.Runs.RequestCancel(e.ctx, tenantA, orig.ID), domain.ErrConflict)
			equal(t, "message after rejected RequestCancel", e.getMessage(tenantA, orig.ID), orig, canonMessage)
		})
	}

	s.run(t, "Unknown", func(t *testing.T, e *env) {
		e.seedMessage(tenantA)
		wantErr(t, "RequestCancel of an unknown message", e.Runs.RequestCancel(e.ctx, tenantA, domain.NewID()), domain.ErrNotFound)
	})
}

func (s *suite) failExpiredTests(t *testing.T) {
	s.run(t, "FailsOnlyExpired", func(t *testing.T, e *env) {
		sessA := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		sessB := e.createSession(tenantB, ownerA, "Chat", at(0), at(0))
		now := at(10 * time.Minute)
		mk := func(sess domain.Session, status domain.MessageStatus, lease time.Time) *domain.Message {
			m := newMessage(sess.TenantID, sess.ID, domain.RoleAssistant, status, at(0))
			m.RunID = domain.NewID()
			m.LeaseUntil = lease
			m.Metadata.Model = "model-large"
			return m
		}
		expired := []*domain.Message{ // oldest lease first
			mk(sessA, domain.StatusGenerating, at(time.Minute)),
			mk(sessB, domain.StatusGenerating, at(2*time.Minute)), // other tenant
			mk(sessA, domain.StatusGenerating, now.Add(-time.Millisecond)),
		}
		expired[2].CancelRequested = true
		unclaimedZero := mk(sessA, domain.StatusGenerating, time.Time{})
		unclaimedZero.RunID = ""
		kept := []*domain.Message{
			mk(sessA, domain.StatusGenerating, now),           // ends exactly now
			mk(sessA, domain.StatusGenerating, at(time.Hour)), // live
			mk(sessA, domain.StatusGenerating, time.Time{}),   // claimed without a lease
			unclaimedZero, // unclaimed
			mk(sessA, domain.StatusAwaitingInput, at(time.Minute)),   // interrupted
			mk(sessA, domain.StatusComplete, at(time.Minute)),        // done
			mk(sessB, domain.StatusFailed, at(time.Minute)),          // already failed
			mk(sessB, domain.StatusGenerating, now.Add(time.Second)), // other tenant, live
		}
		kept[6].Metadata.Error = &domain.MessageError{Code: "model_error", Message: "earlier failure", Time: at(0)}
		// Stored out of lease order, so the order of the result is the
		// store's doing.
		e.createMessages(expired[2], kept[0], kept[1], kept[2], kept[3], kept[4], kept[5], expired[0])
		e.createMessages(kept[6], expired[1], kept[7])
		snapshot := func(ms []*domain.Message) []domain.Message {
			out := make([]domain.Message, len(ms))
			for i, m := range ms {
				out[i] = *m
			}
			return out
		}
		expiredWant, keptWant := snapshot(expired), snapshot(kept)

		failure := domain.MessageError{Code: "expired", Message: "The run stopped responding.", Time: at(11 * time.Minute)}
		before := time.Now()
		got, err := e.Runs.FailExpired(e.ctx, now, failure, 0)
		after := time.Now()
		must(t, "FailExpired", err)
		equalIDs(t, "FailExpired (oldest lease first)", messageIDs(got), messageIDs(expiredWant))
		for i, w := range expiredWant {
			stored := e.getMessage(w.TenantID, w.ID)
			checkStoreTime(t, "UpdatedAt after FailExpired", stored.UpdatedAt, before, after)
			w.Status = domain.StatusFailed
			w.Metadata.Error = &failure
			w.UpdatedAt = stored.UpdatedAt
			equal(t, "expired message as stored after FailExpired", stored, w, canonMessage)
			if i < len(got) {
				equal(t, "expired message as FailExpired returned it", got[i], w, canonMessage)
			}
		}
		for _, w := range keptWant {
			equal(t, fmt.Sprintf("%s message with lease %v after FailExpired", w.Status, w.LeaseUntil),
				e.getMessage(w.TenantID, w.ID), w, canonMessage)
		}
		got, err = e.Runs.FailExpired(e.ctx, now, failure, 0)
		must(t, "second FailExpired", err)
		equalIDs(t, "second FailExpired", messageIDs(got), []string{})
	})

	s.run(t, "Limit", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		var ms []*domain.Message
		for i := range 5 {
			m := newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusGenerating, at(time.Duration(i)*time.Second))
			m.RunID = domain.NewID()
			m.LeaseUntil = at(time.Duration(5-i) * time.Minute) // the last stored expires first
			ms = append(ms, m)
		}
		e.createMessages(ms...)
		failure := domain.MessageError{Code: "expired", Message: "lost"}
		_, err := e.Runs.FailExpired(e.ctx, at(time.Hour), failure, -1)
		wantErr(t, "FailExpired with a negative limit", err, domain.ErrInvalid)
		for _, c := range []struct {
			limit int
			want  []string
		}{
			{1, []string{ms[4].ID}},
			{2, []string{ms[3].ID, ms[2].ID}},
			{0, []string{ms[1].ID, ms[0].ID}},
			{2, []string{}},
		} {
			got, err := e.Runs.FailExpired(e.ctx, at(time.Hour), failure, c.limit)
			must(t, "FailExpired", err)
			equalIDs(t, fmt.Sprintf("FailExpired(limit %d)", c.limit), messageIDs(got), c.want)
		}
	})

	s.run(t, "Race", func(t *testing.T, e *env) {
		want := e.acrossTenants(20, func(i int, sess domain.Session) string {
			m := newMessage(sess.TenantID, sess.ID, domain.RoleAssistant, domain.StatusGenerating, at(time.Duration(i)*time.Second))
			m.RunID = domain.NewID()
			m.LeaseUntil = at(time.Duration(i) * time.Second)
			return e.createMessages(m)[0].ID
		})
		all := drainConcurrently(t, "FailExpired", 8, func() ([]string, error) {
			ms, err := e.Runs.FailExpired(e.ctx, at(time.Hour), domain.MessageError{Code: "expired"}, 3)
			return messageIDs(ms), err
		})
		sameSet(t, "messages returned by concurrent FailExpired calls (each exactly once)", all, want)
	})
}
