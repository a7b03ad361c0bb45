package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/internal/backoff"
	"github.com/bichat-go/bichat/providers/scripted"
)

// ---------------------------------------------------------------------------
// Helpers shared by the executor behaviour tests.
// ---------------------------------------------------------------------------

// guard bounds every wait in these tests. It only ever fires when the code
// under test is broken (a deadlock or a missing wake-up).
const guard = 10 * time.Second

// item is one element yielded by a run.
type item struct {
	ev  agents.Event
	err error
}

// drain consumes seq on another goroutine and returns everything it yielded,
// failing the test if the run does not end within guard.
func drain(t testing.TB, seq iter.Seq2[agents.Event, error]) []item {
	t.Helper()
	ch := make(chan []item, 1)
	go func() {
		var out []item
		for ev, err := range seq {
			out = append(out, item{ev, err})
		}
		ch <- out
	}()
	select {
	case out := <-ch:
		return out
	case <-time.After(guard):
		t.Fatalf("run did not end within %s", guard)
		return nil
	}
}

// events returns the events of items, failing on any error.
func events(t testing.TB, items []item) []agents.Event {
	t.Helper()
	out := make([]agents.Event, 0, len(items))
	for i, it := range items {
		if it.err != nil {
			t.Fatalf("item %d: unexpected error %v", i, it.err)
		}
		if it.ev == nil {
			t.Fatalf("item %d: nil event without error", i)
		}
		out = append(out, it.ev)
	}
	return out
}

// finished checks that the run ended with RunFinished and nothing else went
// wrong, and returns the events and the final event.
func finished(t testing.TB, items []item) ([]agents.Event, *agents.RunFinished) {
	t.Helper()
	evs := events(t, items)
	if len(evs) == 0 {
		t.Fatal("run yielded nothing")
	}
	rf, ok := evs[len(evs)-1].(*agents.RunFinished)
	if !ok {
		t.Fatalf("last event is %T, want *RunFinished; events: %v", evs[len(evs)-1], describe(evs))
	}
	return evs, rf
}

// failed checks the RunFailed-then-error ending and returns both.
func failed(t testing.TB, items []item) ([]agents.Event, *agents.RunFailed, error) {
	t.Helper()
	if len(items) < 2 {
		t.Fatalf("run yielded %d items, want at least RunFailed and an error", len(items))
	}
	last := items[len(items)-1]
	if last.ev != nil || last.err == nil {
		t.Fatalf("last item = (%v, %v), want (nil, error)", last.ev, last.err)
	}
	evs := events(t, items[:len(items)-1])
	rf, ok := evs[len(evs)-1].(*agents.RunFailed)
	if !ok {
		t.Fatalf("event before the error is %T, want *RunFailed; events: %v", evs[len(evs)-1], describe(evs))
	}
	if rf.Err == nil || rf.Err != last.err {
		t.Errorf("RunFailed.Err = %v, final error = %v; want the same error", rf.Err, last.err)
	}
	return evs, rf, last.err
}

// onlyError checks that a run yielded exactly one item: an error.
func onlyError(t testing.TB, items []item) error {
	t.Helper()
	if len(items) != 1 || items[0].ev != nil || items[0].err == nil {
		var b strings.Builder
		for _, it := range items {
			fmt.Fprintf(&b, "(%T %v) ", it.ev, it.err)
		}
		t.Fatalf("got %d items [%s], want exactly one error", len(items), b.String())
	}
	return items[0].err
}

func ofType[T agents.Event](evs []agents.Event) []T {
	var out []T
	for _, ev := range evs {
		if e, ok := ev.(T); ok {
			out = append(out, e)
		}
	}
	return out
}

// describe lists event types, with call ids for tool events.
func describe(evs []agents.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		switch e := ev.(type) {
		case *agents.ToolCallStarted:
			out[i] = "tool.started:" + e.CallID
		case *agents.ToolCallFinished:
			out[i] = "tool.finished:" + e.CallID
		default:
			out[i] = string(ev.Type())
		}
	}
	return out
}

// compact lists event types with consecutive duplicates collapsed.
func compact(evs []agents.Event) []agents.EventType {
	var out []agents.EventType
	for _, ev := range evs {
		if n := len(out); n > 0 && out[n-1] == ev.Type() {
			continue
		}
		out = append(out, ev.Type())
	}
	return out
}

// checkSeq checks that Seq runs 1, 2, 3, ... without gaps and Time is set.
func checkSeq(t testing.TB, evs []agents.Event) {
	t.Helper()
	for i, ev := range evs {
		h := ev.Header()
		if h.Seq != int64(i+1) {
			t.Fatalf("event %d (%s) has Seq %d, want %d", i, ev.Type(), h.Seq, i+1)
		}
		if h.Time.IsZero() {
			t.Errorf("event %d (%s) has no Time", i, ev.Type())
		}
	}
}

// checkHeaders checks checkSeq and that every event belongs to runID.
func checkHeaders(t testing.TB, evs []agents.Event, runID string) {
	t.Helper()
	checkSeq(t, evs)
	for i, ev := range evs {
		h := ev.Header()
		if h.RunID != runID {
			t.Errorf("event %d (%s) has RunID %q, want %q", i, ev.Type(), h.RunID, runID)
		}
		if h.ParentRunID != "" || h.Agent != "" {
			t.Errorf("event %d (%s) of a top-level run has ParentRunID %q Agent %q", i, ev.Type(), h.ParentRunID, h.Agent)
		}
	}
}

func toolEvents(evs []agents.Event) []string {
	var out []string
	for _, s := range describe(evs) {
		if strings.HasPrefix(s, "tool.") {
			out = append(out, s)
		}
	}
	return out
}

func finishedByID(t testing.TB, evs []agents.Event, id string) *agents.ToolCallFinished {
	t.Helper()
	for _, f := range ofType[*agents.ToolCallFinished](evs) {
		if f.CallID == id {
			return f
		}
	}
	t.Fatalf("no ToolCallFinished for %s; events: %v", id, describe(evs))
	return nil
}

// resultFor returns the tool result for callID in msgs.
func resultFor(t testing.TB, msgs []agents.Message, callID string) *domain.ToolResult {
	t.Helper()
	for _, m := range msgs {
		if m.Role != domain.RoleTool {
			continue
		}
		for _, p := range m.Parts {
			if p.ToolResult != nil && p.ToolResult.CallID == callID {
				return p.ToolResult
			}
		}
	}
	t.Fatalf("no tool result for %s in %d messages", callID, len(msgs))
	return nil
}

// checkNoDangling checks that every tool call in msgs is answered by a tool
// result in the next message.
func checkNoDangling(t testing.TB, msgs []agents.Message) {
	t.Helper()
	for i, m := range msgs {
		calls := m.ToolCalls()
		if len(calls) == 0 {
			continue
		}
		if i+1 >= len(msgs) || msgs[i+1].Role != domain.RoleTool {
			t.Fatalf("message %d has %d tool calls but no tool message follows", i, len(calls))
		}
		results := msgs[i+1].Parts
		if len(results) != len(calls) {
			t.Fatalf("message %d: %d calls, %d results", i, len(calls), len(results))
		}
		for k, c := range calls {
			if results[k].ToolResult == nil || results[k].ToolResult.CallID != c.ID {
				t.Fatalf("message %d: result %d does not answer call %s", i, k, c.ID)
			}
		}
	}
}

