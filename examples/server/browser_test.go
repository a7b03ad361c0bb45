package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bichat-go/bichat/domain"
)

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

var listAll = domain.ListOptions{PageSize: domain.MaxPageSize}

// chromium returns the browser the test drives: $BICHAT_TEST_CHROMIUM
// (written by .ci/setup.d/40-chromium.sh), else Debian's /usr/bin/chromium.
// Without one the test skips, or fails under BICHAT_REQUIRE_INTEGRATION=1.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("BICHAT_TEST_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		msg := fmt.Sprintf("no Chromium at %s (run .ci/setup.d/40-chromium.sh or set BICHAT_TEST_CHROMIUM)", path)
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// browser is one headless Chromium tab on the page under test.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string // screenshots, when set
	n   int
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-gpu", true),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run its sandbox as root.
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// Start the browser on a context without a deadline (a deadline on
	// the first run would bound the browser's life).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	b := &browser{t: t, ctx: ctx, dir: os.Getenv("BICHAT_SCREENSHOT_DIR")}
	if b.dir != "" {
		if err := os.MkdirAll(b.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// do runs steps within d.
func (b *browser) do(d time.Duration, what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.shot("failed")
		b.t.Fatalf("%s: %v", what, err)
	}
}

// wait polls a JavaScript expression until it is truthy, within d.
func (b *browser) wait(d time.Duration, what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(d))); err != nil {
		b.shot("failed")
		b.t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// eval returns the value of a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// shot saves a screenshot of the page to $BICHAT_SCREENSHOT_DIR.
func (b *browser) shot(name string) {
	if b.dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	b.n++
	path := filepath.Join(b.dir, fmt.Sprintf("server-%02d-%s.png", b.n, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("save screenshot: %v", err)
	}
}

// msg is a JavaScript expression for the i-th assistant message (from 1).
func msg(i int) string {
	return "document.querySelectorAll('.msg.assistant')[" + strconv.Itoa(i-1) + "]"
}

// TestBrowser drives the page in headless Chromium the way a user would:
// it asks a question and sees the streamed answer, the result table and
// the chart; answers a question form and approves a confirmation; reloads
// the page in the middle of an answer and sees it complete; stops an
// answer; and uses the sidebar (search, rename, delete) and the model
// picker. The scripted analyst makes every answer deterministic; its pace
// is slowed down for the steps that need time to act mid-answer.
func TestBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	app, srv := newServer(t, Options{Pace: 2 * time.Millisecond})

	// The page loads its models and suggestions.
	b.do(15*time.Second, "open the page", chromedp.Navigate(srv.URL))
	b.wait(10*time.Second, "the page to start", `document.body.dataset.ready === "true"`)
	if got := eval[string](b, `document.querySelector('#model').selectedOptions[0].textContent`); got != "analyst (scripted)" {
		t.Errorf("model picker shows %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('#suggestions button').length`); n != len(Suggestions) {
		t.Errorf("%d suggestions, want %d", n, len(Suggestions))
	}
	b.shot("start")

	// Shift+Enter adds a line; nothing is sent.
	b.do(10*time.Second, "type two lines",
		chromedp.SendKeys(chromedp.CSS("#input"), "first line"),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(kb.ModifierShift)),
		chromedp.SendKeys(chromedp.CSS("#input"), "second line"))
	if got := eval[string](b, `document.querySelector('#input').value`); got != "first line\nsecond line" {
		t.Errorf("after Shift+Enter the input holds %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('.msg').length`); n != 0 {
		t.Fatalf("Shift+Enter sent a message (%d on the page)", n)
	}
	eval[bool](b, `(document.querySelector('#input').value = '') === ''`)

	// 1. Enter sends; the answer streams in with the SQL, the table, the
	// chart and the files.
	b.do(10*time.Second, "ask", chromedp.SendKeys(chromedp.CSS("#input"), QuestionRegions+kb.Enter))
	b.wait(30*time.Second, "the first answer", msg(1)+`?.dataset.status === "complete"`)
	b.wait(10*time.Second, "the chart image to load",
		msg(1)+`.querySelector('img.chart')?.complete && `+msg(1)+`.querySelector('img.chart').naturalWidth > 0`)
	if n := eval[int](b, msg(1)+`.dataset.seq|0`); n < 10 {
		t.Errorf("the answer came in %d events; want it streamed", n)
	}
	if got := eval[string](b, msg(1)+`.querySelector('.body strong')?.textContent`); got == "" {
		t.Error("the answer has no bold region: Markdown not rendered")
	}
	body := eval[string](b, msg(1)+`.querySelector('.body').textContent`)
	top := eval[string](b, msg(1)+`.querySelector('table.result tbody tr td')?.textContent`)
	if top == "" || !regexpMatch(`(?m)^`+regexp.QuoteMeta(top)+` had the highest revenue in 2025`, body) {
		t.Errorf("answer %q does not name the first region of the result table (%q)", body, top)
	}
	if n := eval[int](b, msg(1)+`.querySelectorAll('table.result tbody tr').length`); n != 5 {
		t.Errorf("result table has %d rows, want 5", n)
	}
	if sql := eval[string](b, msg(1)+`.querySelector('details.tool[data-name=query_database] pre.sql')?.textContent`); sql != regionsSQL {
		t.Errorf("the query accordion shows %q, want the SQL", sql)
	}
	files := eval[[]string](b, `[...`+msg(1)+`.querySelectorAll('.files a')].map(a => a.textContent)`)
	for _, want := range []string{"result_1.csv", "chart_1.png", "Revenue_by_region_2025.xlsx"} {
		if !slices.Contains(files, want) {
			t.Errorf("download links %v lack %s", files, want)
		}
	}
	if w := eval[int](b, `document.querySelector('img.chart').naturalWidth`); w < 100 {
		t.Errorf("chart is %d px wide", w)
	}
	b.wait(5*time.Second, "the chat in the sidebar", `document.querySelectorAll('#sessions .session').length === 1`)
	if !eval[bool](b, `document.querySelector('#model').disabled`) {
		t.Error("the model picker can change the model of an open chat")
	}
	b.shot("answer")
	b.do(10*time.Second, "mark the answer good", chromedp.Click(chromedp.CSS(`.msg.assistant button.good`)))
	b.wait(10*time.Second, "the recipe to be saved", msg(1)+`.querySelector('button.good').textContent === 'Saved as a recipe'`)

	// 2. A question form, then a confirmation dialog.
	b.do(10*time.Second, "ask to pin", chromedp.SendKeys(chromedp.CSS("#input"), QuestionPin+kb.Enter))
	b.wait(20*time.Second, "the question form", msg(2)+`?.querySelector('form.questions input[value="Executive summary"]')`)
	b.shot("question")
	b.do(10*time.Second, "answer the question",
		chromedp.Click(chromedp.CSS(`form.questions input[value="Executive summary"]`)),
		chromedp.Click(chromedp.CSS(`form.questions button[type=submit]`)))
	b.wait(20*time.Second, "the confirmation dialog", `document.querySelector('#confirm').open`)
	if got := eval[string](b, `document.querySelector('#confirm-tool').textContent`); got != ToolPinChart {
		t.Errorf("dialog asks about %q", got)
	}
	if got := eval[string](b, `document.querySelector('#confirm-args').textContent`); !regexpMatch(`"dashboard": "Executive summary"`, got) {
		t.Errorf("dialog shows arguments %q", got)
	}
	if got := app.Dashboards.Pinned(demoPrincipal.TenantID, "Executive summary"); len(got) != 0 {
		t.Fatalf("pinned before approval: %v", got)
	}
	b.shot("confirmation")
	// A reload brings the pending confirmation back.
	b.do(15*time.Second, "reload", chromedp.Reload())
	b.wait(15*time.Second, "the confirmation dialog after a reload",
		`document.querySelector('#confirm').open && `+msg(2)+`?.dataset.status === "awaiting_input"`)
	if got := eval[string](b, msg(2)+`.querySelector('form.questions, .answered')?.textContent ?? ""`); got != "" {
		t.Errorf("after the reload the answered question shows again: %q", got)
	}
	b.do(10*time.Second, "approve", chromedp.Click(chromedp.CSS("#approve")))
	b.wait(20*time.Second, "the pinned answer", msg(2)+`.dataset.status === "complete" && !document.querySelector('#confirm').open`)
	if got := eval[string](b, msg(2)+`.querySelector('.body').textContent`); !regexpMatch(`chart_1 is pinned to Executive summary`, got) {
		t.Errorf("answer after approval: %q", got)
	}
	if got := app.Dashboards.Pinned(demoPrincipal.TenantID, "Executive summary"); !slices.Equal(got, []string{"chart_1"}) {
		t.Errorf("pinned %v, want chart_1", got)
	}
	b.shot("approved")

	// 3. Reload in the middle of an answer: the page picks the stream up
	// again and the answer completes.
	app.Analyst.SetPace(60 * time.Millisecond)
	b.do(10*time.Second, "ask for the months", chromedp.SendKeys(chromedp.CSS("#input"), QuestionMonths+kb.Enter))
	b.wait(30*time.Second, "the months to stream", msg(3)+`?.querySelector('.live')?.textContent.includes('2025-02')`)
	if got := eval[string](b, msg(3)+`.dataset.status`); got != "generating" {
		t.Fatalf("status before the reload is %q; the answer finished too early", got)
	}
	b.shot("streaming")
	b.do(15*time.Second, "reload", chromedp.Reload())
	b.wait(15*time.Second, "the stream to resume after the reload",
		msg(3)+`?.dataset.status === "generating" && `+msg(3)+`.querySelector('.live')?.textContent.includes('2025-02')`)
	b.shot("resumed")
	b.wait(30*time.Second, "the answer to complete", msg(3)+`.dataset.status === "complete"`)
	if n := eval[int](b, msg(3)+`.querySelectorAll('.body li').length`); n != 12 {
		t.Errorf("the completed answer lists %d months, want 12", n)
	}
	if got := eval[string](b, msg(3)+`.querySelector('.body').textContent`); !regexpMatch(`The strongest month was 2025-\d\d`, got) {
		t.Errorf("the completed answer lacks its conclusion: %q", got)
	}
	if n := eval[int](b, msg(3)+`.querySelectorAll('details.tool').length`); n != 1 {
		t.Errorf("the answer shows %d tool calls after the reload, want 1", n)
	}
	if n := eval[int](b, msg(3)+`.querySelectorAll('table.result tbody tr').length`); n != 12 {
		t.Errorf("the months table has %d rows after the reload, want 12", n)
	}
	b.shot("reloaded-complete")

	// 4. The connection drops in the middle of an answer: the browser's
	// EventSource reconnects with Last-Event-ID and the server resumes
	// after it, with no gap and no duplicate.
	b.do(10*time.Second, "ask again", chromedp.SendKeys(chromedp.CSS("#input"), QuestionMonths+kb.Enter))
	b.wait(30*time.Second, "the months to stream", msg(4)+`?.querySelector('.live')?.textContent.includes('2025-02')`)
	srv.CloseClientConnections()
	b.wait(30*time.Second, "the answer to complete after the drop", msg(4)+`.dataset.status === "complete"`)
	if opens := eval[int](b, msg(4)+`.dataset.opens|0`); opens < 2 {
		t.Errorf("the event stream opened %d time(s); want a reconnection after the drop", opens)
	}
	if got := eval[string](b, `[`+msg(4)+`.dataset.gap, `+msg(4)+`.dataset.dup].join()`); got != "," {
		t.Errorf("after the reconnection: gap,duplicate = %s", got)
	}
	if n, seq := eval[int](b, msg(4)+`.dataset.received|0`), eval[int](b, msg(4)+`.dataset.seq|0`); n != seq || n < 50 {
		t.Errorf("received %d events up to seq %d; want every event once", n, seq)
	}
	if n := eval[int](b, msg(4)+`.querySelectorAll('.body li').length`); n != 12 {
		t.Errorf("the answer lists %d months after the reconnection, want 12", n)
	}

	// 5. The stop button cancels an answer.
	b.do(10*time.Second, "ask again", chromedp.SendKeys(chromedp.CSS("#input"), QuestionMonths+kb.Enter))
	b.wait(20*time.Second, "text to stream", msg(5)+`?.querySelector('.live')?.textContent.length > 0 && !document.querySelector('#stop').hidden`)
	b.do(10*time.Second, "stop", chromedp.Click(chromedp.CSS("#stop")))
	b.wait(20*time.Second, "the answer to stop", msg(5)+`.dataset.status === "failed"`)
	if got := eval[string](b, msg(5)+`.querySelector('.interaction').textContent`); got != "Stopped." {
		t.Errorf("stopped answer says %q", got)
	}
	if !eval[bool](b, `document.querySelector('#stop').hidden`) {
		t.Error("the stop button is still shown")
	}
	b.shot("stopped")
	app.Analyst.SetPace(0)

	// 6. A second chat; the sidebar searches, renames and deletes.
	b.do(10*time.Second, "new chat", chromedp.Click(chromedp.CSS("#new-chat")))
	b.wait(5*time.Second, "an empty chat", `!document.querySelector('#empty').hidden && !document.querySelector('#model').disabled`)
	b.do(10*time.Second, "ask", chromedp.SendKeys(chromedp.CSS("#input"), "hello"+kb.Enter))
	b.wait(20*time.Second, "the help answer", msg(1)+`?.dataset.status === "complete"`)
	b.wait(5*time.Second, "two chats in the sidebar",
		`document.querySelectorAll('#sessions .session').length === 2 && document.querySelector('#sessions .group').textContent === 'Today'`)
	b.do(10*time.Second, "search", chromedp.SendKeys(chromedp.CSS("#search"), "hello"))
	b.wait(5*time.Second, "one match", `document.querySelectorAll('#sessions .session').length === 1 && document.querySelector('#sessions .session a').textContent === 'hello'`)
	b.do(10*time.Second, "rename",
		chromedp.Click(chromedp.CSS("#sessions .session.active button.rename")),
		chromedp.SetValue(chromedp.CSS("#sessions .session input"), "Greeting"),
		chromedp.SendKeys(chromedp.CSS("#sessions .session input"), "s"+kb.Enter),
		chromedp.SetValue(chromedp.CSS("#search"), "greet"),
		chromedp.SendKeys(chromedp.CSS("#search"), "i"))
	b.wait(5*time.Second, "the renamed chat found by a search",
		`document.querySelector('#sessions .session a')?.textContent === 'Greetings' && document.querySelector('#chat-title').textContent === 'Greetings'`)
	b.shot("sidebar")
	b.do(10*time.Second, "delete",
		chromedp.Click(chromedp.CSS("#sessions .session.active button.delete")),
		chromedp.Click(chromedp.CSS("#sessions .session.active button.delete.confirming")))
	b.wait(5*time.Second, "the chat to go", `document.querySelectorAll('#sessions .session').length === 0 && document.querySelector('#chat-title').textContent === 'New chat'`)
	page, err := app.Service.ListSessions(t.Context(), demoPrincipal, listAll)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 1 || page.Items[0].Title == "Greetings" {
		t.Errorf("after the delete the store has %d chats (%+v), want the first one only", page.Total, page.Items)
	}
	b.shot("deleted")
}
