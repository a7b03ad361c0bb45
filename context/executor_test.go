package context_test

import (
	stdctx "context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/agents"
	bcontext "github.com/bichat-go/bichat/context"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/providers/scripted"
)

type sqlArgs struct {
	SQL string `json:"sql"`
}

type schemaArgs struct {
	Names []string `json:"names"`
}

func testTools(t *testing.T) []agents.Tool {
	t.Helper()
	q, err := agents.NewTool("query_database", "Run one read-only SQL query.", func(_ stdctx.Context, in sqlArgs) (string, error) {
		return "3 rows: north 10, south 20, west 5 (SQL: " + in.SQL + ")", nil
	}, agents.WithParallel())
	if err != nil {
		t.Fatal(err)
	}
	s, err := agents.NewTool("get_schema", "Describe datasets.", func(_ stdctx.Context, in schemaArgs) (string, error) {
		return "sales.customers: id bigint, region text", nil
	}, agents.WithParallel())
	if err != nil {
		t.Fatal(err)
	}
	return []agents.Tool{q, s}
}

var orders = domain.Dataset{Name: "sales.orders", Source: "sales.orders", Fields: []domain.Field{{Name: "id", Type: "bigint"}, {Name: "total", Type: "numeric"}}}

type eventLog struct {
	mu     sync.Mutex
	events []*hooks.ContextCompile
}