func newExec(t testing.TB, cfg agents.Config) *agents.Executor {
	t.Helper()
	e, err := agents.NewExecutor(cfg)
	if err != nil {
		t.Fatalf("NewExecutor: %v", err)
	}
	return e
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// mustTool panics when a test's tool cannot be built: a bug in the test.
func mustTool(tool agents.Tool, err error) agents.Tool {
	if err != nil {
		panic(err)
	}
	return tool
}

// fastRetry keeps retry waits in the millisecond range.
var fastRetry = backoff.Policy{Base: time.Millisecond, Max: 2 * time.Millisecond}

// backoffHour would stall a retry for an hour.
var backoffHour = backoff.Policy{Base: time.Hour, Max: time.Hour}

type emptyIn struct{}

type queryIn struct {
	Q string `json:"q"`
}

type lookupIn struct {
	ID    int `json:"id" jsonschema:"minimum=1"`
	Limit int `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100"`
}

// rowsOut summarises itself for the model; Secret only travels in the
// payload.
type rowsOut struct {
	Rows   []string `json:"rows"`
	Secret string   `json:"secret"`
}

func (r rowsOut) ToolSummary() string { return fmt.Sprintf("%d rows", len(r.Rows)) }

// pingTool counts its calls and answers "pong".
func pingTool(t testing.TB, name string, n *atomic.Int32, opts ...agents.ToolOption) agents.Tool {
	return mustTool(agents.NewTool(name, "Answers pong.", func(context.Context, emptyIn) (string, error) {
		n.Add(1)
		return "pong", nil
	}, opts...))
}

func call(id, name, args string) scripted.Call { return scripted.Call{ID: id, Name: name, Args: args} }

// busRecorder keeps a copy of what the bus delivered.
type busRecorder struct {
	mu  sync.Mutex
	evs []busEvent
}

type busEvent struct {
	kind     hooks.Kind
	meta     hooks.Meta
	usage    domain.Usage
	code     string
	stack    []byte
	tool     string
	callID   string
	reason   string
	attempt  int
	hasError bool
}

func newBus(t testing.TB) (*hooks.Bus, *busRecorder) {
	t.Helper()
	bus := hooks.New(hooks.Options{OnError: func(he *hooks.HandlerError) { t.Errorf("bus handler: %v", he) }})
	rec := &busRecorder{}
	if _, err := bus.Subscribe(hooks.HandlerFunc(func(_ context.Context, e hooks.Event) error {
		be := busEvent{kind: e.Kind(), meta: *e.Header()}
		switch e := e.(type) {
		case *hooks.LLMRequest:
			be.attempt = e.Attempt
		case *hooks.LLMResponse:
			be.usage, be.attempt, be.hasError = e.Usage, e.Attempt, e.Err != nil
		case *hooks.ToolStart:
			be.tool, be.callID = e.Tool, e.CallID
		case *hooks.ToolFinish:
			be.tool, be.callID = e.Tool, e.CallID
		case *hooks.ToolError:
			be.tool, be.callID, be.code, be.stack = e.Tool, e.CallID, e.Code, slices.Clone(e.Stack)
			be.hasError = e.Err != nil
		case *hooks.AgentFinish:
			be.reason = e.Reason
		case *hooks.AgentError:
			be.code, be.hasError = e.Code, e.Err != nil
		case *hooks.Interrupt:
			be.reason, be.tool, be.callID = e.Reason, e.Tool, e.CallID
		}
		rec.mu.Lock()
		rec.evs = append(rec.evs, be)
		rec.mu.Unlock()
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close() })
	return bus, rec
}

func (r *busRecorder) all() []busEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

func (r *busRecorder) kinds() []hooks.Kind {
	var out []hooks.Kind
	for _, e := range r.all() {
		out = append(out, e.kind)
	}
	return out
}

func (r *busRecorder) ofKind(k hooks.Kind) []busEvent {
	var out []busEvent
	for _, e := range r.all() {
		if e.kind == k {
			out = append(out, e)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// 1. Happy path
// ---------------------------------------------------------------------------

func TestRunTextAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, runID string }{{"generated run id", ""}, {"given run id", "run-given-1"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const answer = "Revenue in 2025 was 1.2 M€, up 8% on 2024."
			m := &scripted.Model{ChunkSize: 8, Turns: []scripted.Turn{{Text: answer}}}
			e := newExec(t, agents.Config{Model: m, System: "You are terse."})
			user := agents.UserMessage("What was revenue in 2025?")
			evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{RunID: tc.runID, Message: user})))

			want := []agents.EventType{agents.EventRunStarted, agents.EventTextDelta, agents.EventUsage, agents.EventRunFinished}
			if got := compact(evs); !slices.Equal(got, want) {
				t.Fatalf("event types = %v, want %v", got, want)
			}
			deltas := ofType[*agents.TextDelta](evs)
			if len(deltas) < 2 {
				t.Errorf("got %d text deltas, want the answer streamed in several", len(deltas))
			}
			var text strings.Builder
			for _, d := range deltas {
				text.WriteString(d.Text)
			}
			if text.String() != answer {
				t.Errorf("deltas = %q, want %q", text.String(), answer)
			}
			runID := evs[0].Header().RunID
			if tc.runID != "" && runID != tc.runID {
				t.Errorf("RunID = %q, want the given %q", runID, tc.runID)
			}
			if runID == "" {
				t.Error("RunID not generated")
			}
			checkHeaders(t, evs, runID)
			if rs := evs[0].(*agents.RunStarted); rs.Model != "scripted" || rs.ResumedFrom != "" {
				t.Errorf("RunStarted = %+v", rs)
			}
			u := ofType[*agents.UsageReported](evs)[0]
			if u.Turn != 1 || u.Usage.IsZero() || u.Total != u.Usage {
				t.Errorf("UsageReported = %+v", u)
			}
			if rf.Reason != agents.FinishEndTurn || rf.Text != answer || rf.Note != "" || rf.Turns != 1 || rf.ToolCalls != 0 {
				t.Errorf("RunFinished = %+v", rf)
			}
			if rf.Usage != u.Usage {
				t.Errorf("RunFinished.Usage = %+v, want %+v", rf.Usage, u.Usage)
			}
			if len(rf.Messages) != 2 || rf.Messages[0].Role != domain.RoleUser || rf.Messages[0].Text() != user.Text() ||
				rf.Messages[1].Role != domain.RoleAssistant || rf.Messages[1].Text() != answer {
				t.Errorf("Messages = %+v, want [user, assistant]", rf.Messages)
			}
			reqs := m.Requests()
			if len(reqs) != 1 || reqs[0].System != "You are terse." || len(reqs[0].Messages) != 1 {
				t.Fatalf("requests = %+v", reqs)
			}
			if reqs[0].Options.ToolChoice.Mode == agents.ToolChoiceNone {
				t.Error("first turn forbade tools")
			}
		})
	}
}

func TestRunGeneratesDistinctRunIDs(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "ok"}, nil
	}}
	e := newExec(t, agents.Config{Model: m})
	seen := map[string]bool{}
	for range 3 {
		evs, _ := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("hi")})))
		id := evs[0].Header().RunID
		if seen[id] {
			t.Fatalf("run id %q reused", id)
		}
		seen[id] = true
	}
}

// ---------------------------------------------------------------------------
// 2. Tool round trip, parallel overlap, call order
// ---------------------------------------------------------------------------

