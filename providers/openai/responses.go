package openai

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/internal/sse"
)

// The Responses API mode (Options.ResponsesAPI): POST /responses with
// store:false, the conversation resent as input items every turn, flat
// function tools, and reasoning items round-tripped through
// domain.Reasoning: Text is the reasoning summary, Signature the reasoning
// item's id and Opaque its encrypted_content (requested with include
// "reasoning.encrypted_content" for reasoning models).

type responsesRequest struct {
	Model             string           `json:"model"`
	Instructions      string           `json:"instructions,omitempty"`
	Input             []any            `json:"input"`
	Tools             []responsesTool  `json:"tools,omitempty"`
	ToolChoice        any              `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool            `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens   int              `json:"max_output_tokens,omitempty"`
	Temperature       *float64         `json:"temperature,omitempty"`
	Reasoning         *reasoningConfig `json:"reasoning,omitempty"`
	Include           []string         `json:"include,omitempty"`
	Store             bool             `json:"store"`
	Stream            bool             `json:"stream,omitempty"`
}

type reasoningConfig struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type inputMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type inputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	// Detail is required on input_image by the API reference ("low",
	// "high" or "auto"); it is always "auto" here.
	Detail string `json:"detail,omitempty"`
}

type functionCallItem struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type functionOutputItem struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

type reasoningItem struct {
	Type             string        `json:"type"`
	ID               string        `json:"id"`
	Summary          []summaryPart `json:"summary"`
	EncryptedContent string        `json:"encrypted_content,omitempty"`
}

type summaryPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// responsesBody encodes req for the Responses endpoint.
func (m *Model) responsesBody(req *agents.Request, stream bool) ([]byte, error) {
	o := req.Options
	rr := responsesRequest{Model: m.opts.Model, Instructions: req.System, Stream: stream, Input: []any{}}
	for i := range req.Messages {
		items, err := m.responsesItems(&req.Messages[i])
		if err != nil {
			return nil, fmt.Errorf("%s: message %d: %w", m.conn.provider, i, err)
		}
		rr.Input = append(rr.Input, items...)
	}
	for _, t := range req.Tools {
		tool := responsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Schema}
		if len(tool.Parameters) == 0 {
			tool.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if !m.opts.NonStrictTools {
			if s, ok := StrictSchema(tool.Parameters); ok {
				tool.Parameters, tool.Strict = s, true
			}
		}
		rr.Tools = append(rr.Tools, tool)
	}
	if len(rr.Tools) > 0 {
		tc, err := m.toolChoice(o.ToolChoice, func(name string) any {
			return map[string]string{"type": "function", "name": name}
		})
		if err != nil {
			return nil, err
		}
		rr.ToolChoice = tc
		rr.ParallelToolCalls = o.ParallelToolCalls
	}
	rr.MaxOutputTokens = o.MaxTokens
	if m.reasoning {
		rr.Reasoning = &reasoningConfig{Effort: cmp.Or(m.opts.ReasoningEffort, effort(o.ReasoningBudget)), Summary: "auto"}
		rr.Include = []string{"reasoning.encrypted_content"}
	} else {
		rr.Temperature = o.Temperature
		if rr.Temperature == nil {
			rr.Temperature = m.opts.Temperature
		}
	}
	return json.Marshal(&rr)
}

