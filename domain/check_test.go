package domain_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// fieldsOf returns the names of the fields err reports invalid, after
// checking that err matches domain.ErrInvalid (or is nil).
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	if !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("error %v does not match ErrInvalid", err)
	}
	var names []string
	for _, f := range domain.FieldErrors(err) {
		if f.Reason == "" {
			t.Fatalf("field %s has no reason in %v", f.Field, err)
		}
		names = append(names, f.Field)
	}
	return names
}

func TestCheckFunctionsNameEveryInvalidField(t *testing.T) {
	t.Parallel()
	id := domain.NewID()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msg := func(mod func(*domain.Message)) *domain.Message {
		m := &domain.Message{ID: domain.NewID(), TenantID: "t1", SessionID: id, Role: domain.RoleUser,
			Status: domain.StatusComplete}
		if mod != nil {
			mod(m)
		}
		return m
	}
	outcome := &domain.Message{ID: id, TenantID: "t1", Status: domain.StatusComplete, RunID: "run-1"}
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"session ok", domain.CheckCreateSession(&domain.Session{ID: id, TenantID: "t1", OwnerID: "u1"}), nil},
		{"session nil", domain.CheckCreateSession(nil), []string{"session"}},
		{"session empty", domain.CheckCreateSession(&domain.Session{ID: "not-a-uuid"}),
			[]string{"session.id", "session.tenant_id", "session.owner_id"}},

		{"messages none", domain.CheckCreateMessages(nil), nil},
		{"messages ok", domain.CheckCreateMessages([]*domain.Message{msg(nil), msg(nil)}), nil},
		{"messages nil entry", domain.CheckCreateMessages([]*domain.Message{msg(nil), nil}), []string{"messages[1]"}},
		{"message fields", domain.CheckCreateMessages([]*domain.Message{{ID: "x"}}),
			[]string{"messages[0].id", "messages[0].tenant_id", "messages[0].session_id", "messages[0].role", "messages[0].status"}},
		{"messages mixed scope", domain.CheckCreateMessages([]*domain.Message{msg(nil), msg(func(m *domain.Message) {
			m.TenantID, m.SessionID = "t2", domain.NewID()
		})}), []string{"messages[1].tenant_id", "messages[1].session_id"}},

		{"update ok", domain.CheckUpdateMessage(msg(nil)), nil},
		{"update nil", domain.CheckUpdateMessage(nil), []string{"message"}},
		{"update status", domain.CheckUpdateMessage(msg(func(m *domain.Message) { m.Status = "done" })),
			[]string{"message.status"}},

		{"claim ok", domain.CheckClaimRun("run-1", at), nil},
		{"claim empty", domain.CheckClaimRun("", time.Time{}), []string{"run_id", "lease_until"}},
		{"renew ok", domain.CheckRenewLease("run-1", at), nil},
		{"renew empty", domain.CheckRenewLease("", time.Time{}), []string{"run_id", "until"}},

		{"finish ok", domain.CheckFinishRun(outcome, "run-1"), nil},
		{"finish nil", domain.CheckFinishRun(nil, "run-1"), []string{"message"}},
		{"finish generating, other run", domain.CheckFinishRun(msg(func(m *domain.Message) {
			m.Status, m.RunID = domain.StatusGenerating, "run-2"
		}), "run-1"), []string{"message.status", "message.run_id"}},
		{"finish bad status, no run", domain.CheckFinishRun(msg(func(m *domain.Message) { m.Status = "" }), ""),
			[]string{"run_id", "message.status"}},

		{"events none", domain.CheckAppendRunEvents(nil), nil},
		{"events ok", domain.CheckAppendRunEvents([]domain.RunEvent{{TenantID: "t1", RunID: "r1", Seq: 1}, {TenantID: "t1", RunID: "r1", Seq: 2}}), nil},
		{"events fields", domain.CheckAppendRunEvents([]domain.RunEvent{{TenantID: "t1", RunID: "r1", Seq: 1}, {}, {TenantID: "t2", RunID: "r2", Seq: 3}}),
			[]string{"events[1].tenant_id", "events[1].run_id", "events[1].seq", "events[2].tenant_id", "events[2].run_id"}},
		{"subscribe ok", domain.CheckSubscribeRunEvents("t1", "r1"), nil},
		{"subscribe empty", domain.CheckSubscribeRunEvents("", ""), []string{"tenant_id", "run_id"}},

		{"artifact ok", domain.CheckSaveArtifact(&domain.Artifact{ID: "a", TenantID: "t1", MessageID: id}), nil},
		{"artifact nil", domain.CheckSaveArtifact(nil), []string{"artifact"}},
		{"artifact empty", domain.CheckSaveArtifact(&domain.Artifact{}),
			[]string{"artifact.id", "artifact.tenant_id", "artifact.message_id"}},
		{"checkpoint ok", domain.CheckSaveCheckpoint(&domain.Checkpoint{ID: "c", TenantID: "t1", MessageID: id}), nil},
		{"checkpoint nil", domain.CheckSaveCheckpoint(nil), []string{"checkpoint"}},
		{"checkpoint empty", domain.CheckSaveCheckpoint(&domain.Checkpoint{}),
			[]string{"checkpoint.id", "checkpoint.tenant_id", "checkpoint.message_id"}},

		{"result ok, automatic name", domain.CheckPutResult(&domain.StoredResult{TenantID: "t1", SessionID: id}), nil},
		{"result ok, chosen name", domain.CheckPutResult(&domain.StoredResult{TenantID: "t1", SessionID: id, Name: "sales"}), nil},
		{"result nil", domain.CheckPutResult(nil), []string{"result"}},
		{"result empty, bad name", domain.CheckPutResult(&domain.StoredResult{Name: "two words"}),
			[]string{"result.tenant_id", "result.session_id", "result.name"}},
	}
	for _, tc := range tests {
		if got := fieldsOf(t, tc.err); !slices.Equal(got, tc.want) {
			t.Errorf("%s: invalid fields %q, want %q (error %v)", tc.name, got, tc.want, tc.err)
		}
	}
}

// TestCheckAppendRunEventsAllocatesNothingWhenValid: the check runs on
// every run-log append, so valid input must not allocate.
func TestCheckAppendRunEventsAllocatesNothingWhenValid(t *testing.T) {
	events := make([]domain.RunEvent, 64)
	for i := range events {
		events[i] = domain.RunEvent{TenantID: "t1", RunID: "r1", Seq: int64(i + 1), Type: "text.delta"}
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := domain.CheckAppendRunEvents(events); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("CheckAppendRunEvents of 64 valid events: %v allocations, want 0", n)
	}
}
