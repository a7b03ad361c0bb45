package bichat_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/providers/scripted"
)

func recordIDs(recs []domain.ToolCallRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// stillAwaiting checks that a message waits for input with its checkpoint.
func stillAwaiting(t testing.TB, f *fixture, messageID string, kind domain.CheckpointKind) {
	t.Helper()
	if m := f.message(t, alice, messageID); m.Status != domain.StatusAwaitingInput {
		t.Fatalf("message is %s, want awaiting_input", m.Status)
	}
	in, err := f.svc.PendingInterrupt(t.Context(), alice, messageID)
	if err != nil || in.Kind != kind {
		t.Fatalf("PendingInterrupt = %+v, %v; want a %s", in, err, kind)
	}
}

func TestAskUserAndResume(t *testing.T) {
	t.Parallel()
	u1 := domain.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}
	u2 := domain.Usage{PromptTokens: 200, CompletionTokens: 20, TotalTokens: 220}
	u3 := domain.Usage{PromptTokens: 300, CompletionTokens: 30, TotalTokens: 330}
	model := &scripted.Model{Turns: []scripted.Turn{
		{Text: "Let me look first.", Usage: u1, ToolCalls: []scripted.Call{
			{ID: "c1", Name: "sales_by_region", Args: `{"region":"EMEA","year":2025}`},
			{ID: "ask1", Name: agents.ToolAskUserQuestion, Args: askArgs},
		}},
		{Usage: u2, ToolCalls: []scripted.Call{{ID: "c2", Name: "sales_by_region", Args: `{"region":"APAC","year":2025}`}}},
		{Text: "In Q3 both regions made 1234.50 EUR.", Usage: u3},
	}}
	f := newFixture(t, model, []agents.Tool{salesTool(nil)})
	ctx := t.Context()
	sess := f.session(t, alice, "")

	evs, in := interrupted(t, collect(t, f.svc.Send(ctx, alice, sess.ID, "Revenue by region?")))
	first := evs[0].(*agents.RunStarted)
	msgID := first.MessageID
	if in.Kind != domain.CheckpointQuestion || len(in.Questions) != 1 || in.Questions[0].ID != "period" || in.Confirmation != nil {
		t.Fatalf("Interrupted = %+v", in)
	}
	m := f.message(t, alice, msgID)
	if m.Status != domain.StatusAwaitingInput || m.Metadata.StopReason != "interrupted" || m.Metadata.Usage != u1 ||
		!slices.Equal(recordIDs(m.Metadata.ToolCalls), []string{"c1"}) || m.RunID != first.RunID {
		t.Fatalf("awaiting message = status %s metadata %+v run %s", m.Status, m.Metadata, m.RunID)
	}
	wantAwaiting := []domain.PartType{domain.PartText, domain.PartToolCall, domain.PartToolCall, domain.PartToolResult}
	if got := partTypes(m.Parts); !slices.Equal(got, wantAwaiting) {
		t.Errorf("awaiting parts = %v, want %v (no empty slot for the pending call)", got, wantAwaiting)
	}
	pending, err := f.svc.PendingInterrupt(ctx, alice, msgID)
	if err != nil || pending.MessageID != msgID || pending.Kind != domain.CheckpointQuestion ||
		!reflect.DeepEqual(pending.Questions, in.Questions) || pending.Confirmation != nil {
		t.Fatalf("PendingInterrupt = %+v, %v", pending, err)
	}

	// Invalid answers: refused with the field named, nothing consumed.
	invalid := []struct {
		name    string
		answers agents.Answers
		field   string
	}{
		{"missing", agents.Answers{}, "answers.period"},
		{"not an option", agents.Answers{"period": {Selected: []string{"Q1"}}}, "answers.period"},
		{"two options", agents.Answers{"period": {Selected: []string{"Q3", "Q4"}}}, "answers.period"},
		{"free text not allowed", agents.Answers{"period": {Text: "last year"}}, "answers.period"},
		{"unknown question", agents.Answers{"period": {Selected: []string{"Q3"}}, "region": {Text: "EMEA"}}, "answers.region"},
	}
	for _, tc := range invalid {
		err := onlyErr(t, collect(t, f.svc.Resume(ctx, alice, msgID, tc.answers)))
		if !hasField(err, tc.field) {
			t.Errorf("%s: %v, want ErrInvalid naming %s", tc.name, err, tc.field)
		}
	}
	if f.model.Calls() != 1 {
		t.Fatalf("invalid answers reached the model: %d calls", f.model.Calls())
	}
	stillAwaiting(t, f, msgID, domain.CheckpointQuestion)

	// Valid answers.
	evs, rf := finished(t, collect(t, f.svc.Resume(ctx, alice, msgID, validAnswers)))
	rs := evs[0].(*agents.RunStarted)
	if rs.ResumedFrom != first.RunID || rs.RunID == first.RunID || rs.MessageID != msgID {
		t.Errorf("resumed RunStarted = %+v", rs)
	}
	m = f.message(t, alice, msgID)
	if m.Status != domain.StatusComplete || m.RunID != rs.RunID || m.Metadata.StopReason != "end_turn" || m.Metadata.Error != nil {
		t.Fatalf("resumed message = status %s run %s metadata %+v", m.Status, m.RunID, m.Metadata)
	}
	wantParts := []domain.PartType{domain.PartText, domain.PartToolCall, domain.PartToolCall, domain.PartToolResult,
		domain.PartToolResult, domain.PartToolCall, domain.PartToolResult, domain.PartText}
	if got := partTypes(m.Parts); !slices.Equal(got, wantParts) {
		t.Fatalf("resumed parts = %v, want %v", got, wantParts)
	}
	if r := m.Parts[4].ToolResult; r.CallID != "ask1" || !strings.Contains(r.Content, "Q3") || r.IsError {
		t.Errorf("answer result = %+v, want the user's answer", r)
	}
	if m.Parts[0].Text != "Let me look first." || m.Parts[7].Text != "In Q3 both regions made 1234.50 EUR." {
		t.Errorf("texts = %q … %q", m.Parts[0].Text, m.Parts[7].Text)
	}
	if got := recordIDs(m.Metadata.ToolCalls); !slices.Equal(got, []string{"c1", "ask1", "c2"}) {
		t.Errorf("tool records = %v, want records of both runs", got)
	}
	for _, r := range m.Metadata.ToolCalls {
		if r.Arguments == "" {
			t.Errorf("tool record %s has no arguments", r.ID)
		}
	}
	if m.Metadata.Usage != rf.Usage || rf.Usage != u1.Add(u2).Add(u3) {
		t.Errorf("usage = %+v, RunFinished %+v, want the cumulative %+v", m.Metadata.Usage, rf.Usage, u1.Add(u2).Add(u3))
	}
	if !slices.Equal(m.Metadata.DatasetsUsed, []string{salesDataset}) {
		t.Errorf("datasets = %v", m.Metadata.DatasetsUsed)
	}
	if arts, err := f.svc.Artifacts(ctx, alice, msgID); err != nil || len(arts) != 2 {
		t.Errorf("artifacts = %d, %v; want one per sales call of both runs", len(arts), err)
	}
	if req := f.model.Requests()[1]; !strings.Contains(toolResultFor(req, "ask1"), "Q3") {
		t.Errorf("the model did not get the answer: %+v", req.Messages)
	}
	replayed, err := f.svc.Replay(ctx, alice, rs.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameStream(t, replayed, evs)

	// Once resumed, the checkpoint is gone.
	if err := onlyErr(t, collect(t, f.svc.Resume(ctx, alice, msgID, validAnswers))); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("second Resume: %v, want ErrConflict", err)
	}
	if _, err := f.svc.PendingInterrupt(ctx, alice, msgID); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("PendingInterrupt after Resume: %v, want ErrConflict", err)
	}
	if _, err := f.store.GetCheckpoint(ctx, "acme", msgID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("checkpoint still stored after Resume: %v", err)
	}
	if f.model.Calls() != 3 {
		t.Errorf("model calls = %d, want 3", f.model.Calls())
	}
}

