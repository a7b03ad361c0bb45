package bichat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

func TestHandlerSessions(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t)

	// Create: defaults, a title, a Location.
	r := f.want(t, http.StatusCreated, req{method: "POST", path: "/sessions", user: "alice"})
	var s0 bichat.SessionView
	r.decode(t, &s0)
	if s0.Title != bichat.DefaultTitle || s0.ID == "" || r.header.Get("Location") != "/api/sessions/"+s0.ID {
		t.Fatalf("created %+v, Location %q", s0, r.header.Get("Location"))
	}
	titles := []string{"Revenue EMEA", "Churn", "revenue APAC"}
	var ids []string
	for _, title := range titles {
		var s bichat.SessionView
		f.want(t, http.StatusCreated, req{method: "POST", path: "/sessions", user: "alice",
			body: bichat.CreateSessionRequest{Title: title}}).decode(t, &s)
		if s.Title != title {
			t.Fatalf("title %q, want %q", s.Title, title)
		}
		ids = append(ids, s.ID)
	}

	// List: paging, search, sort.
	var page bichat.SessionPage
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions?page=1&page_size=2&sort=title&order=asc", user: "alice"}).decode(t, &page)
	if page.Total != 4 || page.TotalPages != 2 || page.PageSize != 2 || len(page.Items) != 2 ||
		page.Items[0].Title != "Churn" || page.Items[1].Title != bichat.DefaultTitle {
		t.Fatalf("page = %+v", page)
	}
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions?search=REVENUE&sort=title&order=asc", user: "alice"}).decode(t, &page)
	if got := []string{page.Items[0].Title, page.Items[1].Title}; page.Total != 2 || !slices.Equal(got, []string{"revenue APAC", "Revenue EMEA"}) {
		t.Fatalf("search = %+v", page)
	}
	// The viewer reads alice's sessions; other users and tenants see none.
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions", user: "viewer"}).decode(t, &page)
	if page.Total != 4 {
		t.Fatalf("viewer lists %d sessions", page.Total)
	}
	for _, u := range []string{"bob", "mallory"} {
		f.want(t, http.StatusOK, req{method: "GET", path: "/sessions", user: u}).decode(t, &page)
		if page.Total != 0 || page.Items == nil {
			t.Fatalf("%s lists %+v", u, page)
		}
	}
	bad := f.want(t, http.StatusBadRequest, req{method: "GET", path: "/sessions?page=-1&page_size=x&sort=size&order=up", user: "alice"}).errBody(t)
	var fields []string
	for _, fe := range bad.Fields {
		fields = append(fields, fe.Field)
	}
	slices.Sort(fields)
	if bad.Code != "invalid" || !slices.Equal(fields, []string{"page", "page_size"}) {
		t.Fatalf("bad query: %+v", bad)
	}
	bad = f.want(t, http.StatusBadRequest, req{method: "GET", path: "/sessions?page_size=101&sort=size&order=up", user: "alice"}).errBody(t)
	if len(bad.Fields) != 3 {
		t.Fatalf("bad list options: %+v", bad)
	}

	// Get, rename, delete.
	var got bichat.SessionView
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + ids[0], user: "viewer"}).decode(t, &got)
	if got.ID != ids[0] || got.Title != titles[0] {
		t.Fatalf("get = %+v", got)
	}
	f.want(t, http.StatusOK, req{method: "PATCH", path: "/sessions/" + ids[0], user: "alice",
		body: bichat.RenameSessionRequest{Title: "  Renamed  "}}).decode(t, &got)
	if got.Title != "Renamed" {
		t.Fatalf("renamed = %+v", got)
	}
	e := f.want(t, http.StatusBadRequest, req{method: "PATCH", path: "/sessions/" + ids[0], user: "alice", body: `{"title":""}`}).errBody(t)
	if len(e.Fields) != 1 || e.Fields[0].Field != "title" {
		t.Fatalf("empty title: %+v", e)
	}
	e = f.want(t, http.StatusBadRequest, req{method: "PATCH", path: "/sessions/" + ids[0], user: "alice",
		body: map[string]string{"title": strings.Repeat("x", 256)}}).errBody(t)
	if len(e.Fields) != 1 || e.Fields[0].Field != "title" {
		t.Fatalf("long title: %+v", e)
	}
	f.want(t, http.StatusBadRequest, req{method: "PATCH", path: "/sessions/" + ids[0], user: "alice"})
	f.want(t, http.StatusBadRequest, req{method: "GET", path: "/sessions/not-a-uuid", user: "alice"})
	f.want(t, http.StatusBadRequest, req{method: "POST", path: "/sessions", user: "alice", body: bichat.CreateSessionRequest{Model: "no-such-model"}})
	f.want(t, http.StatusForbidden, req{method: "DELETE", path: "/sessions/" + ids[0], user: "viewer"})
	r = f.want(t, http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + ids[0], user: "alice"})
	if len(r.body) != 0 {
		t.Errorf("204 with a body: %q", r.body)
	}
	f.want(t, http.StatusNotFound, req{method: "GET", path: "/sessions/" + ids[0], user: "alice"})
	f.want(t, http.StatusNotFound, req{method: "DELETE", path: "/sessions/" + ids[0], user: "alice"})
}

