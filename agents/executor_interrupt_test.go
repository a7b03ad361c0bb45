package agents_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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

// interrupted checks that a run ended with Interrupted (and nothing after
// it) and returns the events and the interrupt.
func interrupted(t testing.TB, items []item) ([]agents.Event, *agents.Interrupted) {
	t.Helper()
	evs := events(t, items)
	if len(evs) == 0 {
		t.Fatal("run yielded nothing")
	}
	in, ok := evs[len(evs)-1].(*agents.Interrupted)
	if !ok {
		t.Fatalf("last event is %T, want *Interrupted; events: %v", evs[len(evs)-1], describe(evs))
	}
	if in.Checkpoint == nil {
		t.Fatal("Interrupted without a checkpoint")
	}
	return evs, in
}

// roundTrip stores cp as JSON and loads it back, as a host does between
// the interrupt and the user's answer.
func roundTrip(t testing.TB, cp *agents.Checkpoint) *agents.Checkpoint {
	t.Helper()
	b, err := json.Marshal(cp)
	if err != nil {
		t.Fatalf("marshal checkpoint: %v", err)
	}
	var out agents.Checkpoint
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshal checkpoint: %v", err)
	}
	return &out
}

const askRegionArgs = `{"questions":[` +
	`{"id":"region","question":"Which region?","options":[{"label":"EU"},{"label":"US"}]},` +
	`{"question":"Which period?"}]}`

// ---------------------------------------------------------------------------
// 13a. ask_user_question, checkpoint, Resume
// ---------------------------------------------------------------------------