func TestResumeConcurrently(t *testing.T) {
	t.Parallel()
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{ID: "ask1", Name: agents.ToolAskUserQuestion, Args: askArgs}}},
		{Text: "Q3 it is."},
	}}
	f := newFixture(t, model, nil)
	sess := f.session(t, alice, "")
	evs, _ := interrupted(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?")))
	msgID := evs[0].(*agents.RunStarted).MessageID

	const n = 10
	start := make(chan struct{})
	results := make([][]item, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for ev, err := range f.svc.Resume(context.Background(), alice, msgID, validAnswers) {
				results[i] = append(results[i], item{ev, err})
			}
		}()
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("concurrent Resume calls did not end")
	}
	streamed := 0
	for i, items := range results {
		if len(items) == 1 && items[0].err != nil {
			if !errors.Is(items[0].err, domain.ErrConflict) {
				t.Errorf("Resume %d: %v, want ErrConflict", i, items[0].err)
			}
			continue
		}
		finished(t, items)
		streamed++
	}
	if streamed != 1 {
		t.Errorf("%d Resume calls streamed, want exactly 1", streamed)
	}
	if f.model.Calls() != 2 {
		t.Errorf("model calls = %d, want 2 (the question, then one resumed turn)", f.model.Calls())
	}
	if m := f.message(t, alice, msgID); m.Status != domain.StatusComplete {
		t.Errorf("message = %s", m.Status)
	}
}

