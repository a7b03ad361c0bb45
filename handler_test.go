package bichat_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/bichat-go/bichat/providers/scripted"
)

// ---------------------------------------------------------------------------
// Handler test fixture: a real Service on the in-memory store behind an
// httptest.Server, a scripted model that answers by tags in the question,
// and principals chosen by the X-Test-User header.
// ---------------------------------------------------------------------------

// httpGuard bounds every wait of the handler tests; it only fires when
// the code under test is broken.
const httpGuard = 15 * time.Second

var httpPrincipals = map[string]domain.Principal{
	"alice":  {TenantID: "acme", UserID: "alice", Roles: []domain.AccessRole{domain.AccessContributor}},
	"viewer": {TenantID: "acme", UserID: "alice", Roles: []domain.AccessRole{domain.AccessViewer}},
	// bob is another user of alice's tenant.
	"bob": {TenantID: "acme", UserID: "bob", Roles: []domain.AccessRole{domain.AccessAdmin}},
	// mallory has alice's user id in another tenant.
	"mallory": {TenantID: "globex", UserID: "alice", Roles: []domain.AccessRole{domain.AccessAdmin}},
	// broken is what a buggy Authenticate might return.
	"broken": {TenantID: "", UserID: "alice", Roles: []domain.AccessRole{domain.AccessAdmin}},
}

func testAuthenticate(r *http.Request) (domain.Principal, error) {
	p, ok := httpPrincipals[r.Header.Get("X-Test-User")]
	if !ok {
		return domain.Principal{}, errors.New("no such test user")
	}
	return p, nil
}

// svgContent is the chart artifact the [chart] tool stores: an SVG that
// would run script if a browser rendered it inline.
const svgContent = `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`

// artifactName has a path, quotes and a control character that must not
// reach the Content-Disposition header.
const artifactName = "../../etc/\"revenue\"\r\n.svg"

// slowText is the answer of a [slow] question: many small chunks with a
// delay before each, so a stream can be cut mid-run.
var slowText = strings.Repeat("slow words ", 30)

type httpFixture struct {
	t       testing.TB
	svc     *bichat.Service
	h       *bichat.Handler
	srv     *httptest.Server
	writes  atomic.Int32
	logs    *syncBuffer
	mu      sync.Mutex
	records []exchange
}

