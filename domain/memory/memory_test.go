package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/domaintest"
	"github.com/bichat-go/bichat/domain/memory"
)

func TestRepositories(t *testing.T) {
	domaintest.RunRepositoryTests(t, func(t *testing.T) domain.Repositories {
		return memory.New().Repositories()
	})
}

// TestRepositoriesWithOptions runs the suite against a store with small
// limits, so that the suite checks the limits are the configured ones.
func TestRepositoriesWithOptions(t *testing.T) {
	o := memory.Options{ResultsPerSession: 3, MaxResultBytes: 1000}
	domaintest.RunRepositoryTests(t, func(t *testing.T) domain.Repositories {
		return memory.NewWithOptions(o).Repositories()
	}, domaintest.Options{ResultsKeep: o.ResultsPerSession, ResultBytes: o.MaxResultBytes})
}

// Fixed ids, so that fixture functions return equal values on every call.
const (
	tenant    = "acme"
	sessionID = "0190a1b2-0000-7000-8000-000000000001"
	messageID = "0190a1b2-0000-7000-8000-000000000002"
	runID     = "0190a1b2-0000-7000-8000-000000000003"
	cpID      = "0190a1b2-0000-7000-8000-000000000004"
	artID     = "0190a1b2-0000-7000-8000-000000000005"
)

var t0 = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

func fixtureSession() domain.Session {
	return domain.Session{ID: sessionID, TenantID: tenant, OwnerID: "alice", Title: "Chat", Model: "m", CreatedAt: t0, UpdatedAt: t0}
}

// fixtureMessage returns a message in which every slice, map and pointer
// is set, so that every level of the deep copy is exercised.
func fixtureMessage() domain.Message {
	return domain.Message{
		ID:        messageID,
		TenantID:  tenant,
		SessionID: sessionID,
		Role:      domain.RoleAssistant,
		Status:    domain.StatusGenerating,
		Parts: []domain.Part{
			domain.TextPart("hello"),
			{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "r", Signature: "sig", Opaque: json.RawMessage(`{"a":1}`)}},
			{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "c1", Name: "sql", Arguments: json.RawMessage(`{"q":"x"}`), Opaque: json.RawMessage(`"o"`)}},
			{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: "c1", Name: "sql", Content: "ok"}},
			{Type: domain.PartFile, File: &domain.FileRef{Name: "f.csv", MediaType: "text/csv"}},
		},
		Metadata: domain.MessageMetadata{
			Model:        "m",
			ToolCalls:    []domain.ToolCallRecord{{ID: "c1", Name: "sql", ArtifactIDs: []string{artID}}},
			DatasetsUsed: []string{"sales"},
			Error:        &domain.MessageError{Code: "timeout", Message: "slow", Time: t0},
		},
		Citations:   []domain.Citation{{Source: "kb", Title: "Doc"}},
		Attachments: []domain.Attachment{{ID: artID, Name: "a.xlsx", MediaType: "application/octet-stream"}},
		CreatedAt:   t0,
		UpdatedAt:   t0,
	}
}

func fixtureCheckpoint() domain.Checkpoint {
	return domain.Checkpoint{ID: cpID, TenantID: tenant, SessionID: sessionID, MessageID: messageID, Kind: domain.CheckpointQuestion, Data: json.RawMessage(`{"q":1}`), CreatedAt: t0}
}

func fixtureArtifact() domain.Artifact {
	return domain.Artifact{ID: artID, TenantID: tenant, SessionID: sessionID, MessageID: messageID, Kind: domain.ArtifactTable, Name: "t", Metadata: map[string]string{"rows": "3"}, CreatedAt: t0}
}

func fixtureEvent() domain.RunEvent {
	return domain.RunEvent{TenantID: tenant, RunID: runID, SessionID: sessionID, MessageID: messageID, Seq: 1, Type: "delta", Time: t0, Data: json.RawMessage(`{"t":"hi"}`)}
}

