package prometheus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/bichat-go/bichat/hooks"
	prom "github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxTenants is the number of distinct tenant label values kept
// when Options.MaxTenants is zero.
const DefaultMaxTenants = 100

// MaxProviders is the number of distinct provider label values kept;
// further providers are labelled "other".
const MaxProviders = 16

// MaxRunReasons is the number of distinct run finish reasons and error
// codes kept beyond bichat's own (hosts may add failure codes through
// agents.RunFailure); further values are labelled "other".
const MaxRunReasons = 16

// Default histogram buckets, in seconds (durations), turns or tokens. New
// copies them: changing them affects later New calls only.
var (
	DefaultRunBuckets              = []float64{0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
	DefaultModelBuckets            = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160}
	DefaultTimeToFirstTokenBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32}
	DefaultToolBuckets             = []float64{0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	DefaultSQLBuckets              = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	DefaultSandboxBuckets          = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
	DefaultTurnBuckets             = []float64{1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30}
	DefaultContextTokenBuckets     = []float64{64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144}
)

// Options configure New. The zero value is usable but labels every tool
// and model "other": list the configured ones in Tools and Models.
type Options struct {
	// Namespace prefixes every metric name (default "bichat"). It must be
	// a valid Prometheus name: letters, digits and underscores, not
	// starting with a digit.
	Namespace string
	// Tools are the configured tool names (the executor's tools and the
	// built-ins you care about, e.g. "final_answer"). Tool calls and SQL
	// statements of any other tool are labelled "other".
	Tools []string
	// Models are the configured model names, as in the events' Model
	// field (agents.ModelInfo.Name). Requests, tokens, cost and fallbacks
	// of any other model are labelled "other".
	Models []string
	// TenantLabel adds a "tenant" label to the runs, model requests,
	// tokens and cost metrics. Off by default: every tenant multiplies
	// those series.
	TenantLabel bool
	// MaxTenants caps the distinct tenant label values (default
	// DefaultMaxTenants); tenants seen after the cap is reached are
	// labelled "other". Events without a tenant are labelled "none".
	MaxTenants int
	// Bus, when set, exports its Bus.Dropped count as the counter
	// <namespace>_bus_dropped_events_total.
	Bus *hooks.Bus

	// Histogram buckets; nil means the matching Default...Buckets. Each
	// must be strictly increasing.
	RunBuckets              []float64 // run duration, seconds
	ModelBuckets            []float64 // model call duration, seconds
	TimeToFirstTokenBuckets []float64 // model time to first token, seconds
	ToolBuckets             []float64 // tool call duration, seconds
	SQLBuckets              []float64 // SQL statement duration, seconds
	SandboxBuckets          []float64 // sandbox job duration, seconds
	TurnBuckets             []float64 // model turns per finished run
	ContextTokenBuckets     []float64 // context tokens per block kind and per prompt
}

// Closed label sets: values outside them are labelled "other".
var (
	// runReasons are the finish reasons and failure codes bichat's
	// executor reports; hosts may add codes (MaxRunReasons).
	runReasons = []string{
		"end_turn", "final_answer", "max_turns", "tool_limit", "max_tokens", "content_filter", "interrupted",
		"cancelled", "timeout", "model_error", "invalid", "internal", "context_too_long",
	}
	toolOutcomes = []string{
		"ok", "invalid_arguments", "unknown_tool", "timeout", "panic", "cancelled", "denied", "limit", "error",
	}
	sqlOutcomes = []string{
		"ok", "rejected", "syntax", "undefined_table", "undefined_column", "type_mismatch", "timeout",
		"permission", "read_only",
	}
	sandboxOutcomes = []string{"ok", "error", "timeout", "oom", "killed", "failed"}
	// contextKinds are the context compiler's block kinds.
	contextKinds   = [...]string{"pinned", "reference", "memory", "state", "tool_output", "history", "turn"}
	budgetScopes   = []string{hooks.BudgetMessage, hooks.BudgetSession, hooks.BudgetTenantDay}
	quotaScopes    = []string{"tenant", "user"}
	quotaLimits    = []string{"requests_per_minute", "tokens_per_minute", "concurrent_runs"}
	policies       = []string{"confirmation", "budget", "quota"}
	decisionValues = []string{hooks.DecisionApproved, hooks.DecisionDenied, hooks.DecisionRefused}
)

// Run results (the "result" label of runs).
const (
	resultFinished    = "finished"
	resultInterrupted = "interrupted"
	resultFailed      = "failed"
)