func (l *eventLog) all() []*hooks.ContextCompile {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func newBus(t *testing.T) (*hooks.Bus, *eventLog) {
	bus := hooks.New(hooks.Options{})
	t.Cleanup(func() { bus.Close() })
	log := &eventLog{}
	if _, err := hooks.Listen(bus, func(_ stdctx.Context, e *hooks.ContextCompile) error {
		log.mu.Lock()
		defer log.mu.Unlock()
		log.events = append(log.events, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return bus, log
}

func run(t *testing.T, ex *agents.Executor, in agents.Input) *agents.RunFinished {
	t.Helper()
	var fin *agents.RunFinished
	for ev, err := range ex.Run(stdctx.Background(), in) {
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := ev.(*agents.RunFinished); ok {
			fin = f
		}
	}
	if fin == nil {
		t.Fatal("run did not finish")
	}
	return fin
}

// TestExecutorWithRequestBuilder runs two questions of one session through
// agents.Executor with the compiler as its RequestBuilder and checks what
// the model received and the context.compile events.
func TestExecutorWithRequestBuilder(t *testing.T) {
	t.Parallel()
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{scripted.CallJSON("query_database", map[string]string{"sql": "SELECT count(*) FROM sales.orders"})}},
		{ToolCalls: []scripted.Call{
			scripted.CallJSON("get_schema", map[string]any{"names": []string{"sales.customers"}}),
			scripted.CallJSON("query_database", map[string]string{"sql": "SELECT region, sum(total) FROM sales.orders GROUP BY 1"})}},
		{Text: "South leads with 20."},
		{Text: "North is second."}, // second question
	}}
	bus, log := newBus(t)
	renderer, err := bcontext.RendererFor(model.Info())
	if err != nil {
		t.Fatal(err)
	}
	rb := bcontext.NewRequestBuilder(renderer, bcontext.PolicyFor(model.Info(), bcontext.OverflowTruncate))
	rb.Bus = bus
	sessionCalls := 0
	rb.Session = func(_ stdctx.Context, tc *agents.TurnContext) ([]bcontext.Block, error) {
		sessionCalls++
		return bcontext.NewBuilder(nil).
			Rules("Answer in EUR.").
			Datasets(orders).
			KBHits(bcontext.KBHit{Title: "Regions", Snippet: "There are three regions."}).
			State(bcontext.State{Page: "dashboard", Dataset: "sales.orders"}).
			Blocks()
	}
	ex, err := agents.NewExecutor(agents.Config{Model: model, Tools: testTools(t), Builder: rb, Bus: bus, System: "You are a BI analyst."})
	if err != nil {
		t.Fatal(err)
	}
	fin := run(t, ex, agents.Input{RunID: "run1", SessionID: "s1", TenantID: "t1", Message: agents.UserMessage("Revenue by region?")})
	if sessionCalls != 1 {
		t.Errorf("Session called %d times in one run, want once", sessionCalls)
	}
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model got %d requests", len(reqs))
	}
	for i, req := range reqs {
		if !strings.HasPrefix(req.System, "You are a BI analyst.") || !strings.Contains(req.System, "Answer in EUR.") ||
			!strings.Contains(req.System, "name: sales.orders") || !strings.Contains(req.System, "Knowledge base: Regions") ||
			!strings.Contains(req.System, "page: dashboard") {
			t.Errorf("request %d system prompt:\n%s", i, req.System)
		}
		if req.System != reqs[0].System || req.Cache.SystemPrefix != reqs[0].Cache.SystemPrefix || req.Cache.SystemPrefix == 0 {
			t.Errorf("request %d: system prompt or its cache prefix changed", i)
		}
		names := make([]string, len(req.Tools))
		for j, s := range req.Tools {
			names[j] = s.Name
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"ask_user_question", "final_answer", "get_schema", "query_database"}) {
			t.Errorf("request %d tools %v", i, names)
		}
		if got := req.Messages[0].Text(); got != "Revenue by region?" {
			t.Errorf("request %d starts with %q", i, got)
		}
	}
	// Turn 2: user, assistant call, tool result. Turn 3 adds the two
	// parallel calls and one role=tool message per result (OpenAI layout).
	if n := len(reqs[1].Messages); n != 3 || reqs[1].Messages[2].Role != domain.RoleTool {
		t.Errorf("turn 2 messages: %+v", reqs[1].Messages)
	}
	m3 := reqs[2].Messages
	if len(m3) != 6 || m3[4].Role != domain.RoleTool || m3[5].Role != domain.RoleTool ||
		m3[4].Parts[0].ToolResult.Name != "get_schema" || !strings.Contains(m3[5].Parts[0].ToolResult.Content, "GROUP BY 1") {
		t.Errorf("turn 3 messages: %s", mustJSON(m3))
	}
	if !slices.Equal(reqs[2].Cache.Messages, []int{5}) || len(reqs[0].Cache.Messages) != 0 {
		t.Errorf("cache hints %v / %v", reqs[0].Cache.Messages, reqs[2].Cache.Messages)
	}

	// Second question: the first run's transcript is history.
	run(t, ex, agents.Input{RunID: "run2", SessionID: "s1", TenantID: "t1", History: fin.Messages, Message: agents.UserMessage("And second?")})
	reqs = model.Requests()
	r4 := reqs[3]
	if len(r4.Messages) != 8 || r4.Messages[7].Text() != "And second?" || r4.Messages[6].Text() != "South leads with 20." {
		t.Errorf("second question messages: %s", mustJSON(r4.Messages))
	}
	if !slices.Equal(r4.Cache.Messages, []int{6}) {
		t.Errorf("second question cache hints %v, want the last history message", r4.Cache.Messages)
	}

	events := log.all()
	if len(events) != 4 {
		t.Fatalf("%d context.compile events, want 4", len(events))
	}
	for i, e := range events {
		wantRun := "run1"
		if i == 3 {
			wantRun = "run2"
		}
		if e.RunID != wantRun || e.SessionID != "s1" || e.TenantID != "t1" || e.Time.IsZero() {
			t.Errorf("event %d meta %+v", i, e.Meta)
		}
		if e.Tokens <= 0 || e.Budget != 128000-8192 || e.ByKind["pinned"] == 0 || e.ByKind["turn"] == 0 || e.CachePrefixHash != events[0].CachePrefixHash {
			t.Errorf("event %d: %+v", i, e)
		}
		if i > 0 && i < 3 && e.Tokens <= events[i-1].Tokens {
			t.Errorf("event %d: tokens did not grow with the run", i)
		}
	}
	if events[3].ByKind["history"] == 0 {
		t.Errorf("second question has no history tokens: %v", events[3].ByKind)
	}
}

