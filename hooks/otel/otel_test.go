package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	bichatotel "github.com/bichat-go/bichat/hooks/otel"
	"github.com/bichat-go/bichat/internal/backoff"
	"github.com/bichat-go/bichat/providers/scripted"
)

// harness wires a Tracer to an in-memory span recorder and a bus.
type harness struct {
	rec    *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	tracer *bichatotel.Tracer
	bus    *hooks.Bus
}

func newHarness(t *testing.T, opts bichatotel.Options) *harness {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := &harness{rec: rec, tp: tp, tracer: bichatotel.New(tp, opts)}
	var failed atomic.Value
	h.bus = hooks.New(hooks.Options{OnError: func(he *hooks.HandlerError) { failed.CompareAndSwap(nil, he.Error()) }})
	if _, err := h.bus.Subscribe(h.tracer); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.bus.Close()
		if msg := failed.Load(); msg != nil {
			t.Errorf("a handler failed: %v", msg)
		}
		_ = tp.Shutdown(context.Background())
	})
	return h
}

// run runs an executor over the harness's bus to its end and returns the
// final agents event (RunFinished, RunFailed or Interrupted).
func (h *harness) run(t *testing.T, ctx context.Context, cfg agents.Config, in agents.Input) agents.Event {
	t.Helper()
	cfg.Bus = h.bus
	if cfg.Backoff == (backoff.Policy{}) {
		cfg.Backoff = backoff.Policy{Base: time.Millisecond, Max: 2 * time.Millisecond}
	}
	ex, err := agents.NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if in.Message.Role == "" {
		in.Message = agents.UserMessage("What was revenue in 2025?")
	}
	var last agents.Event
	for ev, err := range ex.Run(ctx, in) {
		if err != nil {
			break
		}
		last = ev
	}
	return last
}

// spans returns the ended spans after checking that every started span
// ended, that children lie within their parents' time and trace, and that
// the tracer forgot every run.
func (h *harness) spans(t *testing.T) spanSet {
	t.Helper()
	ended := h.rec.Ended()
	if started := len(h.rec.Started()); started != len(ended) {
		t.Errorf("%d spans started, %d ended", started, len(ended))
	}
	if n := h.tracer.OpenRuns(); n != 0 {
		t.Errorf("OpenRuns = %d after every run ended, want 0", n)
	}
	s := spanSet{all: ended, byID: map[trace.SpanID]sdktrace.ReadOnlySpan{}}
	for _, sp := range ended {
		s.byID[sp.SpanContext().SpanID()] = sp
	}
	for _, sp := range ended {
		p, ok := s.byID[sp.Parent().SpanID()]
		if !ok {
			continue
		}
		if sp.SpanContext().TraceID() != p.SpanContext().TraceID() {
			t.Errorf("%s is in another trace than its parent %s", sp.Name(), p.Name())
		}
		if sp.StartTime().Before(p.StartTime()) || sp.EndTime().After(p.EndTime()) {
			t.Errorf("%s [%v, %v] is not within its parent %s [%v, %v]", sp.Name(), sp.StartTime(), sp.EndTime(),
				p.Name(), p.StartTime(), p.EndTime())
		}
		if sp.EndTime().Before(sp.StartTime()) {
			t.Errorf("%s ends before it starts", sp.Name())
		}
	}
	return s
}

type spanSet struct {
	all  []sdktrace.ReadOnlySpan
	byID map[trace.SpanID]sdktrace.ReadOnlySpan
}

func (s spanSet) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, sp := range s.all {
		if sp.Name() == name {
			out = append(out, sp)
		}
	}
	slices.SortFunc(out, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return out
}

func (s spanSet) one(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	got := s.named(name)
	if len(got) != 1 {
		t.Fatalf("%d spans named %q, want 1; spans: %v", len(got), name, s.names())
	}
	return got[0]
}

func (s spanSet) names() []string {
	var out []string
	for _, sp := range s.all {
		out = append(out, sp.Name())
	}
	slices.Sort(out)
	return out
}

