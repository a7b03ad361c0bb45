package bichat_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/providers/scripted"
)

func textModel(text string) *scripted.Model {
	return &scripted.Model{Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: text}, nil
	}}
}

func partTypes(parts []domain.Part) []domain.PartType {
	out := make([]domain.PartType, len(parts))
	for i, p := range parts {
		out[i] = p.Type
	}
	return out
}

// clipped reports whether got is full cut to at most limit characters:
// marked truncated, a prefix of full (apart from a trailing ellipsis).
func clipped(got, full string, limit int) bool {
	return utf8.RuneCountInString(got) <= limit && len(got) < len(full) &&
		strings.HasPrefix(full, strings.TrimSuffix(got, "…"))
}

func TestSendTextValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		text string
		ok   bool
	}{
		{"empty", "", false},
		{"whitespace only", " \t\n\u00a0 ", false},
		{"10001 ascii", strings.Repeat("a", 10001), false},
		{"10001 multi-byte", strings.Repeat("東", 10001), false},
		{"invalid utf-8", "revenue \xff\xfe", false},
		{"NUL", "revenue\x00 by region", false},
		{"10000 é", strings.Repeat("é", 10000), true},
		{"10000 東", strings.Repeat("東", 10000), true},
		{"10000 after trimming", "  \n" + strings.Repeat("a", 10000) + "\n ", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, textModel("ok."), nil)
			sess := f.session(t, alice, "")
			items := collect(t, f.svc.Send(t.Context(), alice, sess.ID, tc.text))
			msgs := f.messages(t, alice, sess.ID)
			if !tc.ok {
				if err := onlyErr(t, items); !hasField(err, "text") {
					t.Fatalf("Send: %v, want ErrInvalid naming text", err)
				}
				if len(msgs) != 0 || f.model.Calls() != 0 {
					t.Errorf("refused Send stored %d messages and called the model %d times", len(msgs), f.model.Calls())
				}
				if s, _ := f.svc.GetSession(t.Context(), alice, sess.ID); s.Title != bichat.DefaultTitle {
					t.Errorf("refused Send changed the title to %q", s.Title)
				}
				return
			}
			finished(t, items)
			if len(msgs) != 2 || msgs[0].Text() != strings.TrimSpace(tc.text) {
				t.Fatalf("stored %d messages; question of %d characters, want %d", len(msgs),
					utf8.RuneCountInString(msgs[0].Text()), utf8.RuneCountInString(strings.TrimSpace(tc.text)))
			}
		})
	}
}