func TestHandlerRequestErrors(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(_ *bichat.Config, o *bichat.HandlerOptions) { o.MaxBodyBytes = 256 })
	s := f.session(t, "alice")
	cases := []struct {
		name   string
		q      req
		status int
		code   string
		field  string
	}{
		{"no credentials", req{method: "GET", path: "/sessions"}, 401, "unauthenticated", ""},
		{"unknown user", req{method: "GET", path: "/sessions", user: "eve"}, 401, "unauthenticated", ""},
		{"broken principal from Authenticate", req{method: "GET", path: "/sessions", user: "broken"}, 500, "internal", ""},
		{"viewer writes", req{method: "POST", path: "/sessions", user: "viewer", body: `{"title":"x"}`}, 403, "forbidden", ""},
		{"viewer writes a bad body", req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "viewer", body: `{`}, 403, "forbidden", ""},
		{"viewer asks", req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "viewer", body: `{"text":"hi"}`}, 403, "forbidden", ""},
		{"text/plain body", req{method: "POST", path: "/sessions", user: "alice", body: `{"title":"x"}`, contentType: "text/plain"}, 415, "unsupported_media_type", ""},
		{"no content type", req{method: "POST", path: "/sessions", user: "alice", body: `{"title":"x"}`, contentType: "-"}, 415, "unsupported_media_type", ""},
		{"json with charset", req{method: "POST", path: "/sessions", user: "alice", body: `{"title":"x"}`, contentType: "application/json; charset=utf-8"}, 201, "", ""},
		{"body over the limit", req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice", body: `{"text":"` + strings.Repeat("a", 300) + `"}`}, 413, "too_large", ""},
		{"syntax error", req{method: "POST", path: "/sessions", user: "alice", body: `{"title":`}, 400, "invalid", "body"},
		{"two values", req{method: "POST", path: "/sessions", user: "alice", body: `{"title":"a"}{"title":"b"}`}, 400, "invalid", "body"},
		{"unknown field", req{method: "POST", path: "/sessions", user: "alice", body: `{"titel":"a"}`}, 400, "invalid", "titel"},
		{"wrong type", req{method: "POST", path: "/sessions", user: "alice", body: `{"title":5}`}, 400, "invalid", "title"},
		{"array body", req{method: "POST", path: "/sessions", user: "alice", body: `["a"]`}, 400, "invalid", "body"},
		{"missing body", req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice"}, 400, "invalid", "body"},
		{"empty text", req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice", body: `{"text":"   "}`}, 400, "invalid", "text"},
		{"bad after", req{method: "GET", path: "/messages/" + domain.NewID() + "/events?after=-3", user: "alice"}, 400, "invalid", "after"},
		{"no such route", req{method: "GET", path: "/nothing", user: "alice"}, 404, "not_found", ""},
		{"method not allowed", req{method: "PUT", path: "/sessions", user: "alice"}, 405, "method_not_allowed", ""},
		{"empty token", req{method: "POST", path: "/messages/" + domain.NewID() + "/approve", user: "alice", body: `{"token":""}`}, 400, "invalid", "token"},
		{"reason on approve", req{method: "POST", path: "/messages/" + domain.NewID() + "/approve", user: "alice", body: `{"token":"t","reason":"r"}`}, 400, "invalid", "reason"},
		{"no answers", req{method: "POST", path: "/messages/" + domain.NewID() + "/answers", user: "alice", body: `{"answers":{}}`}, 400, "invalid", "answers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.want(t, c.status, c.q)
			if c.code == "" {
				return
			}
			e := r.errBody(t)
			if e.Code != c.code {
				t.Errorf("code %q, want %q: %s", e.Code, c.code, r.body)
			}
			if c.field != "" && !slices.ContainsFunc(e.Fields, func(fe domain.FieldError) bool { return fe.Field == c.field }) {
				t.Errorf("fields %+v do not name %q", e.Fields, c.field)
			}
			if c.status == 405 && r.header.Get("Allow") != "GET, POST, HEAD" {
				t.Errorf("Allow = %q", r.header.Get("Allow"))
			}
			if c.status == 500 && e.Message != "internal error" {
				t.Errorf("500 message %q", e.Message)
			}
		})
	}
	if !strings.Contains(f.logs.String(), "unusable principal") {
		t.Errorf("the broken principal was not logged: %s", f.logs.String())
	}
}