// exchange is one request and response, kept for the OpenAPI check.
type exchange struct {
	method, path string // path relative to the prefix, without the query
	query        string
	header       http.Header
	reqBody      []byte
	status       int
	respHeader   http.Header
	respBody     []byte
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type tagArgs struct {
	Rows int `json:"rows"`
}

func newHTTPFixture(t testing.TB, tweak ...func(*bichat.Config, *bichat.HandlerOptions)) *httpFixture {
	t.Helper()
	f := &httpFixture{t: t, logs: &syncBuffer{}}
	var svc *bichat.Service
	chart := agents.MustTool("draw_revenue", "Draws revenue.", func(ctx context.Context, _ tagArgs) (agents.Result, error) {
		info, _ := agents.CallInfoFromContext(ctx)
		art, err := svc.ArtifactStore().Put(ctx, info.TenantID, domain.Artifact{Kind: domain.ArtifactChart, Name: artifactName,
			MediaType: "image/svg+xml"}, strings.NewReader(svgContent))
		if err != nil {
			return agents.Result{}, err
		}
		return agents.Result{Summary: "drew the chart", Payload: map[string]any{"title": "Revenue"},
			Artifacts: []domain.Artifact{art}, Datasets: []string{"sales.orders"}}, nil
	})
	big := agents.MustTool("big_table", "Returns many rows.", func(_ context.Context, a tagArgs) (agents.Result, error) {
		rows := make([][]any, a.Rows)
		for i := range rows {
			rows[i] = []any{i, fmt.Sprintf("region-%04d", i), 1234.5}
		}
		return agents.Result{Summary: fmt.Sprintf("%d rows", a.Rows),
			Payload: map[string]any{"table": map[string]any{"columns": []string{"n", "region", "revenue"}, "rows": rows}, "rows": a.Rows}}, nil
	})
	query := agents.MustTool("query_database", "Runs one read-only SELECT.", func(_ context.Context, a struct {
		SQL string `json:"sql"`
	}) (agents.Result, error) {
		return agents.Result{Summary: "2 rows: EMEA 1200, APAC 800", Datasets: []string{"sales.orders"}}, nil
	})
	discount := agents.MustTool("apply_discount", "Apply a discount to every open order.",
		func(_ context.Context, in struct {
			Percent int `json:"percent"`
		}) (string, error) {
			f.writes.Add(1)
			return fmt.Sprintf("applied a %d%% discount", in.Percent), nil
		}, agents.WithPermission(agents.PermWrite))
	model := &scripted.Model{ChunkSize: 8, Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role != domain.RoleUser {
			return scripted.Turn{Text: "Done."}, nil
		}
		q := last.Text()
		switch {
		case strings.Contains(q, "[chart]"):
			return scripted.Turn{Text: "Drawing.", ToolCalls: []scripted.Call{scripted.CallJSON("draw_revenue", tagArgs{})}}, nil
		case strings.Contains(q, "[big]"):
			return scripted.Turn{ToolCalls: []scripted.Call{scripted.CallJSON("big_table", tagArgs{Rows: 2000})}}, nil
		case strings.Contains(q, "[sql]"):
			return scripted.Turn{ToolCalls: []scripted.Call{scripted.CallJSON("query_database",
				map[string]string{"sql": "SELECT region, sum(revenue) FROM sales.orders GROUP BY region"})}}, nil
		case strings.Contains(q, "[ask]"):
			return scripted.Turn{Text: "One question first.", ToolCalls: []scripted.Call{{Name: agents.ToolAskUserQuestion,
				Args: `{"questions":[{"id":"period","question":"Which period?","options":[{"label":"Q3"},{"label":"Q4"}]}]}`}}}, nil
		case strings.Contains(q, "[write]"):
			return scripted.Turn{ToolCalls: []scripted.Call{{Name: "apply_discount", Args: `{"percent":10}`}}}, nil
		case strings.Contains(q, "[slow]"):
			return scripted.Turn{Text: slowText, Delay: 8 * time.Millisecond}, nil
		}
		return scripted.Turn{Text: "Answer."}, nil
	}}
	cfg := bichat.Config{
		Agent:  agents.Config{Model: model, System: "You are a test analyst.", Tools: []agents.Tool{chart, big, query, discount}},
		Store:  memory.New().Repositories(),
		Logger: slog.New(slog.DiscardHandler),
	}
	cfg.Knowledge.Recipes = recipes.New(nil, recipes.Options{})
	cat := kb.NewMemoryCatalog(kb.CatalogOptions{})
	t.Cleanup(func() { cat.Close() })
	if err := cat.Put(t.Context(), kb.Scope{TenantID: "acme"}, domain.Dataset{Name: "sales.orders", Source: "sales.orders",
		Description: "One row per order.", Fields: []domain.Field{{Name: "region", Type: "text"}, {Name: "revenue", Type: "numeric"}}}); err != nil {
		t.Fatal(err)
	}
	cfg.Knowledge.Catalog = cat
	opts := bichat.HandlerOptions{Authenticate: testAuthenticate,
		Logger: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, fn := range tweak {
		fn(&cfg, &opts)
	}
	var err error
	svc, err = bichat.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.svc = svc
	f.h = bichat.NewHandler(svc, opts)
	f.srv = httptest.NewServer(f.h)
	t.Cleanup(f.srv.Close)
	return f
}

// req is one request of a test.
type req struct {
	method, path, user string
	body               any // string, []byte or a value encoded as JSON
	contentType        string
	header             map[string]string
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errBody decodes an error response and checks its shape.
func (r resp) errBody(t testing.TB) bichat.ErrorDetail {
	t.Helper()
	var b bichat.ErrorBody
	if err := json.Unmarshal(r.body, &b); err != nil || b.Error.Code == "" || b.Error.Message == "" {
		t.Fatalf("not an error body (%v): %d %s", err, r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type %q", ct)
	}
	return b.Error
}

func (f *httpFixture) do(t testing.TB, q req) resp {
	t.Helper()
	var body []byte
	switch b := q.body.(type) {
	case nil:
	case string:
		body = []byte(b)
	case []byte:
		body = b
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	hr, err := http.NewRequestWithContext(t.Context(), q.method, f.srv.URL+"/api"+q.path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == nil {
		hr.Body = http.NoBody
		hr.ContentLength = 0
	}
	ct := q.contentType
	if ct == "" && body != nil {
		ct = "application/json"
	}
	if ct != "-" && ct != "" {
		hr.Header.Set("Content-Type", ct)
	}
	if q.user != "" {
		hr.Header.Set("X-Test-User", q.user)
	}
	for k, v := range q.header {
		hr.Header.Set(k, v)
	}
	res, err := f.srv.Client().Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", q.method, q.path, err)
	}
	defer res.Body.Close()
	rb, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", q.method, q.path, err)
	}
	path, query, _ := strings.Cut(q.path, "?")
	f.mu.Lock()
	f.records = append(f.records, exchange{method: q.method, path: path, query: query, header: hr.Header.Clone(),
		reqBody: body, status: res.StatusCode, respHeader: res.Header.Clone(), respBody: rb})
	f.mu.Unlock()
	return resp{status: res.StatusCode, header: res.Header, body: rb}
}

// want checks the status and returns the response.
func (f *httpFixture) want(t testing.TB, status int, q req) resp {
	t.Helper()
	r := f.do(t, q)
	if r.status != status {
		t.Fatalf("%s %s as %q: status %d, want %d: %s", q.method, q.path, q.user, r.status, status, r.body)
	}
	return r
}

func (f *httpFixture) session(t testing.TB, user string) bichat.SessionView {
	t.Helper()
	var s bichat.SessionView
	f.want(t, http.StatusCreated, req{method: "POST", path: "/sessions", user: user, body: map[string]string{}}).decode(t, &s)
	return s
}

func (f *httpFixture) ask(t testing.TB, user, sessionID, text string) bichat.PostMessageResponse {
	t.Helper()
	var out bichat.PostMessageResponse
	f.want(t, http.StatusAccepted, req{method: "POST", path: "/sessions/" + sessionID + "/messages", user: user,
		body: bichat.PostMessageRequest{Text: text}}).decode(t, &out)
	return out
}

// ---------------------------------------------------------------------------
// A real SSE client, parsing the stream by hand.
// ---------------------------------------------------------------------------

type sseEvent struct {
	id, name string
	data     []byte
}

func (e sseEvent) seq(t testing.TB) int64 {
	t.Helper()
	n, err := strconv.ParseInt(e.id, 10, 64)
	if err != nil {
		t.Fatalf("event %s has id %q", e.name, e.id)
	}
	return n
}

type sseStream struct {
	res      *http.Response
	r        *bufio.Reader
	comments []string
	cancel   context.CancelFunc
}

// openStream opens the events route of a message. after is sent as
// Last-Event-ID when lastEventID is set, else as ?after= when >= 0.
func (f *httpFixture) openStream(t testing.TB, user, messageID string, after int64, lastEventID bool) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), httpGuard)
	u := f.srv.URL + "/api/messages/" + messageID + "/events"
	if after >= 0 && !lastEventID {
		u += "?after=" + strconv.FormatInt(after, 10)
	}
	hr, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	hr.Header.Set("X-Test-User", user)
	hr.Header.Set("Accept", "text/event-stream")
	if lastEventID {
		hr.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	res, err := f.srv.Client().Do(hr)
	if err != nil {
		cancel()
		t.Fatalf("open stream: %v", err)
	}
	return &sseStream{res: res, r: bufio.NewReader(res.Body), cancel: cancel}
}

// next reads one event; io.EOF when the server ended the stream.
func (s *sseStream) next() (sseEvent, error) {
	var ev sseEvent
	var data [][]byte
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && ev.name == "" && data == nil {
				return ev, io.EOF
			}
			return ev, fmt.Errorf("stream cut inside an event: %q: %w", line, err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.name == "" && data == nil {
				continue
			}
			ev.data = bytes.Join(data, []byte("\n"))
			return ev, nil
		case strings.HasPrefix(line, ":"):
			s.comments = append(s.comments, line)
		default:
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "id":
				ev.id = v
			case "event":
				ev.name = v
			case "data":
				data = append(data, []byte(v))
			}
		}
	}
}

