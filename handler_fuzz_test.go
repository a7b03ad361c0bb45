package bichat_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/bichat-go/bichat"
)

// fuzzRoutes are the routes that read a body or a query, with the ids
// they use filled in by fuzzWorld.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/sessions"},
	{"PATCH", "/sessions/{session}"},
	{"POST", "/sessions/{session}/messages"},
	{"POST", "/messages/{ask}/answers"},
	{"POST", "/messages/{confirm}/approve"},
	{"POST", "/messages/{confirm}/deny"},
	{"GET", "/sessions?{body}"},
	{"GET", "/sessions/{session}/messages?{body}"},
	{"GET", "/messages/{answer}/events?after={body}"},
}

type fuzzWorld struct {
	f                             *httpFixture
	session, ask, confirm, answer string
}

// newFuzzWorld builds a service where alice has a session with an
// answer, a message waiting for an answer and one waiting for a
// confirmation.
func newFuzzWorld(t testing.TB) *fuzzWorld {
	f := newHTTPFixture(t)
	w := &fuzzWorld{f: f}
	w.session = f.session(t, "alice").ID
	a := f.ask(t, "alice", w.session, "hello")
	f.watch(t, "alice", a.AssistantMessage.ID)
	w.answer = a.AssistantMessage.ID
	q := f.ask(t, "alice", f.session(t, "alice").ID, "which? [ask]")
	f.watch(t, "alice", q.AssistantMessage.ID)
	w.ask = q.AssistantMessage.ID
	c := f.ask(t, "alice", f.session(t, "alice").ID, "discount [write]")
	f.watch(t, "alice", c.AssistantMessage.ID)
	w.confirm = c.AssistantMessage.ID
	return w
}

// FuzzHandlerRequests sends arbitrary bodies, content types and queries to
// every route that parses input: the answer is never a 5xx, and every
// error is a well-formed JSON error body.
func FuzzHandlerRequests(f *testing.F) {
	seeds := []struct {
		route uint8
		ct    string
		body  string
	}{
		{0, "application/json", `{"title":"Q3 revenue"}`},
		{0, "application/json", `{"title":"` + strings.Repeat("é", 300) + `"}`},
		{0, "application/json", `{"model":"gpt-unknown"}`},
		{0, "application/json", `{"title":"\u0000"}`},
		{0, "text/plain", `{"title":"x"}`},
		{0, "application/json; charset=latin1", "{\"title\":\"\xff\"}"},
		{0, "", ``},
		{1, "application/json", `{"title":null}`},
		{1, "application/json", `{"title":["a"]}`},
		{1, "application/problem+json", `{"title":"ok"}`},
		{2, "application/json", `{"text":"What was revenue?"}`},
		{2, "application/json", `{"text":""}`},
		{2, "application/json", `{"text":1e999}`},
		{2, "application/json", `{"text":"a","text":"b"}`},
		{2, "application/json", `[]`},
		{2, "application/json", `null`},
		{3, "application/json", `{"answers":{"period":{"selected":["Q3"]}}}`},
		{3, "application/json", `{"answers":{"period":{"selected":[1]}}}`},
		{3, "application/json", `{"answers":{"":{"text":"` + strings.Repeat("x", 20000) + `"}}}`},
		{4, "application/json", `{"token":"bogus"}`},
		{4, "application/json", `{"token":"` + strings.Repeat("A", 5000) + `"}`},
		{5, "application/json", `{"token":"bogus","reason":"\ud800"}`},
		{6, "", `page=2&page_size=5&search=rev&sort=title&order=asc`},
		{6, "", `page=99999999999999999999&sort=%00`},
		{6, "", `search=%ff%fe`},
		{7, "", `limit=3&before=01890a5d-ac96-774b-bcce-b302099a8057`},
		{7, "", `limit=-1&before=x`},
		{8, "", `3`},
		{8, "", `-1`},
		{8, "", `9223372036854775807`},
	}
	for _, s := range seeds {
		f.Add(s.route, s.ct, []byte(s.body))
	}
	w := newFuzzWorld(f)
	f.Fuzz(func(t *testing.T, route uint8, ct string, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := strings.NewReplacer("{session}", w.session, "{ask}", w.ask, "{confirm}", w.confirm, "{answer}", w.answer).Replace(r.path)
		q := req{method: r.method, user: "alice", contentType: ct}
		if strings.Contains(path, "{body}") {
			path = strings.Replace(path, "{body}", strings.ToValidUTF8(strings.Map(func(c rune) rune {
				if c <= ' ' || c == '#' || c == 0x7f {
					return -1
				}
				return c
			}, string(body)), ""), 1)
		} else {
			q.body = body
			if ct == "" {
				q.contentType = "-"
			}
		}
		q.path = path
		if _, err := http.NewRequest(q.method, "http://x/api"+q.path, nil); err != nil || strings.ContainsFunc(ct, func(c rune) bool {
			return c < ' ' && c != '\t' || c == 0x7f
		}) {
			t.Skip("not a request a client can send")
		}
		res := w.f.do(t, q)
		if res.status >= 500 {
			t.Fatalf("%s %s (%q, %q): %d %s", r.method, path, ct, body, res.status, res.body)
		}
		if res.status >= 400 {
			var e bichat.ErrorBody
			if err := json.Unmarshal(res.body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%s %s: error body %q (%v)", r.method, path, res.body, err)
			}
		}
	})
}
