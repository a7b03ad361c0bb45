package prometheus_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	bichatprom "github.com/bichat-go/bichat/hooks/prometheus"
	"github.com/bichat-go/bichat/internal/backoff"
	"github.com/bichat-go/bichat/providers/scripted"
)

// sampleOf is one series read back from a registry: a counter's value, or
// a histogram's sample count and sum.
type sampleOf struct {
	value float64
	count uint64
	sum   float64
}

// read returns the series of metric name whose labels are exactly labels.
// It fails the test when there is no such series.
func read(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) sampleOf {
	t.Helper()
	s, ok := lookup(t, g, name, labels)
	if !ok {
		t.Fatalf("no series %s%v; have:\n%s", name, labels, strings.Join(seriesOf(t, g, name), "\n"))
	}
	return s
}

func lookup(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) (sampleOf, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; !ok || v != lp.GetValue() {
					continue series
				}
			}
			if h := m.GetHistogram(); h != nil {
				return sampleOf{count: h.GetSampleCount(), sum: h.GetSampleSum()}, true
			}
			return sampleOf{value: m.GetCounter().GetValue()}, true
		}
	}
	return sampleOf{}, false
}

// seriesOf lists the label sets of metric name, for failure messages and
// cardinality checks.
func seriesOf(t *testing.T, g prometheus.Gatherer, name string) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var parts []string
			for _, lp := range m.GetLabel() {
				parts = append(parts, lp.GetName()+"="+lp.GetValue())
			}
			out = append(out, strings.Join(parts, ","))
		}
	}
	return out
}