func TestToolRoundTrip(t *testing.T) {
	t.Parallel()
	const marker = "PAYLOAD-MARKER-7f3a9c1e"
	var (
		started     atomic.Int32
		bothStarted = make(chan struct{})
		bDone       = make(chan struct{})
		active      atomic.Int32
		seqRunning  atomic.Bool
		overlapSeq  atomic.Bool
		seqCalls    atomic.Int32
	)
	// barrier returns once both parallel tools are inside their functions:
	// it can only succeed if they overlap.
	barrier := func() error {
		if started.Add(1) == 2 {
			close(bothStarted)
		}
		select {
		case <-bothStarted:
			return nil
		case <-time.After(guard):
			return errors.New("barrier timeout: the parallel tools did not overlap")
		}
	}
	enter := func() {
		active.Add(1)
		if seqRunning.Load() {
			overlapSeq.Store(true)
		}
	}
	parA := mustTool(agents.NewTool("par_a", "Parallel tool A.", func(_ context.Context, in queryIn) (rowsOut, error) {
		enter()
		defer active.Add(-1)
		if err := barrier(); err != nil {
			return rowsOut{}, err
		}
		// Finish after B, so results arrive out of call order.
		select {
		case <-bDone:
		case <-time.After(guard):
			return rowsOut{}, errors.New("B never finished")
		}
		return rowsOut{Rows: []string{"a1", "a2"}, Secret: marker + "-A"}, nil
	}, agents.WithParallel()))
	parB := mustTool(agents.NewTool("par_b", "Parallel tool B.", func(_ context.Context, in queryIn) (rowsOut, error) {
		enter()
		defer active.Add(-1)
		if err := barrier(); err != nil {
			return rowsOut{}, err
		}
		defer close(bDone)
		return rowsOut{Rows: []string{"b1"}, Secret: marker + "-B"}, nil
	}, agents.WithParallel()))
	seqTool := mustTool(agents.NewTool("seq", "Sequential tool.", func(_ context.Context, in queryIn) (string, error) {
		seqRunning.Store(true)
		defer seqRunning.Store(false)
		if active.Load() != 0 {
			overlapSeq.Store(true)
		}
		seqCalls.Add(1)
		return "seq done for " + in.Q, nil
	}))
	m := &scripted.Model{Turns: []scripted.Turn{
		{Text: "Checking three sources.", ToolCalls: []scripted.Call{
			call("c1", "par_a", `{"q":"alpha"}`),
			call("c2", "par_b", `{"q":"beta"}`),
			call("c3", "seq", `{"q":"gamma"}`),
		}},
		{Text: "All three sources agree."},
	}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{parA, parB, seqTool}})
	evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("check")})))
	checkHeaders(t, evs, evs[0].Header().RunID)

	wantOrder := []string{"tool.started:c1", "tool.started:c2", "tool.finished:c1", "tool.finished:c2", "tool.started:c3", "tool.finished:c3"}
	if got := toolEvents(evs); !slices.Equal(got, wantOrder) {
		t.Fatalf("tool events = %v, want %v", got, wantOrder)
	}
	starts := ofType[*agents.ToolCallStarted](evs)
	if starts[0].Name != "par_a" || string(starts[0].Arguments) != `{"q":"alpha"}` || starts[0].Permission != agents.PermRead {
		t.Errorf("ToolCallStarted c1 = %+v", starts[0])
	}
	fa, fb, fc := finishedByID(t, evs, "c1"), finishedByID(t, evs, "c2"), finishedByID(t, evs, "c3")
	for _, f := range []*agents.ToolCallFinished{fa, fb, fc} {
		if f.Error != "" || f.ErrorCode != "" {
			t.Fatalf("%s failed: %s (%s)", f.CallID, f.Error, f.ErrorCode)
		}
	}
	if fa.Summary != "2 rows" || fb.Summary != "1 rows" || fc.Summary != "seq done for gamma" {
		t.Errorf("summaries = %q, %q, %q", fa.Summary, fb.Summary, fc.Summary)
	}
	if p, ok := fa.Payload.(rowsOut); !ok || p.Secret != marker+"-A" || len(p.Rows) != 2 {
		t.Errorf("c1 payload = %#v, want rowsOut with the marker", fa.Payload)
	}
	if p, ok := fb.Payload.(rowsOut); !ok || p.Secret != marker+"-B" {
		t.Errorf("c2 payload = %#v", fb.Payload)
	}
	if fc.Payload != nil {
		t.Errorf("string tool has payload %#v", fc.Payload)
	}
	if overlapSeq.Load() {
		t.Error("the sequential tool overlapped with a parallel one")
	}
	if seqCalls.Load() != 1 {
		t.Errorf("seq ran %d times", seqCalls.Load())
	}

	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	msgs := reqs[1].Messages
	if len(msgs) != 3 || msgs[0].Role != domain.RoleUser || msgs[1].Role != domain.RoleAssistant || msgs[2].Role != domain.RoleTool {
		t.Fatalf("second request messages = %+v", msgs)
	}
	if msgs[1].Text() != "Checking three sources." || len(msgs[1].ToolCalls()) != 3 {
		t.Errorf("assistant message = %+v", msgs[1])
	}
	wantResults := []struct{ id, name, content string }{{"c1", "par_a", "2 rows"}, {"c2", "par_b", "1 rows"}, {"c3", "seq", "seq done for gamma"}}
	if len(msgs[2].Parts) != 3 {
		t.Fatalf("tool message has %d parts", len(msgs[2].Parts))
	}
	for k, w := range wantResults {
		r := msgs[2].Parts[k].ToolResult
		if msgs[2].Parts[k].Type != domain.PartToolResult || r == nil || r.CallID != w.id || r.Name != w.name || r.Content != w.content || r.IsError {
			t.Errorf("result %d = %+v, want %+v", k, r, w)
		}
	}
	all, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(all), marker) {
		t.Error("a payload reached the model")
	}
	if ev, _ := json.Marshal(fa); !strings.Contains(string(ev), marker) {
		t.Error("payload missing from the host event")
	}
	var total domain.Usage
	for i, u := range ofType[*agents.UsageReported](evs) {
		total = total.Add(u.Usage)
		if u.Turn != i+1 || u.Total != total {
			t.Errorf("UsageReported %d = %+v, want running total %+v", i, u, total)
		}
	}
	if rf.Usage != total || total.IsZero() {
		t.Errorf("RunFinished.Usage = %+v, want %+v", rf.Usage, total)
	}
	if rf.ToolCalls != 3 || rf.Turns != 2 || rf.Text != "All three sources agree." {
		t.Errorf("RunFinished = %+v", rf)
	}
	if len(rf.Messages) != 4 {
		t.Errorf("transcript has %d messages, want user, assistant, tool, assistant", len(rf.Messages))
	}
	checkNoDangling(t, rf.Messages)
}

// A non-parallel call between parallel ones splits them into groups and
// runs alone.
func TestSequentialToolSplitsParallelGroups(t *testing.T) {
	t.Parallel()
	var active, maxActive, seqSawOthers atomic.Int32
	track := func() func() {
		n := active.Add(1)
		for {
			old := maxActive.Load()
			if n <= old || maxActive.CompareAndSwap(old, n) {
				break
			}
		}
		return func() { active.Add(-1) }
	}
	par := mustTool(agents.NewTool("par", "Parallel.", func(context.Context, queryIn) (string, error) {
		defer track()()
		return "p", nil
	}, agents.WithParallel()))
	seqTool := mustTool(agents.NewTool("seq", "Sequential.", func(context.Context, queryIn) (string, error) {
		defer track()()
		if active.Load() != 1 {
			seqSawOthers.Add(1)
		}
		return "s", nil
	}))
	m := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{
			call("a", "par", `{"q":"1"}`), call("b", "seq", `{"q":"2"}`), call("c", "par", `{"q":"3"}`), call("d", "seq", `{"q":"4"}`),
		}},
		{Text: "done"},
	}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{par, seqTool}})
	evs, _ := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
	want := []string{"tool.started:a", "tool.finished:a", "tool.started:b", "tool.finished:b",
		"tool.started:c", "tool.finished:c", "tool.started:d", "tool.finished:d"}
	if got := toolEvents(evs); !slices.Equal(got, want) {
		t.Fatalf("tool events = %v, want %v", got, want)
	}
	if seqSawOthers.Load() != 0 || maxActive.Load() != 1 {
		t.Errorf("sequential tool overlapped: max concurrency %d", maxActive.Load())
	}
}

// ---------------------------------------------------------------------------
// 3. Bounded pool
// ---------------------------------------------------------------------------

func TestParallelPoolIsBounded(t *testing.T) {
	t.Parallel()
	const calls, limit = 5, 2
	var (
		active, maxActive, entered atomic.Int32
		mu                         sync.Mutex
		pairs                      = map[int32]chan struct{}{}
		pairCount                  = map[int32]int{}
	)
	// Calls pair up: the 1st and 2nd to enter wait for each other, as do
	// the 3rd and 4th, so the pool is driven to its bound; a pool that let
	// a third call in while a pair waits would raise maxActive above 2.
	rendezvous := func(n int32) error {
		if n > calls-calls%limit {
			return nil // the odd one out has no partner
		}
		k := (n - 1) / limit
		mu.Lock()
		ch, ok := pairs[k]
		if !ok {
			ch = make(chan struct{})
			pairs[k] = ch
		}
		pairCount[k]++
		if pairCount[k] == limit {
			close(ch)
		}
		mu.Unlock()
		select {
		case <-ch:
			return nil
		case <-time.After(guard):
			return errors.New("partner never started")
		}
	}
	tool := mustTool(agents.NewTool("fetch", "Fetches.", func(_ context.Context, in queryIn) (string, error) {
		cur := active.Add(1)
		defer active.Add(-1)
		for {
			old := maxActive.Load()
			if cur <= old || maxActive.CompareAndSwap(old, cur) {
				break
			}
		}
		if err := rendezvous(entered.Add(1)); err != nil {
			return "", err
		}
		// Hold the slot a little: an unbounded pool would start the other
		// calls meanwhile. (Correctness does not depend on this wait; it
		// only gives a broken pool the chance to show.)
		time.Sleep(20 * time.Millisecond)
		return "got " + in.Q, nil
	}, agents.WithParallel()))
	var turn []scripted.Call
	for i := range calls {
		turn = append(turn, call(fmt.Sprintf("f%d", i), "fetch", fmt.Sprintf(`{"q":"%d"}`, i)))
	}
	m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: turn}, {Text: "fetched"}}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{tool}, MaxParallelTools: limit})
	evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("fetch all")})))
	if got := maxActive.Load(); got != limit {
		t.Errorf("max concurrency = %d, want exactly %d", got, limit)
	}
	fins := ofType[*agents.ToolCallFinished](evs)
	if len(fins) != calls {
		t.Fatalf("%d finished events", len(fins))
	}
	for i, f := range fins {
		if f.CallID != fmt.Sprintf("f%d", i) || f.Error != "" || f.Summary != fmt.Sprintf("got %d", i) {
			t.Errorf("finished %d = %+v", i, f)
		}
	}
	if rf.ToolCalls != calls {
		t.Errorf("ToolCalls = %d", rf.ToolCalls)
	}
}

// ---------------------------------------------------------------------------
// 4. Invalid arguments, unknown tools
// ---------------------------------------------------------------------------

func TestToolArgumentErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		call      scripted.Call
		wantCode  string
		wantInErr []string
	}{
		{"wrong type names the field", call("x", "lookup", `{"id":"seven"}`), "invalid_arguments", []string{"/id"}},
		{"schema bound names the field", call("x", "lookup", `{"id":3,"limit":1000}`), "invalid_arguments", []string{"/limit"}},
		{"missing required field", call("x", "lookup", `{}`), "invalid_arguments", []string{"id"}},
		{"unknown property", call("x", "lookup", `{"id":3,"bogus":true}`), "invalid_arguments", []string{"bogus"}},
		{"array instead of object", call("x", "lookup", `[1,2]`), "invalid_arguments", []string{"JSON object"}},
		{"not JSON at all", call("x", "lookup", `id=3`), "invalid_arguments", []string{"JSON object"}},
		{"unknown tool lists the tools", call("x", "lokup", `{"id":3}`), "unknown_tool",
			[]string{`"lokup"`, "lookup", agents.ToolAskUserQuestion, agents.ToolFinalAnswer}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			lookup := mustTool(agents.NewTool("lookup", "Looks a record up.", func(_ context.Context, in lookupIn) (string, error) {
				n.Add(1)
				return "found", nil
			}))
			m := &scripted.Model{Turns: []scripted.Turn{
				{ToolCalls: []scripted.Call{tc.call}},
				{Text: "Sorry, I could not look that up."},
			}}
			bus, rec := newBus(t)
			e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{lookup}, Bus: bus})
			evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("look")})))
			if got := toolEvents(evs); !slices.Equal(got, []string{"tool.started:x", "tool.finished:x"}) {
				t.Fatalf("tool events = %v", got)
			}
			f := finishedByID(t, evs, "x")
			if f.ErrorCode != tc.wantCode {
				t.Errorf("ErrorCode = %q, want %q (error %q)", f.ErrorCode, tc.wantCode, f.Error)
			}
			for _, s := range tc.wantInErr {
				if !strings.Contains(f.Error, s) {
					t.Errorf("error %q does not mention %q", f.Error, s)
				}
			}
			if f.Summary != f.Error {
				t.Errorf("Summary %q differs from Error %q", f.Summary, f.Error)
			}
			if n.Load() != 0 {
				t.Errorf("tool function ran %d times on bad arguments", n.Load())
			}
			if rf.Reason != agents.FinishEndTurn || rf.Turns != 2 {
				t.Errorf("run did not continue: %+v", rf)
			}
			reqs := m.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := resultFor(t, reqs[1].Messages, "x")
			if !r.IsError || r.Content != f.Summary {
				t.Errorf("model saw %+v, want the error %q", r, f.Summary)
			}
			te := rec.ofKind(hooks.KindToolError)
			if len(te) != 1 || te[0].code != tc.wantCode || te[0].callID != "x" {
				t.Errorf("bus tool errors = %+v", te)
			}
		})
	}
}

func TestZeroArgumentCall(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	m := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{ID: "p", Name: "ping"}}},
		{Text: "It answered."},
	}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n)}})
	evs, _ := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("ping it")})))
	st := ofType[*agents.ToolCallStarted](evs)
	if len(st) != 1 || string(st[0].Arguments) != "{}" {
		t.Fatalf("started = %+v, want arguments {}", st)
	}
	if f := finishedByID(t, evs, "p"); f.Error != "" || f.Summary != "pong" {
		t.Errorf("finished = %+v", f)
	}
	if n.Load() != 1 {
		t.Errorf("ping ran %d times", n.Load())
	}
	if calls := m.Requests()[1].Messages[1].ToolCalls(); len(calls) != 1 || string(calls[0].Arguments) != "{}" {
		t.Errorf("transcript call = %+v", calls)
	}
}

// A tool's own error goes back to the model and the run continues; a
// Result's host-side fields reach the event only.
func TestToolErrorAndRichResult(t *testing.T) {
	t.Parallel()
	failing := mustTool(agents.NewTool("flaky", "Fails.", func(context.Context, emptyIn) (string, error) {
		return "", errors.New("warehouse unreachable")
	}))
	rich := mustTool(agents.NewRawTool(agents.ToolSpec{Name: "chart", Description: "Draws a chart."},
		func(context.Context, json.RawMessage) (agents.Result, error) {
			return agents.Result{
				Summary:   "chart of 12 months",
				Payload:   map[string]any{"spec": "vega-lite-marker"},
				Artifacts: []domain.Artifact{{ID: "art-1", Name: "chart.png"}},
				Datasets:  []string{"sales"},
				Citations: []domain.Citation{{Source: "kb", DocumentID: "doc-9"}},
			}, nil
		}))
	m := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{ID: "f", Name: "flaky"}, {ID: "c", Name: "chart"}}},
		{Text: "Here is the chart; the warehouse was down."},
	}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{failing, rich}})
	evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("chart it")})))
	f := finishedByID(t, evs, "f")
	if f.ErrorCode != "error" || !strings.Contains(f.Error, "warehouse unreachable") {
		t.Errorf("failing tool = %+v", f)
	}
	c := finishedByID(t, evs, "c")
	if c.Error != "" || c.Summary != "chart of 12 months" || len(c.Artifacts) != 1 || c.Artifacts[0].ID != "art-1" ||
		!slices.Equal(c.Datasets, []string{"sales"}) || len(c.Citations) != 1 || c.Payload == nil {
		t.Errorf("rich tool = %+v", c)
	}
	msgs := m.Requests()[1].Messages
	if r := resultFor(t, msgs, "f"); !r.IsError || r.Content != f.Summary {
		t.Errorf("model saw %+v for the failure", r)
	}
	if r := resultFor(t, msgs, "c"); r.IsError || r.Content != "chart of 12 months" {
		t.Errorf("model saw %+v for the chart", r)
	}
	raw, _ := json.Marshal(m.Requests())
	for _, s := range []string{"vega-lite-marker", "art-1", "doc-9"} {
		if strings.Contains(string(raw), s) {
			t.Errorf("host-only data %q reached the model", s)
		}
	}
	if rf.Reason != agents.FinishEndTurn {
		t.Errorf("RunFinished = %+v", rf)
	}
}

// ---------------------------------------------------------------------------
// 5. Timeouts
// ---------------------------------------------------------------------------

func TestToolTimeoutHonoured(t *testing.T) {
	t.Parallel()
	var sawDeadline atomic.Bool
	slow := mustTool(agents.NewTool("slow", "Slow.", func(ctx context.Context, _ emptyIn) (string, error) {
		select {
		case <-ctx.Done():
			sawDeadline.Store(errors.Is(ctx.Err(), context.DeadlineExceeded))
			return "", ctx.Err()
		case <-time.After(guard):
			return "finished anyway", nil
		}
	}, agents.WithTimeout(50*time.Millisecond)))
	m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{ID: "s", Name: "slow"}}}, {Text: "It timed out."}}}
	bus, rec := newBus(t)
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{slow}, Bus: bus})
	evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
	f := finishedByID(t, evs, "s")
	if f.ErrorCode != "timeout" || !strings.Contains(f.Error, "50ms") {
		t.Errorf("finished = %+v, want a timeout naming 50ms", f)
	}
	if !sawDeadline.Load() {
		t.Error("the tool's context did not end with DeadlineExceeded")
	}
	if r := resultFor(t, m.Requests()[1].Messages, "s"); !r.IsError || r.Content != f.Summary {
		t.Errorf("model saw %+v", r)
	}
	if te := rec.ofKind(hooks.KindToolError); len(te) != 1 || te[0].code != "timeout" {
		t.Errorf("bus tool errors = %+v", te)
	}
	if rf.Reason != agents.FinishEndTurn {
		t.Errorf("RunFinished = %+v", rf)
	}
}

// A tool that ignores its context is abandoned at its deadline: the run
// goes on without waiting for it.
func TestToolTimeoutIgnoredContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var returned atomic.Bool
	stubborn := mustTool(agents.NewTool("stubborn", "Ignores cancellation.", func(context.Context, emptyIn) (string, error) {
		defer returned.Store(true)
		select { // deliberately not watching ctx
		case <-release:
		case <-time.After(300 * time.Millisecond):
		}
		return "too late", nil
	}, agents.WithTimeout(50*time.Millisecond)))
	m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{ID: "s", Name: "stubborn"}}}, {Text: "Moving on."}}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{stubborn}})

	ctx := t.Context()
	var (
		items      []item
		startedAt  time.Time
		finishedIn time.Duration
		stillBusy  bool
		done       = make(chan struct{})
	)
	go func() {
		defer close(done)
		for ev, err := range e.Run(ctx, agents.Input{Message: agents.UserMessage("go")}) {
			items = append(items, item{ev, err})
			switch ev.(type) {
			case *agents.ToolCallStarted:
				startedAt = time.Now()
			case *agents.ToolCallFinished:
				finishedIn = time.Since(startedAt)
				stillBusy = !returned.Load()
				close(release) // let the abandoned tool return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("run did not end")
	}
	evs, rf := finished(t, items)
	f := finishedByID(t, evs, "s")
	if f.ErrorCode != "timeout" {
		t.Errorf("finished = %+v, want timeout", f)
	}
	if !stillBusy {
		t.Error("ToolCallFinished came only after the tool returned: the run waited for a tool that ignores its context")
	}
	if finishedIn >= 250*time.Millisecond {
		t.Errorf("ToolCallFinished took %s after the start; want about the 50ms timeout", finishedIn)
	}
	if f.Duration >= 250*time.Millisecond {
		t.Errorf("reported duration %s", f.Duration)
	}
	if rf.Text != "Moving on." {
		t.Errorf("RunFinished = %+v", rf)
	}
}

// ---------------------------------------------------------------------------
// 6. Panics
// ---------------------------------------------------------------------------

func TestToolPanic(t *testing.T) {
	t.Parallel()
	const secret = "panic-value-db-password-hunter2"
	boom := mustTool(agents.NewTool("boom", "Panics.", func(context.Context, emptyIn) (string, error) {
		panic(secret)
	}))
	m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{ID: "b", Name: "boom"}}}, {Text: "The tool broke."}}}
	bus, rec := newBus(t)
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{boom}, Bus: bus})
	evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
	f := finishedByID(t, evs, "b")
	if f.ErrorCode != "panic" {
		t.Errorf("ErrorCode = %q", f.ErrorCode)
	}
	if strings.Contains(f.Summary, secret) || strings.Contains(f.Error, secret) {
		t.Errorf("panic value leaked into %q", f.Summary)
	}
	raw, _ := json.Marshal(m.Requests())
	if strings.Contains(string(raw), secret) {
		t.Error("panic value reached the model")
	}
	te := rec.ofKind(hooks.KindToolError)
	if len(te) != 1 || te[0].code != "panic" || len(te[0].stack) == 0 || !te[0].hasError || te[0].callID != "b" {
		t.Fatalf("bus tool errors = %+v", te)
	}
	if !strings.Contains(string(te[0].stack), "goroutine") {
		t.Errorf("stack does not look like a stack: %.80q", te[0].stack)
	}
	if rf.Reason != agents.FinishEndTurn || rf.Text != "The tool broke." {
		t.Errorf("RunFinished = %+v", rf)
	}
}