// failingSessions is a session repository whose listing fails with an
// error that carries a DSN, as a database driver's might.
type failingSessions struct{ domain.SessionRepository }

const secretDSN = "postgres://bichat:s3cret-pw@db.internal:5432/bichat"

func (failingSessions) ListSessions(context.Context, string, string, domain.ListOptions) (domain.Page[domain.Session], error) {
	return domain.Page[domain.Session]{}, fmt.Errorf("dial %s: connection refused", secretDSN)
}

func TestHandlerInternalErrorsDoNotLeak(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *bichat.Config, _ *bichat.HandlerOptions) {
		c.Store.Sessions = failingSessions{c.Store.Sessions}
	})
	r := f.want(t, http.StatusInternalServerError, req{method: "GET", path: "/sessions", user: "alice"})
	e := r.errBody(t)
	if e.Code != "internal" || e.Message != "internal error" || strings.Contains(string(r.body), "s3cret") || strings.Contains(string(r.body), "postgres") {
		t.Fatalf("500 body leaks: %s", r.body)
	}
	if !strings.Contains(f.logs.String(), "connection refused") {
		t.Errorf("the cause was not logged: %q", f.logs.String())
	}
}

func TestHandlerRateLimit(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(_ *bichat.Config, o *bichat.HandlerOptions) {
		o.Allow = func(r *http.Request, p domain.Principal) error {
			if p.UserID == "bob" {
				return &bichat.RateLimitError{RetryAfter: 1500 * 1e6}
			}
			return nil
		}
	})
	r := f.want(t, http.StatusTooManyRequests, req{method: "GET", path: "/sessions", user: "bob"})
	if e := r.errBody(t); e.Code != "rate_limited" || r.header.Get("Retry-After") != "2" {
		t.Fatalf("429: %s Retry-After %q", r.body, r.header.Get("Retry-After"))
	}
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions", user: "alice"})
}

