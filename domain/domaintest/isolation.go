package domaintest

import (
	"fmt"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// sessionData is a session with one of everything hanging off it.
type sessionData struct {
	session domain.Session
	// messages holds a complete user message, an unclaimed generating
	// assistant message and a generating assistant message claimed by
	// leasedRun with a lease, in that order.
	messages   []domain.Message
	leasedRun  string
	checkpoint domain.Checkpoint
	artifact   domain.Artifact
	runID      string
	events     []domain.RunEvent
	// results holds two named results, oldest first.
	results []domain.StoredResult
}

// seedSession stores a session of ownerA in tenant with three messages, a
// checkpoint and an artifact of the unclaimed assistant message, three run
// events and two named results.
func (e *env) seedSession(tenant string) sessionData {
	e.t.Helper()
	var d sessionData
	d.session = e.createSession(tenant, ownerA, "Seeded", at(0), at(time.Minute))
	leased := newMessage(tenant, d.session.ID, domain.RoleAssistant, domain.StatusGenerating, at(3*time.Second))
	d.leasedRun = domain.NewID()
	leased.RunID, leased.LeaseUntil = d.leasedRun, at(time.Hour)
	d.messages = e.createMessages(
		newMessage(tenant, d.session.ID, domain.RoleUser, domain.StatusComplete, at(time.Second)),
		newMessage(tenant, d.session.ID, domain.RoleAssistant, domain.StatusGenerating, at(2*time.Second)),
		leased,
	)
	asst := d.messages[1]
	d.checkpoint = newCheckpoint(asst, at(3*time.Second))
	cp := d.checkpoint
	must(e.t, "SaveCheckpoint", e.Checkpoints.SaveCheckpoint(e.ctx, &cp))
	d.artifact = newArtifact(asst, "result.csv", at(4*time.Second))
	a := d.artifact
	must(e.t, "SaveArtifact", e.Artifacts.SaveArtifact(e.ctx, &a))
	d.runID = domain.NewID()
	d.events = newRunEvents(asst, d.runID, 1, 2, 3)
	must(e.t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, d.events...))
	named := newResult(d.session, "named", at(5*time.Second))
	named.Name = "q3_sales"
	d.results = []domain.StoredResult{
		e.putResult(newResult(d.session, "auto", at(4*time.Second))),
		e.putResult(named),
	}
	return d
}

