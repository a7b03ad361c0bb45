package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

var (
	sampleOnce sync.Once
	samplePath string
	sampleErr  error
)

// sampleDB returns the path of a sample database created once for the
// package's tests (creating it is the slowest step); the app opens it
// read-only.
func sampleDB(t *testing.T) string {
	t.Helper()
	sampleOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bichat-hitl-test-")
		if err != nil {
			sampleErr = err
			return
		}
		samplePath = filepath.Join(dir, "retail.db")
		sampleErr = sampledata.CreateSQLite(context.Background(), samplePath)
	})
	if sampleErr != nil {
		t.Fatalf("create sample database: %v", sampleErr)
	}
	return samplePath
}

// TestMain removes the shared sample database after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if samplePath != "" {
		os.RemoveAll(filepath.Dir(samplePath))
	}
	os.Exit(code)
}

// revenue2025 computes a region's 2025 revenue and order count of
// completed orders from the generated rows, not the database.
func revenue2025(t *testing.T, region string) (float64, int) {
	t.Helper()
	d := sampledata.Generate(0)
	var regionID int64
	for _, r := range d.Regions {
		if r[1].(string) == region {
			regionID = r[0].(int64)
		}
	}
	inRegion := map[int64]bool{}
	for _, c := range d.Customers {
		inRegion[c[0].(int64)] = c[3].(int64) == regionID
	}
	orders := map[int64]bool{}
	for _, o := range d.Orders {
		if at := o[2].(time.Time); o[3].(string) == "completed" && at.Year() == 2025 && inRegion[o[1].(int64)] {
			orders[o[0].(int64)] = true
		}
	}
	sum := 0.0
	for _, it := range d.OrderItems {
		if orders[it[0].(int64)] {
			sum += float64(it[3].(int64)) * it[4].(float64)
		}
	}
	return sum, len(orders)
}

// TestRun runs the program offline, approving, and checks the lines a
// reader is promised.
func TestRun(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(t.Context(), &out, options{offline: true, region: "South", to: "sales-team@example.com", dbPath: sampleDB(t)}); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	got := out.String()
	rev, n := revenue2025(t, "South")
	figures := regexp.QuoteMeta(fmt.Sprintf("Revenue of completed orders in South in 2025: €%.2f from %d orders.", rev, n))
	for _, want := range []string{
		`(?m)^== process 1: .*\n.*\n.*\ntool call  ask_user_question \(read\)\ninterrupted, waiting for a question`,
		`(?m)^pending    question region: "Which region should the figures cover\?" options=\[North South East West Central\]$`,
		`(?m)^user       recipient → sales-team@example.com$`,
		`(?m)^tool call  send_email \(write\)\ninterrupted, waiting for a confirmation`,
		`(?m)^== process 3: `,
		`(?m)^           outbox before the decision: 0 email\(s\)\nuser       approves$`,
		`(?m)^assistant complete: .*Sent to sales-team@example.com\. ` + figures + `$`,
		`(?m)^  tool send_email ok$`,
		`(?m)^== outbox: 1 email\(s\)\nmail-1 to sales-team@example\.com: 2025 revenue, South\n  ` + figures + `$`,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("output lacks a match for %s\noutput:\n%s", want, got)
		}
	}
	if strings.Contains(got, "== process 4") {
		t.Errorf("a fourth process was started for a finished message\n%s", got)
	}
}

