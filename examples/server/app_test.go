package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/sandbox/bwrap"
)

// newServer starts the example on a loopback httptest server with the
// scripted analyst and no sandbox.
func newServer(t *testing.T, opts Options) (*App, *httptest.Server) {
	t.Helper()
	opts.Offline, opts.NoSandbox = true, true
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	app, err := New(ctx, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		if err := app.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return app, srv
}

// call sends a JSON request to srv and decodes a JSON answer into out
// (when not nil), failing the test unless the status is want.
func call(t *testing.T, srv *httptest.Server, method, path string, body any, want int, out any) {
	t.Helper()
	callAt(t, srv.Client(), srv.URL, method, path, body, want, out)
}

// callAt is call for a server at base, reached through client.
func callAt(t *testing.T, client *http.Client, base, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, base, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s%s: status %d, want %d; body %s", method, base, path, res.StatusCode, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s%s: decode %s: %v", method, base, path, data, err)
		}
	}
}

type sseEvent struct {
	ID   string
	Name string
	Data json.RawMessage
}

// readRun reads the events of a message's run until the stream ends (the
// handler ends it after the terminal event), within 30 s.
func readRun(t *testing.T, srv *httptest.Server, messageID string) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/messages/"+messageID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("events: status %d %s: %s", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	var (
		out []sseEvent
		cur sseEvent
	)
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Name != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.Name = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.Data = json.RawMessage(line[6:])
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("events: read: %v (after %d events)", err, len(out))
	}
	return out
}

func names(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Name
	}
	return out
}

func find(t *testing.T, evs []sseEvent, name string, v any) {
	t.Helper()
	for _, e := range evs {
		if e.Name == name {
			if err := json.Unmarshal(e.Data, v); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return
		}
	}
	t.Fatalf("no %s event in %v", name, names(evs))
}

// ask creates a session (unless sessionID is set), posts text and returns
// the session and the answer's message ids.
func ask(t *testing.T, srv *httptest.Server, sessionID, text string) (string, string) {
	t.Helper()
	return askAt(t, srv.Client(), srv.URL, sessionID, text)
}

// askAt is ask for a server at base, reached through client.
func askAt(t *testing.T, client *http.Client, base, sessionID, text string) (string, string) {
	t.Helper()
	if sessionID == "" {
		var s bichat.SessionView
		callAt(t, client, base, http.MethodPost, "/api/sessions", map[string]string{}, http.StatusCreated, &s)
		sessionID = s.ID
	}
	var r bichat.PostMessageResponse
	callAt(t, client, base, http.MethodPost, "/api/sessions/"+sessionID+"/messages", bichat.PostMessageRequest{Text: text}, http.StatusAccepted, &r)
	return sessionID, r.AssistantMessage.ID
}

// TestPage checks that the page and its assets are served with a strict
// CSP the page can live with: no inline script or style, only its own
// files.
func TestPage(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Options{})
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/", "text/html", `<script src="/static/app.js" defer></script>`},
		{"/static/app.js", "text/javascript", `new EventSource(`},
		{"/static/app.css", "text/css", `#sidebar`},
	} {
		res, err := srv.Client().Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", tc.path, res.StatusCode)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", tc.path, ct, tc.ctype)
		}
		if csp := res.Header.Get("Content-Security-Policy"); csp != pageCSP {
			t.Errorf("GET %s: CSP %q", tc.path, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", tc.path)
		}
		if !bytes.Contains(body, []byte(tc.contains)) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
		}
		if tc.path == "/" {
			// The CSP allows no inline script, style or handler.
			for _, re := range []string{`<script(?:\s[^>]*)?>[^<]`, `<style`, `\son[a-z]+=`, `style=`} {
				if regexp.MustCompile(re).Match(body) {
					t.Errorf("index.html has inline code matching %s, which the CSP blocks", re)
				}
			}
		}
	}
	res, err := srv.Client().Get(srv.URL + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nope: %d, want 404", res.StatusCode)
	}
}