func TestSendHappyPath(t *testing.T) {
	t.Parallel()
	const (
		args    = `{"region":"EMEA","year":2025}`
		answer  = "EMEA made 1234.50 EUR in 2025."
		summary = "EMEA 2025: revenue 1234.50 EUR over 17 orders"
	)
	u1 := domain.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}
	u2 := domain.Usage{PromptTokens: 150, CompletionTokens: 30, TotalTokens: 180}
	model := &scripted.Model{Turns: []scripted.Turn{
		{Text: "Let me check.\n", ToolCalls: []scripted.Call{{ID: "call_sales", Name: "sales_by_region", Args: args}}, Usage: u1},
		{Text: answer, Usage: u2},
	}}
	var runs atomic.Int32
	f := newFixture(t, model, []agents.Tool{salesTool(&runs)}, func(c *bichat.Config) { c.Limits.ToolRecordChars = 10 })
	ctx := t.Context()
	sess := f.session(t, alice, "")
	f.clock.Advance(time.Minute)

	evs, rf := finished(t, collect(t, f.svc.Send(ctx, alice, sess.ID, "What did EMEA make in 2025?\nShow a chart too.")))

	// The stream.
	rs := evs[0].(*agents.RunStarted)
	if rs.SessionID != sess.ID || !domain.ValidID(rs.MessageID) || !domain.ValidID(rs.RunID) || rs.Model != "scripted" {
		t.Errorf("RunStarted = %+v", rs)
	}
	for i, ev := range evs {
		if h := ev.Header(); h.Seq != int64(i+1) || h.RunID != rs.RunID {
			t.Errorf("event %d (%s): seq %d run %s", i, ev.Type(), h.Seq, h.RunID)
		}
	}
	if rf.Reason != agents.FinishEndTurn || rf.Text != answer || rf.Usage != u1.Add(u2) {
		t.Errorf("RunFinished = reason %s text %q usage %+v", rf.Reason, rf.Text, rf.Usage)
	}
	started := ofType[*agents.ToolCallStarted](evs)
	done := ofType[*agents.ToolCallFinished](evs)
	if len(started) != 1 || started[0].CallID != "call_sales" || string(started[0].Arguments) != args {
		t.Fatalf("ToolCallStarted = %+v", started)
	}
	if len(done) != 1 || done[0].Summary != summary || runs.Load() != 1 {
		t.Fatalf("ToolCallFinished = %+v (tool ran %d times)", done, runs.Load())
	}
	fin := done[0]
	if rows, ok := fin.Payload.([]salesRow); !ok || len(rows) != 1 || rows[0].Region != "EMEA" {
		t.Errorf("payload for the host = %#v, want the typed rows", fin.Payload)
	}
	if !slices.Equal(fin.Datasets, []string{salesDataset}) || len(fin.Artifacts) != 1 {
		t.Fatalf("datasets %v, artifacts %+v", fin.Datasets, fin.Artifacts)
	}
	evArt := fin.Artifacts[0]
	if !domain.ValidID(evArt.ID) || evArt.TenantID != "acme" || evArt.SessionID != sess.ID || evArt.MessageID != rs.MessageID {
		t.Errorf("artifact in the event = %+v, want ids stamped before the host sees it", evArt)
	}

	// The persisted messages.
	msgs := f.messages(t, alice, sess.ID)
	if len(msgs) != 2 {
		t.Fatalf("stored %d messages, want 2", len(msgs))
	}
	q, a := msgs[0], msgs[1]
	if q.Role != domain.RoleUser || q.Status != domain.StatusComplete || q.Text() != "What did EMEA make in 2025?\nShow a chart too." {
		t.Errorf("question = %+v", q)
	}
	if a.ID != rs.MessageID || a.Role != domain.RoleAssistant || a.Status != domain.StatusComplete || a.RunID != rs.RunID {
		t.Errorf("answer = id %s role %s status %s run %s", a.ID, a.Role, a.Status, a.RunID)
	}
	wantTypes := []domain.PartType{domain.PartText, domain.PartToolCall, domain.PartToolResult, domain.PartText}
	if got := partTypes(a.Parts); !slices.Equal(got, wantTypes) {
		t.Fatalf("answer parts = %v, want %v", got, wantTypes)
	}
	if a.Parts[0].Text != "Let me check.\n" || a.Parts[1].ToolCall.ID != "call_sales" || string(a.Parts[1].ToolCall.Arguments) != args ||
		a.Parts[2].ToolResult.CallID != "call_sales" || a.Parts[2].ToolResult.Content != summary || a.Parts[3].Text != answer {
		t.Errorf("answer parts = %+v", a.Parts)
	}
	md := a.Metadata
	if len(md.ToolCalls) != 1 {
		t.Fatalf("ToolCalls = %+v", md.ToolCalls)
	}
	rec := md.ToolCalls[0]
	if rec.ID != "call_sales" || rec.Name != "sales_by_region" || !rec.Truncated || rec.Error != "" ||
		!clipped(rec.Arguments, args, 10) || !clipped(rec.Result, summary, 10) {
		t.Errorf("tool record = %+v, want arguments and result cut to 10 characters", rec)
	}
	if !slices.Equal(rec.ArtifactIDs, []string{evArt.ID}) {
		t.Errorf("record artifact ids = %v, want [%s]", rec.ArtifactIDs, evArt.ID)
	}
	if md.Usage.IsZero() || md.Usage != rf.Usage {
		t.Errorf("Usage = %+v, want RunFinished's %+v", md.Usage, rf.Usage)
	}
	if !slices.Equal(md.DatasetsUsed, []string{salesDataset}) || md.Model != "scripted" || md.StopReason != "end_turn" || md.Error != nil {
		t.Errorf("metadata = %+v", md)
	}

	// The artifact.
	arts, err := f.svc.Artifacts(ctx, alice, a.ID)
	if err != nil || len(arts) != 1 {
		t.Fatalf("Artifacts = %+v, %v", arts, err)
	}
	art := arts[0]
	if art.ID != evArt.ID || art.TenantID != "acme" || art.SessionID != sess.ID || art.MessageID != a.ID ||
		art.Kind != domain.ArtifactChart || art.Name != "revenue.png" || art.CreatedAt.IsZero() {
		t.Errorf("stored artifact = %+v", art)
	}

	// The session.
	got, _ := f.svc.GetSession(ctx, alice, sess.ID)
	if got.Title != "What did EMEA make in 2025?" || !got.UpdatedAt.Equal(f.clock.Now()) || !got.UpdatedAt.After(sess.UpdatedAt) {
		t.Errorf("session after Send = %+v", got)
	}

	// Replay.
	replayed, err := f.svc.Replay(ctx, alice, rs.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameStream(t, replayed, evs)
	const k = 3
	tail, err := f.svc.Replay(ctx, alice, rs.RunID, k)
	if err != nil {
		t.Fatal(err)
	}
	sameStream(t, tail, evs[k:])
	if rest, err := f.svc.Replay(ctx, alice, rs.RunID, int64(len(evs))); err != nil || len(rest) != 0 {
		t.Errorf("Replay after the last seq = %d events, %v; want none", len(rest), err)
	}

	// The bus.
	saves := f.bus.ofKind(hooks.KindMessageSave)
	if len(saves) != 2 {
		t.Fatalf("message.save published %d times, want 2", len(saves))
	}
	if s := saves[0]; s.role != domain.RoleUser || s.status != domain.StatusComplete || s.meta.MessageID != q.ID ||
		s.meta.SessionID != sess.ID || s.meta.TenantID != "acme" || s.meta.UserID != "alice" {
		t.Errorf("first message.save = %+v", s)
	}
	if s := saves[1]; s.role != domain.RoleAssistant || s.status != domain.StatusComplete || s.meta.MessageID != a.ID ||
		s.meta.RunID != rs.RunID || s.usage != rf.Usage {
		t.Errorf("second message.save = %+v", s)
	}
}