// all reads to the end of the stream.
func (s *sseStream) all(t testing.TB) []sseEvent {
	t.Helper()
	defer s.close()
	var out []sseEvent
	for {
		ev, err := s.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("read stream: %v (after %d events)", err, len(out))
		}
		out = append(out, ev)
	}
}

func (s *sseStream) close() {
	s.res.Body.Close()
	s.cancel()
}

// watch streams a message's run from the start to its end.
func (f *httpFixture) watch(t testing.TB, user, messageID string) []sseEvent {
	t.Helper()
	s := f.openStream(t, user, messageID, -1, false)
	if s.res.StatusCode != http.StatusOK || s.res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(s.res.Body)
		s.close()
		t.Fatalf("stream: %d %s %s", s.res.StatusCode, s.res.Header.Get("Content-Type"), b)
	}
	evs := s.all(t)
	f.mu.Lock()
	for _, e := range evs {
		f.records = append(f.records, exchange{method: "SSE", path: e.name, respBody: e.data})
	}
	f.mu.Unlock()
	return evs
}

func names(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.name
	}
	return out
}

// compact collapses runs of one name: [text text tool_call] -> [text tool_call].
func compact(ns []string) []string { return slices.Compact(slices.Clone(ns)) }

// sseConsecutive checks that the events' ids run from first without a gap or
// a duplicate.
func sseConsecutive(t testing.TB, evs []sseEvent, first int64) {
	t.Helper()
	for i, e := range evs {
		if got := e.seq(t); got != first+int64(i) {
			t.Fatalf("event %d (%s) has id %d, want %d: %v", i, e.name, got, first+int64(i), names(evs))
		}
	}
}