// TestRenderMarkdown checks that Markdown is rendered and that whatever a
// model (or a prompt injection through the data) writes cannot put script
// in the page.
func TestRenderMarkdown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     []string
		never    []string
	}{
		{"emphasis and table", "**North** won\n\n| a | b |\n| --- | ---: |\n| 1 | 2 |\n",
			[]string{"<strong>North</strong>", "<table>", "<th>a</th>", "<td", ">2</td>"}, nil},
		{"list and heading", "## 2025\n\n- one\n- two\n", []string{"<h2", "<li>one</li>"}, nil},
		{"raw script", "hi <script>alert(1)</script>", []string{"hi"}, []string{"<script", "alert(1)</script"}},
		{"event handler", `<img src=x onerror="alert(1)">`, nil, []string{"onerror", "<img"}},
		{"javascript link", "[click](javascript:alert(1))", []string{"click"}, []string{"javascript:"}},
		{"data link", "[x](data:text/html;base64,PHNjcmlwdD4=)", nil, []string{"data:text/html"}},
		{"iframe", `<iframe src="https://evil.example"></iframe>`, nil, []string{"<iframe"}},
		{"external link", "[docs](https://example.com/a)", []string{`href="https://example.com/a"`, `noreferrer`, `target="_blank"`}, nil},
		{"autolink with quote", `https://example.com/"onmouseover="alert(1)`, nil, []string{`onmouseover="`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RenderMarkdown(tc.in)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("RenderMarkdown(%q) = %q, lacks %q", tc.in, got, w)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(strings.ToLower(got), strings.ToLower(n)) {
					t.Errorf("RenderMarkdown(%q) = %q, contains %q", tc.in, got, n)
				}
			}
		})
	}
	if RenderMarkdown("") != "" {
		t.Error("empty Markdown renders to something")
	}
}

type queryPayload struct {
	Table struct {
		Columns []struct{ Name string } `json:"columns"`
		Rows    [][]any                 `json:"rows"`
	} `json:"table"`
}

// TestRegionsOverAPI asks the revenue question through the API the page
// uses: the stream carries the SQL, the result table and the chart, the
// chart downloads as a PNG, and the example renders the answer as HTML
// naming the top region of the table.
func TestRegionsOverAPI(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Options{})
	sessionID, id := ask(t, srv, "", QuestionRegions)
	evs := readRun(t, srv, id)
	got := names(evs)
	if got[0] != bichat.SSEMessageStart || got[len(got)-1] != bichat.SSEMessageComplete {
		t.Fatalf("events %v: want message_start ... message_complete", got)
	}
	for i, e := range evs {
		if e.ID != fmt.Sprint(i+1) {
			t.Fatalf("event %d (%s) has id %q, want %d", i, e.Name, e.ID, i+1)
		}
	}
	var call1 bichat.EventToolCall
	find(t, evs, bichat.SSEToolCall, &call1)
	var args struct{ SQL string }
	if err := json.Unmarshal(call1.Arguments, &args); err != nil || call1.Name != "query_database" || !strings.Contains(args.SQL, "GROUP BY r.name") {
		t.Fatalf("first tool call %s %s", call1.Name, call1.Arguments)
	}
	var res bichat.EventToolResult
	find(t, evs, bichat.SSEToolResult, &res)
	var p queryPayload
	if err := json.Unmarshal(res.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Table.Columns) != 3 || p.Table.Columns[0].Name != "region" || len(p.Table.Rows) != 5 {
		t.Fatalf("query payload: %d columns %v, %d rows; want region, revenue, orders for 5 regions", len(p.Table.Columns), p.Table.Columns, len(p.Table.Rows))
	}
	top := p.Table.Rows[0][0].(string)

	var chartURL string
	for _, e := range evs {
		var r bichat.EventToolResult
		if e.Name == bichat.SSEToolResult && json.Unmarshal(e.Data, &r) == nil && r.Name == "draw_chart" {
			for _, a := range r.Artifacts {
				if a.MediaType == "image/png" {
					chartURL = a.URL
				}
			}
		}
	}
	if chartURL == "" {
		t.Fatal("draw_chart sent no PNG artifact with a URL")
	}
	img, err := srv.Client().Get(srv.URL + chartURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(img.Body)
	img.Body.Close()
	if err != nil || cfg.Width == 0 {
		t.Fatalf("chart %s: %v %+v", chartURL, err, cfg)
	}

	var m RenderedMessage
	call(t, srv, http.MethodGet, "/ui/messages/"+id, nil, http.StatusOK, &m)
	if m.Status != "complete" || !strings.Contains(m.HTML, "<strong>"+top+"</strong> had the highest revenue in 2025") ||
		!strings.Contains(m.HTML, "<table>") {
		t.Errorf("rendered answer: status %s, html %s; want the top region %s in bold and a table", m.Status, m.HTML, top)
	}
	var list RenderedList
	call(t, srv, http.MethodGet, "/ui/sessions/"+sessionID+"/messages", nil, http.StatusOK, &list)
	if len(list.Items) != 2 || list.Items[0].Role != "user" || list.Items[0].Text != QuestionRegions {
		t.Fatalf("rendered session: %+v", list.Items)
	}
	tools := list.Items[1].Tools
	if len(tools) != 3 || tools[0].Name != "query_database" || tools[0].SQL != regionsSQL ||
		!strings.Contains(tools[0].SummaryHTML, "<table>") || tools[1].Name != "draw_chart" {
		t.Errorf("rendered tool calls: %+v", tools)
	}
	call(t, srv, http.MethodGet, "/ui/messages/01890a5d-ac96-774b-bcce-b302099a8057", nil, http.StatusNotFound, nil)
	call(t, srv, http.MethodGet, "/ui/messages/nope", nil, http.StatusBadRequest, nil)
}