// sameStream checks that replayed events have the types and sequence
// numbers of the streamed ones.
func sameStream(t testing.TB, got, want []agents.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Type() != want[i].Type() || got[i].Header().Seq != want[i].Header().Seq || got[i].Header().RunID != want[i].Header().RunID {
			t.Errorf("replayed event %d = %s seq %d, want %s seq %d", i, got[i].Type(), got[i].Header().Seq, want[i].Type(), want[i].Header().Seq)
		}
	}
}

func TestSendTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Revenue by region and quarter ", 5) // 150 characters
	cases := []struct {
		name     string
		initial  string
		question string
		want     func(string) bool
	}{
		{"first line", "", "Top products?\nOnly 2025 please.", func(s string) bool { return s == "Top products?" }},
		{"long first line", "", long, func(s string) bool {
			return utf8.RuneCountInString(s) <= 60 && strings.HasPrefix(long, strings.TrimSuffix(s, "…")) && utf8.RuneCountInString(s) >= 59
		}},
		{"long multi-byte", "", strings.Repeat("東", 100), func(s string) bool {
			return utf8.RuneCountInString(s) <= 60 && strings.HasPrefix(s, strings.Repeat("東", 59))
		}},
		{"exactly 60", "", strings.Repeat("x", 60), func(s string) bool { return s == strings.Repeat("x", 60) }},
		{"custom title kept", "Board pack", "Top products?", func(s string) bool { return s == "Board pack" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, textModel("ok."), nil)
			sess := f.session(t, alice, tc.initial)
			finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, tc.question)))
			got, _ := f.svc.GetSession(t.Context(), alice, sess.ID)
			if !tc.want(got.Title) {
				t.Fatalf("title = %q (%d characters)", got.Title, utf8.RuneCountInString(got.Title))
			}
			// Later questions do not rename the session.
			finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Something else entirely")))
			if again, _ := f.svc.GetSession(t.Context(), alice, sess.ID); again.Title != got.Title {
				t.Errorf("second question renamed the session to %q", again.Title)
			}
		})
	}
}