// Token types (the "type" label of the tokens counter).
const (
	tokInput = iota
	tokOutput
	tokCached
	tokCacheWrite
	tokReasoning
	numTokenTypes
)

var tokenTypes = [numTokenTypes]string{"input", "output", "cached", "cache_write", "reasoning"}

// Metrics records bichat's events as Prometheus metrics. It is a
// hooks.Handler: subscribe it on the bus for every kind (bus.Subscribe(m),
// no kinds: fallbacks arrive with the providers' kind "model.fallback"),
// synchronously: Handle is cheap and never blocks. Safe for concurrent use.
//
// Sub-agent runs (events with a ParentRunID) count as runs of their own,
// and their model calls and tool calls are counted like any other.
//
// Metric names (with the default namespace; * marks the metrics that get
// a "tenant" label when Options.TenantLabel is set):
//
//	bichat_runs_started_total{resumed}                       agent.start
//	bichat_runs_total{result,reason}*                        agent.finish (result finished|interrupted), agent.error (failed; reason = code)
//	bichat_run_duration_seconds{result}                      agent.finish, agent.error
//	bichat_run_turns                                         model turns per run (agent.finish)
//	bichat_tool_calls_total{tool,outcome}                    tool.finish (ok), tool.error (its code)
//	bichat_tool_call_duration_seconds{tool}                  calls that ran (duration > 0)
//	bichat_model_requests_total{provider,model,outcome}*     llm.response (ok|error)
//	bichat_model_retries_total{provider,model}               llm.request with attempt > 1
//	bichat_model_fallbacks_total{from_model,to_model}        hooks.Fallback events (model.fallback)
//	bichat_model_tokens_total{provider,model,type}*          input (cached included), output (reasoning included), cached, cache_write, reasoning
//	bichat_model_cost_usd_total{provider,model}*             llm.response CostUSD
//	bichat_model_request_duration_seconds{provider,model}    llm.response
//	bichat_model_time_to_first_token_seconds{provider,model} llm.response with a first chunk
//	bichat_sql_statements_total{tool,outcome}                sqldb.query (ok or the error kind, "rejected" included)
//	bichat_sql_statement_duration_seconds{tool}              sqldb.query
//	bichat_sql_rows_total{tool}                              rows fetched
//	bichat_sql_truncated_total{tool}                         results cut at the row cap
//	bichat_sandbox_jobs_total{outcome}                       sandbox.run
//	bichat_sandbox_job_duration_seconds{outcome}             sandbox.run
//	bichat_context_tokens{kind}                              context.compile, tokens per block kind
//	bichat_context_prompt_tokens                             context.compile, whole prompt
//	bichat_budget_stops_total{scope}                         budget.exceeded
//	bichat_quota_refusals_total{scope,limit}                 quota.exceeded
//	bichat_policy_decisions_total{policy,outcome}            policy.decision
//	bichat_bus_dropped_events_total                          Bus.Dropped (when Options.Bus is set)
type Metrics struct {
	tenantLabel bool

	tools, models, providers, tenants, reasons *labeler
	toolOutcomes, sqlOutcomes, sandboxOut      *labeler
	budgetScopes, quotaScopes, quotaLimits     *labeler
	policies, decisions                        *labeler
	contextIndex                               map[string]int

	runsStarted   [2]prom.Counter // resumed false, true
	runDuration   [3]prom.Observer
	runTurns      prom.Observer
	promptTokens  prom.Observer
	contextTokens [len(contextKinds) + 1]prom.Observer // contextKinds, then "other"

	runs      lazy[runKey, prom.Counter]
	model     lazy[modelKey, *modelChildren]
	tool      lazy[pair, *toolChildren]
	sql       lazy[pair, *sqlChildren]
	sandbox   lazy[string, *sandboxChildren]
	fallbacks lazy[pair, prom.Counter]
	budget    lazy[string, prom.Counter]
	quota     lazy[pair, prom.Counter]
	decision  lazy[pair, prom.Counter]
}

type runKey struct{ result, reason, tenant string }

type modelKey struct{ provider, model, tenant string }

type pair struct{ a, b string }

type modelChildren struct {
	ok, failed prom.Counter
	retries    prom.Counter
	tokens     [numTokenTypes]prom.Counter
	cost       prom.Counter
	duration   prom.Observer
	ttft       prom.Observer
}

type toolChildren struct {
	calls    prom.Counter
	duration prom.Observer
}

