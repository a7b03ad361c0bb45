package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"

	"strings"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmhttp"
)

// Model is an agents.Model backed by a Chat Completions endpoint. It is
// safe for concurrent use.
type Model struct {
	opts      Options
	conn      *resolved
	reasoning bool
	info      agents.ModelInfo
}

var _ agents.Model = (*Model)(nil)

// New returns a Model. It fails when Options.Model is empty, the base URL
// is invalid, or no key is configured for a service that needs one.
func New(opts Options) (*Model, error) {
	conn, err := opts.Connection.resolve()
	if err != nil {
		return nil, err
	}
	if opts.Model == "" {
		return nil, fmt.Errorf("%s: Options.Model is empty", conn.provider)
	}
	reasoning := isReasoningModel(opts.Model)
	if opts.Reasoning != nil {
		reasoning = *opts.Reasoning
	}
	if reasoning {
		if opts.Timeout == 0 {
			conn.client.Timeout = 30 * time.Minute
		}
		if opts.IdleTimeout == 0 {
			conn.client.IdleTimeout = 15 * time.Minute
		}
	}
	info := opts.Info
	info.Provider = cmp.Or(info.Provider, conn.provider)
	info.Name = cmp.Or(info.Name, opts.Model)
	if info.Capabilities == (agents.Capabilities{}) {
		info.Capabilities = agents.Capabilities{Tools: true, ParallelTools: true, JSON: true, Reasoning: reasoning}
	}
	return &Model{opts: opts, conn: conn, reasoning: reasoning, info: info}, nil
}

// Info describes the model.
func (m *Model) Info() agents.ModelInfo { return m.info }

// Stream sends req and yields the answer as it arrives. Transient failures
// (HTTP 408/409/429/5xx/529, resets, an error event before the first
// chunk) are retried before the first chunk only; a stream that ends
// before "data: [DONE]" ends with an error wrapping llmhttp.ErrIncomplete.
func (m *Model) Stream(ctx context.Context, req *agents.Request) iter.Seq2[agents.Chunk, error] {
	if m.opts.ResponsesAPI {
		body, err := m.responsesBody(req, !m.opts.NoStream)
		return m.send(ctx, "/responses", body, err, m.decodeResponses, m.decodeResponsesWhole)
	}
	body, err := m.requestBody(req, !m.opts.NoStream)
	return m.send(ctx, "/chat/completions", body, err, m.decodeStream, m.decodeWhole)
}

// send posts body (or yields err, the body's encoding error) to path and
// decodes the answer with stream, or whole when streaming is off.
func (m *Model) send(ctx context.Context, path string, body []byte, err error,
	stream, whole func(*http.Response, func(agents.Chunk) bool) error) iter.Seq2[agents.Chunk, error] {
	if err != nil {
		return llmhttp.Fail[agents.Chunk](err)
	}
	hr := &llmhttp.Request{URL: m.conn.url(path), Header: m.conn.header, Body: body}
	if m.opts.NoStream {
		return llmhttp.Stream(ctx, m.conn.client, hr, whole)
	}
	hr.Header = m.conn.header.Clone()
	hr.Header.Set("Accept", "text/event-stream")
	return llmhttp.Stream(ctx, m.conn.client, hr, stream)
}

// toolChoice returns the tool_choice value for tc: the mode's name, named
// (the dialect's object) for one named tool, or nil when tc is unset.
func (m *Model) toolChoice(tc agents.ToolChoice, named func(name string) any) (any, error) {
	switch tc.Mode {
	case agents.ToolChoiceNone, agents.ToolChoiceRequired, agents.ToolChoiceAuto:
		return string(tc.Mode), nil
	case agents.ToolChoiceTool:
		if tc.Name == "" {
			return nil, fmt.Errorf("%s: tool choice %q without a tool name", m.conn.provider, tc.Mode)
		}
		return named(tc.Name), nil
	case "":
		return nil, nil
	}
	return nil, fmt.Errorf("%s: unknown tool choice %q", m.conn.provider, tc.Mode)
}