// children returns the names of sp's children in start order.
func (s spanSet) children(sp sdktrace.ReadOnlySpan) []string {
	var kids []sdktrace.ReadOnlySpan
	for _, c := range s.all {
		if c.Parent().SpanID() == sp.SpanContext().SpanID() {
			kids = append(kids, c)
		}
	}
	slices.SortStableFunc(kids, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	out := make([]string, len(kids))
	for i, k := range kids {
		out[i] = k.Name()
	}
	return out
}

func isChild(child, parent sdktrace.ReadOnlySpan) bool {
	return child.Parent().SpanID() == parent.SpanContext().SpanID() &&
		child.SpanContext().TraceID() == parent.SpanContext().TraceID()
}

func attrOf(kvs []attribute.KeyValue, key string) (attribute.Value, bool) {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// wantAttrs checks attributes of a span (or event): a nil want value
// means the attribute must be absent.
func wantAttrs(t *testing.T, what string, kvs []attribute.KeyValue, want map[string]any) {
	t.Helper()
	for k, w := range want {
		v, ok := attrOf(kvs, k)
		if w == nil {
			if ok {
				t.Errorf("%s: %s = %v, want absent", what, k, v.String())
			}
			continue
		}
		if !ok {
			t.Errorf("%s: %s missing, want %v", what, k, w)
			continue
		}
		if got := v.AsInterface(); fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s: %s = %v (%T), want %v", what, k, got, got, w)
		}
	}
}

func eventsNamed(sp sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range sp.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

type revenueIn struct {
	Year int `json:"year"`
}

// revenueTool answers with a fixed figure, publishing the SQL statement
// and the sandbox job it "ran" the way tools/sqldb and tools/python do:
// tagged with the call's CallInfo.
func revenueTool(bus **hooks.Bus, opts ...agents.ToolOption) agents.Tool {
	return agents.MustTool("revenue", "Returns the revenue of a fiscal year.",
		func(ctx context.Context, in revenueIn) (string, error) {
			publishToolEvents(ctx, *bus, fmt.Sprintf("SELECT sum(amount) FROM sales WHERE year = %d", in.Year))
			return "1.2 M EUR", nil
		}, opts...)
}

func publishToolEvents(ctx context.Context, bus *hooks.Bus, sql string) {
	info, _ := agents.CallInfoFromContext(ctx)
	meta := hooks.Meta{Time: time.Now(), TenantID: info.TenantID, SessionID: info.SessionID,
		MessageID: info.MessageID, RunID: info.RunID, ParentRunID: info.ParentRunID}
	bus.Publish(ctx, &hooks.SQLQuery{Meta: meta, CallID: info.CallID, Tool: info.Tool, Dialect: "postgres",
		SQL: sql, Rows: 1, Duration: 3 * time.Millisecond})
	meta.Time = time.Now()
	bus.Publish(ctx, &hooks.SandboxRun{Meta: meta, CallID: info.CallID, Outcome: "ok", Duration: 5 * time.Millisecond,
		Files: 1})
}

func TestRunSpanTree(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bichatotel.Options{})
	bus := h.bus
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{scripted.CallJSON("revenue", map[string]any{"year": 2025})},
			Usage: domain.Usage{PromptTokens: 100, CompletionTokens: 10, CachedTokens: 80, CacheWriteTokens: 20, TotalTokens: 110}},
		{Text: "Revenue in 2025 was 1.2 M EUR.", Usage: domain.Usage{PromptTokens: 130, CompletionTokens: 12, TotalTokens: 142}},
	}}
	// The host's request span: the run is traced under it.
	hostCtx, host := h.tp.Tracer("host").Start(context.Background(), "POST /messages")
	last := h.run(t, hostCtx, agents.Config{Name: "analyst", Model: model, Tools: []agents.Tool{revenueTool(&bus)}},
		agents.Input{RunID: "run-1", TenantID: "t1", UserID: "u1", SessionID: "s1", MessageID: "m1"})
	host.End()
	if _, ok := last.(*agents.RunFinished); !ok {
		t.Fatalf("run ended with %T, want RunFinished", last)
	}
	s := h.spans(t)

	runSpan := s.one(t, "invoke_agent analyst")
	hostSpan := s.one(t, "POST /messages")
	if !isChild(runSpan, hostSpan) {
		t.Errorf("run span is not a child of the host's span")
	}
	if got, want := s.children(runSpan), []string{"turn 1", "turn 2"}; !slices.Equal(got, want) {
		t.Errorf("run children = %v, want %v", got, want)
	}
	turn1, turn2 := s.one(t, "turn 1"), s.one(t, "turn 2")
	if got, want := s.children(turn1), []string{"chat scripted", "execute_tool revenue"}; !slices.Equal(got, want) {
		t.Errorf("turn 1 children = %v, want %v", got, want)
	}
	if got, want := s.children(turn2), []string{"chat scripted"}; !slices.Equal(got, want) {
		t.Errorf("turn 2 children = %v, want %v", got, want)
	}
	if turn1.EndTime() != turn2.StartTime() {
		t.Errorf("turn 1 ends at %v, want turn 2's start %v", turn1.EndTime(), turn2.StartTime())
	}
	if turn2.EndTime() != runSpan.EndTime() {
		t.Errorf("the last turn ends at %v, want the run's end %v", turn2.EndTime(), runSpan.EndTime())
	}
	for _, sp := range s.all {
		if sp.Status().Code != codes.Unset {
			t.Errorf("%s status = %v %q, want unset", sp.Name(), sp.Status().Code, sp.Status().Description)
		}
	}

	if runSpan.SpanKind() != trace.SpanKindInternal {
		t.Errorf("run span kind = %v", runSpan.SpanKind())
	}
	wantAttrs(t, "run", runSpan.Attributes(), map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "analyst",
		"gen_ai.conversation.id": "s1", "gen_ai.request.model": "scripted",
		"bichat.run_id": "run-1", "bichat.tenant_id": "t1", "bichat.message_id": "m1",
		"bichat.finish_reason": "end_turn", "bichat.turns": 2, "bichat.tool_calls": 1,
		"gen_ai.usage.input_tokens": 230, "gen_ai.usage.output_tokens": 22,
		"bichat.parent_run_id": nil, "bichat.resumed": nil,
	})
	wantAttrs(t, "turn 1", turn1.Attributes(), map[string]any{"bichat.turn": 1})

	chats := s.named("chat scripted")
	if chats[0].SpanKind() != trace.SpanKindClient {
		t.Errorf("chat span kind = %v, want client", chats[0].SpanKind())
	}
	wantAttrs(t, "chat 1", chats[0].Attributes(), map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "scripted",
		"gen_ai.request.model": "scripted", "gen_ai.response.model": "scripted",
		"gen_ai.response.finish_reasons": []string{"tool_use"},
		"gen_ai.usage.input_tokens":      100, "gen_ai.usage.output_tokens": 10,
		"gen_ai.usage.cache_read.input_tokens": 80, "gen_ai.usage.cache_creation.input_tokens": 20,
		"bichat.attempt": 1, "bichat.turn": 1, "bichat.cost_usd": 0.0, "error.type": nil,
	})
	if v, ok := attrOf(chats[0].Attributes(), "gen_ai.response.time_to_first_chunk"); !ok || v.AsFloat64() <= 0 ||
		v.AsFloat64() > chats[0].EndTime().Sub(chats[0].StartTime()).Seconds() {
		t.Errorf("time_to_first_chunk = %v (present %v), want within the call", v.AsFloat64(), ok)
	}
	wantAttrs(t, "chat 2", chats[1].Attributes(), map[string]any{
		"gen_ai.response.finish_reasons": []string{"end_turn"}, "gen_ai.usage.input_tokens": 130,
		"gen_ai.usage.cache_read.input_tokens": nil, "bichat.turn": 2,
	})

	tool := s.one(t, "execute_tool revenue")
	wantAttrs(t, "tool", tool.Attributes(), map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "revenue",
		"gen_ai.tool.call.id": "call_1_1", "gen_ai.tool.type": "function",
		"bichat.tool.summary_bytes": len("1.2 M EUR"), "bichat.truncated": false,
		"gen_ai.tool.call.arguments": nil,
	})
	sql := eventsNamed(tool, "bichat.sql.query")
	if len(sql) != 1 {
		t.Fatalf("tool span has %d sql events, want 1", len(sql))
	}
	wantAttrs(t, "sql event", sql[0].Attributes, map[string]any{
		"db.system.name": "postgresql", "db.response.returned_rows": 1, "bichat.tool": "revenue",
		"bichat.duration_ms": 3.0, "db.query.text": nil,
	})
	if sql[0].Time.Before(tool.StartTime()) || sql[0].Time.After(tool.EndTime()) {
		t.Errorf("sql event at %v, outside its call [%v, %v]", sql[0].Time, tool.StartTime(), tool.EndTime())
	}
	sb := eventsNamed(tool, "bichat.sandbox.run")
	if len(sb) != 1 {
		t.Fatalf("tool span has %d sandbox events, want 1", len(sb))
	}
	wantAttrs(t, "sandbox event", sb[0].Attributes, map[string]any{"bichat.sandbox.outcome": "ok", "bichat.sandbox.files": 1})
}