func TestHandlerAskStreamAndArtifacts(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t)
	s := f.session(t, "alice")
	out := f.ask(t, "alice", s.ID, "Revenue by region? [chart]")
	u, a := out.UserMessage, out.AssistantMessage
	if u.Role != domain.RoleUser || u.Status != domain.StatusComplete || len(u.Parts) != 1 || u.Parts[0].Text != "Revenue by region? [chart]" ||
		a.Role != domain.RoleAssistant || a.SessionID != s.ID || u.SessionID != s.ID || a.RunID == "" {
		t.Fatalf("post message = %+v", out)
	}

	evs := f.watch(t, "viewer", a.ID)
	sseConsecutive(t, evs, 1)
	want := []string{"message_start", "text", "token_update", "tool_call", "tool_result", "text", "token_update", "message_complete"}
	if got := compact(names(evs)); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	start := payload[bichat.EventStart](t, evs[0])
	if start.MessageID != a.ID || start.SessionID != s.ID || start.RunID != a.RunID || start.Model != "scripted" || start.Seq != 1 {
		t.Errorf("message_start = %+v", start)
	}
	var res bichat.EventToolResult
	var call bichat.EventToolCall
	for _, e := range evs {
		switch e.name {
		case bichat.SSEToolResult:
			res = payload[bichat.EventToolResult](t, e)
		case bichat.SSEToolCall:
			call = payload[bichat.EventToolCall](t, e)
		}
	}
	if call.Name != "draw_revenue" || string(call.Arguments) != `{"rows":0}` || call.CallID == "" {
		t.Errorf("tool_call = %+v", call)
	}
	if res.CallID != call.CallID || res.Summary != "drew the chart" || string(res.Payload) != `{"title":"Revenue"}` || res.Truncated ||
		len(res.Artifacts) != 1 || res.Artifacts[0].URL != "/api/artifacts/"+res.Artifacts[0].ID+"/content" {
		t.Errorf("tool_result = %+v", res)
	}
	done := payload[bichat.EventComplete](t, last(evs))
	if done.Text != "Done." || done.Reason != "end_turn" || done.ToolCalls != 1 {
		t.Errorf("message_complete = %+v", done)
	}
	if got := textOf(evs, t); got != "Drawing.Done." {
		t.Errorf("text deltas = %q", got)
	}

	// The stored messages.
	var list bichat.MessageList
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/messages", user: "viewer"}).decode(t, &list)
	if len(list.Items) != 2 || list.Items[0].ID != u.ID || list.Items[1].ID != a.ID || list.Items[1].Status != domain.StatusComplete {
		t.Fatalf("messages = %+v", list)
	}
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/messages?limit=1", user: "alice"}).decode(t, &list)
	if len(list.Items) != 1 || list.Items[0].ID != a.ID {
		t.Fatalf("limit=1: %+v", list)
	}
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/messages?before=" + a.ID, user: "alice"}).decode(t, &list)
	if len(list.Items) != 1 || list.Items[0].ID != u.ID {
		t.Fatalf("before: %+v", list)
	}
	f.want(t, http.StatusBadRequest, req{method: "GET", path: "/sessions/" + s.ID + "/messages?limit=-1", user: "alice"})

	// Resuming after the last event: nothing more, and 204 tells an
	// EventSource to stop reconnecting. After seq 2: the rest.
	st := f.openStream(t, "alice", a.ID, int64(len(evs)), true)
	if st.res.StatusCode != http.StatusNoContent {
		t.Fatalf("stream after the end: %d", st.res.StatusCode)
	}
	st.close()
	st = f.openStream(t, "alice", a.ID, 2, false)
	rest := st.all(t)
	sseConsecutive(t, rest, 3)
	if len(rest) != len(evs)-2 {
		t.Fatalf("after=2 gave %d events, want %d", len(rest), len(evs)-2)
	}

	// Artifacts: listed with a URL, downloaded as an attachment that a
	// browser will not render or sniff.
	var arts bichat.ArtifactList
	f.want(t, http.StatusOK, req{method: "GET", path: "/messages/" + a.ID + "/artifacts", user: "viewer"}).decode(t, &arts)
	if len(arts.Items) != 1 || arts.Items[0].ID != res.Artifacts[0].ID || arts.Items[0].MediaType != "image/svg+xml" ||
		arts.Items[0].Size != int64(len(svgContent)) || arts.Items[0].URL != res.Artifacts[0].URL {
		t.Fatalf("artifacts = %+v", arts)
	}
	dl := f.want(t, http.StatusOK, req{method: "GET", path: "/artifacts/" + arts.Items[0].ID + "/content", user: "viewer"})
	if string(dl.body) != svgContent {
		t.Fatalf("download = %q", dl.body)
	}
	hd := dl.header
	disp, params, err := mime.ParseMediaType(hd.Get("Content-Disposition"))
	if err != nil || disp != "attachment" || strings.ContainsAny(params["filename"], "/\\\"\r\n") || !strings.HasSuffix(params["filename"], ".svg") {
		t.Errorf("Content-Disposition %q (%v): %v", hd.Get("Content-Disposition"), params, err)
	}
	if hd.Get("Content-Type") != "image/svg+xml" || hd.Get("X-Content-Type-Options") != "nosniff" ||
		hd.Get("Content-Security-Policy") != "default-src 'none'; sandbox" {
		t.Errorf("download headers = %v", hd)
	}
	f.want(t, http.StatusNotFound, req{method: "GET", path: "/artifacts/" + domain.NewID() + "/content", user: "alice"})
	f.want(t, http.StatusBadRequest, req{method: "GET", path: "/artifacts/x/content", user: "alice"})

	// The recipe route needs a run that used SQL.
	e := f.want(t, http.StatusBadRequest, req{method: "POST", path: "/messages/" + a.ID + "/recipe", user: "alice"}).errBody(t)
	if e.Code != "invalid" {
		t.Errorf("recipe without SQL: %+v", e)
	}
}

func TestHandlerSaveRecipe(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t)
	s := f.session(t, "alice")
	out := f.ask(t, "alice", s.ID, "Revenue by region [sql]")
	evs := f.watch(t, "alice", out.AssistantMessage.ID)
	if last(evs).name != bichat.SSEMessageComplete {
		t.Fatalf("events %v", names(evs))
	}
	f.want(t, http.StatusForbidden, req{method: "POST", path: "/messages/" + out.AssistantMessage.ID + "/recipe", user: "viewer"})
	var rec bichat.RecipeView
	f.want(t, http.StatusCreated, req{method: "POST", path: "/messages/" + out.AssistantMessage.ID + "/recipe", user: "alice"}).decode(t, &rec)
	if rec.ID == "" || rec.Question != "Revenue by region [sql]" || len(rec.SQL) != 1 || !strings.HasPrefix(rec.SQL[0], "SELECT region") || rec.SuccessCount != 1 {
		t.Fatalf("recipe = %+v", rec)
	}
	// A question is not an answer.
	f.want(t, http.StatusBadRequest, req{method: "POST", path: "/messages/" + out.UserMessage.ID + "/recipe", user: "alice"})
}