// responsesItems turns one neutral message into input items.
func (m *Model) responsesItems(msg *agents.Message) ([]any, error) {
	var (
		items []any
		parts []inputPart
		text  strings.Builder
		multi bool
	)
	flushText := func() {
		if len(parts) == 0 {
			return
		}
		role := string(msg.Role)
		if role == "system" {
			role = "developer"
		}
		if multi {
			items = append(items, inputMessage{Role: role, Content: parts})
		} else {
			items = append(items, inputMessage{Role: role, Content: text.String()})
		}
		parts, multi = nil, false
		text.Reset()
	}
	textType := "input_text"
	if msg.Role == domain.RoleAssistant {
		textType = "output_text"
	}
	for _, p := range msg.Parts {
		switch p.Type {
		case domain.PartText:
			text.WriteString(p.Text)
			parts = append(parts, inputPart{Type: textType, Text: p.Text})
		case domain.PartImage, domain.PartFile:
			if p.File == nil {
				continue
			}
			if strings.HasPrefix(p.File.MediaType, "image/") && msg.Role == domain.RoleUser &&
				(strings.HasPrefix(p.File.URI, "data:") || strings.HasPrefix(p.File.URI, "https://") || strings.HasPrefix(p.File.URI, "http://")) {
				parts = append(parts, inputPart{Type: "input_image", ImageURL: p.File.URI, Detail: "auto"})
				multi = true
			} else {
				note := fmt.Sprintf("[attached file %s (%s)]", cmp.Or(p.File.Name, p.File.ArtifactID, p.File.URI), p.File.MediaType)
				text.WriteString(note)
				parts = append(parts, inputPart{Type: textType, Text: note})
			}
		case domain.PartReasoning:
			r := p.Reasoning
			// Only reasoning items this API produced go back; they need
			// their id.
			if r == nil || r.Provider != m.conn.provider || r.Signature == "" {
				continue
			}
			flushText()
			it := reasoningItem{Type: "reasoning", ID: r.Signature, Summary: []summaryPart{}, EncryptedContent: string(r.Opaque)}
			if r.Text != "" {
				it.Summary = append(it.Summary, summaryPart{Type: "summary_text", Text: r.Text})
			}
			items = append(items, it)
		case domain.PartToolCall:
			if p.ToolCall == nil {
				continue
			}
			flushText()
			args := string(p.ToolCall.Arguments)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			items = append(items, functionCallItem{Type: "function_call", CallID: p.ToolCall.ID, Name: p.ToolCall.Name, Arguments: args})
		case domain.PartToolResult:
			if p.ToolResult == nil {
				continue
			}
			flushText()
			content := p.ToolResult.Content
			if p.ToolResult.IsError && !strings.HasPrefix(strings.ToLower(content), "error") {
				content = "Error: " + content
			}
			items = append(items, functionOutputItem{Type: "function_call_output", CallID: p.ToolResult.CallID, Output: content})
		}
	}
	flushText()
	if !msg.Role.Valid() {
		return nil, fmt.Errorf("unknown role %q", msg.Role)
	}
	return items, nil
}

// Wire types of Responses events and objects.

type responsesEvent struct {
	Type        string          `json:"type"`
	OutputIndex int             `json:"output_index"`
	ItemID      string          `json:"item_id"`
	Delta       string          `json:"delta"`
	Item        json.RawMessage `json:"item"`
	Response    *responseObject `json:"response"`
	Code        string          `json:"code"`
	Message     string          `json:"message"`
	// Annotation is the citation of response.output_text.annotation.added.
	Annotation json.RawMessage `json:"annotation"`
}

