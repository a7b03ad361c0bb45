package domaintest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// outcome returns claimed as its run would record it with status: new
// parts, metadata and citations, and an updated time.
func outcome(claimed domain.Message, status domain.MessageStatus) domain.Message {
	m := claimed
	m.Status = status
	m.Parts = []domain.Part{domain.TextPart("Revenue grew 12% in Q3.")}
	m.Metadata = domain.MessageMetadata{Model: "model-large", StopReason: "end_turn",
		Usage: domain.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}
	if status == domain.StatusFailed {
		m.Metadata.Error = &domain.MessageError{Code: "model_error", Message: "The model failed.", Time: at(time.Hour)}
	}
	m.Citations = []domain.Citation{{Source: "kb", DocumentID: "doc-1", Title: "Glossary"}}
	m.UpdatedAt = at(time.Hour)
	return m
}

func (s *suite) finishRunTests(t *testing.T) {
	for _, status := range []domain.MessageStatus{domain.StatusComplete, domain.StatusFailed, domain.StatusAwaitingInput} {
		s.run(t, "Records"+string(status), func(t *testing.T, e *env) {
			claimed, run := e.claimedMessage(tenantA, at(time.Minute))
			must(t, "RequestCancel", e.Runs.RequestCancel(e.ctx, tenantA, claimed.ID))
			upd := outcome(claimed, status)
			// What FinishRun must ignore or clear.
			upd.Role, upd.SessionID, upd.CreatedAt = domain.RoleSystem, domain.NewID(), at(time.Hour)
			upd.LeaseUntil, upd.CancelRequested = at(time.Hour), true
			must(t, "FinishRun", e.Runs.FinishRun(e.ctx, &upd, run))
			want := claimed
			want.Status, want.Parts, want.Metadata, want.Citations = status, upd.Parts, upd.Metadata, upd.Citations
			want.UpdatedAt = at(time.Hour)
			want.LeaseUntil, want.CancelRequested = time.Time{}, false
			equal(t, "message after FinishRun", e.getMessage(tenantA, claimed.ID), want, canonMessage)

			// The run is over: a second outcome, a renewal and a reaper
			// sweep find nothing to change.
			again := outcome(claimed, domain.StatusFailed)
			wantErr(t, "second FinishRun", e.Runs.FinishRun(e.ctx, &again, run), domain.ErrConflict)
			_, err := e.Runs.RenewLease(e.ctx, tenantA, claimed.ID, run, at(2*time.Hour))
			wantErr(t, "RenewLease after FinishRun", err, domain.ErrConflict)
			got, err := e.Runs.FailExpired(e.ctx, at(3*time.Hour), domain.MessageError{Code: "expired"}, 0)
			must(t, "FailExpired", err)
			equalIDs(t, "FailExpired after FinishRun", messageIDs(got), []string{})
			equal(t, "message after the rejected calls", e.getMessage(tenantA, claimed.ID), want, canonMessage)
		})
	}

	s.run(t, "ZeroUpdatedAt", func(t *testing.T, e *env) {
		claimed, run := e.claimedMessage(tenantA, at(time.Minute))
		upd := outcome(claimed, domain.StatusComplete)
		upd.UpdatedAt = time.Time{}
		before := time.Now()
		must(t, "FinishRun", e.Runs.FinishRun(e.ctx, &upd, run))
		after := time.Now()
		checkStoreTime(t, "UpdatedAt written back by FinishRun", upd.UpdatedAt, before, after)
		got := e.getMessage(tenantA, claimed.ID)
		// Stores may keep less precision than time.Time (PostgreSQL:
		// microseconds).
		if d := got.UpdatedAt.Sub(upd.UpdatedAt).Abs(); d >= time.Microsecond {
			t.Errorf("stored UpdatedAt = %v, want the one written back, %v", got.UpdatedAt, upd.UpdatedAt)
		}
	})

	// Each case leaves the message in a state its run no longer owns;
	// FinishRun must refuse with ErrConflict and change nothing.
	for _, c := range lostRuns {
		s.run(t, "Conflict"+c.name, func(t *testing.T, e *env) {
			claimed, run := e.claimedMessage(tenantA, at(time.Minute))
			finishRun := c.setup(t, e, claimed, run)
			before := e.getMessage(tenantA, claimed.ID)
			upd := outcome(claimed, domain.StatusComplete)
			upd.RunID = finishRun
			wantErr(t, "FinishRun", e.Runs.FinishRun(e.ctx, &upd, finishRun), domain.ErrConflict)
			equal(t, "message after rejected FinishRun", e.getMessage(tenantA, claimed.ID), before, canonMessage)
		})
	}

	s.run(t, "ConflictUnclaimed", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		run := domain.NewID()
		upd := outcome(m, domain.StatusComplete)
		upd.RunID = run
		wantErr(t, "FinishRun of an unclaimed message", e.Runs.FinishRun(e.ctx, &upd, run), domain.ErrConflict)
		equal(t, "message after rejected FinishRun", e.getMessage(tenantA, m.ID), m, canonMessage)
	})

	s.run(t, "Unknown", func(t *testing.T, e *env) {
		claimed, run := e.claimedMessage(tenantA, at(time.Minute))
		upd := outcome(claimed, domain.StatusComplete)
		upd.ID = domain.NewID()
		wantErr(t, "FinishRun of an unknown message", e.Runs.FinishRun(e.ctx, &upd, run), domain.ErrNotFound)
		equal(t, "claimed message after FinishRun of another id", e.getMessage(tenantA, claimed.ID), claimed, canonMessage)
	})

	s.run(t, "Invalid", func(t *testing.T, e *env) {
		claimed, run := e.claimedMessage(tenantA, at(time.Minute))
		wantErr(t, "FinishRun of a nil message", e.Runs.FinishRun(e.ctx, nil, run), domain.ErrInvalid)
		for _, c := range []struct {
			what   string
			modify func(m *domain.Message) (finishRun string)
		}{
			{"an empty run id", func(m *domain.Message) string { m.RunID = ""; return "" }},
			{"a generating status", func(m *domain.Message) string { m.Status = domain.StatusGenerating; return run }},
			{"an unknown status", func(m *domain.Message) string { m.Status = "done"; return run }},
			{"the message naming another run", func(m *domain.Message) string { m.RunID = domain.NewID(); return run }},
		} {
			upd := outcome(claimed, domain.StatusComplete)
			finishRun := c.modify(&upd)
			wantErr(t, "FinishRun with "+c.what, e.Runs.FinishRun(e.ctx, &upd, finishRun), domain.ErrInvalid)
		}
		equal(t, "message after rejected FinishRun calls", e.getMessage(tenantA, claimed.ID), claimed, canonMessage)
	})

	// The runner records its outcome while a reaper may find its lease
	// expired: exactly one of them changes the message, and the message
	// ends as the winner wrote it.
	s.run(t, "RaceWithFailExpired", func(t *testing.T, e *env) {
		sess, _ := e.seedMessage(tenantA)
		failure := domain.MessageError{Code: "lease_expired", Message: "The run stopped responding.", Time: at(time.Hour)}
		finishWins, reaperWins := 0, 0
		for round := range 50 {
			m := newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusGenerating, at(time.Duration(round)*time.Second))
			e.createMessages(m)
			run := domain.NewID()
			must(t, "ClaimRun", e.Runs.ClaimRun(e.ctx, tenantA, m.ID, run, at(time.Minute)))
			claimed := e.getMessage(tenantA, m.ID)
			upd := outcome(claimed, domain.StatusComplete)

			var finishErr, reapErr error
			var reaped []domain.Message
			start := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				<-start
				finishErr = e.Runs.FinishRun(e.ctx, &upd, run)
			})
			wg.Go(func() {
				<-start
				reaped, reapErr = e.Runs.FailExpired(e.ctx, at(time.Hour), failure, 0)
			})
			close(start)
			wg.Wait()
			must(t, "FailExpired", reapErr)
			got := e.getMessage(tenantA, m.ID)
			switch {
			case finishErr == nil && len(reaped) == 0:
				finishWins++
				if got.Status != domain.StatusComplete || got.Metadata.Error != nil {
					t.Fatalf("round %d: FinishRun won but the message is %s with error %+v", round, got.Status, got.Metadata.Error)
				}
			case errors.Is(finishErr, domain.ErrConflict) && len(reaped) == 1 && reaped[0].ID == m.ID:
				reaperWins++
				if got.Status != domain.StatusFailed || got.Metadata.Error == nil || got.Metadata.Error.Code != failure.Code ||
					got.Text() != claimed.Text() {
					t.Fatalf("round %d: FailExpired won but the message is %s with error %+v and text %q",
						round, got.Status, got.Metadata.Error, got.Text())
				}
			default:
				t.Fatalf("round %d: FinishRun = %v and FailExpired returned %d messages (%v); want exactly one of them to change the message",
					round, finishErr, len(reaped), messageIDs(reaped))
			}
		}
		t.Logf("FinishRun won %d rounds, FailExpired %d", finishWins, reaperWins)
	})
}
