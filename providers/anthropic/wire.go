package anthropic

import "encoding/json"

// The Messages API wire types. Field order is fixed so the same request
// always encodes to the same bytes, which keeps prompt-cache prefixes
// stable.

type wireRequest struct {
	Model       string          `json:"model"`
	MaxTokens   int             `json:"max_tokens"`
	System      []wireBlock     `json:"system,omitempty"`
	Messages    []wireMessage   `json:"messages"`
	Tools       []wireTool      `json:"tools,omitempty"`
	ToolChoice  *wireToolChoice `json:"tool_choice,omitempty"`
	Thinking    *wireThinking   `json:"thinking,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	Stream      bool            `json:"stream"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// wireBlock is every content block kind the SDK sends: text, thinking,
// redacted_thinking, tool_use, tool_result and image. Pointer fields are
// the ones whose presence (even when empty) the API requires for a kind.
type wireBlock struct {
	Type string `json:"type"`
	// text
	Text *string `json:"text,omitempty"`
	// thinking
	Thinking  *string `json:"thinking,omitempty"`
	Signature *string `json:"signature,omitempty"`
	// redacted_thinking
	Data string `json:"data,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string  `json:"tool_use_id,omitempty"`
	Content   *string `json:"content,omitempty"`
	IsError   bool    `json:"is_error,omitempty"`
	// image
	Source *wireSource `json:"source,omitempty"`

	CacheControl *wireCacheControl `json:"cache_control,omitempty"`
}

type wireSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type wireCacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type wireThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// wireEvent is the union of every streaming event's data. Unknown fields
// and event types are ignored.
type wireEvent struct {
	Type         string            `json:"type"`
	Index        int               `json:"index"`
	Message      *wireEventMessage `json:"message"`
	ContentBlock *wireEventBlock   `json:"content_block"`
	Delta        *wireDelta        `json:"delta"`
	Usage        *wireUsage        `json:"usage"`
	Error        *wireError        `json:"error"`
}

type wireEventMessage struct {
	ID         string     `json:"id"`
	Model      string     `json:"model"`
	StopReason string     `json:"stop_reason"`
	Usage      *wireUsage `json:"usage"`
}

type wireEventBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	// ToolUseID is the server tool call a *_tool_result block answers.
	ToolUseID string `json:"tool_use_id"`
	// Citations of a text block in a whole (non-streamed) message.
	Citations []json.RawMessage `json:"citations"`
}

// wireCitation is the part of a citation (citations_delta, text block
// citations) mapped to domain.Citation; the whole object is kept raw.
type wireCitation struct {
	Type          string `json:"type"`
	CitedText     string `json:"cited_text"`
	URL           string `json:"url"`
	Title         string `json:"title"`
	DocumentTitle string `json:"document_title"`
	FileID        string `json:"file_id"`
}

// wireMessage is a whole (non-streamed) Messages API response.
type wireMessageResponse struct {
	Type       string            `json:"type"`
	Content    []json.RawMessage `json:"content"`
	StopReason string            `json:"stop_reason"`
	Usage      *wireUsage        `json:"usage"`
	Error      *wireError        `json:"error"`
}

type wireDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	// citations_delta
	Citation *json.RawMessage `json:"citation"`
	// message_delta
	StopReason string `json:"stop_reason"`
	// StopDetails explains a refusal (category, explanation).
	StopDetails *json.RawMessage `json:"stop_details"`
}

type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// wireError is the error object of an error body or an in-stream error
// event.
type wireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Details *struct {
		ErrorCode string `json:"error_code"`
	} `json:"details"`
}

type wireErrorBody struct {
	Type      string     `json:"type"`
	Error     *wireError `json:"error"`
	RequestID string     `json:"request_id"`
}