func TestFailures(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name  string
		turns []scripted.Turn
		tool  func(context.Context, revenueIn) (string, error)
		// wantTool: span name and error.type of the failed call ("" when
		// no call fails).
		wantTool, wantToolCode string
		wantRunError           string
		wantChatErrors         int
	}{
		{name: "model call fails", turns: []scripted.Turn{{Err: boom}},
			wantRunError: "model_error", wantChatErrors: 1},
		{name: "model call fails mid-stream", turns: []scripted.Turn{{Text: "Revenue was", Err: boom, FailAfter: 1}},
			wantRunError: "model_error", wantChatErrors: 1},
		{name: "tool returns an error",
			turns:    []scripted.Turn{{ToolCalls: []scripted.Call{scripted.CallJSON("revenue", map[string]any{"year": 2025})}}, {Text: "Sorry."}},
			tool:     func(context.Context, revenueIn) (string, error) { return "", boom },
			wantTool: "execute_tool revenue", wantToolCode: "error"},
		{name: "tool panics",
			turns:    []scripted.Turn{{ToolCalls: []scripted.Call{scripted.CallJSON("revenue", map[string]any{"year": 2025})}}, {Text: "Sorry."}},
			tool:     func(context.Context, revenueIn) (string, error) { panic("kaputt") },
			wantTool: "execute_tool revenue", wantToolCode: "panic"},
		{name: "invalid arguments",
			turns:    []scripted.Turn{{ToolCalls: []scripted.Call{{Name: "revenue", Args: `{"year":"2025"}`}}}, {Text: "Sorry."}},
			wantTool: "execute_tool revenue", wantToolCode: "invalid_arguments"},
		{name: "unknown tool (refused before it starts)",
			turns:    []scripted.Turn{{ToolCalls: []scripted.Call{{Name: "forecast", Args: `{}`}}}, {Text: "Sorry."}},
			wantTool: "execute_tool forecast", wantToolCode: "unknown_tool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, bichatotel.Options{})
			fn := tc.tool
			if fn == nil {
				fn = func(context.Context, revenueIn) (string, error) { return "1.2 M EUR", nil }
			}
			tool := agents.MustTool("revenue", "Returns the revenue of a fiscal year.", fn)
			h.run(t, context.Background(), agents.Config{Model: &scripted.Model{Turns: tc.turns}, Tools: []agents.Tool{tool}},
				agents.Input{})
			s := h.spans(t)
			runSpan := s.one(t, "invoke_agent")
			if tc.wantRunError != "" {
				if runSpan.Status().Code != codes.Error || !strings.Contains(runSpan.Status().Description, "boom") {
					t.Errorf("run status = %v %q, want error mentioning boom", runSpan.Status().Code, runSpan.Status().Description)
				}
				wantAttrs(t, "run", runSpan.Attributes(), map[string]any{"error.type": tc.wantRunError, "bichat.finish_reason": nil})
				if len(eventsNamed(runSpan, "exception")) != 1 {
					t.Errorf("failed run has no exception event")
				}
			} else {
				if runSpan.Status().Code != codes.Unset {
					t.Errorf("run status = %v, want unset", runSpan.Status().Code)
				}
				wantAttrs(t, "run", runSpan.Attributes(), map[string]any{"bichat.finish_reason": "end_turn", "error.type": nil})
			}
			var chatErrors int
			for _, c := range s.named("chat scripted") {
				if c.Status().Code == codes.Error {
					chatErrors++
					wantAttrs(t, "failed chat", c.Attributes(), map[string]any{"error.type": "_OTHER"})
					if c.Status().Description != "boom" {
						t.Errorf("failed chat description = %q, want boom", c.Status().Description)
					}
				}
			}
			if chatErrors != tc.wantChatErrors {
				t.Errorf("%d failed chat spans, want %d", chatErrors, tc.wantChatErrors)
			}
			if tc.wantTool == "" {
				return
			}
			ts := s.one(t, tc.wantTool)
			if ts.Status().Code != codes.Error || ts.Status().Description != tc.wantToolCode {
				t.Errorf("tool status = %v %q, want error %q (no message without CaptureContent)", ts.Status().Code,
					ts.Status().Description, tc.wantToolCode)
			}
			wantAttrs(t, "tool", ts.Attributes(), map[string]any{"error.type": tc.wantToolCode, "gen_ai.tool.call.id": "call_1_1"})
			if !isChild(ts, s.one(t, "turn 1")) {
				t.Errorf("failed tool span is not a child of turn 1")
			}
		})
	}
}