type responseObject struct {
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Output []json.RawMessage `json:"output"`
	Usage  *struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

type outputItem struct {
	Type             string        `json:"type"`
	ID               string        `json:"id"`
	CallID           string        `json:"call_id"`
	Name             string        `json:"name"`
	Arguments        string        `json:"arguments"`
	EncryptedContent *string       `json:"encrypted_content"`
	Summary          []summaryPart `json:"summary"`
	Status           string        `json:"status"`
	Content          []struct {
		Type        string            `json:"type"`
		Text        string            `json:"text"`
		Refusal     string            `json:"refusal"`
		Annotations []json.RawMessage `json:"annotations"`
	} `json:"content"`
}

func (r *responseObject) usage() domain.Usage {
	u := r.Usage
	return domain.Usage{PromptTokens: u.InputTokens, CachedTokens: u.InputTokensDetails.CachedTokens,
		CompletionTokens: u.OutputTokens, ReasoningTokens: u.OutputTokensDetails.ReasoningTokens,
		TotalTokens: cmp.Or(u.TotalTokens, u.InputTokens+u.OutputTokens)}
}

func (r *responseObject) stop(refusal bool) agents.StopReason {
	if r.Status == "incomplete" && r.IncompleteDetails != nil {
		switch r.IncompleteDetails.Reason {
		case "max_output_tokens":
			return agents.StopMaxTokens
		case "content_filter":
			return agents.StopContentFilter
		}
		return agents.StopOther
	}
	if refusal {
		return agents.StopRefusal
	}
	return agents.StopEndTurn
}

func (m *Model) responsesFailure(code, message string) *llmhttp.APIError {
	e := &llmhttp.APIError{Provider: m.conn.provider, Code: code, Type: "response_failed",
		Message: llmhttp.Redact(cmp.Or(message, "the response failed"))}
	switch code {
	case "server_error", "rate_limit_exceeded", "overloaded", "server_is_overloaded":
		e.Transient = true
	}
	return e
}

// reasoningChunk turns a finished reasoning item into a chunk carrying its
// id (Signature) and encrypted content (Opaque).
func (m *Model) reasoningChunk(index int, it *outputItem, withText bool) agents.Chunk {
	c := agents.Chunk{Type: agents.ChunkReasoning, Index: index, Provider: m.conn.provider, Signature: it.ID}
	if it.EncryptedContent != nil {
		c.Opaque = []byte(*it.EncryptedContent)
	}
	if withText {
		for _, s := range it.Summary {
			c.Text += s.Text
		}
	}
	return c
}

// decodeResponses reads a Responses event stream until its terminal event.
func (m *Model) decodeResponses(resp *http.Response, yield func(agents.Chunk) bool) error {
	provider := m.conn.provider
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		return m.decodeResponsesWhole(resp, yield)
	}
	tail := llmhttp.NewTailReader(resp.Body, false)
	r := sse.NewReader(tail)
	refusal := false
	// calls tracks function_call items by output index: true once the
	// item is done and complete.
	calls := map[int]bool{}
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, sse.ErrEventTooLarge) {
				return &llmhttp.ConnError{Provider: provider, Op: "decode response", Err: err}
			}
			return llmhttp.ReadError(provider, err)
		}
		var e responsesEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			if llmhttp.CutTail(tail, r) {
				return llmhttp.CutTailError(provider, err)
			}
			return &llmhttp.ConnError{Provider: provider, Op: "decode response", Err: fmt.Errorf("malformed stream event: %w", err)}
		}
		typ := cmp.Or(e.Type, ev.Name)
		var out []agents.Chunk
		switch typ {
		case "response.output_text.delta":
			out = append(out, agents.TextChunk(e.Delta))
		case "response.refusal.delta":
			refusal = true
			out = append(out, agents.TextChunk(e.Delta))
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			out = append(out, agents.Chunk{Type: agents.ChunkReasoning, Index: e.OutputIndex, Text: e.Delta, Provider: provider})
		case "response.output_item.added", "response.output_item.done":
			var it outputItem
			if err := json.Unmarshal(e.Item, &it); err != nil {
				return &llmhttp.ConnError{Provider: provider, Op: "decode response", Err: fmt.Errorf("malformed output item: %w", err)}
			}
			switch {
			case it.Type == "function_call" && typ == "response.output_item.added":
				calls[e.OutputIndex] = false
				out = append(out, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{
					Index: e.OutputIndex, ID: it.CallID, Name: it.Name, Arguments: it.Arguments}})
			case it.Type == "function_call":
				calls[e.OutputIndex] = it.Status == "" || it.Status == "completed"
			case it.Type == "reasoning" && typ == "response.output_item.done":
				out = append(out, m.reasoningChunk(e.OutputIndex, &it, false))
			case typ == "response.output_item.done":
				if item := m.outputItem(&it, e.Item); item != nil {
					out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: item})
				}
			}
		case "response.output_text.annotation.added":
			if len(e.Annotation) > 0 {
				out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: m.annotationItem(e.Annotation)})
			}
		case "response.function_call_arguments.delta":
			out = append(out, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{Index: e.OutputIndex, Arguments: e.Delta}})
		case "response.completed", "response.incomplete":
			if e.Response == nil {
				return &llmhttp.ConnError{Provider: provider, Op: "decode response", Err: errors.New(typ + " without a response")}
			}
			if e.Response.Status == "incomplete" {
				out = cutCalls(out, calls)
			}
			if e.Response.Usage != nil {
				out = append(out, agents.Chunk{Type: agents.ChunkUsage, Usage: e.Response.usage()})
			}
			out = append(out, agents.Chunk{Type: agents.ChunkStop, Stop: e.Response.stop(refusal)})
			for _, c := range out {
				if !yield(c) {
					return nil
				}
			}
			return nil
		case "response.failed":
			if e.Response != nil && e.Response.Error != nil {
				return m.responsesFailure(e.Response.Error.Code, e.Response.Error.Message)
			}
			return m.responsesFailure("", "")
		case "error":
			return m.responsesFailure(e.Code, e.Message)
		}
		for _, c := range out {
			if !yield(c) {
				return nil
			}
		}
	}
}