// flow drives the app step by step, each step on a new Service, up to
// the pending confirmation, checking the question, the answer and that
// nothing was sent.
func flow(t *testing.T, region, to string) (*app, string, *bichat.Interrupt) {
	t.Helper()
	ctx := t.Context()
	a, err := newApp(ctx, options{offline: true, region: region, to: to, dbPath: sampleDB(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.close)
	var out bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("output:\n%s", out.String())
		}
	})

	// Process 1: the question.
	svc := startSvc(t, a, &out, 1)
	msgID, err := a.ask(ctx, &out, svc)
	if err != nil {
		t.Fatal(err)
	}
	svc.Close(ctx)

	// Process 2 finds the question in the store.
	svc = startSvc(t, a, &out, 2)
	checkStatus(t, svc, a, msgID, domain.StatusAwaitingInput)
	in, err := svc.PendingInterrupt(ctx, a.user, msgID)
	if err != nil {
		t.Fatal(err)
	}
	if in.Kind != domain.CheckpointQuestion || len(in.Questions) != 2 || in.Questions[0].ID != qRegion ||
		len(in.Questions[0].Options) != 5 || in.Questions[1].ID != qRecipient || len(in.Questions[1].Options) != 0 {
		t.Fatalf("pending interrupt = %+v, want the region and recipient questions", in)
	}
	// An answer that does not fit is refused and the question stays.
	yielded := 0
	for ev, err := range svc.Resume(ctx, a.user, msgID, agents.Answers{qRegion: {Selected: []string{"Atlantis"}}}) {
		yielded++
		if !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "answers.recipient") {
			t.Fatalf("resume with a bad answer: %v %v, want domain.ErrInvalid naming answers.recipient", ev, err)
		}
	}
	if yielded != 1 {
		t.Fatalf("resume with a bad answer yielded %d items, want only the error", yielded)
	}
	checkStatus(t, svc, a, msgID, domain.StatusAwaitingInput)
	if err := a.answer(ctx, &out, svc, msgID, in); err != nil {
		t.Fatal(err)
	}
	// The answers reached the model: the resumed run's first request
	// carries them as the ask_user_question result.
	reqs := a.analysts[1].Requests()
	if len(reqs) == 0 {
		t.Fatal("the model of process 2 got no request")
	}
	var answered string
	for _, m := range reqs[0].Messages {
		for _, p := range m.Parts {
			if p.ToolResult != nil && p.ToolResult.Name == agents.ToolAskUserQuestion {
				answered = p.ToolResult.Content
			}
		}
	}
	for _, want := range []string{regionQuestion + " → " + region, recipientQuestion + " → " + to} {
		if !strings.Contains(answered, want) {
			t.Errorf("the model read %q, want it to contain %q", answered, want)
		}
	}
	svc.Close(ctx)

	// Process 3 finds the confirmation; nothing was sent on the model's word.
	svc = startSvc(t, a, &out, 3)
	t.Cleanup(func() { svc.Close(context.Background()) })
	checkStatus(t, svc, a, msgID, domain.StatusAwaitingInput)
	in, err = svc.PendingInterrupt(ctx, a.user, msgID)
	if err != nil {
		t.Fatal(err)
	}
	c := in.Confirmation
	if in.Kind != domain.CheckpointConfirmation || c == nil || c.Tool != toolSendEmail || c.Permission != agents.PermWrite || c.Token == "" {
		t.Fatalf("pending interrupt = %+v, want a send_email confirmation", in)
	}
	var args emailInput
	if err := json.Unmarshal(c.Arguments, &args); err != nil || args.To != to || !strings.Contains(args.Body, region) {
		t.Errorf("confirmation arguments %s (%v), want an email to %s about %s", c.Arguments, err, to, region)
	}
	if sent := a.outbox.emails(); len(sent) != 0 {
		t.Fatalf("sent before approval: %+v", sent)
	}
	// Another user cannot approve it: the message is not theirs.
	bob := domain.Principal{TenantID: a.user.TenantID, UserID: "bob", Roles: a.user.Roles}
	for _, err := range svc.Approve(ctx, bob, msgID, c.Token) {
		if !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("bob's approval: %v, want domain.ErrNotFound", err)
		}
	}
	if sent := a.outbox.emails(); len(sent) != 0 {
		t.Fatalf("sent on bob's approval: %+v", sent)
	}
	return a, msgID, in
}