func TestRetry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bichatotel.Options{})
	model := &scripted.Model{Turns: []scripted.Turn{
		{Err: agents.TransientError(errors.New("overloaded"))},
		{Err: agents.TransientError(context.DeadlineExceeded)},
		{Text: "Revenue was 1.2 M EUR."},
	}}
	last := h.run(t, context.Background(), agents.Config{Model: model, ModelAttempts: 3}, agents.Input{})
	if _, ok := last.(*agents.RunFinished); !ok {
		t.Fatalf("run ended with %T, want RunFinished", last)
	}
	s := h.spans(t)
	turn := s.one(t, "turn 1")
	chats := s.named("chat scripted")
	if len(chats) != 3 {
		t.Fatalf("%d chat spans, want 3 (one per attempt)", len(chats))
	}
	wantType := []string{"_OTHER", "timeout", ""}
	for i, c := range chats {
		if !isChild(c, turn) {
			t.Errorf("attempt %d is not a child of turn 1", i+1)
		}
		want := map[string]any{"bichat.attempt": i + 1, "bichat.turn": 1}
		if wantType[i] == "" {
			want["error.type"] = nil
			if c.Status().Code != codes.Unset {
				t.Errorf("attempt %d status = %v, want unset", i+1, c.Status().Code)
			}
		} else {
			want["error.type"] = wantType[i]
			if c.Status().Code != codes.Error {
				t.Errorf("attempt %d status = %v, want error", i+1, c.Status().Code)
			}
		}
		wantAttrs(t, fmt.Sprintf("attempt %d", i+1), c.Attributes(), want)
	}
	if got := s.children(s.one(t, "invoke_agent")); !slices.Equal(got, []string{"turn 1"}) {
		t.Errorf("run children = %v: retries must not open turns", got)
	}
}

func TestParallelToolCalls(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bichatotel.Options{CaptureContent: true})
	bus := h.bus
	const n = 3
	var started atomic.Int32
	all := make(chan struct{})
	tool := agents.MustTool("revenue", "Returns the revenue of a fiscal year.",
		func(ctx context.Context, in revenueIn) (string, error) {
			if started.Add(1) == n {
				close(all)
			}
			// Every call waits for the others: they overlap for sure.
			select {
			case <-all:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			publishToolEvents(ctx, bus, fmt.Sprintf("SELECT %d", in.Year))
			return fmt.Sprint(in.Year), nil
		}, agents.WithParallel())
	calls := make([]scripted.Call, n)
	for i := range calls {
		calls[i] = scripted.CallJSON("revenue", map[string]any{"year": 2020 + i})
	}
	model := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: calls}, {Text: "Done."}}}
	h.run(t, context.Background(), agents.Config{Model: model, Tools: []agents.Tool{tool}}, agents.Input{})
	s := h.spans(t)
	tools := s.named("execute_tool revenue")
	if len(tools) != n {
		t.Fatalf("%d tool spans, want %d", len(tools), n)
	}
	turn := s.one(t, "turn 1")
	seen := map[string]bool{}
	var lastStart, firstEnd time.Time
	for _, ts := range tools {
		if !isChild(ts, turn) {
			t.Errorf("%s is not a child of turn 1", ts.Name())
		}
		id, _ := attrOf(ts.Attributes(), "gen_ai.tool.call.id")
		args, _ := attrOf(ts.Attributes(), "gen_ai.tool.call.arguments")
		seen[id.AsString()] = true
		// Each call's SQL event is on its own span: its statement names
		// the year of the span's arguments.
		sql := eventsNamed(ts, "bichat.sql.query")
		if len(sql) != 1 {
			t.Fatalf("%s has %d sql events, want 1", id.AsString(), len(sql))
		}
		text, _ := attrOf(sql[0].Attributes, "db.query.text")
		year := strings.TrimPrefix(text.AsString(), "SELECT ")
		if !strings.Contains(args.AsString(), year) {
			t.Errorf("call %s with arguments %s got the SQL event %q of another call", id.AsString(), args.AsString(), text.AsString())
		}
		if ts.StartTime().After(lastStart) {
			lastStart = ts.StartTime()
		}
		if firstEnd.IsZero() || ts.EndTime().Before(firstEnd) {
			firstEnd = ts.EndTime()
		}
	}
	if len(seen) != n {
		t.Errorf("call ids %v, want %d distinct", seen, n)
	}
	if !lastStart.Before(firstEnd) {
		t.Errorf("the parallel calls' spans do not overlap: last start %v, first end %v", lastStart, firstEnd)
	}
}

func TestInterruptedRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bichatotel.Options{})
	model := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{scripted.CallJSON(agents.ToolAskUserQuestion,
		map[string]any{"questions": []map[string]any{{"question": "Which year?"}}})}}}}
	last := h.run(t, context.Background(), agents.Config{Model: model}, agents.Input{RunID: "run-q"})
	if _, ok := last.(*agents.Interrupted); !ok {
		t.Fatalf("run ended with %T, want Interrupted", last)
	}
	s := h.spans(t)
	runSpan := s.one(t, "invoke_agent")
	if runSpan.Status().Code != codes.Unset {
		t.Errorf("interrupted run status = %v, want unset: waiting for the user is no failure", runSpan.Status().Code)
	}
	wantAttrs(t, "run", runSpan.Attributes(), map[string]any{"bichat.finish_reason": "interrupted", "error.type": nil})
	ev := eventsNamed(runSpan, "bichat.interrupt")
	if len(ev) != 1 {
		t.Fatalf("%d interrupt events, want 1", len(ev))
	}
	wantAttrs(t, "interrupt", ev[0].Attributes, map[string]any{"bichat.reason": "question",
		"bichat.tool": agents.ToolAskUserQuestion, "bichat.call_id": "call_1_1"})
}

// TestCancelledRunEndsOpenSpans stops a run while a tool call is running:
// the run's end closes the call's span (and the turn's) even though the
// tool never reported.
func TestCancelledRunEndsOpenSpans(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bichatotel.Options{})
	inTool := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	tool := agents.MustTool("revenue", "Returns the revenue of a fiscal year.",
		func(ctx context.Context, in revenueIn) (string, error) {
			close(inTool)
			<-release // ignores cancellation, like a stuck driver
			return "", nil
		})
	model := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{scripted.CallJSON("revenue", map[string]any{"year": 2025})}}}}
	ex, err := agents.NewExecutor(agents.Config{Model: model, Tools: []agents.Tool{tool}, Bus: h.bus,
		CancelGrace: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-inTool; cancel() }()
	for _, err := range ex.Run(ctx, agents.Input{Message: agents.UserMessage("q")}) {
		if err != nil {
			break
		}
	}
	s := h.spans(t)
	runSpan := s.one(t, "invoke_agent")
	wantAttrs(t, "run", runSpan.Attributes(), map[string]any{"error.type": "cancelled"})
	ts := s.one(t, "execute_tool revenue")
	if ts.Status().Code != codes.Error {
		t.Errorf("cut-short tool span status = %v, want error", ts.Status().Code)
	}
	if code, _ := attrOf(ts.Attributes(), "error.type"); code.AsString() != "unfinished" && code.AsString() != "cancelled" {
		t.Errorf("cut-short tool span error.type = %q", code.AsString())
	}
}

// TestRunEndClosesEverything drives the handler directly with a run that
// ends while a model call and two tool calls are open.
func TestRunEndClosesEverything(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"finish", "error"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, bichatotel.Options{})
			ctx := context.Background()
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			m := func(d int) hooks.Meta { return hooks.Meta{Time: t0.Add(time.Duration(d) * time.Second), RunID: "r"} }
			h.bus.Publish(ctx, &hooks.AgentStart{Meta: m(0), Model: "gpt"})
			h.bus.Publish(ctx, &hooks.LLMRequest{Meta: m(1), Model: "gpt", Turn: 1, Attempt: 1})
			h.bus.Publish(ctx, &hooks.LLMResponse{Meta: m(2), Model: "gpt", Turn: 1, Attempt: 1, Duration: time.Second})
			h.bus.Publish(ctx, &hooks.ToolStart{Meta: m(3), CallID: "z", Tool: "stale"})
			// The next turn ends the previous turn's calls that never reported.
			h.bus.Publish(ctx, &hooks.LLMRequest{Meta: m(4), Model: "gpt", Turn: 2, Attempt: 1})
			h.bus.Publish(ctx, &hooks.ToolStart{Meta: m(5), CallID: "a", Tool: "sql"})
			h.bus.Publish(ctx, &hooks.ToolStart{Meta: m(5), CallID: "b", Tool: "chart"})
			if n := h.tracer.OpenRuns(); n != 1 {
				t.Fatalf("OpenRuns = %d, want 1", n)
			}
			if n, _ := bichatotel.OpenCalls(h.tracer, "r"); n != 2 {
				t.Fatalf("open calls = %d, want 2 (the stale call was dropped with its turn)", n)
			}
			h.bus.Publish(ctx, &hooks.SQLQuery{Meta: m(6), CallID: "c", Tool: "sql"})
			h.bus.Publish(ctx, &hooks.ToolStart{Meta: m(6), CallID: "c", Tool: "done"})
			h.bus.Publish(ctx, &hooks.ToolFinish{Meta: m(7), CallID: "c", Tool: "done"})
			if n, _ := bichatotel.OpenCalls(h.tracer, "r"); n != 2 {
				t.Fatalf("open calls = %d after a call finished, want 2: nothing of a finished call is kept", n)
			}
			if end == "finish" {
				h.bus.Publish(ctx, &hooks.AgentFinish{Meta: m(9), Reason: "end_turn"})
			} else {
				h.bus.Publish(ctx, &hooks.AgentError{Meta: m(9), Code: "timeout", Err: context.DeadlineExceeded})
			}
			// Later events of the ended run start nothing.
			h.bus.Publish(ctx, &hooks.ToolFinish{Meta: m(10), CallID: "a", Tool: "sql"})
			h.bus.Publish(ctx, &hooks.LLMRequest{Meta: m(10), Model: "gpt", Turn: 3, Attempt: 1})
			s := h.spans(t)
			if got := len(s.all); got != 9 {
				t.Errorf("%d spans %v, want 9 (run, 2 turns, 2 chats, 4 tools)", got, s.names())
			}
			if n := len(eventsNamed(s.one(t, "turn 2"), "bichat.sql.query")); n != 1 {
				t.Errorf("a statement of a call not open went to the turn %d times, want 1", n)
			}
			if _, tracked := bichatotel.OpenCalls(h.tracer, "r"); tracked {
				t.Errorf("the ended run is still tracked")
			}
			stale := s.one(t, "execute_tool stale")
			if stale.Status().Code != codes.Error || !stale.EndTime().Equal(t0.Add(4*time.Second)) {
				t.Errorf("stale call: status %v, end %v; want error, ended when turn 2 started", stale.Status().Code, stale.EndTime())
			}
			for _, name := range []string{"execute_tool sql", "execute_tool chart"} {
				sp := s.one(t, name)
				if sp.Status().Code != codes.Error || !sp.EndTime().Equal(t0.Add(9*time.Second)) {
					t.Errorf("%s: status %v, end %v; want error, ended at the run's end", name, sp.Status().Code, sp.EndTime())
				}
				wantAttrs(t, name, sp.Attributes(), map[string]any{"error.type": "unfinished"})
			}
			chats := s.named("chat gpt")
			if len(chats) != 2 || chats[0].Status().Code != codes.Unset || chats[1].Status().Code != codes.Error {
				t.Errorf("chat spans: want a finished first call and an unfinished second")
			}
			if !chats[0].StartTime().Equal(t0.Add(time.Second)) || !chats[0].EndTime().Equal(t0.Add(2*time.Second)) {
				t.Errorf("chat 1 spans [%v, %v], want the event times", chats[0].StartTime(), chats[0].EndTime())
			}
			turn1 := s.one(t, "turn 1")
			if !turn1.EndTime().Equal(t0.Add(4 * time.Second)) {
				t.Errorf("turn 1 ends %v, want the next turn's first request", turn1.EndTime())
			}
		})
	}
}

func TestMaxOpenRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bichatotel.Options{MaxOpenRuns: 2})
	ctx := context.Background()
	meta := func(run string) hooks.Meta { return hooks.Meta{Time: time.Now(), RunID: run} }
	for _, id := range []string{"r1", "r2", "r3"} {
		h.bus.Publish(ctx, &hooks.AgentStart{Meta: meta(id), Agent: id})
		h.bus.Publish(ctx, &hooks.ToolStart{Meta: meta(id), CallID: "c", Tool: "sql"})
	}
	if n := h.tracer.OpenRuns(); n != 2 {
		t.Fatalf("OpenRuns = %d, want 2", n)
	}
	evicted := h.rec.Ended()
	if len(evicted) != 2 {
		t.Fatalf("%d spans ended after the third run started, want the oldest run's 2", len(evicted))
	}
	for _, sp := range evicted {
		if sp.Status().Code != codes.Error {
			t.Errorf("evicted %s status = %v, want error", sp.Name(), sp.Status().Code)
		}
	}
	run1 := evicted[1]
	if run1.Name() != "invoke_agent r1" {
		t.Fatalf("evicted %q, want the oldest run r1", run1.Name())
	}
	wantAttrs(t, "evicted run", run1.Attributes(), map[string]any{"error.type": "evicted"})
	// The evicted run's events are ignored; the others still trace.
	h.bus.Publish(ctx, &hooks.ToolFinish{Meta: meta("r1"), CallID: "c", Tool: "sql"})
	h.bus.Publish(ctx, &hooks.AgentFinish{Meta: meta("r1")})
	for _, id := range []string{"r2", "r3"} {
		h.bus.Publish(ctx, &hooks.ToolFinish{Meta: meta(id), CallID: "c", Tool: "sql"})
		h.bus.Publish(ctx, &hooks.AgentFinish{Meta: meta(id), Reason: "end_turn"})
	}
	s := h.spans(t)
	if len(s.all) != 6 {
		t.Errorf("%d spans, want 6: %v", len(s.all), s.names())
	}
	for _, id := range []string{"r2", "r3"} {
		if sp := s.one(t, "invoke_agent "+id); sp.Status().Code != codes.Unset {
			t.Errorf("%s status = %v, want unset", id, sp.Status().Code)
		}
	}
}

func TestSubAgent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bichatotel.Options{})
	bus := h.bus
	sub, err := agents.NewExecutor(agents.Config{Name: "researcher", Bus: h.bus, Tools: []agents.Tool{revenueTool(&bus)},
		Model: &scripted.Model{Turns: []scripted.Turn{
			{ToolCalls: []scripted.Call{scripted.CallJSON("revenue", map[string]any{"year": 2025})}},
			{Text: "1.2 M EUR"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := agents.NewTaskTool(agents.SubAgent{Name: "researcher", Description: "Finds figures.", Executor: sub})
	if err != nil {
		t.Fatal(err)
	}
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{scripted.CallJSON(agents.ToolTask, map[string]any{"task": "Revenue 2025?"})}},
		{Text: "Revenue was 1.2 M EUR."},
	}}
	last := h.run(t, context.Background(), agents.Config{Model: model, Tools: []agents.Tool{task}}, agents.Input{RunID: "parent"})
	if _, ok := last.(*agents.RunFinished); !ok {
		t.Fatalf("run ended with %T, want RunFinished", last)
	}
	s := h.spans(t)
	parent := s.one(t, "invoke_agent")
	taskSpan := s.one(t, "execute_tool task")
	child := s.one(t, "invoke_agent researcher")
	if !isChild(child, taskSpan) {
		t.Errorf("sub-agent run is not a child of the parent's task call")
	}
	wantAttrs(t, "sub-agent run", child.Attributes(), map[string]any{"bichat.parent_run_id": "parent", "gen_ai.agent.name": "researcher"})
	if got := s.children(child); !slices.Equal(got, []string{"turn 1", "turn 2"}) {
		t.Errorf("sub-agent children = %v", got)
	}
	for _, sp := range s.all {
		if sp.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("%s is in another trace", sp.Name())
		}
	}
	if n := len(s.named("execute_tool revenue")); n != 1 {
		t.Errorf("%d revenue calls, want 1 (the sub-agent's)", n)
	}
}