func TestApprove(t *testing.T) {
	t.Parallel()
	model := &scripted.Model{Turns: []scripted.Turn{
		{Text: "I will apply it.", ToolCalls: []scripted.Call{{ID: "w1", Name: "apply_discount", Args: `{"percent":10}`}}},
		{Text: "Applied a 10% discount."},
	}}
	var writes atomic.Int32
	f := newFixture(t, model, []agents.Tool{discountTool(&writes)})
	ctx := t.Context()
	sess := f.session(t, alice, "")

	evs, in := interrupted(t, collect(t, f.svc.Send(ctx, alice, sess.ID, "Give everyone 10% off")))
	msgID := evs[0].(*agents.RunStarted).MessageID
	c := in.Confirmation
	if in.Kind != domain.CheckpointConfirmation || c == nil || c.Tool != "apply_discount" || c.CallID != "w1" ||
		c.Permission != agents.PermWrite || c.Token == "" {
		t.Fatalf("Interrupted = %+v", in)
	}
	if writes.Load() != 0 {
		t.Fatal("the write tool ran on the model's word")
	}
	stillAwaiting(t, f, msgID, domain.CheckpointConfirmation)
	if p, _ := f.svc.PendingInterrupt(ctx, alice, msgID); p.Confirmation == nil || p.Confirmation.Token != c.Token {
		t.Errorf("PendingInterrupt confirmation = %+v", p.Confirmation)
	}

	// A forged token is refused and nothing changes.
	forged := []byte(c.Token)
	i := len(forged) / 3
	if forged[i] == 'A' {
		forged[i] = 'B'
	} else {
		forged[i] = 'A'
	}
	err := onlyErr(t, collect(t, f.svc.Approve(ctx, alice, msgID, string(forged))))
	if !errors.Is(err, agents.ErrTokenRefused) {
		t.Fatalf("forged token: %v, want ErrTokenRefused", err)
	}
	if err := onlyErr(t, collect(t, f.svc.Deny(ctx, alice, msgID, string(forged), ""))); !errors.Is(err, agents.ErrTokenRefused) {
		t.Errorf("Deny with a forged token: %v, want ErrTokenRefused", err)
	}
	// An expired token is refused too.
	f.clock.Advance(agents.DefaultConfirmationTTL + time.Minute)
	if err := onlyErr(t, collect(t, f.svc.Approve(ctx, alice, msgID, c.Token))); !errors.Is(err, agents.ErrTokenExpired) {
		t.Errorf("expired token: %v, want ErrTokenExpired", err)
	}
	f.clock.Advance(-agents.DefaultConfirmationTTL - time.Minute)
	// Another user of the tenant cannot see the message.
	for name, seq := range map[string]func(func(agents.Event, error) bool){
		"approve": f.svc.Approve(ctx, bob, msgID, c.Token),
		"deny":    f.svc.Deny(ctx, bob, msgID, c.Token, "mine now"),
	} {
		if err := onlyErr(t, collect(t, seq)); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s by another user: %v, want ErrNotFound", name, err)
		}
	}
	// Answers do not fit a confirmation.
	if err := onlyErr(t, collect(t, f.svc.Resume(ctx, alice, msgID, validAnswers))); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("Resume of a confirmation: %v, want ErrConflict", err)
	}
	if writes.Load() != 0 || f.model.Calls() != 1 {
		t.Fatalf("refused decisions ran something: %d writes, %d model calls", writes.Load(), f.model.Calls())
	}
	stillAwaiting(t, f, msgID, domain.CheckpointConfirmation)

	// The owner approves.
	evs, rf := finished(t, collect(t, f.svc.Approve(ctx, alice, msgID, c.Token)))
	if writes.Load() != 1 {
		t.Fatalf("write tool ran %d times, want 1", writes.Load())
	}
	fins := ofType[*agents.ToolCallFinished](evs)
	if len(fins) != 1 || fins[0].CallID != "w1" || fins[0].Error != "" || !strings.Contains(fins[0].Summary, "10% discount") {
		t.Errorf("ToolCallFinished = %+v", fins)
	}
	m := f.message(t, alice, msgID)
	if m.Status != domain.StatusComplete || m.Text() != "I will apply it.Applied a 10% discount." || m.Metadata.Usage != rf.Usage {
		t.Errorf("approved message = %s %q usage %+v", m.Status, m.Text(), m.Metadata.Usage)
	}
	if recs := m.Metadata.ToolCalls; len(recs) != 1 || recs[0].ID != "w1" || recs[0].Arguments != `{"percent":10}` ||
		!strings.Contains(recs[0].Result, "10% discount") {
		t.Errorf("tool records = %+v", recs)
	}

	if _, err := f.store.GetCheckpoint(ctx, "acme", msgID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("checkpoint still stored after Approve: %v", err)
	}
	// The token works once.
	if err := onlyErr(t, collect(t, f.svc.Approve(ctx, alice, msgID, c.Token))); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("second Approve: %v, want ErrConflict", err)
	}
	if err := onlyErr(t, collect(t, f.svc.Deny(ctx, alice, msgID, c.Token, ""))); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("Deny after Approve: %v, want ErrConflict", err)
	}
	if writes.Load() != 1 || f.model.Calls() != 2 {
		t.Errorf("after the replays: %d writes, %d model calls; want 1 and 2", writes.Load(), f.model.Calls())
	}
}