func TestSendHistory(t *testing.T) {
	t.Parallel()
	model := &scripted.Model{Turns: []scripted.Turn{
		{Text: "Checking.", ToolCalls: []scripted.Call{{ID: "c1", Name: "sales_by_region", Args: `{"region":"EMEA","year":2025}`}}},
		{Text: "EMEA made 1234.50 EUR."},
		{Text: "APAC made the same."},
	}}
	f := newFixture(t, model, []agents.Tool{salesTool(nil)})
	sess := f.session(t, alice, "")
	finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "EMEA revenue?")))
	finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "And APAC?")))

	reqs := f.model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model got %d requests, want 3", len(reqs))
	}
	req := reqs[2]
	if req.System != "You are a test analyst." {
		t.Errorf("system = %q", req.System)
	}
	msgs := req.Messages
	roles := make([]domain.Role, len(msgs))
	for i, m := range msgs {
		roles[i] = m.Role
	}
	wantRoles := []domain.Role{domain.RoleUser, domain.RoleAssistant, domain.RoleTool, domain.RoleAssistant, domain.RoleUser}
	if !slices.Equal(roles, wantRoles) {
		t.Fatalf("roles = %v, want %v", roles, wantRoles)
	}
	if msgs[0].Text() != "EMEA revenue?" || msgs[4].Text() != "And APAC?" {
		t.Errorf("questions = %q, %q", msgs[0].Text(), msgs[4].Text())
	}
	if calls := msgs[1].ToolCalls(); msgs[1].Text() != "Checking." || len(calls) != 1 || calls[0].ID != "c1" {
		t.Errorf("first assistant message = %+v", msgs[1])
	}
	if p := msgs[2].Parts; len(p) != 1 || p[0].ToolResult == nil || p[0].ToolResult.CallID != "c1" ||
		!strings.Contains(p[0].ToolResult.Content, "1234.50") {
		t.Errorf("tool message = %+v", msgs[2])
	}
	if msgs[3].Text() != "EMEA made 1234.50 EUR." || len(msgs[3].ToolCalls()) != 0 {
		t.Errorf("answer = %+v", msgs[3])
	}
}

func TestSendFailedExchangeLeftOutOfHistory(t *testing.T) {
	t.Parallel()
	model := &scripted.Model{Turns: []scripted.Turn{
		{Err: errors.New("upstream rejected the request")},
		{Text: "Fine now."},
	}}
	f := newFixture(t, model, nil)
	sess := f.session(t, alice, "")
	failedRun(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "First try")))
	finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Second try")))
	req := f.model.Requests()[1]
	if len(req.Messages) != 1 || req.Messages[0].Text() != "Second try" {
		t.Fatalf("second request = %+v, want only the new question", req.Messages)
	}
	msgs := f.messages(t, alice, sess.ID)
	statuses := make([]domain.MessageStatus, len(msgs))
	for i, m := range msgs {
		statuses[i] = m.Status
	}
	want := []domain.MessageStatus{domain.StatusComplete, domain.StatusFailed, domain.StatusComplete, domain.StatusComplete}
	if !slices.Equal(statuses, want) {
		t.Errorf("statuses = %v, want %v", statuses, want)
	}
}

// failureCode checks that the answer is failed (not generating) with code.
func failureCode(t testing.TB, f *fixture, messageID, code string) {
	t.Helper()
	m := f.message(t, alice, messageID)
	if m.Status != domain.StatusFailed || m.Metadata.Error == nil || m.Metadata.Error.Code != code || m.Metadata.Error.Message == "" {
		t.Fatalf("answer = %s %+v, want failed with code %q", m.Status, m.Metadata.Error, code)
	}
}

func TestSendModelError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted.Model{Turns: []scripted.Turn{{Err: errors.New("400 bad request")}}}, nil)
	sess := f.session(t, alice, "")
	evs, rf, err := failedRun(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?")))
	if rf.Code != "model_error" || !strings.Contains(err.Error(), "400 bad request") {
		t.Errorf("RunFailed code %q, error %v", rf.Code, err)
	}
	failureCode(t, f, evs[0].(*agents.RunStarted).MessageID, "model_error")
	if f.model.Calls() != 1 {
		t.Errorf("model called %d times; a non-retryable error is not retried", f.model.Calls())
	}
}

// rangeUntil ranges over seq, calls stop with each event and breaks when it
// returns true; it returns the events seen.
func rangeUntil(t testing.TB, seq func(func(agents.Event, error) bool), stop func(agents.Event) bool) []agents.Event {
	t.Helper()
	ch := make(chan []agents.Event, 1)
	go func() {
		var seen []agents.Event
		for ev, err := range seq {
			if err != nil {
				break
			}
			seen = append(seen, ev)
			if stop(ev) {
				break
			}
		}
		ch <- seen
	}()
	select {
	case seen := <-ch:
		return seen
	case <-time.After(guard):
		t.Fatalf("loop did not end within %s", guard)
		return nil
	}
}