// scribbleMessage overwrites everything reachable from m in place: fields
// of the struct, elements of its slices, the bytes of its raw JSON and the
// structs its pointers point to.
func scribbleMessage(m *domain.Message) {
	m.Status, m.RunID = domain.StatusFailed, "scribbled"
	for i := range m.Parts {
		p := &m.Parts[i]
		p.Text = "scribbled"
		if p.Reasoning != nil {
			p.Reasoning.Text, p.Reasoning.Signature = "scribbled", "scribbled"
			scribble(p.Reasoning.Opaque)
		}
		if p.ToolCall != nil {
			p.ToolCall.Name = "scribbled"
			scribble(p.ToolCall.Arguments)
			scribble(p.ToolCall.Opaque)
		}
		if p.ToolResult != nil {
			p.ToolResult.Content = "scribbled"
		}
		if p.File != nil {
			p.File.Name = "scribbled"
		}
	}
	for i := range m.Metadata.ToolCalls {
		c := &m.Metadata.ToolCalls[i]
		c.Name = "scribbled"
		for j := range c.ArtifactIDs {
			c.ArtifactIDs[j] = "scribbled"
		}
	}
	for i := range m.Metadata.DatasetsUsed {
		m.Metadata.DatasetsUsed[i] = "scribbled"
	}
	if m.Metadata.Error != nil {
		m.Metadata.Error.Code = "scribbled"
	}
	for i := range m.Citations {
		m.Citations[i].Title = "scribbled"
	}
	for i := range m.Attachments {
		m.Attachments[i].Name = "scribbled"
	}
}

func scribble(b []byte) {
	for i := range b {
		b[i] = '#'
	}
}