// assertIntact fails the test unless everything seedSession stored for d
// reads back unchanged.
func (d sessionData) assertIntact(t *testing.T, e *env) {
	t.Helper()
	tenant := d.session.TenantID
	got, err := e.Sessions.GetSession(e.ctx, tenant, d.session.ID)
	if err != nil {
		t.Errorf("GetSession of the seeded session: %v", err)
	} else {
		equal(t, "seeded session", *got, d.session, canonSession)
	}
	page, err := e.Sessions.ListSessions(e.ctx, tenant, d.session.OwnerID, domain.ListOptions{PageSize: domain.MaxPageSize})
	if err != nil {
		t.Errorf("ListSessions: %v", err)
	} else {
		found := false
		for _, s := range page.Items {
			if s.ID == d.session.ID {
				found = true
				equal(t, "seeded session in ListSessions", s, d.session, canonSession)
			}
		}
		if !found {
			t.Errorf("ListSessions(%s, %s) lacks the seeded session %s", tenant, d.session.OwnerID, d.session.ID)
		}
	}
	msgs, err := e.Messages.ListMessages(e.ctx, tenant, d.session.ID, domain.MessageListOptions{})
	if err != nil {
		t.Errorf("ListMessages of the seeded session: %v", err)
	} else {
		equalSlices(t, "seeded messages", msgs, d.messages, canonMessage)
	}
	for _, m := range d.messages {
		got, err := e.Messages.GetMessage(e.ctx, tenant, m.ID)
		if err != nil {
			t.Errorf("GetMessage of a seeded message: %v", err)
		} else {
			equal(t, "seeded message", *got, m, canonMessage)
		}
	}
	cp, err := e.Checkpoints.GetCheckpoint(e.ctx, tenant, d.checkpoint.MessageID)
	if err != nil {
		t.Errorf("GetCheckpoint of the seeded message: %v", err)
	} else {
		equal(t, "seeded checkpoint", *cp, d.checkpoint, canonCheckpoint)
	}
	a, err := e.Artifacts.GetArtifact(e.ctx, tenant, d.artifact.ID)
	if err != nil {
		t.Errorf("GetArtifact of the seeded artifact: %v", err)
	} else {
		equal(t, "seeded artifact", *a, d.artifact, canonArtifact)
	}
	arts, err := e.Artifacts.ListArtifacts(e.ctx, tenant, d.artifact.MessageID)
	if err != nil {
		t.Errorf("ListArtifacts of the seeded message: %v", err)
	} else {
		equalSlices(t, "seeded artifacts", arts, []domain.Artifact{d.artifact}, canonArtifact)
	}
	evs, err := e.RunEvents.ListRunEvents(e.ctx, tenant, d.runID, 0, 0)
	if err != nil {
		t.Errorf("ListRunEvents of the seeded run: %v", err)
	} else {
		equalSlices(t, "seeded run events", evs, d.events, canonRunEvent)
	}
	names, err := e.Results.ListResults(e.ctx, tenant, d.session.ID)
	if err != nil {
		t.Errorf("ListResults of the seeded session: %v", err)
	} else {
		equalIDs(t, "seeded result names", names, []string{d.results[0].Name, d.results[1].Name})
	}
	for _, r := range d.results {
		got, err := e.Results.GetResult(e.ctx, tenant, d.session.ID, r.Name)
		if err != nil {
			t.Errorf("GetResult %q of the seeded session: %v", r.Name, err)
		} else {
			equal(t, "seeded result", *got, r, canonResult)
		}
	}
}