// TestPinOverAPI runs the pin script: a question form, then a
// confirmation; pin_chart runs only when the user approves.
func TestPinOverAPI(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		t.Run(fmt.Sprint("approve=", approve), func(t *testing.T) {
			t.Parallel()
			app, srv := newServer(t, Options{})
			sessionID, id := ask(t, srv, "", QuestionRegions)
			readRun(t, srv, id)
			_, id = ask(t, srv, sessionID, QuestionPin)
			evs := readRun(t, srv, id)
			if last := evs[len(evs)-1]; last.Name != bichat.SSEInterrupt {
				t.Fatalf("events %v: want the run to stop at an interrupt", names(evs))
			}
			var in bichat.EventInterrupt
			find(t, evs, bichat.SSEInterrupt, &in)
			if len(in.Questions) != 1 || in.Questions[0].ID != "dashboard" || len(in.Questions[0].Options) != 2 {
				t.Fatalf("questions %+v", in.Questions)
			}
			call(t, srv, http.MethodPost, "/api/messages/"+id+"/answers",
				map[string]any{"answers": map[string]any{"dashboard": map[string]any{"selected": []string{"Executive summary"}}}},
				http.StatusAccepted, nil)
			evs = readRun(t, srv, id)
			var conf bichat.EventConfirmation
			find(t, evs, bichat.SSEConfirmationRequired, &conf)
			c := conf.Confirmation
			if c == nil || c.Tool != ToolPinChart || !strings.Contains(string(c.Arguments), `"dashboard":"Executive summary"`) ||
				!strings.Contains(string(c.Arguments), `"chart":"chart_1"`) {
				t.Fatalf("confirmation %+v", c)
			}
			if got := app.Dashboards.Pinned(demoPrincipal.TenantID, "Executive summary"); len(got) != 0 {
				t.Fatalf("pinned before approval: %v", got)
			}
			route, body := "/approve", map[string]string{"token": c.Token}
			if !approve {
				route, body = "/deny", map[string]string{"token": c.Token, "reason": "not now"}
			}
			call(t, srv, http.MethodPost, "/api/messages/"+id+route, body, http.StatusAccepted, nil)
			evs = readRun(t, srv, id)
			var done bichat.EventComplete
			find(t, evs, bichat.SSEMessageComplete, &done)
			pinned := app.Dashboards.Pinned(demoPrincipal.TenantID, "Executive summary")
			if approve {
				if !slices.Equal(pinned, []string{"chart_1"}) || !strings.Contains(done.Text, "chart_1 is pinned to **Executive summary**") {
					t.Errorf("approved: pinned %v, answer %q", pinned, done.Text)
				}
			} else if len(pinned) != 0 || !strings.Contains(done.Text, "did not pin") {
				t.Errorf("denied: pinned %v, answer %q", pinned, done.Text)
			}
			// The token works once.
			call(t, srv, http.MethodPost, "/api/messages/"+id+"/approve", map[string]string{"token": c.Token}, http.StatusConflict, nil)
		})
	}
}