// Wire types of the request.

type chatRequest struct {
	Model               string         `json:"model"`
	Messages            []chatMessage  `json:"messages"`
	Tools               []chatTool     `json:"tools,omitempty"`
	ToolChoice          any            `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool          `json:"parallel_tool_calls,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role             string         `json:"role"`
	Content          any            `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string      `json:"type"`
	Function toolFuncDef `json:"function"`
}

type toolFuncDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict,omitempty"`
}

// effort maps a reasoning token budget to a reasoning_effort value.
func effort(budget int) string {
	switch {
	case budget <= 0:
		return ""
	case budget <= 2048:
		return "low"
	case budget <= 16384:
		return "medium"
	}
	return "high"
}

// requestBody encodes req for the Chat Completions endpoint.
func (m *Model) requestBody(req *agents.Request, stream bool) ([]byte, error) {
	o := req.Options
	cr := chatRequest{Model: m.opts.Model, Stream: stream}
	if stream && !m.opts.NoStreamUsage {
		cr.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if req.System != "" {
		role := "system"
		if m.reasoning {
			role = "developer"
		}
		cr.Messages = append(cr.Messages, chatMessage{Role: role, Content: req.System})
	}
	lastUser := -1
	for i := range req.Messages {
		if req.Messages[i].Role == domain.RoleUser {
			lastUser = i
		}
	}
	for i := range req.Messages {
		msgs, err := m.convertMessage(&req.Messages[i], m.opts.SendReasoning && i > lastUser)
		if err != nil {
			return nil, fmt.Errorf("%s: message %d: %w", m.conn.provider, i, err)
		}
		cr.Messages = append(cr.Messages, msgs...)
	}
	for _, t := range req.Tools {
		def := toolFuncDef{Name: t.Name, Description: t.Description, Parameters: t.Schema}
		if len(def.Parameters) == 0 {
			def.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if !m.opts.NonStrictTools {
			if s, ok := StrictSchema(def.Parameters); ok {
				def.Parameters, def.Strict = s, true
			}
		}
		cr.Tools = append(cr.Tools, chatTool{Type: "function", Function: def})
	}
	if len(cr.Tools) > 0 {
		tc, err := m.toolChoice(o.ToolChoice, func(name string) any {
			return map[string]any{"type": "function", "function": map[string]string{"name": name}}
		})
		if err != nil {
			return nil, err
		}
		cr.ToolChoice = tc
		if !m.opts.NoParallelToolCallsField {
			cr.ParallelToolCalls = o.ParallelToolCalls
		}
	}
	if m.reasoning {
		cr.MaxCompletionTokens = o.MaxTokens
		cr.ReasoningEffort = cmp.Or(m.opts.ReasoningEffort, effort(o.ReasoningBudget))
	} else {
		cr.Temperature = o.Temperature
		if cr.Temperature == nil {
			cr.Temperature = m.opts.Temperature
		}
		if m.opts.LegacyMaxTokens {
			cr.MaxTokens = o.MaxTokens
		} else {
			cr.MaxCompletionTokens = o.MaxTokens
		}
		if m.opts.ReasoningEffort != "" {
			cr.ReasoningEffort = m.opts.ReasoningEffort
		}
	}
	return json.Marshal(&cr)
}

// convertMessage turns one neutral message into Chat Completions
// messages: tool results become one "tool" message each.
func (m *Model) convertMessage(msg *agents.Message, sendReasoning bool) ([]chatMessage, error) {
	var (
		out       []chatMessage
		text      strings.Builder
		parts     []contentPart
		multi     bool
		calls     []chatToolCall
		reasoning strings.Builder
	)
	for _, p := range msg.Parts {
		switch p.Type {
		case domain.PartText:
			text.WriteString(p.Text)
			parts = append(parts, contentPart{Type: "text", Text: p.Text})
		case domain.PartImage, domain.PartFile:
			if p.File == nil {
				continue
			}
			if strings.HasPrefix(p.File.MediaType, "image/") && (strings.HasPrefix(p.File.URI, "data:") || strings.HasPrefix(p.File.URI, "https://") || strings.HasPrefix(p.File.URI, "http://")) {
				parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: p.File.URI}})
				multi = true
			} else {
				note := fmt.Sprintf("[attached file %s (%s)]", cmp.Or(p.File.Name, p.File.ArtifactID, p.File.URI), p.File.MediaType)
				text.WriteString(note)
				parts = append(parts, contentPart{Type: "text", Text: note})
			}
		case domain.PartReasoning:
			if p.Reasoning != nil {
				reasoning.WriteString(p.Reasoning.Text)
			}
		case domain.PartToolCall:
			if p.ToolCall == nil {
				continue
			}
			args := string(p.ToolCall.Arguments)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			calls = append(calls, chatToolCall{ID: p.ToolCall.ID, Type: "function",
				Function: chatFunction{Name: p.ToolCall.Name, Arguments: args}})
		case domain.PartToolResult:
			r := p.ToolResult
			if r == nil {
				continue
			}
			content := r.Content
			if r.IsError && !strings.HasPrefix(strings.ToLower(content), "error") {
				content = "Error: " + content
			}
			out = append(out, chatMessage{Role: "tool", ToolCallID: r.CallID, Content: content})
		}
	}
	switch msg.Role {
	case domain.RoleTool:
		return out, nil
	case domain.RoleUser, domain.RoleSystem:
		if len(parts) == 0 && len(out) > 0 {
			return out, nil
		}
		role := string(msg.Role)
		if role == "system" && m.reasoning {
			role = "developer"
		}
		cm := chatMessage{Role: role, Content: text.String()}
		if multi {
			cm.Content = parts
		}
		return append(out, cm), nil
	case domain.RoleAssistant:
		cm := chatMessage{Role: "assistant", ToolCalls: calls}
		if text.Len() > 0 || len(calls) == 0 {
			cm.Content = text.String()
		}
		if sendReasoning {
			cm.ReasoningContent = reasoning.String()
		}
		return append([]chatMessage{cm}, out...), nil
	}
	return nil, fmt.Errorf("unknown role %q", msg.Role)
}

