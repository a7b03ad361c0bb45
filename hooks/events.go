package hooks

import (
	"encoding/json"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// Kind names an event type, e.g. "tool.finish". Kinds of bichat's own events
// are the constants below; hosts may define their own events with their own
// kinds (use a prefix such as "myapp.").
type Kind string

// Event kinds published by bichat.
const (
	KindAgentStart     Kind = "agent.start"
	KindAgentFinish    Kind = "agent.finish"
	KindAgentError     Kind = "agent.error"
	KindLLMRequest     Kind = "llm.request"
	KindLLMResponse    Kind = "llm.response"
	KindToolStart      Kind = "tool.start"
	KindToolFinish     Kind = "tool.finish"
	KindToolError      Kind = "tool.error"
	KindContextCompile Kind = "context.compile"
	KindSessionCreate  Kind = "session.create"
	KindSessionUpdate  Kind = "session.update"
	KindSessionDelete  Kind = "session.delete"
	KindMessageSave    Kind = "message.save"
	KindInterrupt      Kind = "interrupt"
	KindSQLQuery       Kind = "sqldb.query"
	KindSandboxRun     Kind = "sandbox.run"
	KindArtifactSave   Kind = "artifact.save"
	KindDecision       Kind = "policy.decision"
	KindBudgetExceeded Kind = "budget.exceeded"
	KindQuotaExceeded  Kind = "quota.exceeded"
)

// Event is anything published on the bus. Kind must not depend on the
// receiver's fields: [Listen] calls it on a nil pointer to learn the kind of
// a type.
type Event interface {
	Kind() Kind
	// Header returns the event's common fields.
	Header() *Meta
}

// Meta holds the fields every event shares. Embed it in custom events to
// satisfy the Header method.
type Meta struct {
	Time      time.Time `json:"time"`
	TenantID  string    `json:"tenant_id,omitempty"`
	UserID    string    `json:"user_id,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	MessageID string    `json:"message_id,omitempty"`
	RunID     string    `json:"run_id,omitempty"`
	// ParentRunID is set on events of a sub-agent run.
	ParentRunID string `json:"parent_run_id,omitempty"`
}

// Header returns m.
func (m *Meta) Header() *Meta { return m }

// AgentStart is published when a run (or a resumed run) starts.
type AgentStart struct {
	Meta
	Agent   string `json:"agent,omitempty"`
	Model   string `json:"model"`
	Resumed bool   `json:"resumed,omitempty"`
}

// Kind returns KindAgentStart.
func (*AgentStart) Kind() Kind { return KindAgentStart }

// AgentFinish is published when a run ends normally or at an interrupt.
type AgentFinish struct {
	Meta
	Agent string `json:"agent,omitempty"`
	// Reason is the run's finish reason ("end_turn", "final_answer",
	// "max_turns", "tool_limit", "interrupted").
	Reason    string       `json:"reason"`
	Turns     int          `json:"turns"`
	ToolCalls int          `json:"tool_calls"`
	Usage     domain.Usage `json:"usage"`
	// CostUSD prices the run's model calls (across resumptions).
	CostUSD  float64       `json:"cost_usd,omitempty"`
	Duration time.Duration `json:"duration"`
}

// Kind returns KindAgentFinish.
func (*AgentFinish) Kind() Kind { return KindAgentFinish }

// AgentError is published when a run fails.
type AgentError struct {
	Meta
	Agent    string        `json:"agent,omitempty"`
	Code     string        `json:"code"`
	Err      error         `json:"-"`
	Duration time.Duration `json:"duration"`
}

// Kind returns KindAgentError.
func (*AgentError) Kind() Kind { return KindAgentError }

// LLMRequest is published before each model call (each retry attempt too).
type LLMRequest struct {
	Meta
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Turn     int    `json:"turn"`
	Attempt  int    `json:"attempt"`
	Messages int    `json:"messages"`
	Tools    int    `json:"tools"`
	// Input, when set, returns the request's system prompt and messages
	// as the JSON array of the OpenTelemetry GenAI input messages
	// ([{"role":"system","parts":[{"type":"text","content":"..."}]},
	// ...]), encoded when called. Handlers that record prompts (opt-in,
	// e.g. hooks/otel with CaptureContent) call it; others never pay for
	// it. It keeps the request alive while a handler holds it.
	Input func() []byte `json:"-"`
}

// Kind returns KindLLMRequest.
func (*LLMRequest) Kind() Kind { return KindLLMRequest }

// LLMResponse is published after each model call. Err is set when the call
// failed; Usage and StopReason are then whatever arrived before the failure.
type LLMResponse struct {
	Meta
	Provider   string        `json:"provider"`
	Model      string        `json:"model"`
	Turn       int           `json:"turn"`
	Attempt    int           `json:"attempt"`
	Usage      domain.Usage  `json:"usage"`
	StopReason string        `json:"stop_reason,omitempty"`
	ToolCalls  int           `json:"tool_calls"`
	Duration   time.Duration `json:"duration"`
	// CostUSD is computed from the model's prices, 0 when they are unknown.
	CostUSD float64 `json:"cost_usd"`
	// TimeToFirstToken is the time from sending the request to the first
	// streamed chunk; 0 when nothing arrived.
	TimeToFirstToken time.Duration `json:"time_to_first_token,omitempty"`
	// Output is the text of the answer (without reasoning and tool
	// calls), for handlers that record model output (opt-in).
	Output string `json:"output,omitempty"`
	Err    error  `json:"-"`
}

// Kind returns KindLLMResponse.
func (*LLMResponse) Kind() Kind { return KindLLMResponse }

// ToolStart is published before a tool runs.
type ToolStart struct {
	Meta
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// Kind returns KindToolStart.
func (*ToolStart) Kind() Kind { return KindToolStart }

// ToolFinish is published after a tool succeeded.
type ToolFinish struct {
	Meta
	CallID   string        `json:"call_id"`
	Tool     string        `json:"tool"`
	Duration time.Duration `json:"duration"`
	// SummaryBytes is the size of the summary sent to the model, after
	// truncation.
	SummaryBytes int  `json:"summary_bytes"`
	Truncated    bool `json:"truncated,omitempty"`
	Artifacts    int  `json:"artifacts,omitempty"`
	// Result is the summary sent to the model, for handlers that record
	// tool results (opt-in).
	Result string `json:"result,omitempty"`
}

// Kind returns KindToolFinish.
func (*ToolFinish) Kind() Kind { return KindToolFinish }

// ToolError is published when a tool call fails: invalid arguments, unknown
// tool, timeout, panic or an error returned by the tool.
type ToolError struct {
	Meta
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Code is "invalid_arguments", "unknown_tool", "timeout", "panic",
	// "cancelled", "denied", "limit" or "error".
	Code     string        `json:"code"`
	Err      error         `json:"-"`
	Duration time.Duration `json:"duration"`
	// Stack is the goroutine stack of a panic; never sent to the model.
	Stack []byte `json:"-"`
}

// Kind returns KindToolError.
func (*ToolError) Kind() Kind { return KindToolError }

// ContextCompile is published each time the context compiler assembles a
// model request.
type ContextCompile struct {
	Meta
	// Tokens is the total prompt size; Budget the tokens allowed.
	Tokens int `json:"tokens"`
	Budget int `json:"budget"`
	// ByKind maps block kinds to their token counts.
	ByKind            map[string]int `json:"by_kind,omitempty"`
	Dropped           int            `json:"dropped"`
	Compacted         int            `json:"compacted"`
	Redacted          int            `json:"redacted"`
	CachePrefixTokens int            `json:"cache_prefix_tokens"`
	CachePrefixHash   string         `json:"cache_prefix_hash,omitempty"`
	Duration          time.Duration  `json:"duration"`
}

// Kind returns KindContextCompile.
func (*ContextCompile) Kind() Kind { return KindContextCompile }

// SessionCreate is published when a session is created.
type SessionCreate struct {
	Meta
	Title string `json:"title"`
}

// Kind returns KindSessionCreate.
func (*SessionCreate) Kind() Kind { return KindSessionCreate }

// SessionUpdate is published when a session is renamed or its model changes.
type SessionUpdate struct {
	Meta
	Title string `json:"title"`
	Model string `json:"model,omitempty"`
}

// Kind returns KindSessionUpdate.
func (*SessionUpdate) Kind() Kind { return KindSessionUpdate }

// SessionDelete is published when a session is deleted.
type SessionDelete struct {
	Meta
}

// Kind returns KindSessionDelete.
func (*SessionDelete) Kind() Kind { return KindSessionDelete }

// MessageSave is published when a message is persisted.
type MessageSave struct {
	Meta
	Role   domain.Role          `json:"role"`
	Status domain.MessageStatus `json:"status"`
	Usage  domain.Usage         `json:"usage"`
	// CostUSD is what the message's model calls cost so far (assistant
	// messages).
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Text is the message's text: the question of a user message, the
	// answer of a complete assistant message. Handlers that keep records
	// (the audit chain) use it; the slog handler logs only its length.
	Text string `json:"text,omitempty"`
	// ErrorCode is the failure code of a failed message.
	ErrorCode string `json:"error_code,omitempty"`
}

// Kind returns KindMessageSave.
func (*MessageSave) Kind() Kind { return KindMessageSave }

// Interrupt is published when a run stops to wait for the user.
type Interrupt struct {
	Meta
	// Reason is "question" or "confirmation".
	Reason string `json:"reason"`
	Tool   string `json:"tool"`
	CallID string `json:"call_id"`
}

// Kind returns KindInterrupt.
func (*Interrupt) Kind() Kind { return KindInterrupt }

// SQLQuery is published by the data tools (tools/sqldb) for every
// statement they run or refuse: which tool, the statement, rows fetched,
// truncation, duration, and the error kind when it failed ("rejected" for
// a statement the read-only policy refused before it reached the
// database). The executor's tool.start and tool.finish events carry the
// call itself.
type SQLQuery struct {
	Meta
	CallID    string        `json:"call_id,omitempty"`
	Tool      string        `json:"tool"`
	Dialect   string        `json:"dialect"`
	SQL       string        `json:"sql,omitempty"`
	Rows      int           `json:"rows"`
	Truncated bool          `json:"truncated,omitempty"`
	Duration  time.Duration `json:"duration"`
	// Error is the error kind (sqldb.Kind: "rejected", "syntax",
	// "timeout", ...); empty on success.
	Error string `json:"error,omitempty"`
	// Reason is the refusal's or failure's message, when Error is set.
	Reason string `json:"reason,omitempty"`
}

// Kind returns KindSQLQuery.
func (*SQLQuery) Kind() Kind { return KindSQLQuery }

// SandboxRun is published by the Python tool (tools/python) after each
// sandbox job.
type SandboxRun struct {
	Meta
	CallID string `json:"call_id,omitempty"`
	// Outcome is "ok" (exit 0), "error" (non-zero exit), "timeout",
	// "oom", "killed" (a signal) or "failed" (the sandbox could not run
	// the job).
	Outcome  string        `json:"outcome"`
	ExitCode int           `json:"exit_code"`
	Duration time.Duration `json:"duration"`
	// Files is the number of files the job produced.
	Files int `json:"files,omitempty"`
	// Unenforced lists limits the sandbox could not enforce (see
	// sandbox.Output.Unenforced).
	Unenforced []string `json:"unenforced,omitempty"`
}

// Kind returns KindSandboxRun.
func (*SandboxRun) Kind() Kind { return KindSandboxRun }

// ArtifactSave is published when the service records an artifact a tool
// produced (a chart, a workbook, a report).
type ArtifactSave struct {
	Meta
	CallID     string `json:"call_id,omitempty"`
	Tool       string `json:"tool,omitempty"`
	ArtifactID string `json:"artifact_id"`
	Name       string `json:"name"`
	MediaType  string `json:"media_type"`
	// SHA256 is the hex SHA-256 of the content (domain.ContentHash).
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Kind returns KindArtifactSave.
func (*ArtifactSave) Kind() Kind { return KindArtifactSave }

// Decision kinds of a Decision event.
const (
	DecisionApproved = "approved"
	DecisionDenied   = "denied"
	DecisionRefused  = "refused"
)

// Decision is published when a policy decides about an action: the user
// approved or denied a confirmation, or a guard refused something (a
// budget, a quota). Rejected SQL statements are SQLQuery events with
// Error "rejected".
type Decision struct {
	Meta
	// Policy names what decided: "confirmation", "budget", "quota".
	Policy string `json:"policy"`
	// Outcome is DecisionApproved, DecisionDenied or DecisionRefused.
	Outcome string `json:"outcome"`
	Tool    string `json:"tool,omitempty"`
	CallID  string `json:"call_id,omitempty"`
	// Reason is the user's reason for a denial or the guard's message.
	Reason string `json:"reason,omitempty"`
}

// Kind returns KindDecision.
func (*Decision) Kind() Kind { return KindDecision }

// Budget scopes of a BudgetExceeded event.
const (
	BudgetMessage   = "message"
	BudgetSession   = "session"
	BudgetTenantDay = "tenant_day"
)

// BudgetExceeded is published when a run stops because a spending budget
// is used up: no further model call is made.
type BudgetExceeded struct {
	Meta
	// Scope is BudgetMessage, BudgetSession or BudgetTenantDay.
	Scope string `json:"scope"`
	// LimitUSD is the budget; SpentUSD what the scope had spent when the
	// run was stopped.
	LimitUSD float64 `json:"limit_usd"`
	SpentUSD float64 `json:"spent_usd"`
}

// Kind returns KindBudgetExceeded.
func (*BudgetExceeded) Kind() Kind { return KindBudgetExceeded }

// QuotaExceeded is published when a request is refused by a quota or
// rate limit.
type QuotaExceeded struct {
	Meta
	// Scope is "tenant" or "user"; Limit is "requests_per_minute",
	// "tokens_per_minute" or "concurrent_runs".
	Scope      string        `json:"scope"`
	Limit      string        `json:"limit"`
	RetryAfter time.Duration `json:"retry_after"`
}

// Kind returns KindQuotaExceeded.
func (*QuotaExceeded) Kind() Kind { return KindQuotaExceeded }

// Fallback is implemented by events that report a switch from one model
// to the next (providers.FallbackEvent), so handlers below the providers
// layer (metrics, traces) can count them.
type Fallback interface {
	Event
	// FallbackModels returns the provider and name of the model that
	// failed and of the one tried next.
	FallbackModels() (fromProvider, fromModel, toProvider, toModel string)
}