// TestCaptureContent checks that content reaches spans only when asked:
// with it off, no attribute of any span or span event holds any of it.
func TestCaptureContent(t *testing.T) {
	t.Parallel()
	const (
		argSecret    = "ARG-SECRET-4711"
		sqlSecret    = "SQL-SECRET-4711"
		toolSecret   = "TOOL-ERROR-SECRET-4711"
		textSecret   = "MESSAGE-SECRET-4711"
		promptSecret = "PROMPT-SECRET-4711"
		resultSecret = "RESULT-SECRET-4711"
		answerSecret = "ANSWER-SECRET-4711"
	)
	secrets := []string{argSecret, sqlSecret, toolSecret, textSecret, promptSecret, resultSecret, answerSecret}
	for _, capture := range []bool{false, true} {
		t.Run(fmt.Sprint("capture=", capture), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, bichatotel.Options{CaptureContent: capture})
			bus := h.bus
			type in struct {
				Customer string `json:"customer"`
			}
			lookup := agents.MustTool("lookup", "Looks a customer up.", func(ctx context.Context, a in) (string, error) {
				publishToolEvents(ctx, bus, "SELECT * FROM customers WHERE note = '"+sqlSecret+"'")
				info, _ := agents.CallInfoFromContext(ctx)
				bus.Publish(ctx, &hooks.MessageSave{Meta: hooks.Meta{Time: time.Now(), RunID: info.RunID},
					Role: domain.RoleUser, Text: textSecret})
				return "", errors.New(toolSecret)
			})
			note := agents.MustTool("note", "Notes.", func(context.Context, struct{}) (string, error) { return resultSecret, nil })
			model := &scripted.Model{Turns: []scripted.Turn{
				{ToolCalls: []scripted.Call{scripted.CallJSON("lookup", map[string]any{"customer": argSecret}),
					scripted.CallJSON("note", map[string]any{})}},
				{Text: "Not found. " + answerSecret},
			}}
			h.run(t, context.Background(), agents.Config{Model: model, Tools: []agents.Tool{lookup, note}},
				agents.Input{Message: agents.UserMessage("Who is " + promptSecret + "?")})
			s := h.spans(t)
			found := map[string]bool{}
			for _, sp := range s.all {
				kvs := slices.Clone(sp.Attributes())
				kvs = append(kvs, attribute.String("status", sp.Status().Description))
				for _, e := range sp.Events() {
					kvs = append(kvs, e.Attributes...)
				}
				for _, kv := range kvs {
					for _, secret := range secrets {
						if strings.Contains(kv.Value.String(), secret) {
							found[secret] = true
						}
					}
				}
			}
			for _, secret := range secrets {
				if found[secret] != capture {
					t.Errorf("%s recorded = %v, want %v", secret, found[secret], capture)
				}
			}
			ts := s.one(t, "execute_tool lookup")
			if capture {
				wantAttrs(t, "tool", ts.Attributes(), map[string]any{"gen_ai.tool.call.arguments": `{"customer":"` + argSecret + `"}`})
				sql := eventsNamed(ts, "bichat.sql.query")
				if len(sql) != 1 {
					t.Fatalf("%d sql events", len(sql))
				}
				wantAttrs(t, "sql", sql[0].Attributes, map[string]any{"db.query.text": "SELECT * FROM customers WHERE note = '" + sqlSecret + "'"})
				wantAttrs(t, "note", s.one(t, "execute_tool note").Attributes(), map[string]any{"gen_ai.tool.call.result": resultSecret})
				chats := s.named("chat scripted")
				if len(chats) != 2 {
					t.Fatalf("%d chat spans", len(chats))
				}
				in, _ := attrOf(chats[1].Attributes(), "gen_ai.input.messages")
				var msgs []struct {
					Role  string `json:"role"`
					Parts []struct {
						Type    string `json:"type"`
						Content string `json:"content"`
					} `json:"parts"`
				}
				if err := json.Unmarshal([]byte(in.AsString()), &msgs); err != nil || len(msgs) < 3 || msgs[0].Role != "user" ||
					!strings.Contains(msgs[0].Parts[0].Content, promptSecret) {
					t.Errorf("gen_ai.input.messages of the second call = %s (%v)", in.AsString(), err)
				}
				out, _ := attrOf(chats[1].Attributes(), "gen_ai.output.messages")
				if !strings.Contains(out.AsString(), `"role":"assistant"`) || !strings.Contains(out.AsString(), answerSecret) {
					t.Errorf("gen_ai.output.messages = %s", out.AsString())
				}
			}
			// Without content the span still tells what happened.
			wantAttrs(t, "tool", ts.Attributes(), map[string]any{"error.type": "error", "gen_ai.tool.name": "lookup"})
			if n := len(eventsNamed(s.one(t, "invoke_agent"), "bichat.message.save")); n != 1 {
				t.Errorf("%d message.save events on the run, want 1", n)
			}
		})
	}
}