func TestAskUserAndResume(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{Turns: []scripted.Turn{
		{Text: "I need to know more.", ToolCalls: []scripted.Call{{ID: "ask1", Name: agents.ToolAskUserQuestion, Args: askRegionArgs}}},
		{Text: "EU revenue last year was 3 M€."},
	}}
	bus, rec := newBus(t)
	e := newExec(t, agents.Config{Model: m, Bus: bus, System: "sys"})
	in := agents.Input{RunID: "run-ask", TenantID: "t1", UserID: "u1", SessionID: "s1", MessageID: "m1",
		History: []agents.Message{agents.UserMessage("hi"), agents.AssistantMessage("hello")},
		Message: agents.UserMessage("What was revenue?")}
	evs, intr := interrupted(t, drain(t, e.Run(t.Context(), in)))
	checkHeaders(t, evs, "run-ask")

	if intr.Kind != domain.CheckpointQuestion || intr.Confirmation != nil {
		t.Errorf("Interrupted = %+v", intr)
	}
	if len(intr.Questions) != 2 || intr.Questions[0].ID != "region" || intr.Questions[1].ID != "q2" ||
		intr.Questions[0].Question != "Which region?" || len(intr.Questions[0].Options) != 2 {
		t.Fatalf("questions = %+v", intr.Questions)
	}
	if got := toolEvents(evs); len(got) != 1 || got[0] != "tool.started:ask1" {
		t.Errorf("tool events = %v, want only the ask start", got)
	}
	cp := intr.Checkpoint
	if cp.Kind != domain.CheckpointQuestion || cp.RunID != "run-ask" || cp.TenantID != "t1" || cp.UserID != "u1" ||
		cp.SessionID != "s1" || cp.MessageID != "m1" || cp.System != "sys" || len(cp.History) != 2 ||
		cp.Pending.CallID != "ask1" || cp.Pending.Tool != agents.ToolAskUserQuestion || cp.Turn != 1 || cp.ToolCalls != 1 ||
		cp.Version != agents.CheckpointVersion || cp.ID == "" || cp.CreatedAt.IsZero() {
		t.Errorf("checkpoint = %+v", cp)
	}
	ir := rec.ofKind(hooks.KindInterrupt)
	if len(ir) != 1 || ir[0].reason != "question" || ir[0].callID != "ask1" || ir[0].tool != agents.ToolAskUserQuestion ||
		ir[0].meta.RunID != "run-ask" {
		t.Errorf("bus interrupts = %+v", ir)
	}
	if af := rec.ofKind(hooks.KindAgentFinish); len(af) != 1 || af[0].reason != "interrupted" {
		t.Errorf("agent.finish = %+v", af)
	}

	stored := roundTrip(t, cp)
	before, _ := json.Marshal(stored)

	// Invalid answers: only an error, the model is not called, the
	// checkpoint is untouched.
	for _, bad := range []agents.Answers{
		{"region": {Selected: []string{"Mars"}}, "q2": {Text: "2024"}},
		{"region": {Selected: []string{"EU"}}},
		{"region": {Selected: []string{"EU"}}, "q2": {Text: "2024"}, "q9": {Text: "?"}},
	} {
		err := onlyError(t, drain(t, e.Resume(t.Context(), stored, bad)))
		if !errors.Is(err, agents.ErrInvalidAnswer) || !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Resume(%v) error = %v, want ErrInvalidAnswer", bad, err)
		}
	}
	if m.Calls() != 1 {
		t.Fatalf("model called %d times after invalid answers", m.Calls())
	}
	if after, _ := json.Marshal(stored); string(after) != string(before) {
		t.Error("a refused Resume modified the checkpoint")
	}
	// A question checkpoint cannot be approved.
	if err := onlyError(t, drain(t, e.Approve(t.Context(), stored, agents.Decision{TenantID: "t1", UserID: "u1"}))); !errors.Is(err, agents.ErrBadCheckpoint) {
		t.Errorf("Approve(question checkpoint) = %v, want ErrBadCheckpoint", err)
	}

	answers := agents.Answers{"region": {Selected: []string{"EU"}}, "q2": {Text: "last year"}}
	revs, rf := finished(t, drain(t, e.Resume(t.Context(), stored, answers)))
	resumedID := revs[0].Header().RunID
	if resumedID == "" || resumedID == "run-ask" {
		t.Errorf("resumed run id = %q", resumedID)
	}
	checkHeaders(t, revs, resumedID)
	if rs := revs[0].(*agents.RunStarted); rs.ResumedFrom != "run-ask" || rs.SessionID != "s1" || rs.MessageID != "m1" {
		t.Errorf("RunStarted = %+v", rs)
	}
	f, ok := revs[1].(*agents.ToolCallFinished)
	if !ok || f.CallID != "ask1" || f.Error != "" || !strings.Contains(f.Summary, "EU") || !strings.Contains(f.Summary, "last year") {
		t.Fatalf("second event = %#v, want ToolCallFinished carrying the answers", revs[1])
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	next := reqs[1]
	if next.System != "sys" || len(next.Messages) != 5 { // history 2 + user, assistant, tool
		t.Fatalf("resumed request = %+v", next)
	}
	if r := resultFor(t, next.Messages, "ask1"); r.IsError || r.Content != f.Summary {
		t.Errorf("model saw %+v, want the answers", r)
	}
	if rf.Text != "EU revenue last year was 3 M€." || rf.Reason != agents.FinishEndTurn || rf.Turns != 2 || rf.ToolCalls != 1 {
		t.Errorf("RunFinished = %+v", rf)
	}
	checkNoDangling(t, rf.Messages)
	if rf.Messages[len(rf.Messages)-1].Text() != rf.Text {
		t.Errorf("transcript does not end with the answer: %+v", rf.Messages)
	}
	if st := rec.ofKind(hooks.KindAgentStart); len(st) != 2 || st[1].meta.RunID != resumedID || st[1].meta.TenantID != "t1" {
		t.Errorf("agent.start events = %+v", st)
	}
	// The caller's checkpoint is still intact after a resume.
	if after, _ := json.Marshal(stored); string(after) != string(before) {
		t.Error("Resume modified the checkpoint")
	}
}

// ---------------------------------------------------------------------------
// 13b. Other calls in the interrupted turn
// ---------------------------------------------------------------------------