func TestDeny(t *testing.T) {
	t.Parallel()
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{ID: "w1", Name: "apply_discount", Args: `{"percent":30}`}}},
		{Text: "Understood, no discount was applied."},
	}}
	var writes atomic.Int32
	f := newFixture(t, model, []agents.Tool{discountTool(&writes)})
	ctx := t.Context()
	sess := f.session(t, alice, "")
	evs, in := interrupted(t, collect(t, f.svc.Send(ctx, alice, sess.ID, "Give everyone 30% off")))
	msgID := evs[0].(*agents.RunStarted).MessageID

	if err := onlyErr(t, collect(t, f.svc.Deny(ctx, alice, msgID, in.Confirmation.Token, strings.Repeat("x", 2001)))); !hasField(err, "reason") {
		t.Errorf("overlong reason: %v, want ErrInvalid naming reason", err)
	}
	stillAwaiting(t, f, msgID, domain.CheckpointConfirmation)

	finished(t, collect(t, f.svc.Deny(ctx, alice, msgID, in.Confirmation.Token, "too risky before the audit")))
	if writes.Load() != 0 {
		t.Fatal("a denied tool ran")
	}
	req := f.model.Requests()[1]
	last := req.Messages[len(req.Messages)-1]
	if last.Role != domain.RoleTool || len(last.Parts) != 1 || last.Parts[0].ToolResult.CallID != "w1" ||
		!last.Parts[0].ToolResult.IsError || !strings.Contains(last.Parts[0].ToolResult.Content, "too risky before the audit") {
		t.Fatalf("the model's next request ends with %+v, want the declined result with the reason", last)
	}
	m := f.message(t, alice, msgID)
	if m.Status != domain.StatusComplete || m.Text() != "Understood, no discount was applied." {
		t.Errorf("denied message = %s %q", m.Status, m.Text())
	}
	if recs := m.Metadata.ToolCalls; len(recs) != 1 || recs[0].ID != "w1" || !strings.Contains(recs[0].Error, "declined") ||
		recs[0].Arguments != `{"percent":30}` {
		t.Errorf("tool records = %+v", recs)
	}
	if err := onlyErr(t, collect(t, f.svc.Approve(ctx, alice, msgID, in.Confirmation.Token))); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("Approve after Deny: %v, want ErrConflict", err)
	}
	if writes.Load() != 0 {
		t.Error("Approve after Deny ran the tool")
	}
}

func TestDecisionOnQuestionCheckpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t, brainModel(), nil)
	ctx := t.Context()
	sess := f.session(t, alice, "")
	evs, _ := interrupted(t, collect(t, f.svc.Send(ctx, alice, sess.ID, "[ask] revenue")))
	msgID := evs[0].(*agents.RunStarted).MessageID
	if err := onlyErr(t, collect(t, f.svc.Approve(ctx, alice, msgID, "any.token"))); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("Approve on a question: %v, want ErrConflict", err)
	}
	if err := onlyErr(t, collect(t, f.svc.Deny(ctx, alice, msgID, "any.token", "no"))); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("Deny on a question: %v, want ErrConflict", err)
	}
	stillAwaiting(t, f, msgID, domain.CheckpointQuestion)
	if f.model.Calls() != 1 {
		t.Errorf("model calls = %d", f.model.Calls())
	}
	// A message that never waited cannot be resumed.
	msgs := f.messages(t, alice, sess.ID)
	if err := onlyErr(t, collect(t, f.svc.Resume(ctx, alice, msgs[0].ID, validAnswers))); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("Resume of the user's question: %v, want ErrConflict", err)
	}
}

func TestInterruptPublishesMessageSave(t *testing.T) {
	t.Parallel()
	f := newFixture(t, brainModel(), nil)
	sess := f.session(t, alice, "")
	evs, _ := interrupted(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "[ask] revenue")))
	msgID := evs[0].(*agents.RunStarted).MessageID
	finished(t, collect(t, f.svc.Resume(t.Context(), alice, msgID, validAnswers)))
	var statuses []domain.MessageStatus
	for _, e := range f.bus.ofKind(hooks.KindMessageSave) {
		if e.meta.MessageID == msgID {
			statuses = append(statuses, e.status)
		}
	}
	if want := []domain.MessageStatus{domain.StatusAwaitingInput, domain.StatusComplete}; !slices.Equal(statuses, want) {
		t.Errorf("message.save statuses for the answer = %v, want %v", statuses, want)
	}
}

// toolResultFor returns the content of the tool result for callID in req,
// wherever the renderer placed it.
func toolResultFor(req agents.Request, callID string) string {
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.ToolResult != nil && p.ToolResult.CallID == callID {
				return p.ToolResult.Content
			}
		}
	}
	return ""
}