// isolationTests store data in tenant A, call one method with tenant B and
// A's ids, check the answer is "not found" or empty, and check A's data is
// unchanged. Methods that create data may succeed in tenant B, or fail,
// but must not touch A. Every tenant-scoped method of every repository has
// a case; FailStale, FailExpired and TakeExpiredCheckpoints sweep across
// tenants by design and have their own tests, which check each tenant's
// messages and checkpoints.
func (s *suite) isolationTests(t *testing.T) {
	for _, c := range []struct {
		name string
		op   func(t *testing.T, e *env, a *sessionData)
	}{
		{"CreateSession", func(t *testing.T, e *env, a *sessionData) {
			sess := domain.Session{ID: a.session.ID, TenantID: tenantB, OwnerID: ownerA, Title: "Hijack", CreatedAt: at(time.Hour), UpdatedAt: at(time.Hour)}
			_ = e.Sessions.CreateSession(e.ctx, &sess) // may succeed or conflict
		}},
		{"GetSession", func(t *testing.T, e *env, a *sessionData) {
			_, err := e.Sessions.GetSession(e.ctx, tenantB, a.session.ID)
			wantErr(t, "GetSession", err, domain.ErrNotFound)
		}},
		{"ListSessions", func(t *testing.T, e *env, a *sessionData) {
			p, err := e.Sessions.ListSessions(e.ctx, tenantB, a.session.OwnerID, domain.ListOptions{})
			must(t, "ListSessions", err)
			if p.Total != 0 || len(p.Items) != 0 {
				t.Errorf("ListSessions in tenant B: Total %d, %d items, want none", p.Total, len(p.Items))
			}
		}},
		{"UpdateSession", func(t *testing.T, e *env, a *sessionData) {
			upd := a.session
			upd.TenantID, upd.Title, upd.UpdatedAt = tenantB, "Hijacked", at(time.Hour)
			wantErr(t, "UpdateSession", e.Sessions.UpdateSession(e.ctx, &upd), domain.ErrNotFound)
		}},
		{"DeleteSession", func(t *testing.T, e *env, a *sessionData) {
			wantErr(t, "DeleteSession", e.Sessions.DeleteSession(e.ctx, tenantB, a.session.ID), domain.ErrNotFound)
		}},
		{"CreateMessagesInSession", func(t *testing.T, e *env, a *sessionData) {
			m := newMessage(tenantB, a.session.ID, domain.RoleUser, domain.StatusComplete, at(time.Hour))
			wantErr(t, "CreateMessages", e.Messages.CreateMessages(e.ctx, m), domain.ErrNotFound)
		}},
		{"CreateMessagesReusingID", func(t *testing.T, e *env, a *sessionData) {
			own := e.createSession(tenantB, ownerA, "B", at(0), at(0))
			m := newMessage(tenantB, own.ID, domain.RoleUser, domain.StatusComplete, at(time.Hour))
			m.ID = a.messages[1].ID
			_ = e.Messages.CreateMessages(e.ctx, m) // may succeed or conflict
		}},
		{"GetMessage", func(t *testing.T, e *env, a *sessionData) {
			_, err := e.Messages.GetMessage(e.ctx, tenantB, a.messages[0].ID)
			wantErr(t, "GetMessage", err, domain.ErrNotFound)
		}},
		{"ListMessages", func(t *testing.T, e *env, a *sessionData) {
			_, err := e.Messages.ListMessages(e.ctx, tenantB, a.session.ID, domain.MessageListOptions{})
			wantErr(t, "ListMessages", err, domain.ErrNotFound)
		}},
		{"UpdateMessage", func(t *testing.T, e *env, a *sessionData) {
			upd := a.messages[1]
			upd.TenantID, upd.Status, upd.Parts = tenantB, domain.StatusComplete, []domain.Part{domain.TextPart("hijacked")}
			wantErr(t, "UpdateMessage", e.Messages.UpdateMessage(e.ctx, &upd), domain.ErrNotFound)
		}},
		{"Claim", func(t *testing.T, e *env, a *sessionData) {
			wantErr(t, "Claim", e.Messages.Claim(e.ctx, tenantB, a.messages[1].ID, domain.NewID()), domain.ErrNotFound)
		}},
		{"ClaimRun", func(t *testing.T, e *env, a *sessionData) {
			err := e.Runs.ClaimRun(e.ctx, tenantB, a.messages[1].ID, domain.NewID(), at(time.Hour))
			wantErr(t, "ClaimRun", err, domain.ErrNotFound)
		}},
		{"RenewLease", func(t *testing.T, e *env, a *sessionData) {
			_, err := e.Runs.RenewLease(e.ctx, tenantB, a.messages[2].ID, a.leasedRun, at(2*time.Hour))
			wantErr(t, "RenewLease", err, domain.ErrNotFound)
		}},
		{"RequestCancel", func(t *testing.T, e *env, a *sessionData) {
			wantErr(t, "RequestCancel", e.Runs.RequestCancel(e.ctx, tenantB, a.messages[2].ID), domain.ErrNotFound)
		}},
		{"FinishRun", func(t *testing.T, e *env, a *sessionData) {
			upd := a.messages[2]
			upd.TenantID, upd.Status, upd.Parts = tenantB, domain.StatusComplete, []domain.Part{domain.TextPart("hijacked")}
			wantErr(t, "FinishRun", e.Runs.FinishRun(e.ctx, &upd, a.leasedRun), domain.ErrNotFound)
		}},
		{"SaveCheckpoint", func(t *testing.T, e *env, a *sessionData) {
			cp := a.checkpoint
			cp.ID, cp.TenantID, cp.Data = domain.NewID(), tenantB, []byte(`{"hijacked":true}`)
			_ = e.Checkpoints.SaveCheckpoint(e.ctx, &cp) // may succeed or fail
		}},
		{"GetCheckpoint", func(t *testing.T, e *env, a *sessionData) {
			_, err := e.Checkpoints.GetCheckpoint(e.ctx, tenantB, a.checkpoint.MessageID)
			wantErr(t, "GetCheckpoint", err, domain.ErrNotFound)
		}},
		{"TakeCheckpoint", func(t *testing.T, e *env, a *sessionData) {
			_, err := e.Checkpoints.TakeCheckpoint(e.ctx, tenantB, a.checkpoint.MessageID)
			wantErr(t, "TakeCheckpoint", err, domain.ErrNotFound)
		}},
		{"DeleteCheckpoint", func(t *testing.T, e *env, a *sessionData) {
			err := e.Checkpoints.DeleteCheckpoint(e.ctx, tenantB, a.checkpoint.MessageID)
			wantErr(t, "DeleteCheckpoint", err, domain.ErrNotFound)
		}},
		{"SaveArtifactReusingID", func(t *testing.T, e *env, a *sessionData) {
			art := a.artifact
			art.TenantID, art.Name = tenantB, "hijacked.csv"
			_ = e.Artifacts.SaveArtifact(e.ctx, &art) // may succeed or conflict
		}},
		{"GetArtifact", func(t *testing.T, e *env, a *sessionData) {
			_, err := e.Artifacts.GetArtifact(e.ctx, tenantB, a.artifact.ID)
			wantErr(t, "GetArtifact", err, domain.ErrNotFound)
		}},
		{"ListArtifacts", func(t *testing.T, e *env, a *sessionData) {
			list, err := e.Artifacts.ListArtifacts(e.ctx, tenantB, a.artifact.MessageID)
			must(t, "ListArtifacts", err)
			equalIDs(t, "ListArtifacts in tenant B", artifactIDs(list), []string{})
		}},
		{"DeleteArtifact", func(t *testing.T, e *env, a *sessionData) {
			wantErr(t, "DeleteArtifact", e.Artifacts.DeleteArtifact(e.ctx, tenantB, a.artifact.ID), domain.ErrNotFound)
		}},
		{"AppendRunEvents", func(t *testing.T, e *env, a *sessionData) {
			evs := append([]domain.RunEvent(nil), a.events...)
			for i := range evs {
				evs[i].TenantID = tenantB
				evs[i].Seq += 10
			}
			_ = e.RunEvents.AppendRunEvents(e.ctx, evs...) // may succeed or fail
		}},
		{"ListRunEvents", func(t *testing.T, e *env, a *sessionData) {
			list, err := e.RunEvents.ListRunEvents(e.ctx, tenantB, a.runID, 0, 0)
			must(t, "ListRunEvents", err)
			equalIDs(t, "ListRunEvents in tenant B", eventSeqs(list), []int64{})
		}},
		{"SubscribeRunEvents", func(t *testing.T, e *env, a *sessionData) {
			n, ok := e.RunEvents.(domain.RunEventNotifier)
			if !ok {
				t.Skipf("RunEvents (%T) does not implement domain.RunEventNotifier", e.RunEvents)
			}
			ch, stop, err := n.SubscribeRunEvents(e.ctx, tenantB, a.runID)
			must(t, "SubscribeRunEvents", err)
			defer stop()
			barrier, _ := e.subscribe(e.ctx, tenantA, a.runID)
			more := newRunEvents(a.messages[1], a.runID, 4)
			must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, more...))
			a.events = append(a.events, more...)
			waitSignal(t, "tenant A's subscriber", barrier)
			if !quiet(ch, quietPeriod) {
				t.Errorf("tenant B's subscriber to run %s got a signal for tenant A's append", a.runID)
			}
		}},
		{"PutResult", func(t *testing.T, e *env, a *sessionData) {
			for _, name := range []string{"", a.results[1].Name} {
				r := domain.StoredResult{TenantID: tenantB, SessionID: a.session.ID, Name: name, Data: resultData("hijack")}
				_, err := e.Results.PutResult(e.ctx, &r)
				wantErr(t, fmt.Sprintf("PutResult named %q", name), err, domain.ErrNotFound)
			}
		}},
		{"GetResult", func(t *testing.T, e *env, a *sessionData) {
			_, err := e.Results.GetResult(e.ctx, tenantB, a.session.ID, a.results[0].Name)
			wantErr(t, "GetResult", err, domain.ErrNotFound)
		}},
		{"ListResults", func(t *testing.T, e *env, a *sessionData) {
			_, err := e.Results.ListResults(e.ctx, tenantB, a.session.ID)
			wantErr(t, "ListResults", err, domain.ErrNotFound)
		}},
	} {
		s.run(t, c.name, func(t *testing.T, e *env) {
			a := e.seedSession(tenantA)
			c.op(t, e, &a)
			a.assertIntact(t, e)
		})
	}
}