func TestAskUserWithOtherCalls(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	m := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{
			{ID: "p1", Name: "ping"},
			{ID: "ask1", Name: agents.ToolAskUserQuestion, Args: `{"questions":[{"question":"Which year?"}]}`},
			{ID: "p2", Name: "ping"},
			{ID: "ask2", Name: agents.ToolAskUserQuestion, Args: `{"questions":[{"question":"Which month?"}]}`},
		}},
		{Text: "2024 it is."},
	}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n)}})
	evs, intr := interrupted(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
	want := []string{"tool.started:p1", "tool.finished:p1", "tool.started:ask1", "tool.started:p2", "tool.finished:p2",
		"tool.started:ask2", "tool.finished:ask2"}
	if got := toolEvents(evs); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("tool events = %v, want %v", got, want)
	}
	if f := finishedByID(t, evs, "ask2"); f.ErrorCode != "not_run" {
		t.Errorf("second question = %+v, want not_run", f)
	}
	if n.Load() != 2 {
		t.Errorf("ping ran %d times, want 2", n.Load())
	}
	if len(intr.Questions) != 1 || intr.Questions[0].Question != "Which year?" {
		t.Errorf("questions = %+v", intr.Questions)
	}
	cp := roundTrip(t, intr.Checkpoint)
	last := cp.Messages[len(cp.Messages)-1]
	if last.Role != domain.RoleTool || len(last.Parts) != 4 || cp.Pending.Part != 1 {
		t.Fatalf("checkpoint tool message = %+v, pending %+v", last, cp.Pending)
	}
	for k, w := range []struct {
		id, content string
		isErr       bool
	}{{"p1", "pong", false}, {"ask1", "", false}, {"p2", "pong", false}, {"ask2", "not run", true}} {
		r := last.Parts[k].ToolResult
		if r == nil || r.CallID != w.id || !strings.HasPrefix(r.Content, w.content) || r.IsError != w.isErr {
			t.Errorf("checkpoint result %d = %+v, want %+v", k, r, w)
		}
	}
	_, rf := finished(t, drain(t, e.Resume(t.Context(), cp, agents.Answers{"q1": {Text: "2024"}})))
	if n.Load() != 2 {
		t.Error("resuming re-ran calls of the interrupted turn")
	}
	checkNoDangling(t, rf.Messages)
	msgs := m.Requests()[1].Messages
	for _, id := range []string{"p1", "p2"} {
		if r := resultFor(t, msgs, id); r.Content != "pong" {
			t.Errorf("%s result after resume = %+v", id, r)
		}
	}
	if r := resultFor(t, msgs, "ask1"); !strings.Contains(r.Content, "2024") {
		t.Errorf("ask1 result = %+v", r)
	}
}

// A final_answer in the same turn as a question is held back.
func TestAskUserBeatsFinalAnswer(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{
		{ID: "ask", Name: agents.ToolAskUserQuestion, Args: `{"questions":[{"question":"Sure?"}]}`},
		{ID: "f", Name: agents.ToolFinalAnswer, Args: `{"answer":"premature"}`},
	}}}}
	e := newExec(t, agents.Config{Model: m})
	evs, intr := interrupted(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
	if len(ofType[*agents.TextDelta](evs)) != 0 {
		t.Error("the premature answer was streamed")
	}
	last := intr.Checkpoint.Messages[len(intr.Checkpoint.Messages)-1]
	if r := last.Parts[1].ToolResult; !r.IsError || !strings.Contains(r.Content, "not delivered") {
		t.Errorf("final_answer result = %+v", r)
	}
}

// ---------------------------------------------------------------------------
// 13c. Confirmation of write tools
// ---------------------------------------------------------------------------

type deleteIn struct {
	Table string `json:"table" jsonschema:"minLength=1"`
}

// writeTool returns a PermWrite tool counting its runs.
func writeTool(n *atomic.Int32) agents.Tool {
	return mustTool(agents.NewTool("delete_rows", "Deletes every row of a table.", func(_ context.Context, in deleteIn) (string, error) {
		n.Add(1)
		return "deleted all rows of " + in.Table, nil
	}, agents.WithPermission(agents.PermWrite), agents.WithParallel()))
}