func TestHandlerModels(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t)
	var ml bichat.ModelList
	f.want(t, http.StatusOK, req{method: "GET", path: "/models", user: "viewer"}).decode(t, &ml)
	if len(ml.Items) != 1 || ml.Items[0].Name != "scripted" || !ml.Items[0].Default || ml.Items[0].ContextWindow != 128000 {
		t.Fatalf("models = %+v", ml)
	}
	f.want(t, http.StatusUnauthorized, req{method: "GET", path: "/models"})
}

// SSE payloads: a tool payload over MaxToolResultBytes is cut (rows from
// the end) and flagged; one under it is sent whole.
func TestHandlerSSEToolResultTruncated(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(_ *bichat.Config, o *bichat.HandlerOptions) { o.MaxToolResultBytes = 2048 })
	s := f.session(t, "alice")
	out := f.ask(t, "alice", s.ID, "everything [big]")
	evs := f.watch(t, "alice", out.AssistantMessage.ID)
	i := slices.IndexFunc(evs, func(e sseEvent) bool { return e.name == bichat.SSEToolResult })
	if i < 0 {
		t.Fatalf("no tool_result: %v", names(evs))
	}
	res := payload[bichat.EventToolResult](t, evs[i])
	if !res.Truncated || len(res.Payload) > 2048 || res.Summary != "2000 rows" {
		t.Fatalf("tool_result truncated=%v, %d bytes", res.Truncated, len(res.Payload))
	}
	var p struct {
		Table struct {
			Columns []string `json:"columns"`
			Rows    [][]any  `json:"rows"`
		} `json:"table"`
		Rows int `json:"rows"`
	}
	if err := json.Unmarshal(res.Payload, &p); err != nil {
		t.Fatalf("cut payload is not the same shape: %v: %s", err, res.Payload)
	}
	if p.Rows != 2000 || len(p.Table.Columns) != 3 || len(p.Table.Rows) == 0 || len(p.Table.Rows) >= 2000 || p.Table.Rows[0][1] != "region-0000" {
		t.Fatalf("cut payload: %d rows, columns %v, rows %d", len(p.Table.Rows), p.Table.Columns, p.Rows)
	}
}

func TestHandlerAnswerQuestion(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t)
	s := f.session(t, "alice")
	out := f.ask(t, "alice", s.ID, "Revenue? [ask]")
	id := out.AssistantMessage.ID
	evs := f.watch(t, "alice", id)
	sseConsecutive(t, evs, 1)
	if last(evs).name != bichat.SSEInterrupt {
		t.Fatalf("events %v", names(evs))
	}
	in := payload[bichat.EventInterrupt](t, last(evs))
	if len(in.Questions) != 1 || in.Questions[0].ID != "period" || in.MessageID != id {
		t.Fatalf("interrupt = %+v", in)
	}
	var pending bichat.Interrupt
	f.want(t, http.StatusOK, req{method: "GET", path: "/messages/" + id + "/interrupt", user: "viewer"}).decode(t, &pending)
	if pending.Kind != domain.CheckpointQuestion || len(pending.Questions) != 1 {
		t.Fatalf("interrupt route = %+v", pending)
	}
	f.waitStatus(t, "alice", id, domain.StatusAwaitingInput)

	// Wrong answers: 400 naming the question; the message keeps waiting.
	e := f.want(t, http.StatusBadRequest, req{method: "POST", path: "/messages/" + id + "/answers", user: "alice",
		body: `{"answers":{"period":{"selected":["Q9"]}}}`}).errBody(t)
	if len(e.Fields) == 0 || !strings.HasPrefix(e.Fields[0].Field, "answers.period") {
		t.Fatalf("bad answer: %+v", e)
	}
	f.want(t, http.StatusConflict, req{method: "POST", path: "/messages/" + id + "/approve", user: "alice", body: `{"token":"x"}`})
	f.want(t, http.StatusForbidden, req{method: "POST", path: "/messages/" + id + "/answers", user: "viewer",
		body: `{"answers":{"period":{"selected":["Q3"]}}}`})

	var rr bichat.RunResponse
	f.want(t, http.StatusAccepted, req{method: "POST", path: "/messages/" + id + "/answers", user: "alice",
		body: `{"answers":{"period":{"selected":["Q3"]}}}`}).decode(t, &rr)
	if rr.Message.ID != id || rr.Message.RunID == "" {
		t.Fatalf("answers = %+v", rr)
	}
	evs2 := f.watch(t, "alice", id)
	sseConsecutive(t, evs2, 1)
	if evs2[0].name != bichat.SSEMessageStart || last(evs2).name != bichat.SSEMessageComplete {
		t.Fatalf("resumed events %v", names(evs2))
	}
	if st := payload[bichat.EventStart](t, evs2[0]); st.ResumedFrom == "" || st.RunID == in.RunID {
		t.Errorf("resumed message_start = %+v", st)
	}
	f.waitStatus(t, "alice", id, domain.StatusComplete)
	// Answering twice: the message no longer waits.
	f.want(t, http.StatusConflict, req{method: "POST", path: "/messages/" + id + "/answers", user: "alice",
		body: `{"answers":{"period":{"selected":["Q3"]}}}`})
	f.want(t, http.StatusConflict, req{method: "GET", path: "/messages/" + id + "/interrupt", user: "alice"})
}

