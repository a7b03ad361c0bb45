package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// MaxCacheBreakpoints is the number of cache_control markers the Messages
// API accepts in one request.
const MaxCacheBreakpoints = 4

// minThinkingBudget is the smallest thinking budget the API accepts.
const minThinkingBudget = 1024

// encodeOptions are the model-level settings an encoding needs.
type encodeOptions struct {
	model            string
	defaultMaxTokens int
	cacheTTL         string
	thinking         ThinkingMode
}

// errEncode marks request problems found before anything is sent.
var errEncode = errors.New("anthropic: invalid request")

// encodeRequest turns a provider-neutral request into the Messages API
// body (streaming).
func encodeRequest(req *agents.Request, o encodeOptions) (*wireRequest, error) {
	w := &wireRequest{Model: o.model, Stream: true, Temperature: req.Options.Temperature}
	w.MaxTokens = req.Options.MaxTokens
	if w.MaxTokens <= 0 {
		w.MaxTokens = o.defaultMaxTokens
	}
	if w.MaxTokens <= 0 {
		w.MaxTokens = 4096
	}
	cc := func() *wireCacheControl { return &wireCacheControl{Type: "ephemeral", TTL: o.cacheTTL} }

	// Breakpoints: the system prefix first, then the latest message
	// indexes (a later breakpoint covers more of the prompt) up to the
	// API's limit.
	budget := MaxCacheBreakpoints
	systemBreak := req.Cache.SystemPrefix > 0 && req.System != ""
	if systemBreak {
		budget--
	}
	marked := map[int]bool{}
	hints := slices.Clone(req.Cache.Messages)
	slices.Sort(hints)
	hints = slices.Compact(hints)
	for i := len(hints) - 1; i >= 0 && budget > 0; i-- {
		if hints[i] >= 0 && hints[i] < len(req.Messages) {
			marked[hints[i]] = true
			budget--
		}
	}

	// System prompt, split at the cache prefix.
	if req.System != "" {
		if systemBreak {
			cut := min(req.Cache.SystemPrefix, len(req.System))
			for cut > 0 && cut < len(req.System) && !utf8.RuneStart(req.System[cut]) {
				cut--
			}
			head, tail := req.System[:cut], req.System[cut:]
			if head != "" {
				w.System = append(w.System, wireBlock{Type: "text", Text: &head, CacheControl: cc()})
			}
			if tail != "" {
				w.System = append(w.System, wireBlock{Type: "text", Text: &tail})
			}
		} else {
			s := req.System
			w.System = append(w.System, wireBlock{Type: "text", Text: &s})
		}
	}

	for i, m := range req.Messages {
		role, blocks, err := encodeMessage(m)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %v", errEncode, i, err)
		}
		if role == "system" {
			// A system message in the conversation: appended to the system
			// prompt, after any cached prefix.
			for _, b := range blocks {
				if b.Text != nil {
					w.System = append(w.System, b)
				}
			}
			continue
		}
		if len(blocks) == 0 {
			continue
		}
		if marked[i] {
			blocks[len(blocks)-1].CacheControl = cc()
		}
		if n := len(w.Messages); n > 0 && w.Messages[n-1].Role == role {
			// The API wants alternating roles: merge.
			w.Messages[n-1].Content = append(w.Messages[n-1].Content, blocks...)
			continue
		}
		w.Messages = append(w.Messages, wireMessage{Role: role, Content: blocks})
	}
	for i := range w.Messages {
		if w.Messages[i].Role == "user" {
			// Tool results must come before anything else in a user turn.
			slices.SortStableFunc(w.Messages[i].Content, func(a, b wireBlock) int {
				return boolRank(a.Type != "tool_result") - boolRank(b.Type != "tool_result")
			})
		}
	}

	for _, t := range req.Tools {
		schema := bytes.TrimSpace(t.Schema)
		if len(schema) == 0 {
			schema = []byte(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(schema) {
			return nil, fmt.Errorf("%w: tool %q: schema is not valid JSON", errEncode, t.Name)
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}

	budgetTokens := req.Options.ReasoningBudget
	if budgetTokens > 0 && o.thinking == ThinkingAdaptive {
		w.Thinking = &wireThinking{Type: "adaptive"}
	} else if budgetTokens > 0 {
		budgetTokens = max(budgetTokens, minThinkingBudget)
		if budgetTokens >= w.MaxTokens {
			return nil, fmt.Errorf("%w: reasoning budget %d must be below max_tokens %d (raise Options.MaxTokens)",
				errEncode, budgetTokens, w.MaxTokens)
		}
		w.Thinking = &wireThinking{Type: "enabled", BudgetTokens: budgetTokens}
	}

	if len(w.Tools) > 0 {
		tc, err := encodeToolChoice(req.Options, w.Thinking != nil)
		if err != nil {
			return nil, err
		}
		w.ToolChoice = tc
	}
	return w, nil
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func encodeToolChoice(o agents.Options, thinking bool) (*wireToolChoice, error) {
	tc := &wireToolChoice{}
	switch o.ToolChoice.Mode {
	case "", agents.ToolChoiceAuto:
		tc.Type = "auto"
	case agents.ToolChoiceNone:
		return &wireToolChoice{Type: "none"}, nil
	case agents.ToolChoiceRequired:
		tc.Type = "any"
	case agents.ToolChoiceTool:
		if o.ToolChoice.Name == "" {
			return nil, fmt.Errorf("%w: tool choice %q needs a tool name", errEncode, o.ToolChoice.Mode)
		}
		tc.Type, tc.Name = "tool", o.ToolChoice.Name
	default:
		return nil, fmt.Errorf("%w: unknown tool choice %q", errEncode, o.ToolChoice.Mode)
	}
	if thinking && tc.Type != "auto" {
		return nil, fmt.Errorf("%w: with a reasoning budget (extended thinking) the tool choice can only be auto or none, not %q",
			errEncode, o.ToolChoice.Mode)
	}
	if o.ParallelToolCalls != nil && !*o.ParallelToolCalls {
		tc.DisableParallelToolUse = true
	}
	return tc, nil
}

// encodeMessage returns the API role and content blocks of m.
func encodeMessage(m agents.Message) (string, []wireBlock, error) {
	var role string
	switch m.Role {
	case domain.RoleUser, domain.RoleTool:
		role = "user"
	case domain.RoleAssistant:
		role = "assistant"
	case domain.RoleSystem:
		role = "system"
	default:
		return "", nil, fmt.Errorf("unknown role %q", m.Role)
	}
	blocks := make([]wireBlock, 0, len(m.Parts))
	for _, p := range m.Parts {
		switch p.Type {
		case domain.PartText:
			if strings.TrimSpace(p.Text) == "" {
				continue // the API rejects empty text blocks
			}
			t := p.Text
			blocks = append(blocks, wireBlock{Type: "text", Text: &t})
		case domain.PartReasoning:
			if role != "assistant" || p.Reasoning == nil {
				continue
			}
			r := p.Reasoning
			if r.Provider != "" && !wireOpaque.Owns(r.Provider) {
				continue // another provider's reasoning cannot be verified here
			}
			switch {
			case len(r.Opaque) > 0:
				blocks = append(blocks, wireBlock{Type: "redacted_thinking", Data: wireOpaque.ToWire(r.Opaque, r.Provider)})
			case r.Signature != "":
				text, sig := r.Text, r.Signature
				blocks = append(blocks, wireBlock{Type: "thinking", Thinking: &text, Signature: &sig})
			}
			// Unsigned reasoning would be rejected: dropped.
		case domain.PartToolCall:
			if p.ToolCall == nil {
				continue
			}
			if role != "assistant" {
				return "", nil, fmt.Errorf("tool call %q outside an assistant message", p.ToolCall.ID)
			}
			args := bytes.TrimSpace(p.ToolCall.Arguments)
			if len(args) == 0 || args[0] != '{' || !json.Valid(args) {
				// The API wants an object; anything else (invalid JSON the
				// model produced) goes back as {}.
				args = []byte("{}")
			}
			blocks = append(blocks, wireBlock{Type: "tool_use", ID: p.ToolCall.ID, Name: p.ToolCall.Name, Input: args})
		case domain.PartToolResult:
			if p.ToolResult == nil {
				continue
			}
			if role != "user" {
				return "", nil, fmt.Errorf("tool result %q in an assistant message", p.ToolResult.CallID)
			}
			c := p.ToolResult.Content
			blocks = append(blocks, wireBlock{Type: "tool_result", ToolUseID: p.ToolResult.CallID,
				Content: &c, IsError: p.ToolResult.IsError})
		case domain.PartImage, domain.PartFile:
			if p.File == nil {
				continue
			}
			blocks = append(blocks, encodeFile(p.File))
		default:
			return "", nil, fmt.Errorf("unknown part type %q", p.Type)
		}
	}
	return role, blocks, nil
}

// encodeFile sends images as image blocks (data: URIs inline, http(s)
// URLs by reference) and any other file as a text reference.
func encodeFile(f *domain.FileRef) wireBlock {
	if strings.HasPrefix(f.MediaType, "image/") {
		if rest, ok := strings.CutPrefix(f.URI, "data:"); ok {
			if meta, data, ok := strings.Cut(rest, ","); ok && strings.HasSuffix(meta, ";base64") {
				return wireBlock{Type: "image", Source: &wireSource{Type: "base64",
					MediaType: strings.TrimSuffix(meta, ";base64"), Data: data}}
			}
		}
		if strings.HasPrefix(f.URI, "https://") || strings.HasPrefix(f.URI, "http://") {
			return wireBlock{Type: "image", Source: &wireSource{Type: "url", URL: f.URI}}
		}
	}
	ref := f.Name
	if ref == "" {
		ref = f.ArtifactID
	}
	t := fmt.Sprintf("[attached file %s (%s)]", ref, f.MediaType)
	return wireBlock{Type: "text", Text: &t}
}