func TestSendConsumerBreaks(t *testing.T) {
	t.Parallel()
	t.Run("after the first event", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, textModel("A long answer that the consumer never reads."), nil)
		sess := f.session(t, alice, "")
		// CancelOnStop: the loop owns its run (by default it goes on, see
		// TestDetachedRun).
		seen := rangeUntil(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?", bichat.CancelOnStop()), func(agents.Event) bool { return true })
		// Checked right after the loop returned: no wait, no poll.
		failureCode(t, f, seen[0].(*agents.RunStarted).MessageID, "cancelled")
	})
	t.Run("at the last event", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, textModel("Short."), nil)
		sess := f.session(t, alice, "")
		seen := rangeUntil(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?"), func(ev agents.Event) bool {
			_, last := ev.(*agents.RunFinished)
			return last
		})
		if m := f.message(t, alice, seen[0].(*agents.RunStarted).MessageID); m.Status != domain.StatusComplete {
			t.Errorf("answer = %s %+v; stopping after RunFinished must not fail it", m.Status, m.Metadata.Error)
		}
	})
}

func TestSendContextCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted.Model{Turns: []scripted.Turn{{Text: "never streamed", Delay: time.Hour}}}, nil)
	sess := f.session(t, alice, "")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var items []item
	done := make(chan struct{})
	go func() {
		defer close(done)
		// CancelOnStop: the stream owns its run, so a cancelled ctx cancels
		// it (by default only the watching stops, see TestDetachedRun).
		for ev, err := range f.svc.Send(ctx, alice, sess.ID, "Revenue?", bichat.CancelOnStop()) {
			items = append(items, item{ev, err})
			if _, ok := ev.(*agents.RunStarted); ok {
				cancel() // the model is waiting for its first chunk
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("Send did not stop after cancellation")
	}
	evs, rf, err := failedRun(t, items)
	if rf.Code != "cancelled" || !errors.Is(err, context.Canceled) {
		t.Errorf("RunFailed code %q, error %v", rf.Code, err)
	}
	failureCode(t, f, evs[0].(*agents.RunStarted).MessageID, "cancelled")
}

func TestSendRunTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted.Model{Turns: []scripted.Turn{{Text: "too slow", Delay: time.Hour}}}, nil,
		func(c *bichat.Config) { c.Limits.RunTimeout = 50 * time.Millisecond })
	sess := f.session(t, alice, "")
	evs, rf, err := failedRun(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Revenue?")))
	if rf.Code != "timeout" || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("RunFailed code %q, error %v", rf.Code, err)
	}
	failureCode(t, f, evs[0].(*agents.RunStarted).MessageID, "timeout")
}

func TestSendWhileGenerating(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int32
	model := &scripted.Model{Respond: func(ctx context.Context, _ *agents.Request) (scripted.Turn, error) {
		if calls.Add(1) == 1 {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
				return scripted.Turn{}, ctx.Err()
			}
			return scripted.Turn{Text: "First answer."}, nil
		}
		return scripted.Turn{Text: "Later answer."}, nil
	}}
	f := newFixture(t, model, nil)
	sess := f.session(t, alice, "")

	first := make(chan []item, 1)
	go func() {
		var out []item
		for ev, err := range f.svc.Send(context.Background(), alice, sess.ID, "First question") {
			out = append(out, item{ev, err})
		}
		first <- out
	}()
	select {
	case <-entered:
	case <-time.After(guard):
		t.Fatal("the first run never reached the model")
	}

	err := onlyErr(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Second question")))
	if !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("Send while generating: %v, want ErrConflict", err)
	}
	if msgs := f.messages(t, alice, sess.ID); len(msgs) != 2 {
		t.Errorf("refused Send stored messages: %d in the session, want 2", len(msgs))
	}

	// While this process runs the first answer, even a clock past
	// StaleAfter does not let a second run into the session.
	f.clock.Advance(bichat.DefaultStaleAfter + time.Second)
	if err := onlyErr(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Second try"))); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("Send while this process runs the session: %v, want ErrConflict", err)
	}

	close(release)
	select {
	case items := <-first:
		finished(t, items)
	case <-time.After(guard):
		t.Fatal("the first run did not finish after release")
	}

	// A generating answer left by another process blocks the session while
	// it is fresh...
	generating(t, f, sess, f.clock.Now())
	if err := onlyErr(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Third question"))); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("Send with another process's fresh run: %v, want ErrConflict", err)
	}
	// ...and no longer once it is older than StaleAfter (its process died).
	f.clock.Advance(bichat.DefaultStaleAfter + time.Second)
	finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "Fourth question")))
	if msgs := f.messages(t, alice, sess.ID); len(msgs) != 6 {
		t.Errorf("session has %d messages, want 6", len(msgs))
	}
}

func TestSendSupersedesAwaitingMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, brainModel(), []agents.Tool{salesTool(nil)})
	ctx := t.Context()
	sess := f.session(t, alice, "")
	evs, _ := interrupted(t, collect(t, f.svc.Send(ctx, alice, sess.ID, "[ask] revenue")))
	old := evs[0].(*agents.RunStarted).MessageID
	if _, err := f.svc.PendingInterrupt(ctx, alice, old); err != nil {
		t.Fatalf("PendingInterrupt before: %v", err)
	}

	finished(t, collect(t, f.svc.Send(ctx, alice, sess.ID, "Never mind, total revenue?")))

	failureCode(t, f, old, "superseded")
	if _, err := f.svc.PendingInterrupt(ctx, alice, old); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("PendingInterrupt after a new question: %v, want ErrConflict", err)
	}
	if _, err := f.store.GetCheckpoint(ctx, "acme", old); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("checkpoint still stored: %v", err)
	}
	if err := onlyErr(t, collect(t, f.svc.Resume(ctx, alice, old, validAnswers))); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("Resume of a superseded message: %v, want ErrConflict", err)
	}
	reqs := f.model.Requests()
	if last := reqs[len(reqs)-1]; len(last.Messages) != 1 || last.Messages[0].Text() != "Never mind, total revenue?" {
		t.Errorf("request after superseding = %+v, want only the new question", last.Messages)
	}
}

func TestSendUnknownSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t, textModel("ok."), nil)
	err := onlyErr(t, collect(t, f.svc.Send(t.Context(), alice, domain.NewID(), "hello")))
	if !errors.Is(err, domain.ErrNotFound) || f.model.Calls() != 0 {
		t.Fatalf("Send to an unknown session: %v (model calls %d)", err, f.model.Calls())
	}
}

// TestSendOddHistoryWindow: a history window that cuts an exchange in half
// must not start the conversation with an answer whose question is gone.
func TestSendOddHistoryWindow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, textModel("ok."), nil, func(c *bichat.Config) { c.Limits.HistoryMessages = 3 })
	sess := f.session(t, alice, "")
	for _, q := range []string{"one", "two", "three"} {
		finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, q)))
	}
	reqs := f.model.Requests()
	for i, req := range reqs {
		if req.Messages[0].Role != domain.RoleUser {
			t.Errorf("request %d starts with a %s message: %+v", i, req.Messages[0].Role, req.Messages)
		}
	}
	last := reqs[2].Messages
	if got := []string{last[0].Text(), last[1].Text(), last[2].Text()}; !reflect.DeepEqual(got, []string{"two", "ok.", "three"}) {
		t.Errorf("third request = %q, want the last whole exchange and the question", got)
	}
}

// TestArtifactsFromSharedSlice: a tool may return the same artifact slice
// every time (a constant, a cache). Stamping ids must not write into it, or
// the next call would reuse the first call's id and lose its artifact.
func TestArtifactsFromSharedSlice(t *testing.T) {
	t.Parallel()
	shared := []domain.Artifact{{Kind: domain.ArtifactTable, Name: "legend.csv", MediaType: "text/csv"}}
	tool := agents.MustTool("legend", "The chart legend.", func(context.Context, struct{}) (agents.Result, error) {
		return agents.Result{Summary: "legend attached", Artifacts: shared}, nil
	})
	model := &scripted.Model{Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		if req.Messages[len(req.Messages)-1].Role == domain.RoleUser {
			return scripted.Turn{ToolCalls: []scripted.Call{{Name: "legend", Args: "{}"}}}, nil
		}
		return scripted.Turn{Text: "Attached."}, nil
	}}
	f := newFixture(t, model, []agents.Tool{tool})
	var ids []string
	for _, p := range []domain.Principal{alice, stranger} {
		sess := f.session(t, p, "")
		evs, _ := finished(t, collect(t, f.svc.Send(t.Context(), p, sess.ID, "legend please")))
		arts, err := f.svc.Artifacts(t.Context(), p, evs[0].(*agents.RunStarted).MessageID)
		if err != nil || len(arts) != 1 || arts[0].TenantID != p.TenantID {
			t.Fatalf("%s's artifacts = %+v, %v", p.TenantID, arts, err)
		}
		ids = append(ids, arts[0].ID)
	}
	if ids[0] == ids[1] {
		t.Errorf("both calls stored artifact %s", ids[0])
	}
	if a := shared[0]; a.ID != "" || a.TenantID != "" || a.MessageID != "" {
		t.Errorf("the tool's own slice was modified: %+v", a)
	}
}