func TestHandlerApproveAndDeny(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t)
	confirm := func() (string, bichat.EventConfirmation) {
		s := f.session(t, "alice")
		out := f.ask(t, "alice", s.ID, "Give everyone 10% off [write]")
		evs := f.watch(t, "alice", out.AssistantMessage.ID)
		if last(evs).name != bichat.SSEConfirmationRequired {
			t.Fatalf("events %v", names(evs))
		}
		c := payload[bichat.EventConfirmation](t, last(evs))
		if c.Confirmation == nil || c.Confirmation.Token == "" || c.Confirmation.Tool != "apply_discount" {
			t.Fatalf("confirmation_required = %+v", c)
		}
		f.waitStatus(t, "alice", out.AssistantMessage.ID, domain.StatusAwaitingInput)
		return out.AssistantMessage.ID, c
	}
	id, c := confirm()
	if f.writes.Load() != 0 {
		t.Fatal("the write tool ran on the model's word")
	}
	e := f.want(t, http.StatusForbidden, req{method: "POST", path: "/messages/" + id + "/approve", user: "alice",
		body: bichat.DecisionRequest{Token: c.Confirmation.Token + "x"}}).errBody(t)
	if e.Code != "token_refused" {
		t.Fatalf("forged token: %+v", e)
	}
	f.want(t, http.StatusConflict, req{method: "POST", path: "/messages/" + id + "/answers", user: "alice",
		body: `{"answers":{"period":{"selected":["Q3"]}}}`})
	f.want(t, http.StatusAccepted, req{method: "POST", path: "/messages/" + id + "/approve", user: "alice",
		body: bichat.DecisionRequest{Token: c.Confirmation.Token}})
	evs := f.watch(t, "alice", id)
	if last(evs).name != bichat.SSEMessageComplete {
		t.Fatalf("approved run: %v", names(evs))
	}
	if f.writes.Load() != 1 {
		t.Fatalf("writes = %d after approval", f.writes.Load())
	}
	// The token works once.
	f.want(t, http.StatusConflict, req{method: "POST", path: "/messages/" + id + "/approve", user: "alice",
		body: bichat.DecisionRequest{Token: c.Confirmation.Token}})

	id, c = confirm()
	f.want(t, http.StatusAccepted, req{method: "POST", path: "/messages/" + id + "/deny", user: "alice",
		body: bichat.DecisionRequest{Token: c.Confirmation.Token, Reason: "not today"}})
	evs = f.watch(t, "alice", id)
	if last(evs).name != bichat.SSEMessageComplete {
		t.Fatalf("denied run: %v", names(evs))
	}
	for _, e := range evs {
		if e.name == bichat.SSEToolResult {
			if r := payload[bichat.EventToolResult](t, e); r.ErrorCode != "denied" {
				t.Errorf("denied tool_result = %+v", r)
			}
		}
	}
	if f.writes.Load() != 1 {
		t.Fatalf("writes = %d after a denial", f.writes.Load())
	}
}

// A client that disconnects mid-stream and reconnects with Last-Event-ID
// gets the rest of the run: no gap, no duplicate, and the run went on
// while nobody watched.
func TestHandlerSSEResumeAfterDisconnect(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t)
	resumeAcross(t, f, f)
}