func TestConfirmationFlow(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	m := &scripted.Model{Turns: []scripted.Turn{
		{Text: "Deleting.", ToolCalls: []scripted.Call{call("w1", "delete_rows", `{"table":"orders"}`)}},
		{ToolCalls: []scripted.Call{call("w2", "delete_rows", `{"table":"customers"}`)}},
		{Text: "Orders are gone."},
		{Text: "Customers were kept."},
	}}
	bus, rec := newBus(t)
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{writeTool(&n)}, Bus: bus})
	if spec := e.Tools()[0]; spec.ParallelSafe || spec.Permission != agents.PermWrite {
		t.Errorf("write tool spec = %+v", spec)
	}
	in := agents.Input{TenantID: "t1", UserID: "u1", Message: agents.UserMessage("delete orders")}
	before := time.Now()
	evs, intr := interrupted(t, drain(t, e.Run(t.Context(), in)))
	if intr.Kind != domain.CheckpointConfirmation || len(intr.Questions) != 0 {
		t.Fatalf("Interrupted = %+v", intr)
	}
	c := intr.Confirmation
	sum := sha256.Sum256([]byte(`{"table":"orders"}`))
	if c == nil || c.Token == "" || c.Tool != "delete_rows" || c.CallID != "w1" || c.Permission != agents.PermWrite ||
		string(c.Arguments) != `{"table":"orders"}` || c.ArgumentsHash != hex.EncodeToString(sum[:]) ||
		c.Description != "Deletes every row of a table." {
		t.Fatalf("confirmation = %+v", c)
	}
	if !c.ExpiresAt.After(before) || c.ExpiresAt.After(before.Add(agents.DefaultConfirmationTTL+time.Second)) ||
		c.ExpiresAt.Before(before.Add(agents.DefaultConfirmationTTL-2*time.Second)) {
		t.Errorf("ExpiresAt = %s, want about %s from now", c.ExpiresAt, agents.DefaultConfirmationTTL)
	}
	st := ofType[*agents.ToolCallStarted](evs)
	if len(st) != 1 || st[0].CallID != "w1" || st[0].Permission != agents.PermWrite || len(ofType[*agents.ToolCallFinished](evs)) != 0 {
		t.Errorf("tool events = %v", describe(evs))
	}
	if n.Load() != 0 {
		t.Fatal("the write tool ran on the model's word")
	}
	if ir := rec.ofKind(hooks.KindInterrupt); len(ir) != 1 || ir[0].reason != "confirmation" || ir[0].callID != "w1" {
		t.Errorf("bus interrupts = %+v", ir)
	}
	cp1 := roundTrip(t, intr.Checkpoint)
	if cp1.Confirmation == nil || cp1.Confirmation.Token != c.Token || cp1.TenantID != "t1" || cp1.UserID != "u1" {
		t.Fatalf("stored checkpoint = %+v", cp1)
	}

	// A second interrupted run on the same executor, for a foreign token.
	_, intr2 := interrupted(t, drain(t, e.Run(t.Context(), agents.Input{TenantID: "t1", UserID: "u1", Message: agents.UserMessage("delete customers")})))
	cp2 := roundTrip(t, intr2.Checkpoint)

	ok := agents.Decision{Token: c.Token, TenantID: "t1", UserID: "u1"}
	flipped := []byte(c.Token)
	if flipped[0] == 'A' {
		flipped[0] = 'B'
	} else {
		flipped[0] = 'A'
	}
	refusals := []struct {
		name string
		cp   *agents.Checkpoint
		d    agents.Decision
		want error
	}{
		{"forged token", cp1, agents.Decision{Token: string(flipped), TenantID: "t1", UserID: "u1"}, agents.ErrTokenForged},
		{"garbage token", cp1, agents.Decision{Token: "not-a-token", TenantID: "t1", UserID: "u1"}, agents.ErrTokenMalformed},
		{"other user", cp1, agents.Decision{Token: c.Token, TenantID: "t1", UserID: "u2"}, agents.ErrTokenMismatch},
		{"other tenant", cp1, agents.Decision{Token: c.Token, TenantID: "t2", UserID: "u1"}, agents.ErrTokenMismatch},
		{"token of another checkpoint", cp1, agents.Decision{Token: cp2.Confirmation.Token, TenantID: "t1", UserID: "u1"}, agents.ErrTokenMismatch},
		{"token on another checkpoint", cp2, ok, agents.ErrTokenMismatch},
	}
	for _, r := range refusals {
		for _, approve := range []bool{true, false} {
			seq := e.Approve(t.Context(), r.cp, r.d)
			if !approve {
				seq = e.Deny(t.Context(), r.cp, r.d)
			}
			err := onlyError(t, drain(t, seq))
			if !errors.Is(err, r.want) || !errors.Is(err, agents.ErrTokenRefused) {
				t.Errorf("%s (approve=%v): error = %v, want %v", r.name, approve, err, r.want)
			}
		}
		if err := e.VerifyDecision(r.cp, r.d); !errors.Is(err, r.want) {
			t.Errorf("%s: VerifyDecision = %v, want %v", r.name, err, r.want)
		}
	}
	if n.Load() != 0 || m.Calls() != 2 {
		t.Fatalf("after refusals: tool ran %d times, model called %d times", n.Load(), m.Calls())
	}
	// A confirmation checkpoint cannot be resumed with answers.
	if err := onlyError(t, drain(t, e.Resume(t.Context(), cp1, agents.Answers{"q1": {Text: "yes"}}))); !errors.Is(err, agents.ErrBadCheckpoint) {
		t.Errorf("Resume(confirmation checkpoint) = %v, want ErrBadCheckpoint", err)
	}
	if err := e.VerifyDecision(cp1, ok); err != nil {
		t.Fatalf("VerifyDecision(valid) = %v", err)
	}

	// Approve runs the tool exactly once and the run continues.
	aevs, rf := finished(t, drain(t, e.Approve(t.Context(), cp1, ok)))
	checkHeaders(t, aevs, aevs[0].Header().RunID)
	if got := toolEvents(aevs); strings.Join(got, " ") != "tool.started:w1 tool.finished:w1" {
		t.Errorf("approved run tool events = %v", got)
	}
	if f := finishedByID(t, aevs, "w1"); f.Error != "" || f.Summary != "deleted all rows of orders" {
		t.Errorf("approved call = %+v", f)
	}
	if n.Load() != 1 {
		t.Fatalf("write tool ran %d times after approval, want 1", n.Load())
	}
	if r := resultFor(t, m.Requests()[2].Messages, "w1"); r.IsError || r.Content != "deleted all rows of orders" {
		t.Errorf("model saw %+v", r)
	}
	if rf.Text != "Orders are gone." || rf.ToolCalls != 1 {
		t.Errorf("RunFinished = %+v", rf)
	}

	// Replaying the token does nothing.
	for _, seq := range []func() []item{
		func() []item { return drain(t, e.Approve(t.Context(), cp1, ok)) },
		func() []item { return drain(t, e.Deny(t.Context(), cp1, ok)) },
	} {
		if err := onlyError(t, seq()); !errors.Is(err, agents.ErrTokenReplayed) {
			t.Errorf("replay error = %v, want ErrTokenReplayed", err)
		}
	}
	if n.Load() != 1 || m.Calls() != 3 {
		t.Errorf("after replay: tool ran %d times, model called %d times", n.Load(), m.Calls())
	}

	// Deny the second one: the model hears why, the tool never runs.
	d2 := agents.Decision{Token: cp2.Confirmation.Token, TenantID: "t1", UserID: "u1", Reason: "customers are still needed"}
	devs, rf2 := finished(t, drain(t, e.Deny(t.Context(), cp2, d2)))
	f := finishedByID(t, devs, "w2")
	if f.ErrorCode != "denied" || !strings.Contains(f.Summary, "declined") || !strings.Contains(f.Summary, "customers are still needed") {
		t.Errorf("denied call = %+v", f)
	}
	if r := resultFor(t, m.Requests()[3].Messages, "w2"); !r.IsError || r.Content != f.Summary {
		t.Errorf("model saw %+v", r)
	}
	if n.Load() != 1 || rf2.Text != "Customers were kept." {
		t.Errorf("after deny: tool ran %d times, RunFinished %+v", n.Load(), rf2)
	}
}

