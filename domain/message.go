package domain

import (
	"encoding/json"
	"strings"
	"time"
)

// Role says who produced a message.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
	RoleTool      Role = "tool"
)

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool {
	switch r {
	case RoleUser, RoleAssistant, RoleSystem, RoleTool:
		return true
	}
	return false
}

// MessageStatus is the lifecycle state of a message. User messages are
// created complete. An assistant message is created generating, claimed by
// exactly one runner, and ends complete, failed or awaiting input.
type MessageStatus string

// Message statuses.
const (
	// StatusGenerating: an assistant placeholder whose run is in progress.
	StatusGenerating MessageStatus = "generating"
	// StatusComplete: the message is final.
	StatusComplete MessageStatus = "complete"
	// StatusFailed: the run ended with an error; Metadata.Error says why.
	StatusFailed MessageStatus = "failed"
	// StatusAwaitingInput: the run stopped at an interrupt (a question for
	// the user or a confirmation request) and a checkpoint can resume it.
	StatusAwaitingInput MessageStatus = "awaiting_input"
)

// Valid reports whether s is a known status.
func (s MessageStatus) Valid() bool {
	switch s {
	case StatusGenerating, StatusComplete, StatusFailed, StatusAwaitingInput:
		return true
	}
	return false
}

// PartType names the kind of a Part.
type PartType string

// Part types.
const (
	PartText       PartType = "text"
	PartReasoning  PartType = "reasoning"
	PartToolCall   PartType = "tool_call"
	PartToolResult PartType = "tool_result"
	PartFile       PartType = "file"
	PartImage      PartType = "image"
)