// ---------------------------------------------------------------------------
// 7. Output cap
// ---------------------------------------------------------------------------

func TestToolOutputTruncated(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789", 1024)
	tool := mustTool(agents.NewTool("dump", "Dumps.", func(context.Context, emptyIn) (string, error) { return big, nil }))
	m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{ID: "d", Name: "dump"}}}, {Text: "ok"}}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{tool}, MaxToolOutputBytes: 100})
	evs, _ := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
	f := finishedByID(t, evs, "d")
	if !f.Truncated {
		t.Error("Truncated = false")
	}
	r := resultFor(t, m.Requests()[1].Messages, "d")
	if r.Content != f.Summary {
		t.Errorf("model saw %q, event says %q", r.Content, f.Summary)
	}
	kept, note, ok := strings.Cut(r.Content, "\n")
	if !ok || len(kept) > 100 || !strings.HasPrefix(big, kept) || len(kept) < 90 {
		t.Errorf("kept %d bytes %q", len(kept), kept)
	}
	if !strings.Contains(note, "truncated") || len(note) > 80 {
		t.Errorf("note = %q", note)
	}
}

// ---------------------------------------------------------------------------
// 8. Limits
// ---------------------------------------------------------------------------

// toolHappyModel calls n ping tools per turn until told not to, then
// answers.
func toolHappyModel(n int, answerOnWrapUp bool) *scripted.Model {
	return &scripted.Model{Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		if req.Options.ToolChoice.Mode == agents.ToolChoiceNone && answerOnWrapUp {
			return scripted.Turn{Text: "Here is what I found so far."}, nil
		}
		calls := make([]scripted.Call, n)
		for i := range calls {
			calls[i] = scripted.Call{Name: "ping"}
		}
		return scripted.Turn{Text: "More.", ToolCalls: calls}, nil
	}}
}

func TestToolCallLimit(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	m := toolHappyModel(2, true)
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n, agents.WithParallel())}, MaxToolCalls: 3})
	evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
	fins := ofType[*agents.ToolCallFinished](evs)
	if len(fins) != 4 {
		t.Fatalf("%d finished events: %v", len(fins), describe(evs))
	}
	for i, f := range fins[:3] {
		if f.Error != "" {
			t.Errorf("call %d failed: %s", i+1, f.Error)
		}
	}
	if fins[3].ErrorCode != "limit" || !strings.Contains(fins[3].Error, "3") {
		t.Errorf("4th call = %+v, want refused with code limit", fins[3])
	}
	if n.Load() != 3 {
		t.Errorf("tool ran %d times, want 3", n.Load())
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, r := range reqs[:2] {
		if r.Options.ToolChoice.Mode == agents.ToolChoiceNone || strings.Contains(r.System, "Do not call any tool") {
			t.Errorf("request %d is a wrap-up too early", i+1)
		}
	}
	last := reqs[2]
	if last.Options.ToolChoice.Mode != agents.ToolChoiceNone {
		t.Errorf("wrap-up ToolChoice = %+v", last.Options.ToolChoice)
	}
	if !strings.Contains(last.System, "Do not call any tool") {
		t.Errorf("wrap-up system prompt lacks the note: %q", last.System)
	}
	if r := resultFor(t, last.Messages, fins[3].CallID); !r.IsError || !strings.Contains(r.Content, "limit") {
		t.Errorf("model saw %+v for the refused call", r)
	}
	if rf.Reason != agents.FinishToolLimit || rf.Note == "" || rf.Text != "Here is what I found so far." || rf.ToolCalls != 3 {
		t.Errorf("RunFinished = %+v", rf)
	}
}

func TestMaxTurns(t *testing.T) {
	t.Parallel()
	t.Run("tools on the wrap-up turn", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		m := toolHappyModel(1, false)
		e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n)}, MaxTurns: 3})
		evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
		reqs := m.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d model calls, want 3", len(reqs))
		}
		for i, r := range reqs {
			wrap := r.Options.ToolChoice.Mode == agents.ToolChoiceNone
			if wrap != (i == 2) {
				t.Errorf("request %d wrap-up = %v", i+1, wrap)
			}
		}
		if !strings.Contains(reqs[2].System, "Do not call any tool") {
			t.Errorf("wrap-up system = %q", reqs[2].System)
		}
		if n.Load() != 2 || rf.ToolCalls != 2 {
			t.Errorf("tool ran %d times, ToolCalls %d; want 2 (the wrap-up turn's call is not run)", n.Load(), rf.ToolCalls)
		}
		if rf.Reason != agents.FinishMaxTurns || rf.Note == "" || rf.Turns != 3 {
			t.Errorf("RunFinished = %+v", rf)
		}
		checkNoDangling(t, rf.Messages)
		last := rf.Messages[len(rf.Messages)-1]
		if last.Role != domain.RoleTool || len(last.Parts) != 1 || !last.Parts[0].ToolResult.IsError {
			t.Errorf("last message = %+v, want the closing tool result", last)
		}
		if len(ofType[*agents.ToolCallStarted](evs)) != 2 {
			t.Errorf("tool events: %v", describe(evs))
		}
	})
	t.Run("text on the wrap-up turn", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		m := toolHappyModel(1, true)
		e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n)}, MaxTurns: 3})
		_, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
		if rf.Reason != agents.FinishMaxTurns || rf.Text != "Here is what I found so far." || rf.Note == "" || rf.Turns != 3 {
			t.Errorf("RunFinished = %+v", rf)
		}
		checkNoDangling(t, rf.Messages)
	})
}

func TestDefaultLimits(t *testing.T) {
	t.Parallel()
	t.Run("turns", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		m := toolHappyModel(1, true)
		e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n)}})
		_, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
		if rf.Reason != agents.FinishMaxTurns || rf.Turns != agents.DefaultMaxTurns || m.Calls() != 15 || n.Load() != 14 {
			t.Errorf("RunFinished = %+v after %d calls, %d tool runs", rf, m.Calls(), n.Load())
		}
	})
	t.Run("tool calls", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		m := toolHappyModel(2, true)
		e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n)}})
		_, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("go")})))
		if rf.Reason != agents.FinishToolLimit || rf.ToolCalls != agents.DefaultMaxToolCalls || n.Load() != 15 || rf.Turns != 9 {
			t.Errorf("RunFinished = %+v, %d tool runs", rf, n.Load())
		}
	})
}

// ---------------------------------------------------------------------------
// 9. final_answer
// ---------------------------------------------------------------------------