func check[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func mustNil(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// seed stores the fixture session, message, checkpoint, artifact and
// event; it scribbles over the values it passed in once they are stored.
func seed(t *testing.T) *memory.Store {
	t.Helper()
	ctx := t.Context()
	s := memory.New()
	sess := fixtureSession()
	mustNil(t, "CreateSession", s.CreateSession(ctx, &sess))
	sess.Title = "scribbled"
	m := fixtureMessage()
	mustNil(t, "CreateMessages", s.CreateMessages(ctx, &m))
	scribbleMessage(&m)
	cp := fixtureCheckpoint()
	mustNil(t, "SaveCheckpoint", s.SaveCheckpoint(ctx, &cp))
	scribble(cp.Data)
	a := fixtureArtifact()
	mustNil(t, "SaveArtifact", s.SaveArtifact(ctx, &a))
	a.Metadata["rows"] = "scribbled"
	ev := fixtureEvent()
	mustNil(t, "AppendRunEvents", s.AppendRunEvents(ctx, ev))
	scribble(ev.Data)
	return s
}

// TestInputsAreCopied checks that changing a value after passing it to the
// store leaves the stored copy alone.
func TestInputsAreCopied(t *testing.T) {
	ctx := t.Context()
	s := seed(t)

	sess, err := s.GetSession(ctx, tenant, sessionID)
	mustNil(t, "GetSession", err)
	check(t, "session", *sess, fixtureSession())
	m, err := s.GetMessage(ctx, tenant, messageID)
	mustNil(t, "GetMessage", err)
	check(t, "message", *m, fixtureMessage())
	cp, err := s.GetCheckpoint(ctx, tenant, messageID)
	mustNil(t, "GetCheckpoint", err)
	check(t, "checkpoint", *cp, fixtureCheckpoint())
	a, err := s.GetArtifact(ctx, tenant, artID)
	mustNil(t, "GetArtifact", err)
	check(t, "artifact", *a, fixtureArtifact())
	evs, err := s.ListRunEvents(ctx, tenant, runID, 0, 0)
	mustNil(t, "ListRunEvents", err)
	check(t, "run events", evs, []domain.RunEvent{fixtureEvent()})

	// UpdateMessage copies too.
	upd := fixtureMessage()
	upd.Status = domain.StatusComplete
	mustNil(t, "UpdateMessage", s.UpdateMessage(ctx, &upd))
	scribbleMessage(&upd)
	want := fixtureMessage()
	want.Status = domain.StatusComplete
	m, err = s.GetMessage(ctx, tenant, messageID)
	mustNil(t, "GetMessage", err)
	check(t, "message after UpdateMessage", *m, want)
}

// TestOutputsAreCopies checks that changing a value the store returned
// leaves the stored copy alone.
func TestOutputsAreCopies(t *testing.T) {
	ctx := t.Context()
	s := seed(t)

	sess, err := s.GetSession(ctx, tenant, sessionID)
	mustNil(t, "GetSession", err)
	sess.Title = "scribbled"
	page, err := s.ListSessions(ctx, tenant, "alice", domain.ListOptions{})
	mustNil(t, "ListSessions", err)
	check(t, "listed session", page.Items, []domain.Session{fixtureSession()})
	page.Items[0].Title = "scribbled"
	sess, err = s.GetSession(ctx, tenant, sessionID)
	mustNil(t, "GetSession", err)
	check(t, "session", *sess, fixtureSession())

	m, err := s.GetMessage(ctx, tenant, messageID)
	mustNil(t, "GetMessage", err)
	scribbleMessage(m)
	list, err := s.ListMessages(ctx, tenant, sessionID, domain.MessageListOptions{})
	mustNil(t, "ListMessages", err)
	check(t, "listed messages", list, []domain.Message{fixtureMessage()})
	scribbleMessage(&list[0])
	m, err = s.GetMessage(ctx, tenant, messageID)
	mustNil(t, "GetMessage", err)
	check(t, "message", *m, fixtureMessage())

	cp, err := s.GetCheckpoint(ctx, tenant, messageID)
	mustNil(t, "GetCheckpoint", err)
	scribble(cp.Data)
	cp, err = s.GetCheckpoint(ctx, tenant, messageID)
	mustNil(t, "GetCheckpoint", err)
	check(t, "checkpoint", *cp, fixtureCheckpoint())

	a, err := s.GetArtifact(ctx, tenant, artID)
	mustNil(t, "GetArtifact", err)
	a.Metadata["rows"] = "scribbled"
	arts, err := s.ListArtifacts(ctx, tenant, messageID)
	mustNil(t, "ListArtifacts", err)
	check(t, "listed artifacts", arts, []domain.Artifact{fixtureArtifact()})
	arts[0].Metadata["rows"] = "scribbled"
	a, err = s.GetArtifact(ctx, tenant, artID)
	mustNil(t, "GetArtifact", err)
	check(t, "artifact", *a, fixtureArtifact())

	evs, err := s.ListRunEvents(ctx, tenant, runID, 0, 0)
	mustNil(t, "ListRunEvents", err)
	scribble(evs[0].Data)
	evs, err = s.ListRunEvents(ctx, tenant, runID, 0, 0)
	mustNil(t, "ListRunEvents", err)
	check(t, "run events", evs, []domain.RunEvent{fixtureEvent()})
}

// TestNilAndEmptyKept checks that nil slices come back nil and empty ones
// empty, so JSON encodings of stored values do not change.
func TestNilAndEmptyKept(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	sess := fixtureSession()
	mustNil(t, "CreateSession", s.CreateSession(ctx, &sess))
	empty := domain.Message{ID: messageID, TenantID: tenant, SessionID: sessionID, Role: domain.RoleUser, Status: domain.StatusComplete,
		Parts: []domain.Part{}, Citations: nil, Attachments: []domain.Attachment{}, CreatedAt: t0, UpdatedAt: t0}
	mustNil(t, "CreateMessages", s.CreateMessages(ctx, &empty))
	got, err := s.GetMessage(ctx, tenant, messageID)
	mustNil(t, "GetMessage", err)
	if got.Parts == nil || got.Attachments == nil || got.Citations != nil || got.Metadata.ToolCalls != nil {
		t.Errorf("got Parts nil=%t Attachments nil=%t Citations nil=%t ToolCalls nil=%t, want false false true true",
			got.Parts == nil, got.Attachments == nil, got.Citations == nil, got.Metadata.ToolCalls == nil)
	}
}

func TestTimestampDefaults(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	before := time.Now()
	sess := domain.Session{ID: sessionID, TenantID: tenant, OwnerID: "alice", Title: "T"}
	mustNil(t, "CreateSession", s.CreateSession(ctx, &sess))
	after := time.Now()
	if sess.CreatedAt.Before(before) || sess.CreatedAt.After(after) || sess.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt = %v, want the current UTC time", sess.CreatedAt)
	}
	if !sess.UpdatedAt.Equal(sess.CreatedAt) {
		t.Errorf("UpdatedAt = %v, want CreatedAt %v", sess.UpdatedAt, sess.CreatedAt)
	}
	got, err := s.GetSession(ctx, tenant, sessionID)
	mustNil(t, "GetSession", err)
	check(t, "stored session", *got, sess)

	m := domain.Message{ID: messageID, TenantID: tenant, SessionID: sessionID, Role: domain.RoleUser, Status: domain.StatusComplete, UpdatedAt: t0.Add(time.Hour)}
	mustNil(t, "CreateMessages", s.CreateMessages(ctx, &m))
	if m.CreatedAt.Before(before) || !m.UpdatedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("CreatedAt, UpdatedAt = %v, %v; want now and the UpdatedAt set", m.CreatedAt, m.UpdatedAt)
	}
	gotMsg, err := s.GetMessage(ctx, tenant, messageID)
	mustNil(t, "GetMessage", err)
	check(t, "stored message", *gotMsg, m)
}

