package context

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// Counter counts tokens of a text.
type Counter interface {
	Count(s string) int
}

// Renderer lays compiled blocks out for one provider family and says how
// they are counted. The block order it receives is final (kind, then
// position, then hash); a renderer decides placement, merging and the
// prompt-cache hints, and leaves the wire encoding to the provider
// package.
//
// Token accounting: a request's tokens are RequestFraming plus, for each
// block, the count of its text (of each part separately for message
// blocks; cached by block hash under Name()) plus BlockFraming(block); the
// total is then multiplied by 1+Margin().
type Renderer interface {
	// Name identifies the renderer and its tokenizer ("openai/o200k_base").
	Name() string
	// Counter counts text tokens.
	Counter() Counter
	// Margin is the safety margin for inexact counts (0 when exact).
	Margin() float64
	// BlockFraming returns the tokens the layout adds around a block.
	BlockFraming(b *Block) int
	// RequestFraming returns the tokens a request adds once.
	RequestFraming(s Sections) int
	// Render builds the request.
	Render(blocks []Block) (*agents.Request, error)
}

// SystemSeparator joins system-prompt sections. Its leading space keeps
// each section's tokens independent of its neighbours (with o200k_base and
// cl100k_base, punctuation at the end of a section would otherwise merge
// with the newlines), so per-block counts add up exactly.
const SystemSeparator = " \n\n"

// Safety margins of inexact token counts (o200k_base stands in for the
// provider's tokenizer). They apply until a provider's reported prompt size
// calibrates the estimate (see WithCalibration).
const (
	// DefaultAnthropicMargin: Claude's tokenizer yields up to ~25% more
	// tokens than o200k_base on English prose and code.
	DefaultAnthropicMargin = 0.25
	// DefaultGeminiMargin: Gemini's tokenizer is close to o200k_base.
	DefaultGeminiMargin = 0.15
	// DefaultCompatibleMargin applies to OpenAI-compatible servers that run
	// other model families (Ollama, vLLM).
	DefaultCompatibleMargin = 0.25
)

// Framing token counts, from OpenAI's published counting recipe for chat
// messages (3 per message, 3 priming the reply); tool definitions and calls
// are not published and use conservative constants.
const (
	framingPerMessage = 3
	framingReply      = 3
	framingPerTool    = 8
	framingPerCall    = 4
)

// Sections says which text sections a request has: the stable prefix
// (pinned and non-tool reference blocks) and the volatile context (memory,
// state, tool output).
type Sections struct {
	Prefix   bool
	Volatile bool
}

// isSystemBlock reports whether b is rendered as a text section (of the
// system prompt, or of the context message with contextLast).
func isSystemBlock(b *Block) bool {
	switch b.Kind {
	case KindPinned, KindMemory, KindState, KindToolOutput:
		return true
	case KindReference:
		return !isToolSchema(b)
	}
	return false
}

func isToolSchema(b *Block) bool {
	_, ok := b.Payload.(ToolSchema)
	return ok
}

// layoutStyle captures what differs between providers.
type layoutStyle struct {
	// toolRole is the role of tool-result messages.
	toolRole domain.Role
	// splitResults sends one message per tool result (OpenAI role=tool).
	splitResults bool
	// merge joins consecutive messages of the same role.
	merge bool
	// userFirst makes sure the first message is the user's.
	userFirst bool
	// contextLast moves memory, state and tool output from the system
	// prompt into a user message at the end of the request (merged into
	// the last user message when merge is set).
	contextLast bool
}

const continuedNote = "[Earlier conversation omitted.]"

// contextHeading starts the context message of ContextAfterHistory.
const contextHeading = contextTitle + SystemSeparator

const contextTitle = "Context for this question:"

type origin uint8

const (
	fromHistory origin = iota + 1
	fromTurn
)