func TestFinalAnswer(t *testing.T) {
	t.Parallel()
	t.Run("ends the run", func(t *testing.T) {
		t.Parallel()
		const answer = "**42** orders shipped late."
		var n atomic.Int32
		m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{
			{ID: "f", Name: agents.ToolFinalAnswer, Args: `{"answer":"**42** orders shipped late."}`},
			{ID: "after", Name: "ping"},
		}}}}
		e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n)}})
		evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("how many?")})))
		checkHeaders(t, evs, evs[0].Header().RunID)
		if rf.Reason != agents.FinishFinalAnswer || rf.Text != answer || rf.Note != "" {
			t.Errorf("RunFinished = %+v", rf)
		}
		deltas := ofType[*agents.TextDelta](evs)
		if len(deltas) != 1 || deltas[0].Text != answer {
			t.Errorf("text deltas = %+v", deltas)
		}
		if n.Load() != 0 {
			t.Error("a call after final_answer ran")
		}
		if m.Calls() != 1 {
			t.Errorf("model called %d times", m.Calls())
		}
		msgs := rf.Messages
		if len(msgs) != 4 || msgs[3].Role != domain.RoleAssistant || msgs[3].Text() != answer {
			t.Fatalf("transcript = %+v, want it to end with the answer as assistant text", msgs)
		}
		checkNoDangling(t, msgs)
		if r := resultFor(t, msgs, "after"); !r.IsError || !strings.Contains(r.Content, "not run") {
			t.Errorf("result for the call after final_answer = %+v", r)
		}
		if r := resultFor(t, msgs, "f"); r.IsError {
			t.Errorf("final_answer result = %+v", r)
		}
	})
	t.Run("blank answer is refused", func(t *testing.T) {
		t.Parallel()
		m := &scripted.Model{Turns: []scripted.Turn{
			{ToolCalls: []scripted.Call{{ID: "f", Name: agents.ToolFinalAnswer, Args: `{"answer":"   "}`}}},
			{ToolCalls: []scripted.Call{{ID: "g", Name: agents.ToolFinalAnswer, Args: `{"answer":"Done properly."}`}}},
		}}
		e := newExec(t, agents.Config{Model: m})
		evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("q")})))
		f := finishedByID(t, evs, "f")
		if f.ErrorCode != "invalid_arguments" || !strings.Contains(f.Error, "answer") {
			t.Errorf("blank answer = %+v", f)
		}
		if r := resultFor(t, m.Requests()[1].Messages, "f"); !r.IsError {
			t.Errorf("model saw %+v", r)
		}
		if rf.Reason != agents.FinishFinalAnswer || rf.Text != "Done properly." || rf.Turns != 2 {
			t.Errorf("RunFinished = %+v", rf)
		}
	})
}

// ---------------------------------------------------------------------------
// 10. Model errors and retries
// ---------------------------------------------------------------------------

func TestModelErrors(t *testing.T) {
	t.Parallel()
	transient := func(msg string) error { return agents.TransientError(errors.New(msg)) }
	t.Run("transient error before any chunk is retried", func(t *testing.T) {
		t.Parallel()
		m := &scripted.Model{Turns: []scripted.Turn{{Err: transient("503 overloaded")}, {Text: "Recovered."}}}
		bus, rec := newBus(t)
		e := newExec(t, agents.Config{Model: m, Backoff: fastRetry, Bus: bus})
		evs, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("q")})))
		if m.Calls() != 2 || rf.Text != "Recovered." || rf.Turns != 1 {
			t.Errorf("calls = %d, RunFinished = %+v", m.Calls(), rf)
		}
		checkHeaders(t, evs, evs[0].Header().RunID)
		reqs := rec.ofKind(hooks.KindLLMRequest)
		resps := rec.ofKind(hooks.KindLLMResponse)
		if len(reqs) != 2 || reqs[0].attempt != 1 || reqs[1].attempt != 2 || len(resps) != 2 || !resps[0].hasError || resps[1].hasError {
			t.Errorf("bus llm events: %+v %+v", reqs, resps)
		}
	})
	t.Run("attempts are bounded", func(t *testing.T) {
		t.Parallel()
		m := &scripted.Model{Turns: []scripted.Turn{{Err: transient("503 a")}, {Err: transient("503 b")}, {Text: "never"}}}
		e := newExec(t, agents.Config{Model: m, Backoff: fastRetry, ModelAttempts: 2})
		evs, rf, err := failed(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("q")})))
		if rf.Code != "model_error" || !strings.Contains(rf.Message, "503 b") {
			t.Errorf("RunFailed = %+v", rf)
		}
		var me *agents.ModelError
		if !errors.As(err, &me) || !agents.Retryable(err) {
			t.Errorf("error = %v, want a *ModelError wrapping the transient error", err)
		}
		if m.Calls() != 2 {
			t.Errorf("model called %d times, want 2", m.Calls())
		}
		checkHeaders(t, evs, evs[0].Header().RunID)
		if len(rf.Messages) != 1 || rf.Messages[0].Role != domain.RoleUser {
			t.Errorf("RunFailed.Messages = %+v", rf.Messages)
		}
	})
	t.Run("no retry after text was streamed", func(t *testing.T) {
		t.Parallel()
		m := &scripted.Model{Turns: []scripted.Turn{{Text: "Partial answer that", Err: transient("connection reset"), FailAfter: 1}, {Text: "never"}}}
		e := newExec(t, agents.Config{Model: m, Backoff: fastRetry})
		evs, rf, _ := failed(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("q")})))
		if m.Calls() != 1 || rf.Code != "model_error" {
			t.Errorf("calls = %d, RunFailed = %+v", m.Calls(), rf)
		}
		if d := ofType[*agents.TextDelta](evs); len(d) != 1 {
			t.Errorf("text deltas = %+v", d)
		}
	})
	t.Run("permanent error is not retried", func(t *testing.T) {
		t.Parallel()
		m := &scripted.Model{Turns: []scripted.Turn{{Err: errors.New("400 bad request")}, {Text: "never"}}}
		bus, rec := newBus(t)
		e := newExec(t, agents.Config{Model: m, Backoff: fastRetry, Bus: bus})
		_, rf, err := failed(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("q")})))
		if m.Calls() != 1 || rf.Code != "model_error" || agents.Retryable(err) {
			t.Errorf("calls = %d, RunFailed = %+v, err = %v", m.Calls(), rf, err)
		}
		ae := rec.ofKind(hooks.KindAgentError)
		if len(ae) != 1 || ae[0].code != "model_error" || !ae[0].hasError {
			t.Errorf("bus agent errors = %+v", ae)
		}
		if len(rec.ofKind(hooks.KindAgentFinish)) != 0 {
			t.Error("a failed run published agent.finish")
		}
	})
	t.Run("empty answer", func(t *testing.T) {
		t.Parallel()
		m := &scripted.Model{Turns: []scripted.Turn{{}}}
		e := newExec(t, agents.Config{Model: m})
		_, rf, err := failed(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("q")})))
		var me *agents.ModelError
		if rf.Code != "model_error" || !strings.Contains(rf.Message, "empty") || !errors.As(err, &me) {
			t.Errorf("RunFailed = %+v, err = %v", rf, err)
		}
	})
	t.Run("malformed stream", func(t *testing.T) {
		t.Parallel()
		m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{ID: "x", Name: ""}}}}}
		e := newExec(t, agents.Config{Model: m})
		_, rf, err := failed(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("q")})))
		if !errors.Is(err, agents.ErrMalformedStream) || rf.Code == "" {
			t.Errorf("RunFailed = %+v, err = %v", rf, err)
		}
	})
}

// ---------------------------------------------------------------------------
// 12. Bus
// ---------------------------------------------------------------------------

func TestBusEvents(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	m := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{ID: "p", Name: "ping"}}},
		{Text: "pong it is"},
	}}
	bus, rec := newBus(t)
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n)}, Bus: bus})
	in := agents.Input{RunID: "run-bus", TenantID: "tenant-1", UserID: "user-1", SessionID: "sess-1", MessageID: "msg-1",
		Message: agents.UserMessage("ping")}
	finished(t, drain(t, e.Run(t.Context(), in)))
	want := []hooks.Kind{
		hooks.KindAgentStart,
		hooks.KindLLMRequest, hooks.KindLLMResponse,
		hooks.KindToolStart, hooks.KindToolFinish,
		hooks.KindLLMRequest, hooks.KindLLMResponse,
		hooks.KindAgentFinish,
	}
	if got := rec.kinds(); !slices.Equal(got, want) {
		t.Fatalf("bus kinds = %v, want %v", got, want)
	}
	for _, be := range rec.all() {
		mt := be.meta
		if mt.RunID != "run-bus" || mt.TenantID != "tenant-1" || mt.UserID != "user-1" || mt.SessionID != "sess-1" ||
			mt.MessageID != "msg-1" || mt.ParentRunID != "" || mt.Time.IsZero() {
			t.Errorf("%s meta = %+v", be.kind, mt)
		}
	}
	for _, r := range rec.ofKind(hooks.KindLLMResponse) {
		if r.usage.IsZero() || r.hasError {
			t.Errorf("llm.response = %+v", r)
		}
	}
	if ts := rec.ofKind(hooks.KindToolStart); ts[0].tool != "ping" || ts[0].callID != "p" {
		t.Errorf("tool.start = %+v", ts[0])
	}
	if af := rec.ofKind(hooks.KindAgentFinish); af[0].reason != string(agents.FinishEndTurn) {
		t.Errorf("agent.finish = %+v", af[0])
	}
}

// ---------------------------------------------------------------------------
// 14. Sub-agents
// ---------------------------------------------------------------------------