// fakeClock is a settable Config.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestConfirmationExpires(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	m := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{call("w1", "delete_rows", `{"table":"orders"}`)}},
		{Text: "never"},
	}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{writeTool(&n)}, Now: clock.Now, ConfirmationTTL: time.Minute})
	evs, intr := interrupted(t, drain(t, e.Run(t.Context(), agents.Input{TenantID: "t", UserID: "u", Message: agents.UserMessage("go")})))
	if got := evs[0].Header().Time; !got.Equal(clock.Now()) {
		t.Errorf("event time %s does not come from Config.Now", got)
	}
	if want := clock.Now().Add(time.Minute); !intr.Confirmation.ExpiresAt.Equal(want) {
		t.Errorf("ExpiresAt = %s, want %s", intr.Confirmation.ExpiresAt, want)
	}
	cp := roundTrip(t, intr.Checkpoint)
	d := agents.Decision{Token: intr.Confirmation.Token, TenantID: "t", UserID: "u"}
	clock.Advance(59 * time.Second)
	if err := e.VerifyDecision(cp, d); err != nil {
		t.Fatalf("token refused before expiry: %v", err)
	}
	clock.Advance(2 * time.Second)
	if err := onlyError(t, drain(t, e.Approve(t.Context(), cp, d))); !errors.Is(err, agents.ErrTokenExpired) {
		t.Errorf("Approve after TTL = %v, want ErrTokenExpired", err)
	}
	if n.Load() != 0 || m.Calls() != 1 {
		t.Errorf("expired approval ran the tool %d times, model %d times", n.Load(), m.Calls())
	}
}