// labelValues returns the distinct values of label across the series of
// metric name, with the sum of the counter values per label value.
func labelValues(t *testing.T, g prometheus.Gatherer, name, label string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					out[lp.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

type revenueIn struct {
	Year int `json:"year"`
}

type revenueOut struct {
	Total float64 `json:"total"`
}

func newMetrics(t *testing.T, opts bichatprom.Options) (*prometheus.Registry, *bichatprom.Metrics, *hooks.Bus) {
	t.Helper()
	bus := hooks.New(hooks.Options{OnError: func(he *hooks.HandlerError) { t.Errorf("handler failed: %v", he) }})
	t.Cleanup(func() { _ = bus.Close() })
	reg := prometheus.NewRegistry()
	if opts.Bus == nil {
		opts.Bus = bus
	}
	m, err := bichatprom.New(reg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := bus.Subscribe(m); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	return reg, m, bus
}

// TestExecutorRun drives a real executor with a scripted model: the first
// model call fails with a transient error and is retried, the retry calls
// a configured tool and a tool the model made up, then the model answers.
func TestExecutorRun(t *testing.T) {
	t.Parallel()
	reg, _, bus := newMetrics(t, bichatprom.Options{
		Tools: []string{"revenue"}, Models: []string{"test-model"}, TenantLabel: true,
	})

	pricing := agents.Pricing{InputPerMTok: 2, OutputPerMTok: 8, CachedInputPerMTok: 0.5, CacheWritePerMTok: 2.5}
	u1 := domain.Usage{PromptTokens: 1000, CompletionTokens: 50, CachedTokens: 200, ReasoningTokens: 10, TotalTokens: 1050}
	u2 := domain.Usage{PromptTokens: 1200, CompletionTokens: 20, CachedTokens: 800, CacheWriteTokens: 100, TotalTokens: 1220}
	model := &scripted.Model{
		ModelInfo: agents.ModelInfo{Provider: "scripted", Name: "test-model", ContextWindow: 128000,
			Capabilities: agents.Capabilities{Tools: true, ParallelTools: true}, Pricing: pricing},
		Turns: []scripted.Turn{
			{Err: agents.TransientError(errors.New("overloaded"))},
			{ToolCalls: []scripted.Call{
				scripted.CallJSON("revenue", map[string]any{"year": 2025}),
				scripted.CallJSON("not_a_tool", map[string]any{}),
			}, Usage: u1},
			{Text: "Revenue in 2025 was 1.2 M EUR.", Usage: u2},
		},
	}
	revenue := agents.MustTool("revenue", "Returns the revenue of a fiscal year.",
		func(_ context.Context, in revenueIn) (revenueOut, error) {
			time.Sleep(time.Millisecond)
			return revenueOut{Total: 1.2e6}, nil
		})
	exec, err := agents.NewExecutor(agents.Config{
		Model: model, Tools: []agents.Tool{revenue}, Bus: bus,
		ModelAttempts: 3, Backoff: backoff.Policy{Base: time.Millisecond, Max: time.Millisecond},
	})
	if err != nil {
		t.Fatalf("NewExecutor: %v", err)
	}
	var finished *agents.RunFinished
	for ev, err := range exec.Run(context.Background(), agents.Input{
		TenantID: "acme", UserID: "u1", Message: agents.UserMessage("What was revenue in 2025?"),
	}) {
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if f, ok := ev.(*agents.RunFinished); ok {
			finished = f
		}
	}
	if finished == nil || finished.Reason != agents.FinishEndTurn || finished.Turns != 2 {
		t.Fatalf("run did not finish as scripted: %+v", finished)
	}

	mdl := map[string]string{"provider": "scripted", "model": "test-model"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	counters := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"bichat_runs_started_total", map[string]string{"resumed": "false"}, 1},
		{"bichat_runs_total", map[string]string{"result": "finished", "reason": "end_turn", "tenant": "acme"}, 1},
		{"bichat_tool_calls_total", map[string]string{"tool": "revenue", "outcome": "ok"}, 1},
		{"bichat_tool_calls_total", map[string]string{"tool": "other", "outcome": "unknown_tool"}, 1},
		{"bichat_model_requests_total", with(mdl, "outcome", "ok", "tenant", "acme"), 2},
		{"bichat_model_requests_total", with(mdl, "outcome", "error", "tenant", "acme"), 1},
		{"bichat_model_retries_total", mdl, 1},
		{"bichat_model_tokens_total", with(mdl, "type", "input", "tenant", "acme"), 2200},
		{"bichat_model_tokens_total", with(mdl, "type", "output", "tenant", "acme"), 70},
		{"bichat_model_tokens_total", with(mdl, "type", "cached", "tenant", "acme"), 1000},
		{"bichat_model_tokens_total", with(mdl, "type", "cache_write", "tenant", "acme"), 100},
		{"bichat_model_tokens_total", with(mdl, "type", "reasoning", "tenant", "acme"), 10},
	}
	for _, c := range counters {
		if got := read(t, reg, c.name, c.labels).value; got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Exactly these series, nothing else (e.g. no "other" model, no
	// second run).
	for name, n := range map[string]int{
		"bichat_runs_total": 1, "bichat_tool_calls_total": 2, "bichat_model_requests_total": 2,
		"bichat_model_tokens_total": 5, "bichat_model_cost_usd_total": 1,
	} {
		if got := seriesOf(t, reg, name); len(got) != n {
			t.Errorf("%s has %d series, want %d: %v", name, len(got), n, got)
		}
	}

	wantCost := pricing.Cost(u1) + pricing.Cost(u2)
	if wantCost <= 0 || math.Abs(wantCost-finished.CostUSD) > 1e-12 {
		t.Fatalf("test setup: expected cost %v, run reports %v", wantCost, finished.CostUSD)
	}
	if got := read(t, reg, "bichat_model_cost_usd_total", with(mdl, "tenant", "acme")).value; math.Abs(got-wantCost) > 1e-12 {
		t.Errorf("cost = %v, want %v", got, wantCost)
	}

	histograms := []struct {
		name   string
		labels map[string]string
		count  uint64
	}{
		{"bichat_run_duration_seconds", map[string]string{"result": "finished"}, 1},
		{"bichat_run_turns", map[string]string{}, 1},
		{"bichat_model_request_duration_seconds", mdl, 3},
		{"bichat_model_time_to_first_token_seconds", mdl, 2}, // the failed attempt streamed nothing
		{"bichat_tool_call_duration_seconds", map[string]string{"tool": "revenue"}, 1},
	}
	for _, h := range histograms {
		if got := read(t, reg, h.name, h.labels).count; got != h.count {
			t.Errorf("%s%v count = %d, want %d", h.name, h.labels, got, h.count)
		}
	}
	if got := read(t, reg, "bichat_run_turns", map[string]string{}).sum; got != 2 {
		t.Errorf("run turns sum = %v, want 2", got)
	}
	if got := read(t, reg, "bichat_tool_call_duration_seconds", map[string]string{"tool": "revenue"}).sum; got < 0.001 {
		t.Errorf("tool duration sum = %vs, the tool slept 1ms", got)
	}
	// The unknown tool never ran: no duration observed for "other".
	if s, ok := lookup(t, reg, "bichat_tool_call_duration_seconds", map[string]string{"tool": "other"}); ok && s.count != 0 {
		t.Errorf("a refused call observed a duration: %+v", s)
	}
}

// fallbackEvent implements hooks.Fallback as providers.FallbackEvent does.
type fallbackEvent struct {
	hooks.Meta
	fromProvider, from, toProvider, to string
}

func (*fallbackEvent) Kind() hooks.Kind { return "model.fallback" }

func (e *fallbackEvent) FallbackModels() (string, string, string, string) {
	return e.fromProvider, e.from, e.toProvider, e.to
}

// TestEvents publishes the events of the tools, the context compiler and
// the guards directly and reads each resulting counter back.
func TestEvents(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name   string
		events []hooks.Event
		want   string // the expected exposition of metrics
		names  []string
	}{
		{
			name: "sql statements by tool and outcome",
			events: []hooks.Event{
				&hooks.SQLQuery{Tool: "sql_query", Rows: 10, Duration: 3 * ms},
				&hooks.SQLQuery{Tool: "sql_query", Rows: 100, Truncated: true, Duration: 30 * ms},
				&hooks.SQLQuery{Tool: "sql_query", Error: "rejected", Reason: "DELETE is not allowed"},
				&hooks.SQLQuery{Tool: "sql_query", Error: "syntax", Duration: ms},
				&hooks.SQLQuery{Tool: "sql_query", Error: "something new", Duration: ms},
				&hooks.SQLQuery{Tool: "drop_tables", Rows: 5, Duration: ms},
			},
			names: []string{"bichat_sql_statements_total", "bichat_sql_rows_total", "bichat_sql_truncated_total"},
			want: `
# HELP bichat_sql_rows_total Rows fetched by SQL statements, by tool.
# TYPE bichat_sql_rows_total counter
bichat_sql_rows_total{tool="other"} 5
bichat_sql_rows_total{tool="sql_query"} 110
# HELP bichat_sql_statements_total SQL statements run or refused, by tool and outcome (ok or the error kind).
# TYPE bichat_sql_statements_total counter
bichat_sql_statements_total{outcome="ok",tool="other"} 1
bichat_sql_statements_total{outcome="ok",tool="sql_query"} 2
bichat_sql_statements_total{outcome="other",tool="sql_query"} 1
bichat_sql_statements_total{outcome="rejected",tool="sql_query"} 1
bichat_sql_statements_total{outcome="syntax",tool="sql_query"} 1
# HELP bichat_sql_truncated_total SQL results cut at the row cap, by tool.
# TYPE bichat_sql_truncated_total counter
bichat_sql_truncated_total{tool="other"} 0
bichat_sql_truncated_total{tool="sql_query"} 1
`,
		},
		{
			name: "sandbox jobs by outcome",
			events: []hooks.Event{
				&hooks.SandboxRun{Outcome: "ok", Duration: 200 * ms},
				&hooks.SandboxRun{Outcome: "ok", Duration: 300 * ms},
				&hooks.SandboxRun{Outcome: "oom", Duration: 2 * time.Second},
				&hooks.SandboxRun{Outcome: "exploded"},
			},
			names: []string{"bichat_sandbox_jobs_total"},
			want: `
# HELP bichat_sandbox_jobs_total Sandbox jobs, by outcome (ok, error, timeout, oom, killed, failed).
# TYPE bichat_sandbox_jobs_total counter
bichat_sandbox_jobs_total{outcome="ok"} 2
bichat_sandbox_jobs_total{outcome="oom"} 1
bichat_sandbox_jobs_total{outcome="other"} 1
`,
		},
		{
			name: "budget stops, quota refusals and decisions",
			events: []hooks.Event{
				&hooks.BudgetExceeded{Scope: hooks.BudgetSession, LimitUSD: 1, SpentUSD: 1.2},
				&hooks.BudgetExceeded{Scope: hooks.BudgetTenantDay},
				&hooks.BudgetExceeded{Scope: hooks.BudgetTenantDay},
				&hooks.QuotaExceeded{Scope: "tenant", Limit: "requests_per_minute"},
				&hooks.QuotaExceeded{Scope: "user", Limit: "concurrent_runs"},
				&hooks.QuotaExceeded{Scope: "user", Limit: "concurrent_runs"},
				&hooks.QuotaExceeded{Scope: "galaxy", Limit: "whatever"},
				&hooks.Decision{Policy: "confirmation", Outcome: hooks.DecisionApproved},
				&hooks.Decision{Policy: "budget", Outcome: hooks.DecisionRefused},
			},
			names: []string{"bichat_budget_stops_total", "bichat_quota_refusals_total", "bichat_policy_decisions_total"},
			want: `
# HELP bichat_budget_stops_total Runs stopped because a spending budget was used up, by scope.
# TYPE bichat_budget_stops_total counter
bichat_budget_stops_total{scope="session"} 1
bichat_budget_stops_total{scope="tenant_day"} 2
# HELP bichat_policy_decisions_total Policy decisions (confirmations, guards), by policy and outcome.
# TYPE bichat_policy_decisions_total counter
bichat_policy_decisions_total{outcome="approved",policy="confirmation"} 1
bichat_policy_decisions_total{outcome="refused",policy="budget"} 1
# HELP bichat_quota_refusals_total Requests refused by a quota or rate limit, by scope and limit.
# TYPE bichat_quota_refusals_total counter
bichat_quota_refusals_total{limit="concurrent_runs",scope="user"} 2
bichat_quota_refusals_total{limit="other",scope="other"} 1
bichat_quota_refusals_total{limit="requests_per_minute",scope="tenant"} 1
`,
		},
		{
			name: "fallbacks, retries and runs of every result",
			events: []hooks.Event{
				&fallbackEvent{fromProvider: "openai", from: "gpt-a", toProvider: "anthropic", to: "claude-b"},
				&fallbackEvent{fromProvider: "openai", from: "gpt-a", toProvider: "x", to: "unlisted"},
				&hooks.LLMRequest{Provider: "openai", Model: "gpt-a", Attempt: 1},
				&hooks.LLMRequest{Provider: "openai", Model: "gpt-a", Attempt: 2},
				&hooks.LLMRequest{Provider: "openai", Model: "gpt-a", Attempt: 3},
				&hooks.AgentStart{Resumed: true},
				&hooks.AgentFinish{Reason: "interrupted", Turns: 1, Duration: time.Second},
				&hooks.AgentFinish{Reason: "final_answer", Turns: 3, Duration: time.Second},
				&hooks.AgentError{Code: "model_error", Duration: time.Second},
				&hooks.AgentError{Code: "quota_exceeded", Duration: time.Second}, // a host's code
			},
			names: []string{"bichat_model_fallbacks_total", "bichat_model_retries_total", "bichat_runs_started_total", "bichat_runs_total"},
			want: `
# HELP bichat_model_fallbacks_total Switches from a failed model to the next one of a fallback chain.
# TYPE bichat_model_fallbacks_total counter
bichat_model_fallbacks_total{from_model="gpt-a",to_model="claude-b"} 1
bichat_model_fallbacks_total{from_model="gpt-a",to_model="other"} 1
# HELP bichat_model_retries_total Model calls that were retries (attempt > 1).
# TYPE bichat_model_retries_total counter
bichat_model_retries_total{model="gpt-a",provider="openai"} 2
# HELP bichat_runs_started_total Agent runs started (resumed=true for runs resumed from a checkpoint).
# TYPE bichat_runs_started_total counter
bichat_runs_started_total{resumed="false"} 0
bichat_runs_started_total{resumed="true"} 1
# HELP bichat_runs_total Agent runs ended, by result (finished, interrupted, failed) and reason (finish reason or error code).
# TYPE bichat_runs_total counter
bichat_runs_total{reason="final_answer",result="finished"} 1
bichat_runs_total{reason="interrupted",result="interrupted"} 1
bichat_runs_total{reason="model_error",result="failed"} 1
bichat_runs_total{reason="quota_exceeded",result="failed"} 1
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg, _, bus := newMetrics(t, bichatprom.Options{
				Tools: []string{"sql_query"}, Models: []string{"gpt-a", "claude-b"},
			})
			for _, e := range tc.events {
				bus.Publish(context.Background(), e)
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want), tc.names...); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestDurationsAndContext(t *testing.T) {
	t.Parallel()
	reg, _, bus := newMetrics(t, bichatprom.Options{Tools: []string{"sql_query"}})
	ctx := context.Background()
	bus.Publish(ctx, &hooks.SQLQuery{Tool: "sql_query", Duration: 250 * time.Millisecond})
	bus.Publish(ctx, &hooks.SQLQuery{Tool: "sql_query", Duration: 750 * time.Millisecond})
	bus.Publish(ctx, &hooks.SandboxRun{Outcome: "ok", Duration: 2 * time.Second})
	bus.Publish(ctx, &hooks.ContextCompile{Tokens: 5000, ByKind: map[string]int{
		"pinned": 1000, "reference": 3000, "turn": 100, "mystery": 600, "another": 300,
	}})
	bus.Publish(ctx, &hooks.ContextCompile{Tokens: 2000, ByKind: map[string]int{"pinned": 1000, "history": 1000}})

	tests := []struct {
		name   string
		labels map[string]string
		count  uint64
		sum    float64
	}{
		{"bichat_sql_statement_duration_seconds", map[string]string{"tool": "sql_query"}, 2, 1},
		{"bichat_sandbox_job_duration_seconds", map[string]string{"outcome": "ok"}, 1, 2},
		{"bichat_context_prompt_tokens", map[string]string{}, 2, 7000},
		{"bichat_context_tokens", map[string]string{"kind": "pinned"}, 2, 2000},
		{"bichat_context_tokens", map[string]string{"kind": "reference"}, 1, 3000},
		{"bichat_context_tokens", map[string]string{"kind": "turn"}, 1, 100},
		{"bichat_context_tokens", map[string]string{"kind": "history"}, 1, 1000},
		{"bichat_context_tokens", map[string]string{"kind": "other"}, 1, 900}, // mystery + another, summed
		{"bichat_context_tokens", map[string]string{"kind": "memory"}, 0, 0},
	}
	for _, tc := range tests {
		got := read(t, reg, tc.name, tc.labels)
		if got.count != tc.count || math.Abs(got.sum-tc.sum) > 1e-9 {
			t.Errorf("%s%v = count %d sum %v, want count %d sum %v", tc.name, tc.labels, got.count, got.sum, tc.count, tc.sum)
		}
	}
}

// TestTenantCap: with MaxTenants=3, ten tenants produce exactly four
// tenant label values (three tenants and "other"), and nothing is lost.
func TestTenantCap(t *testing.T) {
	t.Parallel()
	reg, _, bus := newMetrics(t, bichatprom.Options{Models: []string{"m"}, TenantLabel: true, MaxTenants: 3})
	ctx := context.Background()
	for i := range 10 {
		tenant := fmt.Sprintf("tenant-%d", i)
		for range i + 1 { // tenant-i sends i+1 requests
			bus.Publish(ctx, &hooks.LLMResponse{Meta: hooks.Meta{TenantID: tenant}, Provider: "p", Model: "m",
				Usage: domain.Usage{PromptTokens: 10, CompletionTokens: 1}, CostUSD: 0.5})
		}
		bus.Publish(ctx, &hooks.AgentFinish{Meta: hooks.Meta{TenantID: tenant}, Reason: "end_turn"})
	}
	bus.Publish(ctx, &hooks.AgentFinish{Reason: "end_turn"}) // no tenant

	requests := labelValues(t, reg, "bichat_model_requests_total", "tenant")
	want := map[string]float64{"tenant-0": 1, "tenant-1": 2, "tenant-2": 3, "other": 55 - 6}
	if fmt.Sprint(requests) != fmt.Sprint(want) {
		t.Errorf("requests by tenant = %v, want %v", requests, want)
	}
	cost := labelValues(t, reg, "bichat_model_cost_usd_total", "tenant")
	if len(cost) != 4 || cost["other"] != 49*0.5 || cost["tenant-2"] != 1.5 {
		t.Errorf("cost by tenant = %v", cost)
	}
	tokens := labelValues(t, reg, "bichat_model_tokens_total", "tenant")
	var total float64
	for _, v := range tokens {
		total += v
	}
	if len(tokens) != 4 || total != 55*11 {
		t.Errorf("tokens by tenant = %v (total %v, want 605)", tokens, total)
	}
	runs := labelValues(t, reg, "bichat_runs_total", "tenant")
	if fmt.Sprint(runs) != fmt.Sprint(map[string]float64{"tenant-0": 1, "tenant-1": 1, "tenant-2": 1, "other": 7, "none": 1}) {
		t.Errorf("runs by tenant = %v", runs)
	}
	// Metrics without the tenant label have none.
	if got := seriesOf(t, reg, "bichat_model_request_duration_seconds"); len(got) != 1 || strings.Contains(got[0], "tenant") {
		t.Errorf("duration series = %v, want one without tenant", got)
	}
}

// TestNoTenantLabel: the tenant label is opt-in.
func TestNoTenantLabel(t *testing.T) {
	t.Parallel()
	reg, _, bus := newMetrics(t, bichatprom.Options{})
	bus.Publish(context.Background(), &hooks.LLMResponse{Meta: hooks.Meta{TenantID: "acme"}, Provider: "p", Model: "m", CostUSD: 1})
	bus.Publish(context.Background(), &hooks.AgentFinish{Meta: hooks.Meta{TenantID: "acme"}, Reason: "end_turn"})
	if got := read(t, reg, "bichat_model_requests_total", map[string]string{"provider": "p", "model": "other", "outcome": "ok"}).value; got != 1 {
		t.Errorf("requests = %v, want 1", got)
	}
	if got := read(t, reg, "bichat_runs_total", map[string]string{"result": "finished", "reason": "end_turn"}).value; got != 1 {
		t.Errorf("runs = %v, want 1", got)
	}
}

// TestBoundedDynamicLabels: providers and run reasons accept a bounded
// number of unknown values, then fold into "other"; invalid UTF-8 never
// reaches Prometheus (which would panic).
func TestBoundedDynamicLabels(t *testing.T) {
	t.Parallel()
	reg, _, bus := newMetrics(t, bichatprom.Options{})
	ctx := context.Background()
	for i := range bichatprom.MaxProviders + 10 {
		bus.Publish(ctx, &hooks.LLMResponse{Provider: fmt.Sprintf("provider-%02d", i), Model: "m"})
		bus.Publish(ctx, &hooks.AgentError{Code: fmt.Sprintf("code-%02d", i)})
	}
	bus.Publish(ctx, &hooks.LLMResponse{Provider: "bad\xff", Model: "m"})
	providers := labelValues(t, reg, "bichat_model_requests_total", "provider")
	if len(providers) != bichatprom.MaxProviders+1 || providers["other"] != 11 || providers["provider-00"] != 1 {
		t.Errorf("providers = %v", providers)
	}
	reasons := labelValues(t, reg, "bichat_runs_total", "reason")
	if len(reasons) != bichatprom.MaxRunReasons+1 || reasons["other"] != 10 {
		t.Errorf("reasons = %v", reasons)
	}
}

// TestRegistries: no global state; registering twice into one registry
// fails cleanly.
func TestRegistries(t *testing.T) {
	t.Parallel()
	reg1, reg2 := prometheus.NewRegistry(), prometheus.NewRegistry()
	m1, err := bichatprom.New(reg1, bichatprom.Options{Tools: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := bichatprom.New(reg2, bichatprom.Options{Tools: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_ = m1.Handle(ctx, &hooks.ToolFinish{Tool: "t"})
	_ = m1.Handle(ctx, &hooks.ToolFinish{Tool: "t"})
	_ = m2.Handle(ctx, &hooks.ToolFinish{Tool: "t"})
	ok := map[string]string{"tool": "t", "outcome": "ok"}
	if a, b := read(t, reg1, "bichat_tool_calls_total", ok).value, read(t, reg2, "bichat_tool_calls_total", ok).value; a != 2 || b != 1 {
		t.Errorf("registry 1 = %v (want 2), registry 2 = %v (want 1)", a, b)
	}

	// Same registry again: an error, not a panic, and the first Metrics
	// keep working with their series intact.
	_, err = bichatprom.New(reg1, bichatprom.Options{})
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) || !strings.HasPrefix(err.Error(), "hooks/prometheus: register metrics:") {
		t.Fatalf("second New on the same registry: %v, want AlreadyRegisteredError", err)
	}
	_ = m1.Handle(ctx, &hooks.ToolFinish{Tool: "t"})
	if got := read(t, reg1, "bichat_tool_calls_total", ok).value; got != 3 {
		t.Errorf("after the failed New, registry 1 = %v, want 3", got)
	}

	// Another namespace in the same registry is fine.
	if _, err := bichatprom.New(reg1, bichatprom.Options{Namespace: "tenant_a"}); err != nil {
		t.Errorf("New with another namespace: %v", err)
	}

	// A later collision (only the bus counter clashes) leaves nothing of
	// the failed call registered.
	reg3 := prometheus.NewRegistry()
	if err := reg3.Register(prometheus.NewCounter(prometheus.CounterOpts{Name: "bichat_bus_dropped_events_total", Help: "x"})); err != nil {
		t.Fatal(err)
	}
	if _, err := bichatprom.New(reg3, bichatprom.Options{Bus: hooks.New(hooks.Options{})}); err == nil {
		t.Fatal("New over a clashing metric succeeded")
	}
	if n, err := testutil.GatherAndCount(reg3); err != nil || n != 1 {
		t.Errorf("registry after the failed New holds %d series (%v), want only the clashing one", n, err)
	}
	if _, err := bichatprom.New(reg3, bichatprom.Options{}); err != nil {
		t.Errorf("New without the bus after a failed New: %v (something was left registered)", err)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		reg  prometheus.Registerer
		opts bichatprom.Options
		want string
	}{
		{"nil registry", nil, bichatprom.Options{}, "Registerer is nil"},
		{"bad namespace", prometheus.NewRegistry(), bichatprom.Options{Namespace: "bi-chat"}, `namespace "bi-chat"`},
		{"namespace starting with a digit", prometheus.NewRegistry(), bichatprom.Options{Namespace: "1bichat"}, `namespace "1bichat"`},
		{"negative MaxTenants", prometheus.NewRegistry(), bichatprom.Options{MaxTenants: -1}, "MaxTenants is -1"},
		{"empty tool name", prometheus.NewRegistry(), bichatprom.Options{Tools: []string{"sql", ""}}, `Tools holds ""`},
		{"invalid model name", prometheus.NewRegistry(), bichatprom.Options{Models: []string{"\xff"}}, "Models holds"},
		{"unsorted buckets", prometheus.NewRegistry(), bichatprom.Options{ToolBuckets: []float64{1, 0.5}}, "ToolBuckets must be strictly increasing"},
		{"empty buckets", prometheus.NewRegistry(), bichatprom.Options{SQLBuckets: []float64{}}, "SQLBuckets is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := bichatprom.New(tc.reg, tc.opts)
			if err == nil || m != nil {
				t.Fatalf("New = %v, %v; want an error", m, err)
			}
			if !strings.HasPrefix(err.Error(), "hooks/prometheus: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name the problem (%q)", err, tc.want)
			}
			if r, ok := tc.reg.(*prometheus.Registry); ok {
				if n, _ := testutil.GatherAndCount(r); n != 0 {
					t.Errorf("a failed New left %d series registered", n)
				}
			}
		})
	}
}

func TestBusDrops(t *testing.T) {
	t.Parallel()
	bus := hooks.New(hooks.Options{})
	reg := prometheus.NewRegistry()
	if _, err := bichatprom.New(reg, bichatprom.Options{Bus: bus}); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP bichat_bus_dropped_events_total Events the bus did not deliver: published after Close, or dropped by full async queues.
# TYPE bichat_bus_dropped_events_total counter
bichat_bus_dropped_events_total 0
`), "bichat_bus_dropped_events_total"); err != nil {
		t.Error(err)
	}
	_ = bus.Close()
	for range 3 {
		bus.Publish(context.Background(), &hooks.ToolFinish{Tool: "x"})
	}
	if got := read(t, reg, "bichat_bus_dropped_events_total", map[string]string{}).value; got != 3 {
		t.Errorf("dropped = %v, want 3", got)
	}
	// Without a bus there is no such metric.
	reg2 := prometheus.NewRegistry()
	if _, err := bichatprom.New(reg2, bichatprom.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := seriesOf(t, reg2, "bichat_bus_dropped_events_total"); len(got) != 0 {
		t.Errorf("bus drops exported without a bus: %v", got)
	}
}

// TestConcurrent: many publishers at once (run with -race); the totals add
// up and the tenant cap holds.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	reg, m, _ := newMetrics(t, bichatprom.Options{Tools: []string{"a", "b"}, Models: []string{"m"}, TenantLabel: true, MaxTenants: 5})
	const workers, per = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := range per {
				tenant := fmt.Sprintf("t%d", (w*per+i)%20)
				_ = m.Handle(ctx, &hooks.LLMResponse{Meta: hooks.Meta{TenantID: tenant}, Provider: "p", Model: "m",
					Usage: domain.Usage{PromptTokens: 2, CompletionTokens: 1}})
				_ = m.Handle(ctx, &hooks.ToolFinish{Tool: []string{"a", "b", "c"}[i%3]})
			}
		}()
	}
	wg.Wait()
	requests := labelValues(t, reg, "bichat_model_requests_total", "tenant")
	var total float64
	for _, v := range requests {
		total += v
	}
	if len(requests) != 6 || total != workers*per {
		t.Errorf("requests by tenant = %v (total %v), want 5 tenants + other, total %d", requests, total, workers*per)
	}
	tools := labelValues(t, reg, "bichat_tool_calls_total", "tool")
	keys := make([]string, 0, len(tools))
	for k := range tools {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "a,b,other" || tools["a"]+tools["b"]+tools["other"] != workers*per {
		t.Errorf("tool calls = %v", tools)
	}
}

// TestHandleAllocs: the steady-state hot path allocates nothing.
func TestHandleAllocs(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := bichatprom.New(reg, bichatprom.Options{Tools: []string{"sql_query"}, Models: []string{"gpt-a"}, TenantLabel: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, e := range benchEvents() {
		_ = m.Handle(ctx, e) // first sight builds the children
		if n := testing.AllocsPerRun(100, func() { _ = m.Handle(ctx, e) }); n != 0 {
			t.Errorf("Handle(%s) allocates %v times per event", e.Kind(), n)
		}
	}
}

// TestExecutorOutcomes runs the executor to a failure and to an interrupt
// and checks the run metrics of each.
func TestExecutorOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		turns         []scripted.Turn
		result        string
		reason        string
		turnsObserved uint64 // runs observed in bichat_run_turns
		requests      map[string]float64
	}{
		{
			name:     "model fails",
			turns:    []scripted.Turn{{Err: errors.New("invalid request")}},
			result:   "failed",
			reason:   "model_error",
			requests: map[string]float64{"error": 1},
		},
		{
			name: "asks the user",
			turns: []scripted.Turn{{ToolCalls: []scripted.Call{
				{Name: agents.ToolAskUserQuestion, Args: `{"questions":[{"question":"Which year?"}]}`},
			}}},
			result:        "interrupted",
			reason:        "interrupted",
			turnsObserved: 1,
			requests:      map[string]float64{"ok": 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg, _, bus := newMetrics(t, bichatprom.Options{Models: []string{"scripted"}, TenantLabel: true})
			exec, err := agents.NewExecutor(agents.Config{Model: &scripted.Model{Turns: tc.turns}, Bus: bus})
			if err != nil {
				t.Fatal(err)
			}
			for range exec.Run(context.Background(), agents.Input{TenantID: "acme", Message: agents.UserMessage("Revenue?")}) {
			}
			runs := map[string]string{"result": tc.result, "reason": tc.reason, "tenant": "acme"}
			if got := read(t, reg, "bichat_runs_total", runs).value; got != 1 {
				t.Errorf("runs%v = %v, want 1", runs, got)
			}
			if got := seriesOf(t, reg, "bichat_runs_total"); len(got) != 1 {
				t.Errorf("runs series = %v, want only %v", got, runs)
			}
			if got := read(t, reg, "bichat_run_duration_seconds", map[string]string{"result": tc.result}).count; got != 1 {
				t.Errorf("run duration count = %d, want 1", got)
			}
			if got := read(t, reg, "bichat_run_turns", map[string]string{}).count; got != tc.turnsObserved {
				t.Errorf("run turns count = %d, want %d", got, tc.turnsObserved)
			}
			for outcome, want := range tc.requests {
				l := map[string]string{"provider": "scripted", "model": "scripted", "outcome": outcome, "tenant": "acme"}
				if got := read(t, reg, "bichat_model_requests_total", l).value; got != want {
					t.Errorf("requests%v = %v, want %v", l, got, want)
				}
			}
		})
	}
}