func payload[T any](t testing.TB, e sseEvent) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(e.data, &v); err != nil {
		t.Fatalf("%s data %s: %v", e.name, e.data, err)
	}
	return v
}

func last(evs []sseEvent) sseEvent {
	if len(evs) == 0 {
		return sseEvent{}
	}
	return evs[len(evs)-1]
}

func textOf(evs []sseEvent, t testing.TB) string {
	var b strings.Builder
	for _, e := range evs {
		if e.name == bichat.SSEText {
			b.WriteString(payload[bichat.EventText](t, e).Text)
		}
	}
	return b.String()
}

// waitStatus polls a message until it has status.
func (f *httpFixture) waitStatus(t testing.TB, user, messageID string, status domain.MessageStatus) bichat.MessageView {
	t.Helper()
	deadline := time.Now().Add(httpGuard)
	for {
		var m bichat.MessageView
		f.want(t, http.StatusOK, req{method: "GET", path: "/messages/" + messageID, user: user}).decode(t, &m)
		if m.Status == status {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %s is %s, want %s", messageID, m.Status, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// resumeAcross reads part of a slow run's stream from one handler,
// disconnects, resumes on another (or the same) with Last-Event-ID and
// checks the whole: no gap, no duplicate, the full text, the terminal
// event.
func resumeAcross(t *testing.T, from, to *httpFixture) {
	t.Helper()
	s := from.session(t, "alice")
	id := from.ask(t, "alice", s.ID, "Take your time [slow]").AssistantMessage.ID
	st := from.openStream(t, "alice", id, -1, false)
	if st.res.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", st.res.StatusCode)
	}
	first := readN(t, st, 5)
	st.close() // the client goes away mid-answer
	sseConsecutive(t, first, 1)
	if last(first).name == bichat.SSEMessageComplete {
		t.Fatal("the run was over before the disconnect; make it slower")
	}
	rest := to.openStream(t, "alice", id, last(first).seq(t), true).all(t)
	all := append(slices.Clone(first), rest...)
	sseConsecutive(t, all, 1)
	if last(all).name != bichat.SSEMessageComplete {
		t.Fatalf("resumed stream ends with %s: %v", last(all).name, compact(names(all)))
	}
	if got := textOf(all, t); got != slowText {
		t.Fatalf("text across the reconnect = %q, want %q", got, slowText)
	}
	if done := payload[bichat.EventComplete](t, last(all)); done.Text != slowText {
		t.Fatalf("message_complete text = %q", done.Text)
	}
	to.waitStatus(t, "alice", id, domain.StatusComplete)
}
