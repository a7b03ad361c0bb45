package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// Model is a language model. Implementations live in package providers (and
// providers/scripted for tests and offline demos).
//
// Stream sends req and yields the response as it arrives. It must stop
// promptly and release its resources (close the HTTP body) when ctx ends or
// when the consumer stops ranging. Errors are yielded as the second value;
// after an error the sequence ends. Stream must not modify req.
type Model interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
	Info() ModelInfo
}

// ModelInfo describes a model.
type ModelInfo struct {
	// Provider is e.g. "openai", "anthropic", "gemini", "scripted".
	Provider string `json:"provider"`
	// Name is the model name sent to the provider.
	Name string `json:"name"`
	// ContextWindow is the maximum prompt plus completion size in tokens.
	ContextWindow int `json:"context_window"`
	// MaxOutputTokens is the largest completion the model produces.
	MaxOutputTokens int          `json:"max_output_tokens,omitempty"`
	Capabilities    Capabilities `json:"capabilities"`
	// Pricing is what the model costs; PriceChanges, when set, are dated
	// changes to it: a call is priced at the last change in force at its
	// time, or at Pricing before the first (see PricingAt).
	Pricing      Pricing       `json:"pricing"`
	PriceChanges []PriceChange `json:"price_changes,omitempty"`
}

// PriceChange is a dated change of a model's prices: Pricing applies to
// calls made at From or later (until a later change).
type PriceChange struct {
	From    time.Time `json:"from"`
	Pricing Pricing   `json:"pricing"`
}

// PricingAt returns the prices in force at t: those of the latest
// PriceChange whose From is not after t (whatever their order in the
// slice), else Pricing. The executor prices each model call with it at
// the call's time.
func (i ModelInfo) PricingAt(t time.Time) Pricing {
	p, from := i.Pricing, time.Time{}
	for _, c := range i.PriceChanges {
		if !c.From.After(t) && (from.IsZero() || c.From.After(from)) {
			p, from = c.Pricing, c.From
		}
	}
	return p
}

// Capabilities say what a model supports.
type Capabilities struct {
	Tools         bool `json:"tools"`
	ParallelTools bool `json:"parallel_tools"`
	Vision        bool `json:"vision"`
	Reasoning     bool `json:"reasoning"`
	JSON          bool `json:"json"`
}

// Pricing is in US dollars per million tokens; zero means unknown.
type Pricing struct {
	InputPerMTok       float64 `json:"input_per_mtok"`
	OutputPerMTok      float64 `json:"output_per_mtok"`
	CachedInputPerMTok float64 `json:"cached_input_per_mtok"`
	// CacheWritePerMTok prices tokens written to the prompt cache; zero
	// means they cost InputPerMTok.
	CacheWritePerMTok float64 `json:"cache_write_per_mtok,omitempty"`
}

// Cost returns the price of u in US dollars.
func (p Pricing) Cost(u domain.Usage) float64 {
	cached := u.CachedTokens
	write := u.CacheWriteTokens
	plain := u.PromptTokens - cached - write
	if plain < 0 {
		plain = 0
	}
	writePrice := p.CacheWritePerMTok
	if writePrice == 0 {
		writePrice = p.InputPerMTok
	}
	cachedPrice := p.CachedInputPerMTok
	if cachedPrice == 0 {
		cachedPrice = p.InputPerMTok
	}
	return (float64(plain)*p.InputPerMTok + float64(cached)*cachedPrice +
		float64(write)*writePrice + float64(u.CompletionTokens)*p.OutputPerMTok) / 1e6
}

// Message is one message of a model conversation. Parts reuse the domain
// types, so provider data (reasoning signatures, opaque blocks) survives
// persistence and checkpoints untouched.
type Message struct {
	Role  domain.Role   `json:"role"`
	Parts []domain.Part `json:"parts"`
}

// UserMessage returns a user message with one text part.
func UserMessage(text string) Message {
	return Message{Role: domain.RoleUser, Parts: []domain.Part{domain.TextPart(text)}}
}