func TestSubAgent(t *testing.T) {
	t.Parallel()
	const childSystem = "You are the SQL specialist."
	const task = "Count the rows of table orders."
	var childToolRuns atomic.Int32
	childTool := mustTool(agents.NewTool("count_rows", "Counts rows.", func(_ context.Context, in queryIn) (rowsOut, error) {
		childToolRuns.Add(1)
		return rowsOut{Rows: []string{"7"}, Secret: "child-payload"}, nil
	}))
	cm := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{call("cc1", "count_rows", `{"q":"orders"}`)}},
		{Text: "Table orders has 7 rows."},
	}}
	child := newExec(t, agents.Config{Model: cm, System: childSystem, Tools: []agents.Tool{childTool}})
	task1 := must[agents.Tool](t)(agents.NewTaskTool(agents.SubAgent{Name: "sql", Description: "Runs SQL.", Executor: child}))
	pm := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{ID: "t1", Name: agents.ToolTask, Args: `{"agent":"sql","task":"` + task + `"}`}}},
		{Text: "There are 7 orders."},
	}}
	parent := newExec(t, agents.Config{Model: pm, System: "You are the lead.", Tools: []agents.Tool{task1}})
	evs, rf := finished(t, drain(t, parent.Run(t.Context(), agents.Input{RunID: "parent-run", Message: agents.UserMessage("how many orders?")})))

	checkSeq(t, evs)
	var childRunID string
	var childTypes []agents.EventType
	for _, ev := range evs {
		h := ev.Header()
		if h.RunID == "parent-run" {
			if h.ParentRunID != "" || h.Agent != "" {
				t.Errorf("parent event %s has ParentRunID %q Agent %q", ev.Type(), h.ParentRunID, h.Agent)
			}
			continue
		}
		if childRunID == "" {
			childRunID = h.RunID
		}
		if h.RunID != childRunID || h.ParentRunID != "parent-run" || h.Agent != "sql" {
			t.Errorf("child event %s header = %+v", ev.Type(), h)
		}
		childTypes = append(childTypes, ev.Type())
	}
	if childRunID == "" {
		t.Fatalf("no child events in %v", describe(evs))
	}
	if !slices.Contains(childTypes, agents.EventRunStarted) || !slices.Contains(childTypes, agents.EventToolCallFinished) ||
		childTypes[len(childTypes)-1] != agents.EventRunFinished {
		t.Errorf("child events = %v", childTypes)
	}
	// The child's events sit between the parent's task start and finish.
	want := []string{"tool.started:t1", "tool.started:cc1", "tool.finished:cc1", "tool.finished:t1"}
	if got := toolEvents(evs); !slices.Equal(got, want) {
		t.Errorf("tool events = %v, want %v", got, want)
	}
	tf := finishedByID(t, evs, "t1")
	if tf.Error != "" || tf.Summary != "Table orders has 7 rows." {
		t.Errorf("task result = %+v", tf)
	}
	if r := resultFor(t, pm.Requests()[1].Messages, "t1"); r.Content != "Table orders has 7 rows." || r.IsError {
		t.Errorf("parent model saw %+v", r)
	}
	creqs := cm.Requests()
	if len(creqs) != 2 || creqs[0].System != childSystem || len(creqs[0].Messages) != 1 ||
		creqs[0].Messages[0].Role != domain.RoleUser || creqs[0].Messages[0].Text() != task {
		t.Errorf("child's first request = %+v", creqs[0])
	}
	for _, r := range creqs {
		if len(r.Messages) > 0 && strings.Contains(r.Messages[0].Text(), "how many orders") {
			t.Error("the child saw the parent's conversation")
		}
	}
	if pm.Requests()[0].System != "You are the lead." {
		t.Error("parent system prompt changed")
	}
	if childToolRuns.Load() != 1 || rf.Text != "There are 7 orders." || rf.ToolCalls != 1 {
		t.Errorf("child tool runs %d, RunFinished %+v", childToolRuns.Load(), rf)
	}
}

func TestSubAgentFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		child     scripted.Turn
		wantInErr []string
	}{
		{"child asks the user", scripted.Turn{ToolCalls: []scripted.Call{
			{ID: "q", Name: agents.ToolAskUserQuestion, Args: `{"questions":[{"question":"Which fiscal year?"}]}`},
		}}, []string{"Which fiscal year?", "ask"}},
		{"child fails", scripted.Turn{Err: errors.New("401 bad key")}, []string{"failed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cm := &scripted.Model{Turns: []scripted.Turn{tc.child}}
			child := newExec(t, agents.Config{Model: cm})
			task := must[agents.Tool](t)(agents.NewTaskTool(agents.SubAgent{Name: "helper", Description: "Helps.", Executor: child}))
			pm := &scripted.Model{Turns: []scripted.Turn{
				{ToolCalls: []scripted.Call{{ID: "t1", Name: agents.ToolTask, Args: `{"task":"do the thing"}`}}},
				{Text: "I could not delegate that."},
			}}
			parent := newExec(t, agents.Config{Model: pm, Tools: []agents.Tool{task}})
			evs, rf := finished(t, drain(t, parent.Run(t.Context(), agents.Input{RunID: "p", Message: agents.UserMessage("go")})))
			checkSeq(t, evs)
			f := finishedByID(t, evs, "t1")
			if f.ErrorCode != "error" {
				t.Errorf("task result = %+v", f)
			}
			for _, s := range tc.wantInErr {
				if !strings.Contains(f.Error, s) {
					t.Errorf("task error %q lacks %q", f.Error, s)
				}
			}
			if r := resultFor(t, pm.Requests()[1].Messages, "t1"); !r.IsError || r.Content != f.Summary {
				t.Errorf("parent model saw %+v", r)
			}
			if rf.Text != "I could not delegate that." || rf.Reason != agents.FinishEndTurn {
				t.Errorf("parent RunFinished = %+v", rf)
			}
			// The parent run itself was neither interrupted nor failed.
			for _, ev := range evs {
				if ev.Header().RunID == "p" {
					switch ev.(type) {
					case *agents.Interrupted, *agents.RunFailed:
						t.Errorf("parent stream has its own %s", ev.Type())
					}
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 15. NewExecutor validation
// ---------------------------------------------------------------------------

func TestNewExecutorValidation(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{}
	var n atomic.Int32
	ping := pingTool(t, "ping", &n)
	userFinal := mustTool(agents.NewTool(agents.ToolFinalAnswer, "My own final answer.", func(context.Context, emptyIn) (string, error) { return "", nil }))
	userAsk := mustTool(agents.NewTool(agents.ToolAskUserQuestion, "My own ask.", func(context.Context, emptyIn) (string, error) { return "", nil }))
	bad := []struct {
		name string
		cfg  agents.Config
	}{
		{"nil model", agents.Config{}},
		{"negative MaxTurns", agents.Config{Model: m, MaxTurns: -1}},
		{"negative MaxToolCalls", agents.Config{Model: m, MaxToolCalls: -1}},
		{"negative MaxParallelTools", agents.Config{Model: m, MaxParallelTools: -1}},
		{"negative ToolTimeout", agents.Config{Model: m, ToolTimeout: -time.Second}},
		{"negative MaxToolOutputBytes", agents.Config{Model: m, MaxToolOutputBytes: -1}},
		{"negative ModelAttempts", agents.Config{Model: m, ModelAttempts: -1}},
		{"negative ConfirmationTTL", agents.Config{Model: m, ConfirmationTTL: -time.Second}},
		{"negative CancelGrace", agents.Config{Model: m, CancelGrace: -time.Second}},
		{"duplicate tool names", agents.Config{Model: m, Tools: []agents.Tool{ping, pingTool(t, "ping", &n)}}},
		{"nil tool", agents.Config{Model: m, Tools: []agents.Tool{nil}}},
		{"user final_answer clashes", agents.Config{Model: m, Tools: []agents.Tool{userFinal}}},
		{"user ask_user_question clashes", agents.Config{Model: m, Tools: []agents.Tool{userAsk}}},
		{"short confirmation key", agents.Config{Model: m, ConfirmationKey: []byte("fifteen bytes!!")}},
	}
	for _, tc := range bad {
		if _, err := agents.NewExecutor(tc.cfg); err == nil {
			t.Errorf("%s: NewExecutor succeeded", tc.name)
		}
	}
	if _, err := agents.NewExecutor(agents.Config{Model: m, Tools: []agents.Tool{userFinal}}); err == nil || !strings.Contains(err.Error(), "DisableFinalAnswer") {
		t.Errorf("clash error %v does not point at DisableFinalAnswer", err)
	}

	names := func(specs []agents.ToolSpec) []string {
		var out []string
		for _, s := range specs {
			out = append(out, s.Name)
		}
		return out
	}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{ping}, ConfirmationKey: []byte("sixteen bytes!!!")})
	if got := names(e.Tools()); !slices.Equal(got, []string{"ping", agents.ToolAskUserQuestion, agents.ToolFinalAnswer}) {
		t.Errorf("Tools() = %v", got)
	}
	specs := e.Tools()
	specs[0].Name = "mutated"
	if e.Tools()[0].Name != "ping" {
		t.Error("Tools() exposes the executor's slice")
	}
	e = newExec(t, agents.Config{Model: m, Tools: []agents.Tool{userFinal}, DisableFinalAnswer: true})
	if got := e.Tools(); !slices.Equal(names(got), []string{agents.ToolFinalAnswer, agents.ToolAskUserQuestion}) || got[0].Description != "My own final answer." {
		t.Errorf("Tools() with own final_answer = %+v", got)
	}
	e = newExec(t, agents.Config{Model: m, Tools: []agents.Tool{ping}, DisableAskUser: true, DisableFinalAnswer: true})
	if got := names(e.Tools()); !slices.Equal(got, []string{"ping"}) {
		t.Errorf("Tools() with built-ins disabled = %v", got)
	}
	if info := e.ModelInfo(); info.Provider != "scripted" {
		t.Errorf("ModelInfo = %+v", info)
	}
}

// A user tool that replaces final_answer is an ordinary tool.
func TestUserFinalAnswerToolIsOrdinary(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	own := pingTool(t, agents.ToolFinalAnswer, &n)
	m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{ID: "f", Name: agents.ToolFinalAnswer}}}, {Text: "done"}}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{own}, DisableFinalAnswer: true})
	_, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("q")})))
	if n.Load() != 1 || rf.Reason != agents.FinishEndTurn || rf.Text != "done" {
		t.Errorf("own final_answer ran %d times; RunFinished %+v", n.Load(), rf)
	}
}