func blockMessage(b *Block) agents.Message {
	switch p := b.Payload.(type) {
	case HistoryMessage:
		return agents.Message{Role: p.Role, Parts: p.Parts}
	case Turn:
		return agents.Message{Role: domain.RoleUser, Parts: p.Parts}
	}
	return agents.UserMessage(b.Text())
}

// wireMessages returns how many messages block b becomes and how many tool
// calls it carries, under style.
func wireMessages(b *Block, style layoutStyle) (msgs, calls int) {
	m, ok := b.Payload.(HistoryMessage)
	if !ok {
		return 1, 0
	}
	results := 0
	for _, p := range m.Parts {
		switch p.Type {
		case domain.PartToolCall:
			calls++
		case domain.PartToolResult:
			results++
		}
	}
	if style.splitResults && m.Role == domain.RoleTool && results > 1 {
		return results, calls
	}
	return 1, calls
}

func styleBlockFraming(b *Block, style layoutStyle, sepTokens int) int {
	switch {
	case isToolSchema(b):
		return framingPerTool
	case isSystemBlock(b):
		return sepTokens
	}
	msgs, calls := wireMessages(b, style)
	return msgs*framingPerMessage + calls*framingPerCall
}

func styleRequestFraming(s Sections, style layoutStyle, sepTokens, headingTokens int) int {
	// Each text section is framed as a message, minus the separator its
	// first block counted but does not have.
	sections := 0
	switch {
	case style.contextLast:
		sections = boolRank(s.Prefix) + boolRank(s.Volatile)
		if s.Volatile {
			// The heading of the context message.
			return framingReply + sections*(framingPerMessage-sepTokens) + headingTokens + sepTokens
		}
	case s.Prefix || s.Volatile:
		sections = 1
	}
	return framingReply + sections*(framingPerMessage-sepTokens)
}

// layout renders blocks with style. It fills Request.Cache: SystemPrefix
// ends after the pinned and reference sections, and message breakpoints
// follow the last history message and, while a run is in progress (the
// turn has steps), the last message.
func layout(blocks []Block, style layoutStyle) (*agents.Request, error) {
	req := &agents.Request{}
	var sys, volatile strings.Builder
	prefixEnd := -1
	var msgs []agents.Message
	var origins []origin
	turnBlocks := 0
	for i := range blocks {
		b := &blocks[i]
		if !b.valid() {
			return nil, fmt.Errorf("%w: block %d was not made by a codec", ErrInvalidBlock, i)
		}
		switch {
		case isToolSchema(b):
			s := b.Payload.(ToolSchema)
			req.Tools = append(req.Tools, agents.ToolSpec{Name: s.Name, Description: s.Description, Schema: s.Schema})
		case isSystemBlock(b):
			if b.Text() == "" {
				continue
			}
			w := &sys
			if b.Kind > KindReference {
				if style.contextLast {
					w = &volatile
				} else if prefixEnd < 0 {
					prefixEnd = sys.Len()
				}
			}
			if w.Len() > 0 {
				w.WriteString(SystemSeparator)
			}
			w.WriteString(b.Text())
		default:
			o := fromHistory
			if b.Kind == KindTurn {
				o = fromTurn
				turnBlocks++
			}
			msgs = append(msgs, blockMessage(b))
			origins = append(origins, o)
		}
	}
	req.System = sys.String()
	switch {
	case prefixEnd < 0:
		req.Cache.SystemPrefix = len(req.System)
	case prefixEnd > 0 && prefixEnd < len(req.System):
		req.Cache.SystemPrefix = prefixEnd + len(SystemSeparator)
	}
	msgs, origins = dropOrphanResults(msgs, origins)
	msgs, origins = applyStyle(msgs, origins, style)
	last := len(msgs) - 1 // the last message before the context message
	if volatile.Len() > 0 {
		ctxText := contextHeading + volatile.String()
		if n := len(msgs); style.merge && n > 0 && msgs[n-1].Role == domain.RoleUser {
			msgs[n-1].Parts = append(slices.Clip(msgs[n-1].Parts), domain.TextPart(ctxText))
			last = -1 // the context joined the last message: no breakpoint on it
		} else {
			msgs = append(msgs, agents.UserMessage(ctxText))
			origins = append(origins, fromTurn)
		}
	}
	lastHistory := -1
	for i, o := range origins {
		if o == fromHistory {
			lastHistory = i
		}
	}
	if lastHistory >= 0 {
		req.Cache.Messages = append(req.Cache.Messages, lastHistory)
	}
	if turnBlocks > 1 && last > lastHistory {
		req.Cache.Messages = append(req.Cache.Messages, last)
	}
	req.Messages = msgs
	return req, nil
}

