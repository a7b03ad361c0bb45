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
	Reason    string        `json:"reason"`
	Turns     int           `json:"turns"`
	ToolCalls int           `json:"tool_calls"`
	Usage     domain.Usage  `json:"usage"`
	Duration  time.Duration `json:"duration"`
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
	Err     error   `json:"-"`
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