// ---------------------------------------------------------------------------
// 16. Input validation
// ---------------------------------------------------------------------------

func TestRunInvalidInput(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{Turns: []scripted.Turn{{Text: "never"}}}
	bus, rec := newBus(t)
	e := newExec(t, agents.Config{Model: m, Bus: bus})
	err := onlyError(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.Message{Role: domain.RoleUser}})))
	if !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("error %v does not match domain.ErrInvalid", err)
	}
	if m.Calls() != 0 || len(rec.all()) != 0 {
		t.Errorf("model called %d times, bus got %v", m.Calls(), rec.kinds())
	}
}

// ---------------------------------------------------------------------------
// 17. RequestBuilder seam
// ---------------------------------------------------------------------------

func TestRequestBuilder(t *testing.T) {
	t.Parallel()
	type seen struct {
		turn           int
		wrapUp         bool
		system         string
		history, msgs  int
		lastRole       domain.Role
		tools          int
		toolChoiceNone bool
		runID          string
	}
	var (
		mu    sync.Mutex
		turns []seen
		built []*agents.Request
	)
	builder := agents.BuilderFunc(func(_ context.Context, tc *agents.TurnContext) (*agents.Request, error) {
		req := &agents.Request{
			System:   fmt.Sprintf("compiled turn %d", tc.Turn),
			Messages: append([]agents.Message{agents.UserMessage("summary of older history")}, tc.Messages...),
			Tools:    tc.Tools[:1],
			Options:  tc.Options,
		}
		req.Options.MaxTokens = 100 * tc.Turn
		mu.Lock()
		turns = append(turns, seen{tc.Turn, tc.WrapUp, tc.System, len(tc.History), len(tc.Messages),
			tc.Messages[len(tc.Messages)-1].Role, len(tc.Tools), tc.Options.ToolChoice.Mode == agents.ToolChoiceNone, tc.Input.RunID})
		built = append(built, req)
		mu.Unlock()
		return req, nil
	})
	var n atomic.Int32
	m := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{ID: "p", Name: "ping"}}}, {Text: "done"}}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n)}, Builder: builder, MaxTurns: 2,
		System: "base system"})
	history := []agents.Message{agents.UserMessage("earlier q"), agents.AssistantMessage("earlier a")}
	finished(t, drain(t, e.Run(t.Context(), agents.Input{RunID: "r-b", History: history, Message: agents.UserMessage("now")})))
	want := []seen{
		{1, false, "base system", 2, 1, domain.RoleUser, 3, false, "r-b"},
		{2, true, "", 2, 3, domain.RoleTool, 3, true, "r-b"},
	}
	if len(turns) != 2 {
		t.Fatalf("builder called %d times", len(turns))
	}
	// The wrap-up turn's system prompt carries the wrap-up note.
	if !strings.HasPrefix(turns[1].system, "base system") || !strings.Contains(turns[1].system, "Do not call any tool") {
		t.Errorf("wrap-up system = %q", turns[1].system)
	}
	turns[1].system = ""
	if !slices.Equal(turns, want) {
		t.Errorf("turn contexts = %+v, want %+v", turns, want)
	}
	reqs := m.Requests()
	for i := range reqs {
		b := built[i]
		got, _ := json.Marshal(reqs[i])
		exp, _ := json.Marshal(b)
		if string(got) != string(exp) {
			t.Errorf("request %d = %s, want the builder's %s", i+1, got, exp)
		}
	}
	if reqs[0].System != "compiled turn 1" || reqs[1].Options.MaxTokens != 200 || len(reqs[1].Tools) != 1 {
		t.Errorf("model did not get the built requests: %+v", reqs)
	}
}

func TestRequestBuilderError(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{Turns: []scripted.Turn{{Text: "never"}}}
	boom := errors.New("compiler exploded")
	e := newExec(t, agents.Config{Model: m, Builder: agents.BuilderFunc(func(context.Context, *agents.TurnContext) (*agents.Request, error) {
		return nil, boom
	})})
	_, rf, err := failed(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("q")})))
	if !errors.Is(err, boom) || rf.Code != "internal" || m.Calls() != 0 {
		t.Errorf("RunFailed = %+v, err = %v, calls = %d", rf, err, m.Calls())
	}
}

// ---------------------------------------------------------------------------
// 18. Provider data round trip within a run
// ---------------------------------------------------------------------------

func TestOpaqueRoundTripWithinRun(t *testing.T) {
	t.Parallel()
	opaque := json.RawMessage(`{"thought_signature":"dGhvdWdodC1zaWctMQ=="}`)
	var n atomic.Int32
	m := &scripted.Model{Turns: []scripted.Turn{
		{Reasoning: "The user wants a ping; call the tool.", ReasoningSignature: "sig-EqQBCkYIBRgCKkD==",
			ToolCalls: []scripted.Call{{ID: "p", Name: "ping", Opaque: opaque}}},
		{Text: "pong"},
	}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n)}})
	evs, _ := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("ping")})))
	var reasoning strings.Builder
	for _, d := range ofType[*agents.ReasoningDelta](evs) {
		reasoning.WriteString(d.Text)
	}
	if reasoning.String() != "The user wants a ping; call the tool." {
		t.Errorf("reasoning deltas = %q", reasoning.String())
	}
	checkOpaque(t, m.Requests()[1].Messages[1], "The user wants a ping; call the tool.", "sig-EqQBCkYIBRgCKkD==", opaque)
}

// checkOpaque checks an assistant message carrying a signed reasoning block
// and a tool call with opaque data.
func checkOpaque(t testing.TB, msg agents.Message, reasoning, sig string, opaque json.RawMessage) {
	t.Helper()
	if msg.Role != domain.RoleAssistant || len(msg.Parts) != 2 {
		t.Fatalf("assistant message = %+v", msg)
	}
	r := msg.Parts[0]
	if r.Type != domain.PartReasoning || r.Reasoning == nil || r.Reasoning.Text != reasoning ||
		r.Reasoning.Signature != sig || r.Reasoning.Provider != "scripted" {
		t.Errorf("reasoning part = %+v / %+v", r, r.Reasoning)
	}
	c := msg.Parts[1]
	if c.Type != domain.PartToolCall || c.ToolCall == nil || string(c.ToolCall.Opaque) != string(opaque) || c.ToolCall.Provider != "scripted" {
		t.Errorf("tool call part = %+v / %+v", c, c.ToolCall)
	}
}

// The executor serves many runs at once.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	m := &scripted.Model{Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == domain.RoleTool {
			return scripted.Turn{Text: "answer to " + req.Messages[0].Text()}, nil
		}
		return scripted.Turn{ToolCalls: []scripted.Call{{Name: "ping"}, {Name: "ping"}}}, nil
	}}
	e := newExec(t, agents.Config{Model: m, Tools: []agents.Tool{pingTool(t, "ping", &n, agents.WithParallel())}})
	t.Run("runs", func(t *testing.T) {
		for i := range 8 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				q := fmt.Sprintf("question %d", i)
				_, rf := finished(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage(q)})))
				if rf.Text != "answer to "+q {
					t.Errorf("run %d answered %q", i, rf.Text)
				}
			})
		}
	})
	if n.Load() != 16 {
		t.Errorf("tool ran %d times, want 16", n.Load())
	}
}

type tooLong struct{}

func (tooLong) Error() string                { return "prompt needs 900 tokens, budget 100" }
func (tooLong) RunFailure() (string, string) { return "context_too_long", "Ask a shorter question." }

func TestRunFailureErrorsPresentThemselves(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{Turns: []scripted.Turn{{Text: "never"}}}
	e := newExec(t, agents.Config{Model: m, Builder: agents.BuilderFunc(func(context.Context, *agents.TurnContext) (*agents.Request, error) {
		return nil, fmt.Errorf("compile: %w", tooLong{})
	})})
	_, rf, err := failed(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("q")})))
	if rf.Code != "context_too_long" || rf.Message != "Ask a shorter question." || !errors.As(err, new(tooLong)) {
		t.Errorf("RunFailed = %+v, err = %v", rf, err)
	}
}
