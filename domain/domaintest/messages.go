package domaintest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

func (s *suite) messageTests(t *testing.T) {
	s.run(t, "CreateGetRoundTrip", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		user := newMessage(tenantA, sess.ID, domain.RoleUser, domain.StatusComplete, at(time.Second))
		rich := richMessage(tenantA, sess.ID, at(2*time.Second))
		want := e.createMessages(user, rich)
		for _, w := range want {
			got, err := e.Messages.GetMessage(e.ctx, tenantA, w.ID)
			must(t, "GetMessage", err)
			equal(t, "GetMessage", *got, w, canonMessage)
		}
		list, err := e.Messages.ListMessages(e.ctx, tenantA, sess.ID, domain.MessageListOptions{})
		must(t, "ListMessages", err)
		equalSlices(t, "ListMessages", list, want, canonMessage)
	})

	s.run(t, "GetUnknown", func(t *testing.T, e *env) {
		e.seedMessage(tenantA)
		_, err := e.Messages.GetMessage(e.ctx, tenantA, domain.NewID())
		wantErr(t, "GetMessage of an unknown id", err, domain.ErrNotFound)
	})

	s.group(t, "CreateInvalid", func(t *testing.T) {
		// Each batch holds a good message and a bad one; the error must
		// match ErrInvalid and the good message must not be stored.
		cases := []struct {
			name   string
			modify func(bad *domain.Message, otherSession string)
		}{
			{"EmptyID", func(m *domain.Message, _ string) { m.ID = "" }},
			{"MalformedID", func(m *domain.Message, _ string) { m.ID = "msg-1" }},
			{"EmptyRole", func(m *domain.Message, _ string) { m.Role = "" }},
			{"UnknownRole", func(m *domain.Message, _ string) { m.Role = "robot" }},
			{"EmptyStatus", func(m *domain.Message, _ string) { m.Status = "" }},
			{"UnknownStatus", func(m *domain.Message, _ string) { m.Status = "done" }},
			{"MixedSessions", func(m *domain.Message, other string) { m.SessionID = other }},
			{"MixedTenants", func(m *domain.Message, _ string) { m.TenantID = tenantB }},
		}
		for _, c := range cases {
			s.run(t, c.name, func(t *testing.T, e *env) {
				sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
				other := e.createSession(tenantA, ownerA, "Other", at(0), at(0))
				e.createSession(tenantB, ownerA, "Other tenant", at(0), at(0))
				good := newMessage(tenantA, sess.ID, domain.RoleUser, domain.StatusComplete, at(time.Second))
				bad := newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusGenerating, at(2*time.Second))
				c.modify(bad, other.ID)
				wantErr(t, "CreateMessages", e.Messages.CreateMessages(e.ctx, good, bad), domain.ErrInvalid)
				_, err := e.Messages.GetMessage(e.ctx, tenantA, good.ID)
				wantErr(t, "GetMessage of the good message", err, domain.ErrNotFound)
				for _, sid := range []string{sess.ID, other.ID} {
					list, err := e.Messages.ListMessages(e.ctx, tenantA, sid, domain.MessageListOptions{})
					must(t, "ListMessages", err)
					equalIDs(t, "ListMessages after a rejected batch", messageIDs(list), []string{})
				}
			})
		}
	})

	s.run(t, "CreateInUnknownSession", func(t *testing.T, e *env) {
		e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		m := newMessage(tenantA, domain.NewID(), domain.RoleUser, domain.StatusComplete, at(0))
		wantErr(t, "CreateMessages in an unknown session", e.Messages.CreateMessages(e.ctx, m), domain.ErrNotFound)
		_, err := e.Messages.GetMessage(e.ctx, tenantA, m.ID)
		wantErr(t, "GetMessage", err, domain.ErrNotFound)
	})

	s.run(t, "CreateDuplicateOfStored", func(t *testing.T, e *env) {
		sess, stored := e.seedMessage(tenantA)
		fresh := newMessage(tenantA, sess.ID, domain.RoleUser, domain.StatusComplete, at(time.Minute))
		dup := newMessage(tenantA, sess.ID, domain.RoleUser, domain.StatusComplete, at(2*time.Minute))
		dup.ID = stored.ID
		wantErr(t, "CreateMessages with a stored id", e.Messages.CreateMessages(e.ctx, fresh, dup), domain.ErrConflict)
		list, err := e.Messages.ListMessages(e.ctx, tenantA, sess.ID, domain.MessageListOptions{})
		must(t, "ListMessages", err)
		equalSlices(t, "messages after the rejected batch", list, []domain.Message{stored}, canonMessage)
	})

	s.run(t, "CreateDuplicateInBatch", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		m1 := newMessage(tenantA, sess.ID, domain.RoleUser, domain.StatusComplete, at(time.Second))
		m2 := newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusGenerating, at(2*time.Second))
		again := *m1
		again.CreatedAt = at(3 * time.Second)
		wantErr(t, "CreateMessages with an id twice", e.Messages.CreateMessages(e.ctx, m1, m2, &again), domain.ErrConflict)
		list, err := e.Messages.ListMessages(e.ctx, tenantA, sess.ID, domain.MessageListOptions{})
		must(t, "ListMessages", err)
		equalIDs(t, "messages after the rejected batch", messageIDs(list), []string{})
		for _, m := range []*domain.Message{m1, m2} {
			_, err := e.Messages.GetMessage(e.ctx, tenantA, m.ID)
			wantErr(t, "GetMessage", err, domain.ErrNotFound)
		}
	})

	s.run(t, "ListOrder", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		other := e.createSession(tenantA, ownerA, "Other", at(0), at(0))
		m0 := newMessage(tenantA, sess.ID, domain.RoleUser, domain.StatusComplete, at(0))
		m1 := newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusComplete, at(time.Second))
		m2 := newMessage(tenantA, sess.ID, domain.RoleUser, domain.StatusComplete, at(2*time.Second))
		// Inserted out of CreatedAt order, over several batches.
		e.createMessages(m2, m0)
		e.createMessages(newMessage(tenantA, other.ID, domain.RoleUser, domain.StatusComplete, at(500*time.Millisecond)))
		e.createMessages(m1)
		// Equal CreatedAt: insertion order decides, not the id. NewID ids
		// increase, so these are inserted in decreasing id order.
		idLow, idMid, idHigh := domain.NewID(), domain.NewID(), domain.NewID()
		t1 := newMessage(tenantA, sess.ID, domain.RoleUser, domain.StatusComplete, at(time.Minute))
		t2 := newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusGenerating, at(time.Minute))
		t3 := newMessage(tenantA, sess.ID, domain.RoleTool, domain.StatusComplete, at(time.Minute))
		t1.ID, t2.ID, t3.ID = idHigh, idMid, idLow
		e.createMessages(t1, t2)
		e.createMessages(t3)
		list, err := e.Messages.ListMessages(e.ctx, tenantA, sess.ID, domain.MessageListOptions{})
		must(t, "ListMessages", err)
		equalIDs(t, "ListMessages order", messageIDs(list), []string{m0.ID, m1.ID, m2.ID, t1.ID, t2.ID, t3.ID})
	})

	s.run(t, "ListLimitAndBefore", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		other := e.createSession(tenantA, ownerA, "Other", at(0), at(0))
		var ms []*domain.Message
		for i := range 5 {
			ms = append(ms, newMessage(tenantA, sess.ID, domain.RoleUser, domain.StatusComplete, at(time.Duration(i)*time.Second)))
		}
		e.createMessages(ms...)
		foreign := e.createMessages(newMessage(tenantA, other.ID, domain.RoleUser, domain.StatusComplete, at(time.Hour)))[0]
		id := func(i int) string { return ms[i].ID }
		for _, c := range []struct {
			opts domain.MessageListOptions
			want []string
		}{
			{domain.MessageListOptions{}, []string{id(0), id(1), id(2), id(3), id(4)}},
			{domain.MessageListOptions{Limit: 2}, []string{id(3), id(4)}},
			{domain.MessageListOptions{Limit: 5}, []string{id(0), id(1), id(2), id(3), id(4)}},
			{domain.MessageListOptions{Limit: 50}, []string{id(0), id(1), id(2), id(3), id(4)}},
			{domain.MessageListOptions{Before: id(3)}, []string{id(0), id(1), id(2)}},
			{domain.MessageListOptions{Before: id(3), Limit: 2}, []string{id(1), id(2)}},
			{domain.MessageListOptions{Before: id(1), Limit: 2}, []string{id(0)}},
			{domain.MessageListOptions{Before: id(0)}, []string{}},
		} {
			list, err := e.Messages.ListMessages(e.ctx, tenantA, sess.ID, c.opts)
			must(t, "ListMessages", err)
			equalIDs(t, fmt.Sprintf("ListMessages(%+v)", c.opts), messageIDs(list), c.want)
		}
		for _, before := range []string{domain.NewID(), foreign.ID} {
			_, err := e.Messages.ListMessages(e.ctx, tenantA, sess.ID, domain.MessageListOptions{Before: before})
			wantErr(t, "ListMessages before a message not in the session", err, domain.ErrNotFound)
		}
		_, err := e.Messages.ListMessages(e.ctx, tenantA, sess.ID, domain.MessageListOptions{Limit: -1})
		wantErr(t, "ListMessages with a negative limit", err, domain.ErrInvalid)
	})

	s.run(t, "ListUnknownSession", func(t *testing.T, e *env) {
		e.seedMessage(tenantA)
		_, err := e.Messages.ListMessages(e.ctx, tenantA, domain.NewID(), domain.MessageListOptions{})
		wantErr(t, "ListMessages of an unknown session", err, domain.ErrNotFound)
	})

	s.run(t, "UpdateRoundTrip", func(t *testing.T, e *env) {
		_, orig := e.seedMessage(tenantA)
		other := e.createSession(tenantA, ownerA, "Other", at(0), at(0))
		upd := richMessage(tenantA, other.ID, at(time.Hour)) // Session, Role, Attachments, CreatedAt must be ignored
		upd.ID = orig.ID
		upd.Role = domain.RoleSystem
		upd.Status = domain.StatusComplete
		upd.UpdatedAt = at(2 * time.Hour)
		sent := *upd
		must(t, "UpdateMessage", e.Messages.UpdateMessage(e.ctx, upd))

		want := orig
		want.Parts = allParts()
		want.Status = domain.StatusComplete
		want.RunID = sent.RunID
		want.Metadata = sent.Metadata
		want.Citations = sent.Citations
		want.UpdatedAt = at(2 * time.Hour)
		got, err := e.Messages.GetMessage(e.ctx, tenantA, orig.ID)
		must(t, "GetMessage", err)
		equal(t, "message after update", *got, want, canonMessage)
		checkOpaque(t, got.Parts)
	})

	s.run(t, "UpdateClearsFields", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		orig := e.createMessages(richMessage(tenantA, sess.ID, at(time.Second)))[0]
		upd := orig
		upd.Parts = []domain.Part{domain.TextPart("short")}
		upd.RunID = ""
		upd.Metadata = domain.MessageMetadata{}
		upd.Citations = nil
		upd.Status = domain.StatusFailed
		upd.UpdatedAt = at(time.Hour)
		must(t, "UpdateMessage", e.Messages.UpdateMessage(e.ctx, &upd))
		got, err := e.Messages.GetMessage(e.ctx, tenantA, orig.ID)
		must(t, "GetMessage", err)
		// A failed message holds no run: its lease and cancel request go.
		want := upd
		want.LeaseUntil, want.CancelRequested = time.Time{}, false
		equal(t, "message after update", *got, want, canonMessage)
	})

	s.run(t, "UpdateUnknown", func(t *testing.T, e *env) {
		sess, _ := e.seedMessage(tenantA)
		m := newMessage(tenantA, sess.ID, domain.RoleUser, domain.StatusComplete, at(0))
		wantErr(t, "UpdateMessage of an unknown id", e.Messages.UpdateMessage(e.ctx, m), domain.ErrNotFound)
		_, err := e.Messages.GetMessage(e.ctx, tenantA, m.ID)
		wantErr(t, "GetMessage after failed update", err, domain.ErrNotFound)
	})

	s.run(t, "UpdateInvalidStatus", func(t *testing.T, e *env) {
		_, orig := e.seedMessage(tenantA)
		upd := orig
		upd.Status = "done"
		upd.Parts = []domain.Part{domain.TextPart("changed")}
		wantErr(t, "UpdateMessage with an unknown status", e.Messages.UpdateMessage(e.ctx, &upd), domain.ErrInvalid)
		got, err := e.Messages.GetMessage(e.ctx, tenantA, orig.ID)
		must(t, "GetMessage", err)
		equal(t, "message after rejected update", *got, orig, canonMessage)
	})

	s.group(t, "Claim", s.claimTests)

	s.run(t, "FailStale", func(t *testing.T, e *env) {
		sessA := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		sessB := e.createSession(tenantB, ownerA, "Chat", at(0), at(0))
		cutoff := at(10 * time.Minute)
		mk := func(sess domain.Session, status domain.MessageStatus, updated time.Time, runID string) *domain.Message {
			m := newMessage(sess.TenantID, sess.ID, domain.RoleAssistant, status, at(0))
			m.UpdatedAt = updated
			m.RunID = runID
			m.Metadata.Model = "model-large"
			return m
		}
		stale := []*domain.Message{
			mk(sessA, domain.StatusGenerating, at(0), ""),                       // unclaimed
			mk(sessA, domain.StatusGenerating, at(time.Minute), domain.NewID()), // claimed
			mk(sessB, domain.StatusGenerating, at(0), ""),                       // other tenant
		}
		kept := []*domain.Message{
			mk(sessA, domain.StatusGenerating, at(20*time.Minute), domain.NewID()), // recent
			mk(sessA, domain.StatusGenerating, cutoff, ""),                         // exactly at cutoff
			mk(sessA, domain.StatusComplete, at(0), ""),
			mk(sessA, domain.StatusAwaitingInput, at(0), domain.NewID()),
			mk(sessA, domain.StatusFailed, at(0), ""),
			mk(sessA, domain.StatusGenerating, at(0), domain.NewID()), // leased: the reaper's, not FailStale's
		}
		kept[5].LeaseUntil = at(time.Minute)
		kept[4].Metadata.Error = &domain.MessageError{Code: "model_error", Message: "earlier failure", Time: at(0)}
		e.createMessages(stale[0], stale[1], kept[0], kept[1], kept[2], kept[3], kept[4], kept[5])
		e.createMessages(stale[2])
		staleWant := make([]domain.Message, len(stale))
		for i, m := range stale {
			staleWant[i] = *m
		}
		keptWant := make([]domain.Message, len(kept))
		for i, m := range kept {
			keptWant[i] = *m
		}

		failure := domain.MessageError{Code: "interrupted", Message: "The server restarted.", Time: at(30 * time.Minute)}
		n, err := e.Messages.FailStale(e.ctx, cutoff, failure)
		must(t, "FailStale", err)
		if n != len(stale) {
			t.Errorf("FailStale returned %d, want %d", n, len(stale))
		}
		for _, w := range staleWant {
			got, err := e.Messages.GetMessage(e.ctx, w.TenantID, w.ID)
			must(t, "GetMessage", err)
			if got.UpdatedAt.Equal(w.UpdatedAt) {
				t.Errorf("FailStale kept UpdatedAt %v of message %s, want the time of the change", got.UpdatedAt, w.ID)
			}
			w.Status = domain.StatusFailed
			w.Metadata.Error = &failure
			w.UpdatedAt = got.UpdatedAt
			equal(t, "stale message after FailStale", *got, w, canonMessage)
		}
		for _, w := range keptWant {
			got, err := e.Messages.GetMessage(e.ctx, w.TenantID, w.ID)
			must(t, "GetMessage", err)
			equal(t, fmt.Sprintf("%s message updated at %v after FailStale", w.Status, w.UpdatedAt), *got, w, canonMessage)
		}
		n, err = e.Messages.FailStale(e.ctx, cutoff, failure)
		must(t, "second FailStale", err)
		if n != 0 {
			t.Errorf("second FailStale returned %d, want 0", n)
		}
	})
}