// decodeResponsesWhole reads a non-streamed response object.
func (m *Model) decodeResponsesWhole(resp *http.Response, yield func(agents.Chunk) bool) error {
	provider := m.conn.provider
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return llmhttp.ReadError(provider, err)
	}
	var r struct {
		responseObject
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return &llmhttp.ConnError{Provider: provider, Op: "decode response", Err: fmt.Errorf("malformed response: %w", err)}
	}
	if r.Error != nil {
		return m.responsesFailure(r.Error.Code, r.Error.Message)
	}
	var out []agents.Chunk
	refusal := false
	calls := map[int]bool{}
	for i, raw := range r.Output {
		var it outputItem
		if json.Unmarshal(raw, &it) != nil {
			// An item of an unexpected shape: carried, not dropped.
			out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: &agents.ProviderItem{Provider: provider,
				Kind: agents.ItemUnsupported, Raw: bytes.Clone(raw)}})
			continue
		}
		switch it.Type {
		case "reasoning":
			out = append(out, m.reasoningChunk(i, &it, true))
		case "message":
			for _, c := range it.Content {
				if c.Refusal != "" {
					refusal = true
				}
				if t := c.Text + c.Refusal; t != "" {
					out = append(out, agents.TextChunk(t))
				}
				for _, a := range c.Annotations {
					out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: m.annotationItem(a)})
				}
			}
		case "function_call":
			calls[i] = it.Status == "" || it.Status == "completed"
			out = append(out, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{
				Index: i, ID: it.CallID, Name: it.Name, Arguments: it.Arguments}})
		default:
			if item := m.outputItem(&it, raw); item != nil {
				out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: item})
			}
		}
	}
	if r.Status == "incomplete" {
		out = cutCalls(out, calls)
	}
	if r.Usage != nil {
		out = append(out, agents.Chunk{Type: agents.ChunkUsage, Usage: r.usage()})
	}
	out = append(out, agents.Chunk{Type: agents.ChunkStop, Stop: r.stop(refusal)})
	for _, c := range out {
		if !yield(c) {
			return nil
		}
	}
	return nil
}

// cutCalls marks the function calls that never completed (an incomplete
// response: the output token limit or the content filter cut them)
// incomplete, so agents.Accumulator drops them
// instead of running broken arguments.
func cutCalls(out []agents.Chunk, calls map[int]bool) []agents.Chunk {
	idx := make([]int, 0, len(calls))
	for i, done := range calls {
		if !done {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	for _, i := range idx {
		out = append(out, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{Index: i, Incomplete: true}})
	}
	return out
}

// outputItem turns a finished output item that is not a message, a
// reasoning item or a function call into a provider item: built-in tool
// calls (web_search_call, file_search_call, code_interpreter_call,
// image_generation_call, mcp_call, ...) with their results, and anything
// newer as unsupported. raw is the item's JSON.
func (m *Model) outputItem(it *outputItem, raw json.RawMessage) *agents.ProviderItem {
	switch it.Type {
	case "message", "reasoning", "function_call", "":
		return nil
	}
	item := &agents.ProviderItem{Provider: m.conn.provider, Type: it.Type, ID: it.ID, Raw: bytes.Clone(raw)}
	if strings.HasSuffix(it.Type, "_call") {
		item.Kind = agents.ItemServerToolCall
		item.Name = cmp.Or(it.Name, strings.TrimSuffix(it.Type, "_call"))
		var a struct {
			Action json.RawMessage `json:"action"`
		}
		if json.Unmarshal(raw, &a) == nil && len(a.Action) > 0 {
			item.Input = a.Action
		} else if it.Arguments != "" && json.Valid([]byte(it.Arguments)) {
			item.Input = json.RawMessage(it.Arguments)
		}
		return item
	}
	item.Kind = agents.ItemUnsupported
	return item
}

// annotationItem turns an output_text annotation (url_citation,
// file_citation, container_file_citation, file_path) into a citation item.
func (m *Model) annotationItem(raw json.RawMessage) *agents.ProviderItem {
	var a annotationJSON
	_ = json.Unmarshal(raw, &a) // an unreadable annotation is still carried raw
	return a.item(m.conn.provider, raw)
}