func (s *suite) cascadeTests(t *testing.T) {
	s.run(t, "DeleteSession", func(t *testing.T, e *env) {
		gone := e.seedSession(tenantA)
		kept := e.seedSession(tenantA)
		otherTenant := e.seedSession(tenantB)
		must(t, "DeleteSession", e.Sessions.DeleteSession(e.ctx, tenantA, gone.session.ID))

		_, err := e.Sessions.GetSession(e.ctx, tenantA, gone.session.ID)
		wantErr(t, "GetSession of the deleted session", err, domain.ErrNotFound)
		_, err = e.Messages.ListMessages(e.ctx, tenantA, gone.session.ID, domain.MessageListOptions{})
		wantErr(t, "ListMessages of the deleted session", err, domain.ErrNotFound)
		for _, m := range gone.messages {
			_, err := e.Messages.GetMessage(e.ctx, tenantA, m.ID)
			wantErr(t, "GetMessage of a deleted message", err, domain.ErrNotFound)
		}
		wantErr(t, "Claim of a deleted message", e.Messages.Claim(e.ctx, tenantA, gone.messages[1].ID, domain.NewID()), domain.ErrNotFound)
		_, err = e.Checkpoints.GetCheckpoint(e.ctx, tenantA, gone.checkpoint.MessageID)
		wantErr(t, "GetCheckpoint of a deleted message", err, domain.ErrNotFound)
		_, err = e.Artifacts.GetArtifact(e.ctx, tenantA, gone.artifact.ID)
		wantErr(t, "GetArtifact of a deleted message", err, domain.ErrNotFound)
		arts, err := e.Artifacts.ListArtifacts(e.ctx, tenantA, gone.artifact.MessageID)
		must(t, "ListArtifacts", err)
		equalIDs(t, "ListArtifacts of a deleted message", artifactIDs(arts), []string{})
		evs, err := e.RunEvents.ListRunEvents(e.ctx, tenantA, gone.runID, 0, 0)
		must(t, "ListRunEvents", err)
		equalIDs(t, "ListRunEvents of the deleted session's run", eventSeqs(evs), []int64{})
		_, err = e.Runs.RenewLease(e.ctx, tenantA, gone.messages[2].ID, gone.leasedRun, at(2*time.Hour))
		wantErr(t, "RenewLease of a deleted message", err, domain.ErrNotFound)
		wantErr(t, "RequestCancel of a deleted message", e.Runs.RequestCancel(e.ctx, tenantA, gone.messages[2].ID), domain.ErrNotFound)
		finished := gone.messages[2]
		finished.Status = domain.StatusComplete
		wantErr(t, "FinishRun of a deleted message", e.Runs.FinishRun(e.ctx, &finished, gone.leasedRun), domain.ErrNotFound)
		_, err = e.Results.ListResults(e.ctx, tenantA, gone.session.ID)
		wantErr(t, "ListResults of the deleted session", err, domain.ErrNotFound)
		// A new session with the same id starts without results: they
		// were deleted, not only hidden.
		again := gone.session
		must(t, "CreateSession with the deleted id", e.Sessions.CreateSession(e.ctx, &again))
		names, err := e.Results.ListResults(e.ctx, tenantA, gone.session.ID)
		must(t, "ListResults of the re-created session", err)
		equalIDs(t, "ListResults of the re-created session", names, []string{})
		e.checkGone("re-created session", gone.session, gone.results[0].Name, gone.results[1].Name)

		kept.assertIntact(t, e)
		otherTenant.assertIntact(t, e)
	})
}
