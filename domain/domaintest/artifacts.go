package domaintest

import (
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

func (s *suite) artifactTests(t *testing.T) {
	s.run(t, "SaveGetRoundTrip", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		want := newArtifact(m, "sales.csv", at(time.Minute))
		in := want
		must(t, "SaveArtifact", e.Artifacts.SaveArtifact(e.ctx, &in))
		got, err := e.Artifacts.GetArtifact(e.ctx, tenantA, want.ID)
		must(t, "GetArtifact", err)
		equal(t, "GetArtifact", *got, want, canonArtifact)
	})

	s.run(t, "SaveDuplicateID", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		orig := newArtifact(m, "first.csv", at(time.Minute))
		in := orig
		must(t, "SaveArtifact", e.Artifacts.SaveArtifact(e.ctx, &in))
		dup := newArtifact(m, "second.csv", at(2*time.Minute))
		dup.ID = orig.ID
		wantErr(t, "SaveArtifact with a used id", e.Artifacts.SaveArtifact(e.ctx, &dup), domain.ErrConflict)
		got, err := e.Artifacts.GetArtifact(e.ctx, tenantA, orig.ID)
		must(t, "GetArtifact", err)
		equal(t, "artifact after the rejected save", *got, orig, canonArtifact)
		list, err := e.Artifacts.ListArtifacts(e.ctx, tenantA, m.ID)
		must(t, "ListArtifacts", err)
		equalSlices(t, "ListArtifacts", list, []domain.Artifact{orig}, canonArtifact)
	})

	s.run(t, "GetUnknown", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		a := newArtifact(m, "a.csv", at(0))
		must(t, "SaveArtifact", e.Artifacts.SaveArtifact(e.ctx, &a))
		_, err := e.Artifacts.GetArtifact(e.ctx, tenantA, domain.NewID())
		wantErr(t, "GetArtifact of an unknown id", err, domain.ErrNotFound)
	})

	s.run(t, "ListInCreationOrder", func(t *testing.T, e *env) {
		sess, m := e.seedMessage(tenantA)
		other := e.createMessages(newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusComplete, at(time.Minute)))[0]
		a1 := newArtifact(m, "third.csv", at(3*time.Minute))
		a2 := newArtifact(m, "first.csv", at(1*time.Minute))
		b1 := newArtifact(other, "other.csv", at(90*time.Second))
		a3 := newArtifact(m, "second.csv", at(2*time.Minute))
		for _, a := range []domain.Artifact{a1, a2, b1, a3} {
			must(t, "SaveArtifact", e.Artifacts.SaveArtifact(e.ctx, &a))
		}
		list, err := e.Artifacts.ListArtifacts(e.ctx, tenantA, m.ID)
		must(t, "ListArtifacts", err)
		equalSlices(t, "ListArtifacts", list, []domain.Artifact{a2, a3, a1}, canonArtifact)
		list, err = e.Artifacts.ListArtifacts(e.ctx, tenantA, other.ID)
		must(t, "ListArtifacts", err)
		equalSlices(t, "ListArtifacts of the other message", list, []domain.Artifact{b1}, canonArtifact)
	})

	s.run(t, "ListEmpty", func(t *testing.T, e *env) {
		sess, m := e.seedMessage(tenantA)
		other := e.createMessages(newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusComplete, at(time.Minute)))[0]
		a := newArtifact(other, "a.csv", at(0))
		must(t, "SaveArtifact", e.Artifacts.SaveArtifact(e.ctx, &a))
		for _, id := range []string{m.ID, domain.NewID()} {
			list, err := e.Artifacts.ListArtifacts(e.ctx, tenantA, id)
			must(t, "ListArtifacts", err)
			equalIDs(t, "ListArtifacts of a message without artifacts", artifactIDs(list), []string{})
		}
	})

	s.run(t, "Delete", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		gone := newArtifact(m, "gone.csv", at(time.Minute))
		kept := newArtifact(m, "kept.csv", at(2*time.Minute))
		for _, a := range []domain.Artifact{gone, kept} {
			must(t, "SaveArtifact", e.Artifacts.SaveArtifact(e.ctx, &a))
		}
		must(t, "DeleteArtifact", e.Artifacts.DeleteArtifact(e.ctx, tenantA, gone.ID))
		_, err := e.Artifacts.GetArtifact(e.ctx, tenantA, gone.ID)
		wantErr(t, "GetArtifact after Delete", err, domain.ErrNotFound)
		wantErr(t, "second DeleteArtifact", e.Artifacts.DeleteArtifact(e.ctx, tenantA, gone.ID), domain.ErrNotFound)
		list, err := e.Artifacts.ListArtifacts(e.ctx, tenantA, m.ID)
		must(t, "ListArtifacts", err)
		equalSlices(t, "ListArtifacts after Delete", list, []domain.Artifact{kept}, canonArtifact)
	})

	s.group(t, "SaveInvalid", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			modify func(*domain.Artifact)
		}{
			{"EmptyID", func(a *domain.Artifact) { a.ID = "" }},
			{"EmptyTenant", func(a *domain.Artifact) { a.TenantID = "" }},
			{"EmptyMessage", func(a *domain.Artifact) { a.MessageID = "" }},
		} {
			s.run(t, c.name, func(t *testing.T, e *env) {
				_, m := e.seedMessage(tenantA)
				a := newArtifact(m, "a.csv", at(time.Minute))
				c.modify(&a)
				wantErr(t, "SaveArtifact", e.Artifacts.SaveArtifact(e.ctx, &a), domain.ErrInvalid)
				_, err := e.Artifacts.GetArtifact(e.ctx, a.TenantID, a.ID)
				wantErr(t, "GetArtifact after the rejected save", err, domain.ErrNotFound)
				list, err := e.Artifacts.ListArtifacts(e.ctx, a.TenantID, a.MessageID)
				must(t, "ListArtifacts", err)
				equalIDs(t, "ListArtifacts after the rejected save", artifactIDs(list), []string{})
			})
		}
	})
}