// One run per session: a second question while the first is answered is
// a 409; once it is over, the session takes the next.
func TestHandlerSecondRunConflict(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t)
	s := f.session(t, "alice")
	out := f.ask(t, "alice", s.ID, "First [slow]")
	e := f.want(t, http.StatusConflict, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice",
		body: bichat.PostMessageRequest{Text: "Second"}}).errBody(t)
	if e.Code != "conflict" || strings.Contains(e.Message, "bichat:") {
		t.Fatalf("409 body: %+v", e)
	}
	// Another session is not blocked.
	other := f.session(t, "alice")
	f.ask(t, "alice", other.ID, "Meanwhile")
	if evs := f.watch(t, "alice", out.AssistantMessage.ID); last(evs).name != bichat.SSEMessageComplete {
		t.Fatalf("first run: %v", compact(names(evs)))
	}
	f.waitStatus(t, "alice", out.AssistantMessage.ID, domain.StatusComplete)
	next := f.ask(t, "alice", s.ID, "Second")
	if evs := f.watch(t, "alice", next.AssistantMessage.ID); last(evs).name != bichat.SSEMessageComplete {
		t.Fatalf("second run: %v", compact(names(evs)))
	}
}

func TestHandlerCancel(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t)
	s := f.session(t, "alice")
	out := f.ask(t, "alice", s.ID, "Long one [slow]")
	id := out.AssistantMessage.ID
	st := f.openStream(t, "alice", id, -1, false)
	if ev, err := st.next(); err != nil || ev.name != bichat.SSEMessageStart {
		t.Fatalf("first event %+v %v", ev, err)
	}
	f.want(t, http.StatusForbidden, req{method: "POST", path: "/messages/" + id + "/cancel", user: "viewer"})
	f.want(t, http.StatusNoContent, req{method: "POST", path: "/messages/" + id + "/cancel", user: "alice"})
	rest := st.all(t)
	end := last(rest)
	if end.name != bichat.SSEMessageError || payload[bichat.EventError](t, end).Code != "cancelled" {
		t.Fatalf("stream after cancel ends with %s %s", end.name, end.data)
	}
	m := f.waitStatus(t, "alice", id, domain.StatusFailed)
	if m.Metadata.Error == nil || m.Metadata.Error.Code != "cancelled" {
		t.Fatalf("cancelled message = %+v", m.Metadata)
	}
	if got := textOf(rest, t); got == slowText {
		t.Fatal("the whole answer streamed despite the cancel")
	}
	e := f.want(t, http.StatusConflict, req{method: "POST", path: "/messages/" + id + "/cancel", user: "alice"}).errBody(t)
	if e.Code != "conflict" {
		t.Fatalf("second cancel: %+v", e)
	}
	// The stream of a cancelled run replays to its message_error.
	if evs := f.watch(t, "alice", id); last(evs).name != bichat.SSEMessageError {
		t.Fatalf("replay after cancel: %v", compact(names(evs)))
	}
}

// Cross-tenant and cross-user probes on every route with an id: the
// answer is exactly the answer for an id that does not exist.
func TestHandlerCrossTenantProbes(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t)
	s := f.session(t, "alice")
	out := f.ask(t, "alice", s.ID, "Chart please [chart]")
	msgID := out.AssistantMessage.ID
	f.watch(t, "alice", msgID)
	var arts bichat.ArtifactList
	f.want(t, http.StatusOK, req{method: "GET", path: "/messages/" + msgID + "/artifacts", user: "alice"}).decode(t, &arts)
	if len(arts.Items) != 1 {
		t.Fatalf("artifacts %+v", arts)
	}
	artID := arts.Items[0].ID
	ask := f.ask(t, "alice", f.session(t, "alice").ID, "Which? [ask]")
	f.watch(t, "alice", ask.AssistantMessage.ID)

	probeEveryIDRoute(t, f, map[string]string{"session_id": s.ID, "message_id": msgID, "artifact_id": artID}, ask.AssistantMessage.ID)
	// Nothing changed for alice.
	var got bichat.SessionView
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: "alice"}).decode(t, &got)
	if got.Title == "mine now" {
		t.Fatal("another user renamed alice's session")
	}
	dl := f.want(t, http.StatusOK, req{method: "GET", path: "/artifacts/" + artID + "/content", user: "alice"})
	if string(dl.body) != svgContent {
		t.Fatal("artifact changed")
	}
}