// TestRequestBuilderCalibrates checks that an inexact renderer's estimate
// is corrected by the provider's reported prompt size of the previous call.
func TestRequestBuilderCalibrates(t *testing.T) {
	t.Parallel()
	r, err := bcontext.NewAnthropicRenderer()
	if err != nil {
		t.Fatal(err)
	}
	bus, log := newBus(t)
	p := bcontext.Policy{ContextWindow: 200000, CompletionReserve: 8000}
	rb := bcontext.NewRequestBuilder(r, p)
	rb.Bus = bus
	in := &agents.Input{RunID: "r"}
	specs := []agents.ToolSpec{{Name: "query_database", Description: "SQL", Schema: json.RawMessage(`{"type":"object"}`)}}
	msgs := []agents.Message{agents.UserMessage("Revenue?")}
	tc := &agents.TurnContext{Input: in, Turn: 1, System: "sys", Messages: msgs, Tools: specs}
	if _, err := rb.BuildRequest(stdctx.Background(), tc); err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, agents.Message{Role: domain.RoleAssistant, Parts: []domain.Part{{Type: domain.PartToolCall,
		ToolCall: &domain.ToolCall{ID: "c1", Name: "query_database", Arguments: json.RawMessage(`{}`)}}}},
		agents.Message{Role: domain.RoleTool, Parts: []domain.Part{{Type: domain.PartToolResult,
			ToolResult: &domain.ToolResult{CallID: "c1", Name: "query_database", Content: "42"}}}})
	// The provider reports 10% more than the raw count of the first call.
	c := bcontext.NewCompiler()
	b1, _ := bcontext.NewBuilder(nil).Rules("sys").Tools(specs...).Turn(bcontext.TextTurn("Revenue?")).Blocks()
	c1, err := c.Compile(stdctx.Background(), b1, r, p)
	if err != nil {
		t.Fatal(err)
	}
	reported := c1.Report.RawTokens * 11 / 10
	tc2 := &agents.TurnContext{Input: in, Turn: 2, System: "sys", Messages: msgs, Tools: specs, PrevUsage: domain.Usage{PromptTokens: reported}}
	if _, err := rb.BuildRequest(stdctx.Background(), tc2); err != nil {
		t.Fatal(err)
	}
	// Recompute the second turn independently.
	b2, _ := bcontext.NewBuilder(nil).Rules("sys").Tools(specs...).Turn(bcontext.TextTurn("Revenue?")).Steps(msgs[1:]...).Blocks()
	c2, err := c.Compile(stdctx.Background(), b2, r, p, bcontext.WithCalibration(c1.Report.RawTokens, reported))
	if err != nil {
		t.Fatal(err)
	}
	ev := log.all()
	if len(ev) != 2 || ev[0].Tokens != c1.Report.Tokens || ev[1].Tokens != c2.Report.Tokens || !c2.Report.Calibrated {
		t.Fatalf("events %+v %+v, independent %d %d", ev[0], ev[1], c1.Report.Tokens, c2.Report.Tokens)
	}
	want := float64(reported)/float64(c1.Report.RawTokens) + bcontext.CalibratedMargin
	if c2.Report.Factor != want {
		t.Errorf("factor %v, want %v", c2.Report.Factor, want)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestWrapUpKeepsPrefix: on the executor's wrap-up turn the instruction
// goes after the run's messages, so the system prompt (and the cached
// prefix) stays the same.
func TestWrapUpKeepsPrefix(t *testing.T) {
	t.Parallel()
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{scripted.CallJSON("query_database", map[string]string{"sql": "SELECT 1"})}},
		{Text: "Done."},
	}}
	rb := bcontext.NewRequestBuilder(must(bcontext.RendererFor(model.Info())), bcontext.Policy{ContextWindow: 100000})
	ex, err := agents.NewExecutor(agents.Config{Model: model, Tools: testTools(t), Builder: rb, System: "You are a BI analyst.", MaxTurns: 2})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ex, agents.Input{Message: agents.UserMessage("Count?")})
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if reqs[1].System != reqs[0].System || !strings.Contains(last.Text(), "Do not call any tool") || reqs[1].Options.ToolChoice.Mode != agents.ToolChoiceNone {
		t.Errorf("wrap-up turn: system %q, last message %q, tool choice %q", reqs[1].System, last.Text(), reqs[1].Options.ToolChoice.Mode)
	}
	for i, m := range reqs[1].Messages[:len(reqs[1].Messages)-1] {
		if strings.Contains(m.Text(), "Do not call any tool") {
			t.Errorf("wrap-up note also in message %d", i)
		}
	}
}

func TestModelSummarizer(t *testing.T) {
	t.Parallel()
	model := &scripted.Model{Turns: []scripted.Turn{{Text: "  The user asked for 2024 revenue by month.  "}}}
	s := &bcontext.ModelSummarizer{Model: model}
	got, err := s.Summarize(stdctx.Background(), bcontext.SummaryRequest{Previous: "Earlier: greetings.", Transcript: "user: revenue 2024?", MaxTokens: 300})
	if err != nil || got != "The user asked for 2024 revenue by month." {
		t.Fatalf("summary %q, %v", got, err)
	}
	req := model.Requests()[0]
	if req.System != bcontext.DefaultSummaryInstructions || req.Options.MaxTokens != 300 || len(req.Tools) != 0 ||
		!strings.Contains(req.Messages[0].Text(), "Summary so far:\nEarlier: greetings.") || !strings.Contains(req.Messages[0].Text(), "user: revenue 2024?") {
		t.Errorf("summarizer request %+v", req)
	}
	empty := &bcontext.ModelSummarizer{Model: &scripted.Model{Turns: []scripted.Turn{{Text: " "}}}}
	if _, err := empty.Summarize(stdctx.Background(), bcontext.SummaryRequest{Transcript: "x"}); err == nil {
		t.Error("empty summary accepted")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