// startSvc starts a process of a.
func startSvc(t *testing.T, a *app, out *bytes.Buffer, process int) *bichat.Service {
	t.Helper()
	svc, err := a.start(out, process)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// checkStatus checks the stored status of message id.
func checkStatus(t *testing.T, svc *bichat.Service, a *app, id string, want domain.MessageStatus) *domain.Message {
	t.Helper()
	msg, err := svc.Message(t.Context(), a.user, id)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Status != want {
		t.Fatalf("message %s is %s, want %s", id, msg.Status, want)
	}
	return msg
}

// TestApprove: the email goes out exactly once, on the user's approval,
// with the figures of the region the user chose; the token cannot be
// used again.
func TestApprove(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, msgID, in := flow(t, "East", "east-team@example.com")

	svc := startSvc(t, a, &bytes.Buffer{}, 4)
	defer svc.Close(context.Background())
	if err := a.decide(ctx, &bytes.Buffer{}, svc, msgID, in, true); err != nil {
		t.Fatal(err)
	}
	sent := a.outbox.emails()
	rev, n := revenue2025(t, "East")
	figures := fmt.Sprintf("Revenue of completed orders in East in 2025: €%.2f from %d orders.", rev, n)
	if len(sent) != 1 || sent[0].To != "east-team@example.com" || sent[0].Body != figures {
		t.Fatalf("outbox = %+v, want one email to east-team@example.com saying %q", sent, figures)
	}
	msg := checkStatus(t, svc, a, msgID, domain.StatusComplete)
	if !strings.HasSuffix(msg.Text(), "Sent to east-team@example.com. "+figures) {
		t.Errorf("answer %q", msg.Text())
	}
	tc := msg.Metadata.ToolCalls
	if len(tc) != 3 || tc[2].Name != toolSendEmail || tc[2].Error != "" {
		t.Errorf("tool calls = %+v, want ask, query and a successful send_email", tc)
	}

	// The same token again: refused, nothing sent twice.
	for _, err := range svc.Approve(ctx, a.user, msgID, in.Confirmation.Token) {
		if !errors.Is(err, domain.ErrConflict) {
			t.Errorf("second approval: %v, want domain.ErrConflict", err)
		}
	}
	if sent := a.outbox.emails(); len(sent) != 1 {
		t.Errorf("outbox after a second approval has %d emails, want 1", len(sent))
	}
}

// TestDeny: a denied email is never sent; the agent is told and the
// message completes with the refusal recorded on the call.
func TestDeny(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, msgID, in := flow(t, "North", "north@example.com")

	svc := startSvc(t, a, &bytes.Buffer{}, 4)
	defer svc.Close(context.Background())
	if err := a.decide(ctx, &bytes.Buffer{}, svc, msgID, in, false); err != nil {
		t.Fatal(err)
	}
	if sent := a.outbox.emails(); len(sent) != 0 {
		t.Fatalf("sent after a denial: %+v", sent)
	}
	msg := checkStatus(t, svc, a, msgID, domain.StatusComplete)
	if !strings.Contains(msg.Text(), "I did not send the email. Revenue of completed orders in North in 2025") {
		t.Errorf("answer %q", msg.Text())
	}
	tc := msg.Metadata.ToolCalls
	if len(tc) != 3 || tc[2].Name != toolSendEmail || !strings.Contains(tc[2].Error, "declined") ||
		!strings.Contains(tc[2].Error, "not now") {
		t.Errorf("tool calls = %+v, want send_email recorded as declined with the reason", tc)
	}
	// The model was told, with the reason.
	reqs := a.analysts[len(a.analysts)-1].Requests()
	last := reqs[len(reqs)-1].Messages
	if r := last[len(last)-1].Parts[0].ToolResult; r == nil || !r.IsError || !strings.Contains(r.Content, "declined") {
		t.Errorf("the model's last tool result = %+v, want the denial", r)
	}
	// The token is spent: approving now is refused and sends nothing.
	for _, err := range svc.Approve(ctx, a.user, msgID, in.Confirmation.Token) {
		if err == nil {
			t.Error("approval after a denial succeeded")
		}
	}
	if sent := a.outbox.emails(); len(sent) != 0 {
		t.Errorf("sent after approving a denied call: %+v", sent)
	}
}

// TestAnswersFor covers how the demo user answers a real model's
// questions.
func TestAnswersFor(t *testing.T) {
	t.Parallel()
	o := options{region: "west", to: "x@example.com"}
	opts := []agents.QuestionOption{{Label: "North"}, {Label: "West"}}
	got := answersFor([]agents.Question{
		{ID: "a", Question: "Region?", Options: opts},
		{ID: "b", Question: "Region?", Options: []agents.QuestionOption{{Label: "EMEA"}, {Label: "APAC"}}, AllowOther: true},
		{ID: "c", Question: "Region?", Options: []agents.QuestionOption{{Label: "EMEA"}, {Label: "APAC"}}},
		{ID: "d", Question: "Who should get the report?"},
		{ID: "e", Question: "Which area?"},
	}, o)
	want := agents.Answers{
		"a": {Selected: []string{"West"}},
		"b": {Text: "west"},
		"c": {Selected: []string{"EMEA"}},
		"d": {Text: "x@example.com"},
		"e": {Text: "west"},
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("answers = %s, want %s", g, w)
	}
}