func TestNilArgumentsAreInvalid(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	for name, err := range map[string]error{
		"CreateSession":  s.CreateSession(ctx, nil),
		"UpdateSession":  s.UpdateSession(ctx, nil),
		"CreateMessages": s.CreateMessages(ctx, nil),
		"UpdateMessage":  s.UpdateMessage(ctx, nil),
		"SaveCheckpoint": s.SaveCheckpoint(ctx, nil),
		"SaveArtifact":   s.SaveArtifact(ctx, nil),
	} {
		if !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s(nil) = %v, want an error matching ErrInvalid", name, err)
		}
	}
}

func TestEmptyBatchesDoNothing(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	if err := s.CreateMessages(ctx); err != nil {
		t.Errorf("CreateMessages() = %v, want nil", err)
	}
	if err := s.AppendRunEvents(ctx); err != nil {
		t.Errorf("AppendRunEvents() = %v, want nil", err)
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s := memory.New()
	sess := fixtureSession()
	if err := s.CreateSession(ctx, &sess); !errors.Is(err, context.Canceled) {
		t.Errorf("CreateSession with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := s.GetSession(t.Context(), tenant, sessionID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetSession after the cancelled create = %v, want ErrNotFound", err)
	}
}

// TestErrorsNameOnlyCallerInput checks that an error about another
// tenant's id carries nothing of that tenant's data.
func TestErrorsNameOnlyCallerInput(t *testing.T) {
	ctx := t.Context()
	s := seed(t)
	_, err := s.GetSession(ctx, "globex", sessionID)
	if !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("GetSession from another tenant = %v, want ErrNotFound", err)
	}
	want := fmt.Sprintf("memory: get session %s: not found", sessionID)
	if err.Error() != want {
		t.Errorf("error text = %q, want %q", err, want)
	}
	for _, leak := range []string{tenant, "alice", "Chat"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("error %q contains %q from the other tenant", err, leak)
		}
	}
}

// TestConcurrentUse runs readers and writers side by side; under the race
// detector it finds unsynchronised access and shared mutable state.
func TestConcurrentUse(t *testing.T) {
	ctx := t.Context()
	s := seed(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				m := fixtureMessage()
				m.ID = domain.NewID()
				m.CreatedAt = t0.Add(time.Duration(i*100+j) * time.Millisecond)
				if err := s.CreateMessages(ctx, &m); err != nil {
					t.Errorf("CreateMessages: %v", err)
					return
				}
				m.Parts[0].Text = "updated"
				if err := s.UpdateMessage(ctx, &m); err != nil {
					t.Errorf("UpdateMessage: %v", err)
				}
				list, err := s.ListMessages(ctx, tenant, sessionID, domain.MessageListOptions{Limit: 5})
				if err != nil {
					t.Errorf("ListMessages: %v", err)
				}
				for k := range list {
					scribbleMessage(&list[k])
				}
				if _, err := s.ListSessions(ctx, tenant, "alice", domain.ListOptions{}); err != nil {
					t.Errorf("ListSessions: %v", err)
				}
				ev := fixtureEvent()
				ev.RunID = domain.NewID()
				if err := s.AppendRunEvents(ctx, ev); err != nil {
					t.Errorf("AppendRunEvents: %v", err)
				}
			}
		})
	}
	wg.Wait()
	list, err := s.ListMessages(ctx, tenant, sessionID, domain.MessageListOptions{})
	mustNil(t, "ListMessages", err)
	if len(list) != 1+8*50 {
		t.Errorf("%d messages stored, want %d", len(list), 1+8*50)
	}
}