// Part is one piece of a message's content. Exactly the field matching Type
// is set: Text for text, Reasoning for reasoning, ToolCall, ToolResult, or
// File for file and image references.
type Part struct {
	Type       PartType    `json:"type"`
	Text       string      `json:"text,omitempty"`
	Reasoning  *Reasoning  `json:"reasoning,omitempty"`
	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
	File       *FileRef    `json:"file,omitempty"`
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// Reasoning is model reasoning ("thinking") output. Providers that sign or
// encrypt reasoning need it sent back unchanged on the next request, so
// Signature and Opaque are carried verbatim and never interpreted.
type Reasoning struct {
	Text string `json:"text,omitempty"`
	// Signature is the provider's signature over the reasoning text.
	Signature string `json:"signature,omitempty"`
	// Provider names the provider that produced Opaque (e.g. "anthropic").
	Provider string `json:"provider,omitempty"`
	// Opaque is provider data (redacted thinking, encrypted content) that
	// must round-trip untouched. It is bytes, not JSON, so no encoder or
	// database column can reformat it (JSON encodes it as base64).
	Opaque []byte `json:"opaque,omitempty"`
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	// ID is the provider's call id; tool results refer to it.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON object the model sent ("{}" when it sent none).
	Arguments json.RawMessage `json:"arguments"`
	// Provider and Opaque carry provider data attached to the call (e.g. a
	// Gemini thought signature) that must be sent back unchanged.
	Provider string `json:"provider,omitempty"`
	Opaque   []byte `json:"opaque,omitempty"`
}

// ToolResult is the outcome of a tool call as the model sees it.
type ToolResult struct {
	// CallID matches ToolCall.ID.
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	// Content is the summary sent to the model.
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// FileRef points at a file or image: an uploaded attachment or an artifact.
type FileRef struct {
	Name      string `json:"name,omitempty"`
	MediaType string `json:"media_type"`
	// URI locates the content (artifact://ID, https://..., data:...).
	URI        string `json:"uri,omitempty"`
	ArtifactID string `json:"artifact_id,omitempty"`
	Size       int64  `json:"size,omitempty"`
}

// Message is one entry in a session.
type Message struct {
	ID        string        `json:"id"`
	TenantID  string        `json:"tenant_id"`
	SessionID string        `json:"session_id"`
	Role      Role          `json:"role"`
	Parts     []Part        `json:"parts"`
	Status    MessageStatus `json:"status"`
	// RunID is the run that claimed this message; empty while unclaimed.
	RunID string `json:"run_id,omitempty"`
	// LeaseUntil is when the lease of the run generating this message
	// ends unless renewed (see RunRepository); zero when no lease was
	// taken. CreateMessages stores it as given. RunRepository.ClaimRun
	// sets it and RenewLease moves it. UpdateMessage leaves it unchanged
	// while the message stays generating under a run id, and clears it
	// when the updated message is not generating or has no run id (its
	// run is over, or the message was reopened for a new run), as does
	// RunRepository.FinishRun. FailExpired keeps it.
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// CancelRequested is set by RunRepository.RequestCancel while the
	// message is generating, and cleared by ClaimRun (a new run starts
	// without one), by FinishRun, and by UpdateMessage when the updated
	// message is not generating or has no run id; UpdateMessage leaves it
	// unchanged otherwise.
	CancelRequested bool            `json:"cancel_requested,omitempty"`
	Metadata        MessageMetadata `json:"metadata"`
	Citations       []Citation      `json:"citations,omitempty"`
	// Attachments are files the user sent with the message.
	Attachments []Attachment `json:"attachments,omitempty"`
	CreatedAt   time.Time    `json:"created_at"`
	UpdatedAt   time.Time    `json:"updated_at"`
}

// Text returns the concatenated text parts of the message.
func (m *Message) Text() string {
	var n int
	var only string
	for _, p := range m.Parts {
		if p.Type == PartText {
			n++
			only = p.Text
		}
	}
	if n <= 1 {
		return only
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// MessageMetadata is what bichat records about how a message was produced.
type MessageMetadata struct {
	// Model is the model that produced an assistant message.
	Model string `json:"model,omitempty"`
	// ToolCalls lists each tool call of the run with arguments and results
	// truncated to the service's configured size.
	ToolCalls []ToolCallRecord `json:"tool_calls,omitempty"`
	// Usage is the token usage summed over the run's model calls.
	Usage Usage `json:"usage"`
	// CostUSD prices Usage with the models' prices (US dollars; 0 when
	// the prices are unknown).
	CostUSD float64 `json:"cost_usd,omitempty"`
	// DatasetsUsed lists the datasets the run's tools touched, deduplicated.
	DatasetsUsed []string `json:"datasets_used,omitempty"`
	// StopReason says why the run ended ("end_turn", "final_answer",
	// "max_turns", "tool_limit", "interrupted", ...).
	StopReason string `json:"stop_reason,omitempty"`
	// Note is an explanation shown with the message, e.g. why a limit
	// stopped the run.
	Note string `json:"note,omitempty"`
	// Error is set when Status is failed.
	Error *MessageError `json:"error,omitempty"`
}

// ToolCallRecord is the persisted trace of one tool call.
type ToolCallRecord struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Result    string `json:"result,omitempty"`
	Error     string `json:"error,omitempty"`
	// Truncated is true when Arguments or Result were cut.
	Truncated   bool     `json:"truncated,omitempty"`
	DurationMS  int64    `json:"duration_ms"`
	ArtifactIDs []string `json:"artifact_ids,omitempty"`
}

// MessageError records why a message failed.
type MessageError struct {
	// Code is a stable machine-readable code: "cancelled", "model_error",
	// "timeout", "interrupted", "superseded", "internal".
	Code string `json:"code"`
	// Message is safe to show to the end user: it never contains
	// credentials, DSNs or stack traces.
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
}

// Usage counts tokens.
type Usage struct {
	// PromptTokens is the whole prompt, cached part included.
	PromptTokens int `json:"prompt_tokens"`
	// CompletionTokens is the output, reasoning included.
	CompletionTokens int `json:"completion_tokens"`
	// CachedTokens is the part of the prompt served from the provider's
	// prompt cache.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// CacheWriteTokens is the part of the prompt written to the cache
	// (Anthropic bills it separately).
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens is the reasoning part of CompletionTokens.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	TotalTokens     int `json:"total_tokens"`
}

// Add returns the field-wise sum of u and v. A side whose TotalTokens is
// zero counts as PromptTokens + CompletionTokens.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
		TotalTokens:      u.total() + v.total(),
	}
}

func (u Usage) total() int {
	if u.TotalTokens != 0 {
		return u.TotalTokens
	}
	return u.PromptTokens + u.CompletionTokens
}

// IsZero reports whether no tokens were counted.
func (u Usage) IsZero() bool { return u == Usage{} }

// Attachment is a file the user sent with a message.
type Attachment struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	// SHA256 is the hex-encoded SHA-256 of the content.
	SHA256 string `json:"sha256,omitempty"`
	URI    string `json:"uri,omitempty"`
}

// Citation points at a source that grounds part of an answer.
type Citation struct {
	// Source names the collection, e.g. "kb" or "dataset".
	Source     string  `json:"source"`
	DocumentID string  `json:"document_id,omitempty"`
	Title      string  `json:"title,omitempty"`
	URL        string  `json:"url,omitempty"`
	Snippet    string  `json:"snippet,omitempty"`
	Score      float64 `json:"score,omitempty"`
}