type sqlChildren struct {
	statements prom.Counter
	duration   prom.Observer
	rows       prom.Counter
	truncated  prom.Counter
}

type sandboxChildren struct {
	jobs     prom.Counter
	duration prom.Observer
}

// New registers bichat's metrics into reg and returns the handler that
// feeds them; subscribe it on the bus:
//
//	m, err := prometheus.New(reg, prometheus.Options{Tools: toolNames, Models: modelNames})
//	...
//	bus.Subscribe(m)
//
// reg is required (use prometheus.NewRegistry, or prometheus.DefaultRegisterer
// deliberately): New never touches a global registry by itself, so two
// Metrics on two registries are independent. Registering into a registry
// that already holds bichat's metrics with the same namespace returns an
// error wrapping prometheus.AlreadyRegisteredError, and leaves nothing of
// the failed call registered.
func New(reg prom.Registerer, opts Options) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("hooks/prometheus: new: the Registerer is nil (pass prometheus.NewRegistry() or another registry)")
	}
	if err := opts.defaults(); err != nil {
		return nil, fmt.Errorf("hooks/prometheus: new: %w", err)
	}
	m := &Metrics{
		tenantLabel:  opts.TenantLabel,
		tools:        newLabeler(0, opts.Tools...),
		models:       newLabeler(0, opts.Models...),
		providers:    newLabeler(MaxProviders),
		tenants:      newLabelerMap(opts.MaxTenants, map[string]string{"": noneLabel}),
		reasons:      newLabeler(MaxRunReasons, runReasons...),
		toolOutcomes: newLabeler(0, toolOutcomes...),
		sqlOutcomes:  newLabeler(0, sqlOutcomes...),
		sandboxOut:   newLabeler(0, sandboxOutcomes...),
		budgetScopes: newLabeler(0, budgetScopes...),
		quotaScopes:  newLabeler(0, quotaScopes...),
		quotaLimits:  newLabeler(0, quotaLimits...),
		policies:     newLabeler(0, policies...),
		decisions:    newLabeler(0, decisionValues...),
		contextIndex: make(map[string]int, len(contextKinds)),
	}
	for i, k := range contextKinds {
		m.contextIndex[k] = i
	}

	ns := opts.Namespace
	withTenant := func(labels ...string) []string {
		if opts.TenantLabel {
			return append(labels, "tenant")
		}
		return labels
	}
	counter := func(name, help string, labels ...string) *prom.CounterVec {
		return prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prom.HistogramVec {
		return prom.NewHistogramVec(prom.HistogramOpts{Namespace: ns, Name: name, Help: help, Buckets: buckets}, labels)
	}

	runsStarted := counter("runs_started_total", "Agent runs started (resumed=true for runs resumed from a checkpoint).", "resumed")
	runs := counter("runs_total", "Agent runs ended, by result (finished, interrupted, failed) and reason (finish reason or error code).",
		withTenant("result", "reason")...)
	runDuration := histogram("run_duration_seconds", "Duration of agent runs, by result.", opts.RunBuckets, "result")
	runTurns := prom.NewHistogram(prom.HistogramOpts{Namespace: ns, Name: "run_turns",
		Help: "Model turns per finished or interrupted run.", Buckets: opts.TurnBuckets})
	toolCalls := counter("tool_calls_total", "Tool calls, by tool and outcome (ok or the error code).", "tool", "outcome")
	toolDuration := histogram("tool_call_duration_seconds", "Duration of tool calls that ran, by tool.", opts.ToolBuckets, "tool")
	modelRequests := counter("model_requests_total", "Model calls (each attempt), by provider, model and outcome (ok, error).",
		withTenant("provider", "model", "outcome")...)
	modelRetries := counter("model_retries_total", "Model calls that were retries (attempt > 1).", "provider", "model")
	modelFallbacks := counter("model_fallbacks_total", "Switches from a failed model to the next one of a fallback chain.",
		"from_model", "to_model")
	modelTokens := counter("model_tokens_total",
		"Model tokens, by type: input (cached included), output (reasoning included), cached, cache_write, reasoning.",
		withTenant("provider", "model", "type")...)
	modelCost := counter("model_cost_usd_total", "Model cost in US dollars (0 for models without prices).",
		withTenant("provider", "model")...)
	modelDuration := histogram("model_request_duration_seconds", "Duration of model calls.", opts.ModelBuckets, "provider", "model")
	modelTTFT := histogram("model_time_to_first_token_seconds", "Time from sending a model request to its first streamed chunk.",
		opts.TimeToFirstTokenBuckets, "provider", "model")
	sqlStatements := counter("sql_statements_total", "SQL statements run or refused, by tool and outcome (ok or the error kind).",
		"tool", "outcome")
	sqlDuration := histogram("sql_statement_duration_seconds", "Duration of SQL statements, by tool.", opts.SQLBuckets, "tool")
	sqlRows := counter("sql_rows_total", "Rows fetched by SQL statements, by tool.", "tool")
	sqlTruncated := counter("sql_truncated_total", "SQL results cut at the row cap, by tool.", "tool")
	sandboxJobs := counter("sandbox_jobs_total", "Sandbox jobs, by outcome (ok, error, timeout, oom, killed, failed).", "outcome")
	sandboxDuration := histogram("sandbox_job_duration_seconds", "Duration of sandbox jobs, by outcome.", opts.SandboxBuckets, "outcome")
	contextTokens := histogram("context_tokens", "Tokens per block kind in each compiled context.", opts.ContextTokenBuckets, "kind")
	promptTokens := prom.NewHistogram(prom.HistogramOpts{Namespace: ns, Name: "context_prompt_tokens",
		Help: "Tokens of each compiled context (the whole prompt).", Buckets: opts.ContextTokenBuckets})
	budgetStops := counter("budget_stops_total", "Runs stopped because a spending budget was used up, by scope.", "scope")
	quotaRefusals := counter("quota_refusals_total", "Requests refused by a quota or rate limit, by scope and limit.", "scope", "limit")
	decisions := counter("policy_decisions_total", "Policy decisions (confirmations, guards), by policy and outcome.", "policy", "outcome")

	collectors := []prom.Collector{runsStarted, runs, runDuration, runTurns, toolCalls, toolDuration, modelRequests,
		modelRetries, modelFallbacks, modelTokens, modelCost, modelDuration, modelTTFT, sqlStatements, sqlDuration,
		sqlRows, sqlTruncated, sandboxJobs, sandboxDuration, contextTokens, promptTokens, budgetStops, quotaRefusals,
		decisions}
	if bus := opts.Bus; bus != nil {
		collectors = append(collectors, prom.NewCounterFunc(prom.CounterOpts{Namespace: ns, Name: "bus_dropped_events_total",
			Help: "Events the bus did not deliver: published after Close, or dropped by full async queues."},
			func() float64 { return float64(bus.Dropped()) }))
	}
	for i, c := range collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("hooks/prometheus: register metrics: %w", err)
		}
	}

	m.runsStarted = [2]prom.Counter{runsStarted.WithLabelValues("false"), runsStarted.WithLabelValues("true")}
	m.runDuration = [3]prom.Observer{runDuration.WithLabelValues(resultFinished),
		runDuration.WithLabelValues(resultInterrupted), runDuration.WithLabelValues(resultFailed)}
	m.runTurns = runTurns
	m.promptTokens = promptTokens
	for i, k := range contextKinds {
		m.contextTokens[i] = contextTokens.WithLabelValues(k)
	}
	m.contextTokens[len(contextKinds)] = contextTokens.WithLabelValues(otherLabel)

	m.runs.build = func(k runKey) prom.Counter {
		return runs.WithLabelValues(m.values(k.tenant, k.result, k.reason)...)
	}
	m.model.build = func(k modelKey) *modelChildren {
		c := &modelChildren{
			ok:       modelRequests.WithLabelValues(m.values(k.tenant, k.provider, k.model, "ok")...),
			failed:   modelRequests.WithLabelValues(m.values(k.tenant, k.provider, k.model, "error")...),
			retries:  modelRetries.WithLabelValues(k.provider, k.model),
			cost:     modelCost.WithLabelValues(m.values(k.tenant, k.provider, k.model)...),
			duration: modelDuration.WithLabelValues(k.provider, k.model),
			ttft:     modelTTFT.WithLabelValues(k.provider, k.model),
		}
		for i, t := range tokenTypes {
			c.tokens[i] = modelTokens.WithLabelValues(m.values(k.tenant, k.provider, k.model, t)...)
		}
		return c
	}
	m.tool.build = func(k pair) *toolChildren {
		return &toolChildren{calls: toolCalls.WithLabelValues(k.a, k.b), duration: toolDuration.WithLabelValues(k.a)}
	}
	m.sql.build = func(k pair) *sqlChildren {
		return &sqlChildren{statements: sqlStatements.WithLabelValues(k.a, k.b), duration: sqlDuration.WithLabelValues(k.a),
			rows: sqlRows.WithLabelValues(k.a), truncated: sqlTruncated.WithLabelValues(k.a)}
	}
	m.sandbox.build = func(outcome string) *sandboxChildren {
		return &sandboxChildren{jobs: sandboxJobs.WithLabelValues(outcome), duration: sandboxDuration.WithLabelValues(outcome)}
	}
	m.fallbacks.build = func(k pair) prom.Counter { return modelFallbacks.WithLabelValues(k.a, k.b) }
	m.budget.build = func(scope string) prom.Counter { return budgetStops.WithLabelValues(scope) }
	m.quota.build = func(k pair) prom.Counter { return quotaRefusals.WithLabelValues(k.a, k.b) }
	m.decision.build = func(k pair) prom.Counter { return decisions.WithLabelValues(k.a, k.b) }
	return m, nil
}