// TestMonthsOverAPI checks the long answer the browser test reloads in
// the middle of: twelve months, in order, from the query's table.
func TestMonthsOverAPI(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Options{})
	_, id := ask(t, srv, "", QuestionMonths)
	evs := readRun(t, srv, id)
	var done bichat.EventComplete
	find(t, evs, bichat.SSEMessageComplete, &done)
	months := regexp.MustCompile(`(?m)^- \*\*2025-(\d\d)\*\*: €[\d,]+\.\d\d from \d+ completed orders$`).FindAllStringSubmatch(done.Text, -1)
	if len(months) != 12 || months[0][1] != "01" || months[11][1] != "12" {
		t.Errorf("answer has %d month lines, want 12 in order:\n%s", len(months), done.Text)
	}
	if !strings.Contains(done.Text, "The strongest month was **2025-") {
		t.Errorf("answer lacks the strongest month:\n%s", done.Text)
	}
}

// TestHelpForOtherQuestions checks what the offline analyst says to a
// question it has no script for.
func TestHelpForOtherQuestions(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Options{})
	_, id := ask(t, srv, "", "hello")
	var done bichat.EventComplete
	find(t, readRun(t, srv, id), bichat.SSEMessageComplete, &done)
	for _, q := range Suggestions {
		if !strings.Contains(done.Text, q) {
			t.Errorf("help lacks %q:\n%s", q, done.Text)
		}
	}
}

// TestModelPicker checks the models route offers the analyst and that a
// session created on it answers.
func TestModelPicker(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Options{})
	var ml bichat.ModelList
	call(t, srv, http.MethodGet, "/api/models", nil, http.StatusOK, &ml)
	if len(ml.Items) == 0 || ml.Items[0].Name != AnalystModel || !ml.Items[0].Default {
		t.Fatalf("models %+v", ml.Items)
	}
	var s bichat.SessionView
	call(t, srv, http.MethodPost, "/api/sessions", map[string]string{"model": AnalystModel}, http.StatusCreated, &s)
	call(t, srv, http.MethodPost, "/api/sessions", map[string]string{"model": "no-such-model"}, http.StatusBadRequest, nil)
}

func TestMoney(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"390331.1": "390,331.10", "87741.7": "87,741.70", "12": "12.00", "999": "999.00",
		"1000": "1,000.00", "-1234.5": "-1,234.50", "n/a": "n/a"} {
		if got := money(in); got != want {
			t.Errorf("money(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSandbox checks that run_python is offered when bubblewrap works
// here (the embedded default sandbox).
func TestSandbox(t *testing.T) {
	t.Parallel()
	if err := bwrap.Available(); err != nil {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("bubblewrap is required (BICHAT_REQUIRE_INTEGRATION=1): %v", err)
		}
		t.Skipf("bubblewrap cannot run here: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	app, err := New(ctx, Options{Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if !slices.Contains(app.Tools, "run_python") || !strings.Contains(app.SandboxNote, "bubblewrap") {
		t.Errorf("tools %v, note %q: want run_python in a bubblewrap sandbox", app.Tools, app.SandboxNote)
	}
	off, err := New(ctx, Options{Offline: true, NoSandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if slices.Contains(off.Tools, "run_python") {
		t.Errorf("NoSandbox: tools %v", off.Tools)
	}
}

// TestMetrics checks that a run shows in the Prometheus metrics the
// server serves: the run, its SQL statement and its tool calls.
func TestMetrics(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Options{})
	_, id := ask(t, srv, "", QuestionRegions)
	readRun(t, srv, id)
	res, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", res.StatusCode, err)
	}
	for _, want := range []string{
		`bichat_runs_total{reason="end_turn",result="finished"} 1`,
		`bichat_sql_statements_total{outcome="ok",tool="query_database"} 1`,
		`bichat_tool_calls_total{outcome="ok",tool="query_database"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
}