// dropOrphanResults removes tool results whose call is not in an earlier
// message (left behind by truncation), and messages left empty.
func dropOrphanResults(msgs []agents.Message, origins []origin) ([]agents.Message, []origin) {
	calls := map[string]bool{}
	outM, outO := msgs[:0:0], origins[:0:0]
	for i, m := range msgs {
		orphan := false
		for _, p := range m.Parts {
			if p.Type == domain.PartToolCall {
				calls[p.ToolCall.ID] = true
			}
			if p.Type == domain.PartToolResult && !calls[p.ToolResult.CallID] {
				orphan = true
			}
		}
		if orphan {
			kept := make([]domain.Part, 0, len(m.Parts))
			for _, p := range m.Parts {
				if p.Type != domain.PartToolResult || calls[p.ToolResult.CallID] {
					kept = append(kept, p)
				}
			}
			if len(kept) == 0 {
				continue
			}
			m.Parts = kept
		}
		outM = append(outM, m)
		outO = append(outO, origins[i])
	}
	return outM, outO
}

func applyStyle(msgs []agents.Message, origins []origin, style layoutStyle) ([]agents.Message, []origin) {
	outM := make([]agents.Message, 0, len(msgs)+1)
	outO := make([]origin, 0, len(msgs)+1)
	for i, m := range msgs {
		o := origins[i]
		if m.Role == domain.RoleTool {
			m.Role = style.toolRole
		}
		if style.splitResults && m.Role == domain.RoleTool && len(m.Parts) > 1 {
			for _, p := range m.Parts {
				outM = append(outM, agents.Message{Role: m.Role, Parts: []domain.Part{p}})
				outO = append(outO, o)
			}
			continue
		}
		if n := len(outM); style.merge && n > 0 && outM[n-1].Role == m.Role {
			parts := make([]domain.Part, 0, len(outM[n-1].Parts)+len(m.Parts))
			parts = append(parts, outM[n-1].Parts...)
			parts = append(parts, m.Parts...)
			if m.Role == domain.RoleUser {
				// Tool results lead a user message.
				slices.SortStableFunc(parts, func(a, b domain.Part) int {
					return boolRank(a.Type != domain.PartToolResult) - boolRank(b.Type != domain.PartToolResult)
				})
			}
			outM[n-1].Parts = parts
			outO[n-1] = max(outO[n-1], o)
			continue
		}
		outM = append(outM, m)
		outO = append(outO, o)
	}
	if style.userFirst && len(outM) > 0 && outM[0].Role != domain.RoleUser {
		outM = slices.Insert(outM, 0, agents.UserMessage(continuedNote))
		outO = slices.Insert(outO, 0, fromHistory)
	}
	return outM, outO
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// OpenAIRenderer lays requests out for OpenAI chat models and
// OpenAI-compatible servers: the system prompt becomes the system message
// (the provider sends it as "developer" to reasoning models), each tool
// result its own role=tool message carrying tool_call_id. Counts are exact
// with the model's tiktoken encoding when SafetyMargin is 0.
type OpenAIRenderer struct {
	Tokenizer *Tokenizer
	// SafetyMargin inflates counts for servers whose models use another
	// tokenizer; 0 for OpenAI models.
	SafetyMargin float64
	// ContextAfterHistory moves memory, state and tool output out of the
	// system prompt into a user message at the end of the request (after
	// the turn and this run's steps), so they no longer sit in front of
	// the history: a new question with new recipes, hits or state keeps
	// the whole conversation in the provider's prompt cache, at the price
	// of re-sending those sections uncached each call. The default
	// (false) renders kinds in their declared order.
	ContextAfterHistory bool
}

// NewOpenAIRenderer returns the exact renderer for an OpenAI model name
// (o200k_base for gpt-4o and newer and the o-series, cl100k_base for older
// models).
func NewOpenAIRenderer(model string) (*OpenAIRenderer, error) {
	t, err := NewTokenizer(EncodingForModel(model))
	if err != nil {
		return nil, err
	}
	return &OpenAIRenderer{Tokenizer: t}, nil
}

var openAIStyle = layoutStyle{toolRole: domain.RoleTool, splitResults: true}

// Name returns "openai/" plus the encoding.
func (r *OpenAIRenderer) Name() string { return "openai/" + string(r.Tokenizer.Encoding()) }

// Counter returns the tokenizer.
func (r *OpenAIRenderer) Counter() Counter { return r.Tokenizer }

// Margin returns SafetyMargin.
func (r *OpenAIRenderer) Margin() float64 { return r.SafetyMargin }

// BlockFraming implements Renderer.
func (r *OpenAIRenderer) BlockFraming(b *Block) int {
	return styleBlockFraming(b, r.style(), r.Tokenizer.sep)
}

// RequestFraming implements Renderer.
func (r *OpenAIRenderer) RequestFraming(s Sections) int {
	return styleRequestFraming(s, r.style(), r.Tokenizer.sep, r.Tokenizer.heading)
}

// Render implements Renderer.
func (r *OpenAIRenderer) Render(blocks []Block) (*agents.Request, error) {
	return layout(blocks, r.style())
}

func (r *OpenAIRenderer) style() layoutStyle {
	s := openAIStyle
	s.contextLast = r.ContextAfterHistory
	return s
}

// AnthropicRenderer lays requests out for Anthropic's Messages API: the
// system prompt is top-level, tool results are tool_result blocks leading
// the next user message, consecutive same-role messages are merged and the
// first message is the user's. Cache hints mark the end of the pinned and
// reference prefix, the last history message and, during a run, the last
// message: the provider turns them into cache_control breakpoints.
// Counts are o200k_base estimates inflated by SafetyMargin.
type AnthropicRenderer struct {
	Tokenizer    *Tokenizer
	SafetyMargin float64
	// ContextAfterHistory moves memory, state and tool output out of the
	// system prompt into a user message at the end of the request (after
	// the turn and this run's steps), so they no longer sit in front of
	// the history: a new question with new recipes, hits or state keeps
	// the whole conversation in the provider's prompt cache, at the price
	// of re-sending those sections uncached each call. The default
	// (false) renders kinds in their declared order.
	ContextAfterHistory bool
}

// NewAnthropicRenderer returns an AnthropicRenderer with o200k_base and
// DefaultAnthropicMargin.
func NewAnthropicRenderer() (*AnthropicRenderer, error) {
	t, err := NewTokenizer(O200kBase)
	if err != nil {
		return nil, err
	}
	return &AnthropicRenderer{Tokenizer: t, SafetyMargin: DefaultAnthropicMargin}, nil
}

var anthropicStyle = layoutStyle{toolRole: domain.RoleUser, merge: true, userFirst: true}

// Name returns "anthropic/o200k_base".
func (r *AnthropicRenderer) Name() string { return "anthropic/" + string(r.Tokenizer.Encoding()) }

// Counter returns the tokenizer.
func (r *AnthropicRenderer) Counter() Counter { return r.Tokenizer }

// Margin returns SafetyMargin.
func (r *AnthropicRenderer) Margin() float64 { return r.SafetyMargin }

// BlockFraming implements Renderer.
func (r *AnthropicRenderer) BlockFraming(b *Block) int {
	return styleBlockFraming(b, r.style(), r.Tokenizer.sep)
}

// RequestFraming implements Renderer.
func (r *AnthropicRenderer) RequestFraming(s Sections) int {
	return styleRequestFraming(s, r.style(), r.Tokenizer.sep, r.Tokenizer.heading)
}

// Render implements Renderer.
func (r *AnthropicRenderer) Render(blocks []Block) (*agents.Request, error) {
	return layout(blocks, r.style())
}

func (r *AnthropicRenderer) style() layoutStyle {
	s := anthropicStyle
	s.contextLast = r.ContextAfterHistory
	return s
}

// GeminiRenderer lays requests out for Gemini's generateContent: the system
// prompt becomes systemInstruction, tool calls and results become
// functionCall and functionResponse parts (results in a user turn, same
// order as the calls), consecutive same-role contents are merged and the
// first is the user's. Counts are o200k_base estimates inflated by
// SafetyMargin.
type GeminiRenderer struct {
	Tokenizer    *Tokenizer
	SafetyMargin float64
	// ContextAfterHistory moves memory, state and tool output out of the
	// system prompt into a user message at the end of the request (after
	// the turn and this run's steps), so they no longer sit in front of
	// the history: a new question with new recipes, hits or state keeps
	// the whole conversation in the provider's prompt cache, at the price
	// of re-sending those sections uncached each call. The default
	// (false) renders kinds in their declared order.
	ContextAfterHistory bool
}

// NewGeminiRenderer returns a GeminiRenderer with o200k_base and
// DefaultGeminiMargin.
func NewGeminiRenderer() (*GeminiRenderer, error) {
	t, err := NewTokenizer(O200kBase)
	if err != nil {
		return nil, err
	}
	return &GeminiRenderer{Tokenizer: t, SafetyMargin: DefaultGeminiMargin}, nil
}

var geminiStyle = layoutStyle{toolRole: domain.RoleUser, merge: true, userFirst: true}

// Name returns "gemini/o200k_base".
func (r *GeminiRenderer) Name() string { return "gemini/" + string(r.Tokenizer.Encoding()) }

// Counter returns the tokenizer.
func (r *GeminiRenderer) Counter() Counter { return r.Tokenizer }

// Margin returns SafetyMargin.
func (r *GeminiRenderer) Margin() float64 { return r.SafetyMargin }

// BlockFraming implements Renderer.
func (r *GeminiRenderer) BlockFraming(b *Block) int {
	return styleBlockFraming(b, r.style(), r.Tokenizer.sep)
}

// RequestFraming implements Renderer.
func (r *GeminiRenderer) RequestFraming(s Sections) int {
	return styleRequestFraming(s, r.style(), r.Tokenizer.sep, r.Tokenizer.heading)
}

// Render implements Renderer.
func (r *GeminiRenderer) Render(blocks []Block) (*agents.Request, error) {
	return layout(blocks, r.style())
}

func (r *GeminiRenderer) style() layoutStyle {
	s := geminiStyle
	s.contextLast = r.ContextAfterHistory
	return s
}

// RendererFor returns the renderer for a model: exact OpenAI counting for
// provider "openai" and "azure" (and "scripted", the offline test model),
// Anthropic and Gemini layouts for "anthropic" and "gemini"/"google", and
// the OpenAI layout with DefaultCompatibleMargin for other
// OpenAI-compatible servers ("ollama", "vllm", ...).
func RendererFor(info agents.ModelInfo) (Renderer, error) {
	switch strings.ToLower(info.Provider) {
	case "anthropic":
		return NewAnthropicRenderer()
	case "gemini", "google":
		return NewGeminiRenderer()
	case "openai", "azure", "scripted", "":
		return NewOpenAIRenderer(info.Name)
	}
	r, err := NewOpenAIRenderer(info.Name)
	if err != nil {
		return nil, err
	}
	r.SafetyMargin = DefaultCompatibleMargin
	return r, nil
}