// values returns vs, followed by tenant when the tenant label is on. It
// runs only when a label combination is first seen.
func (m *Metrics) values(tenant string, vs ...string) []string {
	if m.tenantLabel {
		return append(vs, tenant)
	}
	return vs
}

// defaults fills in and checks o.
func (o *Options) defaults() error {
	if o.Namespace == "" {
		o.Namespace = "bichat"
	}
	if !validName(o.Namespace) {
		return fmt.Errorf("namespace %q is not a valid Prometheus name (letters, digits and underscores, not starting with a digit)", o.Namespace)
	}
	if o.MaxTenants < 0 {
		return fmt.Errorf("MaxTenants is %d, must be 0 (default %d) or more", o.MaxTenants, DefaultMaxTenants)
	}
	if o.MaxTenants == 0 {
		o.MaxTenants = DefaultMaxTenants
	}
	for _, names := range []struct {
		field string
		list  []string
	}{{"Tools", o.Tools}, {"Models", o.Models}} {
		for _, n := range names.list {
			if n == "" || !utf8.ValidString(n) {
				return fmt.Errorf("%s holds %q: names must be non-empty UTF-8", names.field, n)
			}
		}
	}
	for _, b := range []struct {
		field string
		list  *[]float64
		def   []float64
	}{
		{"RunBuckets", &o.RunBuckets, DefaultRunBuckets},
		{"ModelBuckets", &o.ModelBuckets, DefaultModelBuckets},
		{"TimeToFirstTokenBuckets", &o.TimeToFirstTokenBuckets, DefaultTimeToFirstTokenBuckets},
		{"ToolBuckets", &o.ToolBuckets, DefaultToolBuckets},
		{"SQLBuckets", &o.SQLBuckets, DefaultSQLBuckets},
		{"SandboxBuckets", &o.SandboxBuckets, DefaultSandboxBuckets},
		{"TurnBuckets", &o.TurnBuckets, DefaultTurnBuckets},
		{"ContextTokenBuckets", &o.ContextTokenBuckets, DefaultContextTokenBuckets},
	} {
		if *b.list == nil {
			*b.list = slices.Clone(b.def)
			continue
		}
		*b.list = slices.Clone(*b.list)
		if len(*b.list) == 0 {
			return fmt.Errorf("%s is empty: leave it nil for the defaults or give at least one bound", b.field)
		}
		for i := 1; i < len(*b.list); i++ {
			if !((*b.list)[i] > (*b.list)[i-1]) {
				return fmt.Errorf("%s must be strictly increasing, but bound %d (%v) follows %v", b.field, i, (*b.list)[i], (*b.list)[i-1])
			}
		}
	}
	return nil
}