// Wire types of the response.

type chunkJSON struct {
	Choices []choiceJSON     `json:"choices"`
	Usage   *usageJSON       `json:"usage"`
	Error   *json.RawMessage `json:"error"`
}

type choiceJSON struct {
	Index int `json:"index"`
	Delta struct {
		Content          string         `json:"content"`
		ReasoningContent string         `json:"reasoning_content"`
		Reasoning        string         `json:"reasoning"`
		Refusal          string         `json:"refusal"`
		ToolCalls        []toolCallJSON `json:"tool_calls"`
		// Annotations are url_citation objects (search models).
		Annotations []json.RawMessage `json:"annotations"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

type toolCallJSON struct {
	Index    *int   `json:"index"`
	index    int    // storage for Index in the fast decoder
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	// PromptCacheHitTokens is DeepSeek's name for cached prompt tokens.
	PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"`
}

func (u *usageJSON) usage() domain.Usage {
	out := domain.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	if out.CachedTokens == 0 {
		out.CachedTokens = u.PromptCacheHitTokens
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	return out
}

// StopReason maps a Chat Completions finish_reason to the neutral stop
// reason.
func StopReason(finish string) agents.StopReason {
	switch finish {
	case "stop", "end_turn", "eos":
		return agents.StopEndTurn
	case "length", "max_tokens":
		return agents.StopMaxTokens
	case "tool_calls", "function_call":
		return agents.StopToolUse
	case "content_filter":
		return agents.StopContentFilter
	}
	return agents.StopOther
}