// checkOpaque fails the test unless the provider data in parts is byte for
// byte what allParts holds. equal already compares it; this names the
// field that changed.
func checkOpaque(t *testing.T, parts []domain.Part) {
	t.Helper()
	for _, p := range parts {
		switch {
		case p.Reasoning != nil:
			if !bytes.Equal(p.Reasoning.Opaque, rawReasoningOpaque) {
				t.Errorf("Reasoning.Opaque = %q, want %q byte for byte", p.Reasoning.Opaque, rawReasoningOpaque)
			}
			if want := allParts()[1].Reasoning.Signature; p.Reasoning.Signature != want {
				t.Errorf("Reasoning.Signature = %q, want %q", p.Reasoning.Signature, want)
			}
		case p.ToolCall != nil:
			if !bytes.Equal(p.ToolCall.Opaque, rawCallOpaque) {
				t.Errorf("ToolCall.Opaque = %q, want %q byte for byte", p.ToolCall.Opaque, rawCallOpaque)
			}
			if !bytes.Equal(p.ToolCall.Arguments, rawCallArguments) {
				t.Errorf("ToolCall.Arguments = %q, want %q byte for byte", p.ToolCall.Arguments, rawCallArguments)
			}
		}
	}
}

func (s *suite) claimTests(t *testing.T) {
	s.run(t, "Succeeds", func(t *testing.T, e *env) {
		_, orig := e.seedMessage(tenantA)
		run := domain.NewID()
		before := time.Now()
		must(t, "Claim", e.Messages.Claim(e.ctx, tenantA, orig.ID, run))
		after := time.Now()
		got, err := e.Messages.GetMessage(e.ctx, tenantA, orig.ID)
		must(t, "GetMessage", err)
		// UpdatedAt is the store's current time; allow for clock skew
		// between the test and a database server.
		if got.UpdatedAt.Before(before.Add(-time.Minute)) || got.UpdatedAt.After(after.Add(time.Minute)) {
			t.Errorf("UpdatedAt after Claim = %v, want about %v", got.UpdatedAt, before)
		}
		want := orig
		want.RunID = run
		want.UpdatedAt = got.UpdatedAt
		equal(t, "message after Claim", *got, want, canonMessage)

		for _, again := range []string{domain.NewID(), run} {
			wantErr(t, "second Claim", e.Messages.Claim(e.ctx, tenantA, orig.ID, again), domain.ErrConflict)
		}
		got2, err := e.Messages.GetMessage(e.ctx, tenantA, orig.ID)
		must(t, "GetMessage", err)
		equal(t, "message after rejected claims", *got2, *got, canonMessage)
	})

	for _, c := range unclaimable {
		s.run(t, "Rejects"+c.name, func(t *testing.T, e *env) {
			orig := e.createUnclaimable(c.status, c.claimed)
			wantErr(t, "Claim", e.Messages.Claim(e.ctx, tenantA, orig.ID, domain.NewID()), domain.ErrConflict)
			got, err := e.Messages.GetMessage(e.ctx, tenantA, orig.ID)
			must(t, "GetMessage", err)
			equal(t, "message after rejected Claim", *got, orig, canonMessage)
		})
	}

	s.run(t, "Unknown", func(t *testing.T, e *env) {
		e.seedMessage(tenantA)
		wantErr(t, "Claim of an unknown message", e.Messages.Claim(e.ctx, tenantA, domain.NewID(), domain.NewID()), domain.ErrNotFound)
	})

	s.run(t, "EmptyRunID", func(t *testing.T, e *env) {
		_, orig := e.seedMessage(tenantA)
		wantErr(t, "Claim with an empty run id", e.Messages.Claim(e.ctx, tenantA, orig.ID, ""), domain.ErrInvalid)
		got, err := e.Messages.GetMessage(e.ctx, tenantA, orig.ID)
		must(t, "GetMessage", err)
		equal(t, "message after rejected Claim", *got, orig, canonMessage)
	})

	s.run(t, "Race", func(t *testing.T, e *env) {
		// Several rounds, each on a fresh message, make a lost update
		// likely to show even when the scheduler is busy.
		e.claimRaces("Claim", func(messageID, runID string, _ int) error {
			return e.Messages.Claim(e.ctx, tenantA, messageID, runID)
		}, func(round int, got domain.Message, runID string, _ int) {
			if got.RunID != runID {
				t.Errorf("round %d: RunID after the race = %q, want the winner's %q", round, got.RunID, runID)
			}
		})
	})
}