// Tokens verify across executors sharing a key (another process), and
// not across executors with different keys.
func TestConfirmationKeyAcrossExecutors(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	var n atomic.Int32
	m := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{call("w1", "delete_rows", `{"table":"orders"}`)}},
		{Text: "done"},
	}}
	e1 := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{writeTool(&n)}, ConfirmationKey: key})
	_, intr := interrupted(t, drain(t, e1.Run(t.Context(), agents.Input{TenantID: "t", UserID: "u", Message: agents.UserMessage("go")})))
	cp := roundTrip(t, intr.Checkpoint)
	d := agents.Decision{Token: intr.Confirmation.Token, TenantID: "t", UserID: "u"}
	other := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{writeTool(&n)}})
	if err := onlyError(t, drain(t, other.Approve(t.Context(), cp, d))); !errors.Is(err, agents.ErrTokenForged) {
		t.Errorf("other key: %v, want ErrTokenForged", err)
	}
	e2 := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{writeTool(&n)}, ConfirmationKey: key})
	finished(t, drain(t, e2.Approve(t.Context(), cp, d)))
	if n.Load() != 1 {
		t.Errorf("tool ran %d times", n.Load())
	}
}

func TestWriteToolInvalidArgumentsRefusedBeforeConfirmation(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	m := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{call("w1", "delete_rows", `{"tbl":"orders"}`)}},
		{Text: "I could not do that."},
	}}
	bus, rec := newBus(t)
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{writeTool(&n)}, Bus: bus})
	evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{TenantID: "t", UserID: "u", Message: agents.UserMessage("go")})))
	if len(ofType[*agents.Interrupted](evs)) != 0 || len(rec.ofKind(hooks.KindInterrupt)) != 0 {
		t.Error("confirmation requested for arguments that cannot work")
	}
	f := finishedByID(t, evs, "w1")
	if f.ErrorCode != "invalid_arguments" || !strings.Contains(f.Error, "table") {
		t.Errorf("finished = %+v", f)
	}
	if n.Load() != 0 || rf.Text != "I could not do that." {
		t.Errorf("tool ran %d times; RunFinished %+v", n.Load(), rf)
	}
}

// A write call and a question in one turn: the first interrupt wins and
// the other is refused.
func TestSecondInterruptInTurnRefused(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{
		call("w1", "delete_rows", `{"table":"orders"}`),
		{ID: "ask", Name: agents.ToolAskUserQuestion, Args: `{"questions":[{"question":"Really?"}]}`},
		call("w2", "delete_rows", `{"table":"users"}`),
	}}}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{writeTool(&n)}})
	evs, intr := interrupted(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
	if intr.Kind != domain.CheckpointConfirmation || intr.Confirmation.CallID != "w1" {
		t.Errorf("Interrupted = %+v", intr)
	}
	for _, id := range []string{"ask", "w2"} {
		if f := finishedByID(t, evs, id); f.ErrorCode != "not_run" {
			t.Errorf("%s = %+v, want not_run", id, f)
		}
	}
	if n.Load() != 0 {
		t.Error("a write tool ran")
	}
}