// AssistantMessage returns an assistant message with one text part.
func AssistantMessage(text string) Message {
	return Message{Role: domain.RoleAssistant, Parts: []domain.Part{domain.TextPart(text)}}
}

// Text returns the concatenation of the message's text parts.
func (m Message) Text() string {
	var only *domain.Part
	n := 0
	for i := range m.Parts {
		if m.Parts[i].Type == domain.PartText {
			only = &m.Parts[i]
			n++
		}
	}
	switch n {
	case 0:
		return ""
	case 1:
		return only.Text // no copy for the usual single text part
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == domain.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ToolCalls returns the message's tool calls in order.
func (m Message) ToolCalls() []domain.ToolCall {
	var out []domain.ToolCall
	for _, p := range m.Parts {
		if p.Type == domain.PartToolCall && p.ToolCall != nil {
			out = append(out, *p.ToolCall)
		}
	}
	return out
}

// ToolChoiceMode says whether and how the model must call tools.
type ToolChoiceMode string

// Tool choice modes.
const (
	// ToolChoiceAuto lets the model decide (the default).
	ToolChoiceAuto ToolChoiceMode = "auto"
	// ToolChoiceNone forbids tool calls.
	ToolChoiceNone ToolChoiceMode = "none"
	// ToolChoiceRequired forces at least one tool call.
	ToolChoiceRequired ToolChoiceMode = "required"
	// ToolChoiceTool forces a call of the tool named in ToolChoice.Name.
	ToolChoiceTool ToolChoiceMode = "tool"
)

// ToolChoice constrains tool use for one request. The zero value is auto.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	Name string         `json:"name,omitempty"`
}

// Options tune one model request. Zero values mean the provider's default.
type Options struct {
	// Temperature is nil for the provider's default.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxTokens caps the completion; 0 means the provider's default.
	MaxTokens  int        `json:"max_tokens,omitempty"`
	ToolChoice ToolChoice `json:"tool_choice,omitzero"`
	// ParallelToolCalls, when non-nil, allows or forbids several tool
	// calls in one turn.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	// ReasoningBudget asks reasoning models for at most this many reasoning
	// tokens; 0 means the provider's default.
	ReasoningBudget int `json:"reasoning_budget,omitempty"`
}

// Request is one provider-neutral model call.
type Request struct {
	// System is the system prompt.
	System   string     `json:"system,omitempty"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	Options  Options    `json:"options,omitzero"`
	// Cache says where the stable prefix of the request ends, for
	// providers with explicit prompt-cache breakpoints (Anthropic's
	// cache_control). Providers with automatic prefix caching ignore it.
	// The context compiler fills it; the zero value asks for no
	// breakpoints.
	Cache CacheHints `json:"cache,omitzero"`
}

// CacheHints marks prompt-cache breakpoints on a Request. A breakpoint
// covers everything before it in the provider's order (tools, then system,
// then messages).
type CacheHints struct {
	// SystemPrefix is the length in bytes of the stable beginning of
	// Request.System (rules, tool and dataset references). A provider with
	// explicit breakpoints sends System as two blocks split at this offset
	// and marks the first; 0 means no breakpoint in the system prompt, and
	// len(System) marks the whole of it.
	SystemPrefix int `json:"system_prefix,omitempty"`
	// Messages lists indexes into Request.Messages, ascending, after whose
	// last part a breakpoint goes (typically the last history message).
	Messages []int `json:"messages,omitempty"`
}

// ChunkType says what a Chunk carries.
type ChunkType uint8

// Chunk types.
const (
	// ChunkText carries a text fragment in Text.
	ChunkText ChunkType = iota + 1
	// ChunkReasoning carries a reasoning fragment in Text, and/or a
	// Signature fragment, and/or Opaque provider data, for the reasoning
	// block numbered Index.
	ChunkReasoning
	// ChunkToolCall carries a fragment of a tool call in ToolCall.
	ChunkToolCall
	// ChunkUsage carries token usage; the last one of a response wins.
	ChunkUsage
	// ChunkStop carries the stop reason.
	ChunkStop
	// ChunkItem carries, in Item, provider output that is neither answer
	// text, reasoning nor a client tool call: citations, tools the
	// provider ran itself and their results, executed code, inline media,
	// grounding and safety metadata. The Accumulator collects them in
	// Response.Items; they are never sent back to the model.
	ChunkItem
)

// NoIndex marks a tool-call fragment that arrived without an index; it is
// appended to the most recent call.
const NoIndex = -1

// Chunk is one piece of a streamed response.
type Chunk struct {
	Type ChunkType
	// Text is the text or reasoning fragment.
	Text string
	// Index numbers reasoning blocks within the response.
	Index int
	// Signature is a fragment of a reasoning block's signature.
	Signature string
	// Provider names the source of Opaque.
	Provider string
	// Opaque is provider data for the reasoning block, kept verbatim; a
	// later non-empty Opaque for the same block replaces an earlier one.
	Opaque   []byte
	ToolCall ToolCallDelta
	Usage    domain.Usage
	Stop     StopReason
	// Item is the provider output of a ChunkItem chunk.
	Item *ProviderItem
}

// ItemKind says what a ProviderItem is.
type ItemKind string

// Provider item kinds.
const (
	// ItemCitation is a source backing part of the answer: Citation is
	// set, Text holds the cited text when the provider sent it.
	ItemCitation ItemKind = "citation"
	// ItemServerToolCall is a tool the provider ran on its side (web
	// search, code execution, URL fetch): ID, Name and Input are set. It
	// is not an agents tool call and is never run by the executor.
	ItemServerToolCall ItemKind = "server_tool_call"
	// ItemServerToolResult is the outcome of a server tool call: ID is
	// the call it answers, Raw its content.
	ItemServerToolResult ItemKind = "server_tool_result"
	// ItemCode is code the model wrote for the provider to execute: Text
	// is the code, Language its language.
	ItemCode ItemKind = "code"
	// ItemCodeResult is the output of executed code in Text; Outcome is
	// the provider's status (e.g. "OUTCOME_OK").
	ItemCodeResult ItemKind = "code_result"
	// ItemMedia is inline media the model produced: MediaType and Data
	// (decoded bytes), or URI for a file reference.
	ItemMedia ItemKind = "media"
	// ItemGrounding is search or URL grounding metadata: Raw holds the
	// provider's object; the sources also arrive as ItemCitation items.
	ItemGrounding ItemKind = "grounding"
	// ItemSafety reports a safety rating that blocked or cut content, or
	// feedback about the prompt: Text says what, Raw holds the ratings.
	ItemSafety ItemKind = "safety"
	// ItemNotice is a message from the provider about the answer: why it
	// stopped or was refused (Gemini's finishMessage, Anthropic's
	// stop_details), in Text, with Raw when there is an object.
	ItemNotice ItemKind = "notice"
	// ItemUnsupported is provider output bichat does not interpret (a new
	// content block or item type): Type names it and Raw holds it, so the
	// host can log or render it; nothing is silently dropped.
	ItemUnsupported ItemKind = "unsupported"
)

// ProviderItem is provider output carried beside the answer (see
// ChunkItem). Only the fields its Kind documents are set; Raw always holds
// the provider's JSON for it, verbatim.
type ProviderItem struct {
	// Provider names the provider, e.g. "anthropic".
	Provider string   `json:"provider"`
	Kind     ItemKind `json:"kind"`
	// Type is the provider's own name for the item, e.g.
	// "web_search_tool_result", "executableCode" or "url_citation".
	Type string `json:"type,omitempty"`
	// ID identifies a server tool call (ItemServerToolCall) or the call a
	// result answers (ItemServerToolResult).
	ID string `json:"id,omitempty"`
	// Name is the server tool's name.
	Name string `json:"name,omitempty"`
	// Input is the server tool call's input (JSON).
	Input json.RawMessage `json:"input,omitempty"`
	// Text is the item's readable content: cited text, code, code output,
	// a safety explanation.
	Text string `json:"text,omitempty"`
	// Language is the language of ItemCode.
	Language string `json:"language,omitempty"`
	// Outcome is the status of ItemCodeResult.
	Outcome string `json:"outcome,omitempty"`
	// MediaType, Data and URI describe ItemMedia.
	MediaType string `json:"media_type,omitempty"`
	Data      []byte `json:"data,omitempty"`
	URI       string `json:"uri,omitempty"`
	// Citation is set on ItemCitation.
	Citation *domain.Citation `json:"citation,omitempty"`
	// Raw is the provider's JSON for the item, verbatim.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// ToolCallDelta is a fragment of a streamed tool call. The first fragment
// of a call brings its ID and Name; later ones bring Arguments pieces that
// are concatenated in order.
type ToolCallDelta struct {
	// Index identifies the call within the response; NoIndex when the
	// provider sent none. A fragment whose non-empty ID differs from the
	// ID already seen at its Index starts a new call.
	Index     int
	ID        string
	Name      string
	Arguments string
	Provider  string
	// Opaque is provider data for the call (e.g. a thought signature).
	Opaque []byte
	// Incomplete marks the call at Index (the latest call for NoIndex) as
	// cut before its end: the response hit the output token limit, or a
	// filter or refusal stopped it, in the middle of the call. The
	// Accumulator drops the call, so it is never run with broken
	// arguments, and keeps the provider's stop reason (StopMaxTokens when
	// that was end_turn, tool_use or none) even when other, complete calls
	// remain. A fragment with Incomplete set carries nothing else.
	Incomplete bool
}

// TextChunk returns a ChunkText chunk.
func TextChunk(s string) Chunk { return Chunk{Type: ChunkText, Text: s} }

// StopReason is the provider-neutral reason a response ended.
type StopReason string

// Stop reasons.
const (
	StopEndTurn       StopReason = "end_turn"
	StopToolUse       StopReason = "tool_use"
	StopMaxTokens     StopReason = "max_tokens"
	StopContentFilter StopReason = "content_filter"
	StopRefusal       StopReason = "refusal"
	StopOther         StopReason = "other"
)

// Response is a complete model response.
type Response struct {
	// Message is the assistant message: parts in the order they started
	// (reasoning, text, tool calls).
	Message Message
	Usage   domain.Usage
	// Stop is the provider's stop reason; StopToolUse when the message has
	// tool calls but the provider reported something else, except that a
	// response with a cut call (ToolCallDelta.Incomplete) keeps the
	// provider's reason, StopMaxTokens when that was end_turn or tool_use.
	Stop StopReason
	// Items is the provider output carried beside the message (ChunkItem
	// chunks), in arrival order: citations, server tool calls and
	// results, executed code, media, grounding and safety reports.
	Items []ProviderItem
}

// Generate sends req to m and collects the whole response.
func Generate(ctx context.Context, m Model, req *Request) (*Response, error) {
	var acc Accumulator
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		if err := acc.Add(c); err != nil {
			return nil, err
		}
	}
	return acc.Response()
}

// Accumulator assembles streamed chunks into a Response. The zero value is
// ready to use. It implements the fragment rules providers rely on: tool
// calls keyed by index, a new id at a used index starts a new call, a
// fragment without index extends the latest call, empty arguments become
// {}, and a call marked incomplete (ToolCallDelta.Incomplete) is dropped.
type Accumulator struct {
	parts []domain.Part
	// calls tracks open tool calls: parts index by stream index.
	calls     []callSlot
	lastCall  int // parts index of the latest call, -1 when none
	reasoning []reasonSlot
	args      [][]byte // argument text, parallel to parts (lazily grown)
	// bufs collects the text of parts that got more than one fragment,
	// parallel to parts (lazily grown, nil where unused): appending to a
	// builder is linear where string concatenation is quadratic in the
	// number of fragments. Response copies them into the parts.
	bufs    []*partBuf
	usage   domain.Usage
	stop    StopReason
	started bool
	items   []ProviderItem
	// cut marks parts indexes of calls reported incomplete.
	cut map[int]bool
}

type callSlot struct {
	index int
	part  int
}

type reasonSlot struct {
	index int
	part  int
}

// partBuf holds the growing text of one part: the answer text of a text
// part, or the reasoning text and signature of a reasoning part.
type partBuf struct {
	text strings.Builder
	sig  strings.Builder
}

// buf returns the buffer of part pi, creating it seeded with the part's
// current text (and, for reasoning, signature).
func (a *Accumulator) buf(pi int) *partBuf {
	for len(a.bufs) <= pi {
		a.bufs = append(a.bufs, nil)
	}
	b := a.bufs[pi]
	if b == nil {
		b = new(partBuf)
		p := &a.parts[pi]
		if p.Type == domain.PartReasoning {
			b.text.WriteString(p.Reasoning.Text)
			b.sig.WriteString(p.Reasoning.Signature)
		} else {
			b.text.Grow(8 * len(p.Text))
			b.text.WriteString(p.Text)
		}
		a.bufs[pi] = b
	}
	return b
}

// flush copies the buffered text into the parts. A builder never changes
// the bytes its String already returned, so fragments added later keep
// appending.
func (a *Accumulator) flush() {
	for pi, b := range a.bufs {
		if b == nil {
			continue
		}
		p := &a.parts[pi]
		if p.Type == domain.PartReasoning {
			p.Reasoning.Text = b.text.String()
			p.Reasoning.Signature = b.sig.String()
		} else {
			p.Text = b.text.String()
		}
	}
}

// ErrMalformedStream reports chunks that cannot be assembled.
var ErrMalformedStream = errors.New("agents: malformed model stream")

// Add folds one chunk into the response.
func (a *Accumulator) Add(c Chunk) error {
	if !a.started {
		a.started = true
		a.lastCall = -1
	}
	switch c.Type {
	case ChunkText:
		if c.Text == "" {
			return nil
		}
		if n := len(a.parts); n > 0 && a.parts[n-1].Type == domain.PartText {
			a.buf(n - 1).text.WriteString(c.Text)
			return nil
		}
		a.parts = append(a.parts, domain.TextPart(c.Text))
	case ChunkReasoning:
		pi := -1
		for _, r := range a.reasoning {
			if r.index == c.Index {
				pi = r.part
			}
		}
		if pi < 0 {
			a.parts = append(a.parts, domain.Part{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{}})
			pi = len(a.parts) - 1
			a.reasoning = append(a.reasoning, reasonSlot{index: c.Index, part: pi})
		}
		r := a.parts[pi].Reasoning
		switch {
		case r.Text == "" && r.Signature == "" && (pi >= len(a.bufs) || a.bufs[pi] == nil):
			// The block's first fragment: no copy.
			r.Text, r.Signature = c.Text, c.Signature
		case c.Text != "" || c.Signature != "":
			b := a.buf(pi)
			b.text.WriteString(c.Text)
			b.sig.WriteString(c.Signature)
		}
		if len(c.Opaque) > 0 {
			r.Opaque = append([]byte(nil), c.Opaque...)
			r.Provider = c.Provider
		} else if c.Provider != "" && r.Provider == "" {
			r.Provider = c.Provider
		}
	case ChunkToolCall:
		return a.addToolCall(c.ToolCall)
	case ChunkUsage:
		a.usage = c.Usage
	case ChunkStop:
		a.stop = c.Stop
	case ChunkItem:
		if c.Item != nil {
			a.items = append(a.items, *c.Item)
		}
	default:
		return fmt.Errorf("%w: unknown chunk type %d", ErrMalformedStream, c.Type)
	}
	return nil
}

func (a *Accumulator) addToolCall(d ToolCallDelta) error {
	if d.Incomplete {
		for i := len(a.calls) - 1; i >= 0; i-- {
			if a.calls[i].index == d.Index || d.Index == NoIndex && a.calls[i].part == a.lastCall {
				if a.cut == nil {
					a.cut = map[int]bool{}
				}
				a.cut[a.calls[i].part] = true
				break
			}
		}
		return nil
	}
	pi := -1
	if d.Index == NoIndex {
		pi = a.lastCall
		if pi >= 0 && d.ID != "" && a.parts[pi].ToolCall.ID != "" && d.ID != a.parts[pi].ToolCall.ID {
			pi = -1 // a new id without index: a new call
		}
	} else {
		for i := len(a.calls) - 1; i >= 0; i-- {
			if a.calls[i].index == d.Index {
				pi = a.calls[i].part
				break
			}
		}
		if pi >= 0 && d.ID != "" && a.parts[pi].ToolCall.ID != "" && d.ID != a.parts[pi].ToolCall.ID {
			pi = -1 // the provider reused the index for a new call
		}
	}
	if pi < 0 {
		if d.ID == "" && d.Name == "" && d.Arguments == "" {
			return nil
		}
		a.parts = append(a.parts, domain.Part{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{}})
		pi = len(a.parts) - 1
		a.calls = append(a.calls, callSlot{index: d.Index, part: pi})
	}
	a.lastCall = pi
	tc := a.parts[pi].ToolCall
	if d.ID != "" {
		tc.ID = d.ID
	}
	if d.Name != "" {
		tc.Name += d.Name
	}
	if d.Provider != "" {
		tc.Provider = d.Provider
	}
	if len(d.Opaque) > 0 {
		tc.Opaque = append([]byte(nil), d.Opaque...)
	}
	if d.Arguments != "" {
		for len(a.args) <= pi {
			a.args = append(a.args, nil)
		}
		a.args[pi] = append(a.args[pi], d.Arguments...)
	}
	return nil
}

// HasToolCalls reports whether any tool call has started.
func (a *Accumulator) HasToolCalls() bool { return len(a.calls) > 0 }

// Response returns the assembled response. Tool calls get their arguments
// ("{}" when none arrived); a call without a name is an error. Arguments
// that are not valid JSON are kept as a JSON string so the executor can
// report them to the model as a tool error. Calls marked incomplete are
// left out, and provider items are returned in Response.Items. Call it
// once, after the last chunk.
func (a *Accumulator) Response() (*Response, error) {
	resp := &Response{Usage: a.usage, Stop: a.stop, Items: a.items}
	a.flush()
	parts, args := a.parts, a.args
	truncated := len(a.cut) > 0
	if truncated {
		kept := make([]domain.Part, 0, len(parts))
		args = nil
		for i, p := range parts {
			if a.cut[i] {
				continue
			}
			kept = append(kept, p)
			var raw []byte
			if i < len(a.args) {
				raw = a.args[i]
			}
			args = append(args, raw)
		}
		parts = kept
		if resp.Stop == "" || resp.Stop == StopEndTurn || resp.Stop == StopToolUse {
			resp.Stop = StopMaxTokens
		}
	}
	nCalls := 0
	for i := range parts {
		p := &parts[i]
		if p.Type != domain.PartToolCall {
			continue
		}
		nCalls++
		if p.ToolCall.Name == "" {
			return nil, fmt.Errorf("%w: tool call %q without a name", ErrMalformedStream, p.ToolCall.ID)
		}
		var raw []byte
		if i < len(args) {
			raw = args[i]
		}
		p.ToolCall.Arguments = normalizeArguments(raw)
	}
	if nCalls > 0 && resp.Stop != StopToolUse && !truncated {
		resp.Stop = StopToolUse
	}
	if resp.Stop == "" {
		resp.Stop = StopEndTurn
	}
	resp.Message = Message{Role: domain.RoleAssistant, Parts: parts}
	return resp, nil
}

// normalizeArguments turns streamed argument text into JSON: empty or
// whitespace means {}, valid JSON is kept as sent, anything else is wrapped
// as a JSON string.
func normalizeArguments(raw []byte) json.RawMessage {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(s) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(string(s))
	return b
}