// TestConcurrentRuns traces many runs at once through one Tracer (run it
// with -race): each run gets its own complete trace.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bichatotel.Options{})
	bus := h.bus
	const runs = 24
	ex, err := agents.NewExecutor(agents.Config{Bus: h.bus, Tools: []agents.Tool{revenueTool(&bus, agents.WithParallel())},
		Model: &scripted.Model{Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
			if len(req.Messages) == 1 {
				return scripted.Turn{ToolCalls: []scripted.Call{
					scripted.CallJSON("revenue", map[string]any{"year": 2024}),
					scripted.CallJSON("revenue", map[string]any{"year": 2025}),
				}}, nil
			}
			return scripted.Turn{Text: "Done."}, nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			for _, err := range ex.Run(context.Background(), agents.Input{RunID: fmt.Sprintf("run-%d", i),
				Message: agents.UserMessage("q")}) {
				if err != nil {
					t.Errorf("run %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	s := h.spans(t)
	byTrace := map[trace.TraceID][]string{}
	for _, sp := range s.all {
		byTrace[sp.SpanContext().TraceID()] = append(byTrace[sp.SpanContext().TraceID()], sp.Name())
	}
	if len(byTrace) != runs {
		t.Fatalf("%d traces, want %d", len(byTrace), runs)
	}
	want := []string{"chat scripted", "chat scripted", "execute_tool revenue", "execute_tool revenue", "invoke_agent", "turn 1", "turn 2"}
	for id, names := range byTrace {
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Errorf("trace %s: spans %v, want %v", id, names, want)
		}
	}
	for _, ts := range s.named("execute_tool revenue") {
		if n := len(eventsNamed(ts, "bichat.sql.query")); n != 1 {
			t.Errorf("a tool span has %d sql events, want 1", n)
		}
	}
}

func TestHandleBadInput(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tr := bichatotel.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), bichatotel.Options{})
	ctx := context.Background()
	err := tr.Handle(ctx, &hooks.AgentStart{Meta: hooks.Meta{Time: time.Now()}})
	if err == nil || !strings.Contains(err.Error(), "run id") {
		t.Errorf("agent.start without run id: err = %v, want one naming the run id", err)
	}
	// Events that are not part of an open run are ignored, not errors.
	for _, e := range []hooks.Event{nil, &hooks.SessionCreate{}, &hooks.ToolStart{Meta: hooks.Meta{RunID: "unknown"}},
		&hooks.AgentFinish{Meta: hooks.Meta{RunID: "unknown"}}, &hooks.AgentError{}} {
		if err := tr.Handle(ctx, e); err != nil {
			t.Errorf("Handle(%T) = %v, want nil", e, err)
		}
	}
	if n := len(rec.Started()); n != 0 {
		t.Errorf("%d spans started for events of no open run", n)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "TracerProvider") {
			t.Errorf("New(nil) recovered %v, want a panic naming the TracerProvider", r)
		}
	}()
	bichatotel.New(nil, bichatotel.Options{})
}

// TestResumedRun approves a confirmation: the resumed run is its own trace,
// marked resumed, and the approved call (run before any model call of the
// resumed run) hangs under the run span.
func TestResumedRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bichatotel.Options{})
	save := agents.MustTool("save_report", "Saves a report.", func(context.Context, struct {
		Title string `json:"title"`
	}) (string, error) {
		return "saved", nil
	}, agents.WithPermission(agents.PermWrite))
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{scripted.CallJSON("save_report", map[string]any{"title": "Q3"})}},
		{Text: "Saved."},
	}}
	ex, err := agents.NewExecutor(agents.Config{Model: model, Tools: []agents.Tool{save}, Bus: h.bus})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var cp *agents.Checkpoint
	var token string
	for ev, err := range ex.Run(ctx, agents.Input{RunID: "first", TenantID: "t1", UserID: "u1", Message: agents.UserMessage("Save it")}) {
		if err != nil {
			t.Fatal(err)
		}
		if in, ok := ev.(*agents.Interrupted); ok {
			cp, token = in.Checkpoint, in.Confirmation.Token
		}
	}
	if cp == nil {
		t.Fatal("the run did not stop for confirmation")
	}
	var last agents.Event
	for ev, err := range ex.Approve(ctx, cp, agents.Decision{Token: token, TenantID: "t1", UserID: "u1"}, agents.WithRunID("second")) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if _, ok := last.(*agents.RunFinished); !ok {
		t.Fatalf("resumed run ended with %T", last)
	}
	s := h.spans(t)
	runs := s.named("invoke_agent")
	if len(runs) != 2 {
		t.Fatalf("%d run spans, want 2", len(runs))
	}
	first, second := runs[0], runs[1]
	wantAttrs(t, "first run", first.Attributes(), map[string]any{"bichat.run_id": "first", "bichat.finish_reason": "interrupted",
		"bichat.resumed": nil})
	wantAttrs(t, "resumed run", second.Attributes(), map[string]any{"bichat.run_id": "second", "bichat.resumed": true,
		"bichat.finish_reason": "end_turn"})
	if got := s.children(second); !slices.Equal(got, []string{"execute_tool save_report", "turn 2"}) {
		t.Errorf("resumed run children = %v, want the approved call then turn 2", got)
	}
	if got := s.children(first); !slices.Equal(got, []string{"turn 1"}) {
		t.Errorf("first run children = %v, want only turn 1 (the pending call did not run)", got)
	}
}