// ---------------------------------------------------------------------------
// Checkpoints keep provider data byte for byte.
// ---------------------------------------------------------------------------

func TestCheckpointPreservesOpaque(t *testing.T) {
	t.Parallel()
	const reasoning = "The period is ambiguous; ask."
	const sig = "EqQBCkYIBRgCKkBsig+/=="
	opaque := json.RawMessage(`{"thought_signature":"Q2lRQmMyRmpaV1Z1","v":2}`)
	m := &scripted.Model{Turns: []scripted.Turn{
		{Reasoning: reasoning, ReasoningSignature: sig, ToolCalls: []scripted.Call{
			{ID: "ask1", Name: agents.ToolAskUserQuestion, Args: `{"questions":[{"question":"Which year?"}]}`, Opaque: opaque},
		}},
		{Text: "ok"},
	}}
	e := newExec(t, agents.Config{Model: m})
	_, intr := interrupted(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("revenue?")})))
	cp := roundTrip(t, intr.Checkpoint)
	checkOpaque(t, cp.Messages[1], reasoning, sig, opaque)
	finished(t, drain(t, e.Resume(t.Context(), cp, agents.Answers{"q1": {Text: "2025"}})))
	checkOpaque(t, m.Requests()[1].Messages[1], reasoning, sig, opaque)
}

// Providers stream arguments with whitespace (`{"table": "orders"}`), and
// hosts store checkpoints with encoding/json (which compacts raw JSON and
// escapes <, > and &) or in a jsonb column (which also reorders keys). The
// token must survive either.
func TestConfirmationSurvivesReencoding(t *testing.T) {
	t.Parallel()
	const args = "{ \"table\" : \"orders & <archive>\",\n  \"dry_run\": false }"
	reencode := map[string]func(testing.TB, *agents.Checkpoint) *agents.Checkpoint{
		"encoding/json": roundTrip,
		"jsonb-like": func(t testing.TB, cp *agents.Checkpoint) *agents.Checkpoint {
			b, err := json.Marshal(cp)
			if err != nil {
				t.Fatal(err)
			}
			var generic any
			if err := json.Unmarshal(b, &generic); err != nil {
				t.Fatal(err)
			}
			b, err = json.MarshalIndent(generic, "", "  ") // sorted keys, new whitespace
			if err != nil {
				t.Fatal(err)
			}
			var out agents.Checkpoint
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			return &out
		},
		"in memory": func(_ testing.TB, cp *agents.Checkpoint) *agents.Checkpoint { return cp },
	}
	type archiveIn struct {
		Table  string `json:"table"`
		DryRun bool   `json:"dry_run"`
	}
	for name, store := range reencode {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got []archiveIn
			var mu sync.Mutex
			tool := mustTool(agents.NewTool("archive", "Archives a table.", func(_ context.Context, in archiveIn) (string, error) {
				mu.Lock()
				got = append(got, in)
				mu.Unlock()
				return "archived", nil
			}, agents.WithPermission(agents.PermDestructive)))
			m := &scripted.Model{Turns: []scripted.Turn{
				{ToolCalls: []scripted.Call{call("w1", "archive", args)}},
				{Text: "Archived."},
			}}
			e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{tool}})
			_, intr := interrupted(t, drain(t, e.Run(t.Context(), agents.Input{TenantID: "t", UserID: "u", Message: agents.UserMessage("go")})))
			c := intr.Confirmation
			sum := sha256.Sum256(c.Arguments)
			if c.ArgumentsHash != hex.EncodeToString(sum[:]) || c.Permission != agents.PermDestructive {
				t.Errorf("confirmation = %+v: ArgumentsHash is not the SHA-256 of Arguments", c)
			}
			cp := store(t, intr.Checkpoint)
			d := agents.Decision{Token: c.Token, TenantID: "t", UserID: "u"}
			if err := e.VerifyDecision(cp, d); err != nil {
				t.Fatalf("VerifyDecision after storing the checkpoint: %v", err)
			}
			finished(t, drain(t, e.Approve(t.Context(), cp, d)))
			if len(got) != 1 || got[0] != (archiveIn{Table: "orders & <archive>"}) {
				t.Errorf("tool got %+v", got)
			}
		})
	}
}