func TestHandlerPrefixAndPanics(t *testing.T) {
	t.Parallel()
	svc, err := bichat.New(bichat.Config{Agent: agents.Config{Model: &scripted.Model{}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := bichat.NewHandler(svc, bichat.HandlerOptions{Prefix: "/chat/v1/", Authenticate: testAuthenticate})
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, r := range h.Routes() {
		if !strings.Contains(r, " /chat/v1/") {
			t.Errorf("route %q outside the prefix", r)
		}
	}
	get := func(path, user string) (*http.Response, []byte) {
		hr, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+path, nil)
		hr.Header.Set("X-Test-User", user)
		res, err := srv.Client().Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	if res, b := get("/chat/v1/sessions", "alice"); res.StatusCode != 200 {
		t.Fatalf("prefixed list: %d %s", res.StatusCode, b)
	}
	if res, _ := get("/api/sessions", "alice"); res.StatusCode != 404 {
		t.Fatalf("default prefix still served: %d", res.StatusCode)
	}
	// The document is public and names the prefix as its server.
	res, b := get("/chat/v1/openapi.json", "")
	var doc struct {
		OpenAPI string `json:"openapi"`
		Servers []struct {
			URL string `json:"url"`
		} `json:"servers"`
	}
	if res.StatusCode != 200 || json.Unmarshal(b, &doc) != nil || doc.OpenAPI != "3.1.0" || len(doc.Servers) != 1 || doc.Servers[0].URL != "/chat/v1" {
		t.Fatalf("openapi.json: %d %+v", res.StatusCode, doc)
	}
	if !bytes.Equal(b, h.OpenAPI()) {
		t.Error("served document differs from Handler.OpenAPI")
	}

	for name, fn := range map[string]func(){
		"nil service":       func() { bichat.NewHandler(nil, bichat.HandlerOptions{Authenticate: testAuthenticate}) },
		"no authentication": func() { bichat.NewHandler(svc, bichat.HandlerOptions{}) },
		"bad prefix": func() {
			bichat.NewHandler(svc, bichat.HandlerOptions{Prefix: "api/{x}", Authenticate: testAuthenticate})
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: NewHandler did not panic", name)
				}
			}()
			fn()
		}()
	}
}

// crossTenantBodies are the request bodies of every route with an id in its
// path; probeEveryIDRoute fails when a route has none.
var crossTenantBodies = map[string]string{
	"PATCH /sessions/{session_id}":         `{"title":"mine now"}`,
	"POST /sessions/{session_id}/messages": `{"text":"hello"}`,
	"POST /messages/{message_id}/answers":  `{"answers":{"period":{"selected":["Q3"]}}}`,
	"POST /messages/{message_id}/approve":  `{"token":"abc"}`,
	"POST /messages/{message_id}/deny":     `{"token":"abc"}`,
	"POST /messages/{message_id}/cancel":   ``,
	"POST /messages/{message_id}/recipe":   ``,
	"GET /messages/{message_id}/interrupt": ``,
	"GET /artifacts/{artifact_id}/content": ``,
	"DELETE /sessions/{session_id}":        ``,
	"GET /sessions/{session_id}/messages":  ``,
	"GET /messages/{message_id}/events":    ``,
	"GET /messages/{message_id}/artifacts": ``,
	"GET /sessions/{session_id}":           ``,
	"GET /messages/{message_id}":           ``,
}

// probeEveryIDRoute calls every route of f with an id in its path, as bob
// (same tenant, another user) and mallory (another tenant), with alice's
// ids (ask: a message awaiting her answer, for the routes about
// questions), and fails unless each answers exactly the 404 a missing id
// gets.
func probeEveryIDRoute(t *testing.T, f *httpFixture, ids map[string]string, ask string) {
	t.Helper()
	probed := 0
	for _, route := range f.h.Routes() {
		method, path, _ := strings.Cut(route, " ")
		path = strings.TrimPrefix(path, "/api")
		if !strings.Contains(path, "{") {
			continue
		}
		key := method + " " + path
		body, ok := crossTenantBodies[key]
		if !ok {
			t.Errorf("route %s has an id but no probe", key)
			continue
		}
		probed++
		param := path[strings.Index(path, "{")+1 : strings.Index(path, "}")]
		realID := ids[param]
		if key == "POST /messages/{message_id}/answers" || key == "GET /messages/{message_id}/interrupt" {
			realID = ask
		}
		var b any
		if body != "" {
			b = body
		}
		missing := f.do(t, req{method: method, path: strings.Replace(path, "{"+param+"}", domain.NewID(), 1), user: "alice", body: b})
		if missing.status != http.StatusNotFound {
			t.Errorf("%s with a missing id: %d %s", key, missing.status, missing.body)
			continue
		}
		for _, u := range []string{"bob", "mallory"} {
			// The missing id's body must not depend on the id.
			got := f.do(t, req{method: method, path: strings.Replace(path, "{"+param+"}", realID, 1), user: u, body: b})
			if got.status != http.StatusNotFound || string(got.body) != string(missing.body) {
				t.Errorf("%s as %s: %d %s, want 404 %s", key, u, got.status, got.body, missing.body)
			}
		}
	}
	if probed != len(crossTenantBodies) {
		t.Errorf("probed %d routes, have probes for %d", probed, len(crossTenantBodies))
	}
}