func validName(s string) bool {
	for i, r := range s {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// tenant returns the tenant label of e, or "" when the label is off.
func (m *Metrics) tenant(e hooks.Event) string {
	if !m.tenantLabel {
		return ""
	}
	return m.tenants.label(e.Header().TenantID)
}

// Handle records e. Events of kinds it does not know are ignored; it never
// returns an error. In steady state (label combinations already seen) it
// takes no lock and allocates nothing.
func (m *Metrics) Handle(_ context.Context, e hooks.Event) error {
	switch ev := e.(type) {
	case *hooks.LLMResponse:
		c := m.model.get(modelKey{m.providers.label(ev.Provider), m.models.label(ev.Model), m.tenant(ev)})
		if ev.Err != nil {
			c.failed.Inc()
		} else {
			c.ok.Inc()
		}
		u := &ev.Usage
		addInt(c.tokens[tokInput], u.PromptTokens)
		addInt(c.tokens[tokOutput], u.CompletionTokens)
		addInt(c.tokens[tokCached], u.CachedTokens)
		addInt(c.tokens[tokCacheWrite], u.CacheWriteTokens)
		addInt(c.tokens[tokReasoning], u.ReasoningTokens)
		if ev.CostUSD > 0 {
			c.cost.Add(ev.CostUSD)
		}
		c.duration.Observe(seconds(ev.Duration))
		if ev.TimeToFirstToken > 0 {
			c.ttft.Observe(seconds(ev.TimeToFirstToken))
		}
	case *hooks.LLMRequest:
		if ev.Attempt > 1 {
			m.model.get(modelKey{m.providers.label(ev.Provider), m.models.label(ev.Model), m.tenant(ev)}).retries.Inc()
		}
	case *hooks.ToolFinish:
		c := m.tool.get(pair{m.tools.label(ev.Tool), "ok"})
		c.calls.Inc()
		c.duration.Observe(seconds(ev.Duration))
	case *hooks.ToolError:
		c := m.tool.get(pair{m.tools.label(ev.Tool), m.toolOutcomes.label(ev.Code)})
		c.calls.Inc()
		if ev.Duration > 0 {
			c.duration.Observe(seconds(ev.Duration))
		}
	case *hooks.SQLQuery:
		outcome := "ok"
		if ev.Error != "" {
			outcome = m.sqlOutcomes.label(ev.Error)
		}
		c := m.sql.get(pair{m.tools.label(ev.Tool), outcome})
		c.statements.Inc()
		c.duration.Observe(seconds(ev.Duration))
		addInt(c.rows, ev.Rows)
		if ev.Truncated {
			c.truncated.Inc()
		}
	case *hooks.AgentStart:
		if ev.Resumed {
			m.runsStarted[1].Inc()
		} else {
			m.runsStarted[0].Inc()
		}
	case *hooks.AgentFinish:
		result, i := resultFinished, 0
		if ev.Reason == "interrupted" {
			result, i = resultInterrupted, 1
		}
		m.runs.get(runKey{result, m.reasons.label(ev.Reason), m.tenant(ev)}).Inc()
		m.runDuration[i].Observe(seconds(ev.Duration))
		m.runTurns.Observe(float64(ev.Turns))
	case *hooks.AgentError:
		m.runs.get(runKey{resultFailed, m.reasons.label(ev.Code), m.tenant(ev)}).Inc()
		m.runDuration[2].Observe(seconds(ev.Duration))
	case *hooks.SandboxRun:
		c := m.sandbox.get(m.sandboxOut.label(ev.Outcome))
		c.jobs.Inc()
		c.duration.Observe(seconds(ev.Duration))
	case *hooks.ContextCompile:
		m.observeContext(ev)
	case *hooks.BudgetExceeded:
		m.budget.get(m.budgetScopes.label(ev.Scope)).Inc()
	case *hooks.QuotaExceeded:
		m.quota.get(pair{m.quotaScopes.label(ev.Scope), m.quotaLimits.label(ev.Limit)}).Inc()
	case *hooks.Decision:
		m.decision.get(pair{m.policies.label(ev.Policy), m.decisions.label(ev.Outcome)}).Inc()
	case hooks.Fallback:
		_, from, _, to := ev.FallbackModels()
		m.fallbacks.get(pair{m.models.label(from), m.models.label(to)}).Inc()
	}
	return nil
}

// observeContext records one compiled context: the prompt size, and the
// tokens of each block kind present (unknown kinds summed as "other").
func (m *Metrics) observeContext(ev *hooks.ContextCompile) {
	m.promptTokens.Observe(float64(ev.Tokens))
	var sums [len(contextKinds) + 1]int
	var seen [len(contextKinds) + 1]bool
	for kind, tokens := range ev.ByKind {
		i, ok := m.contextIndex[kind]
		if !ok {
			i = len(contextKinds)
		}
		sums[i] += tokens
		seen[i] = true
	}
	for i, ok := range seen {
		if ok {
			m.contextTokens[i].Observe(float64(sums[i]))
		}
	}
}

func addInt(c prom.Counter, n int) {
	if n > 0 {
		c.Add(float64(n))
	}
}

func seconds(d time.Duration) float64 { return d.Seconds() }
