package context

import (
	"bytes"
	stdctx "context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
)

// DefaultMaxRuns bounds how many runs a RequestBuilder remembers blocks
// and calibration for.
const DefaultMaxRuns = 1024

// SessionFunc returns the host's blocks for a run: rules beyond the
// executor's system prompt, dataset definitions, join hints, recipes,
// knowledge-base hits, the state snapshot, query results. RequestBuilder
// calls it once per run, on the first turn, and reuses the blocks for the
// run's later turns (a stable prefix keeps provider caches warm).
type SessionFunc func(ctx stdctx.Context, t *agents.TurnContext) ([]Block, error)

// RequestBuilder plugs the compiler into agents.Executor (Config.Builder).
// Each turn it turns the executor's system prompt (pinned), tool specs
// (reference), the run's history (history), the user message and this
// run's steps (turn), plus the blocks Session returns, into blocks;
// compiles them with Renderer and Policy; publishes a context.compile event
// on Bus; and returns the request with the turn's Options.
//
// Blocks of earlier turns of the same run are reused (the executor only
// appends messages), tool-schema and system-prompt blocks are shared by
// all runs of the builder (rebuilt only when a tool's name, description or
// schema, or the prompt's text, is new), and token counts are cached by the
// Compiler, so a turn costs about the new messages. For inexact renderers the estimate is
// calibrated with the provider's prompt size of the run's previous call
// (TurnContext.PrevUsage). Safe for concurrent runs.
type RequestBuilder struct {
	// Compiler is required (share one per process).
	Compiler *Compiler
	// Renderer is required (e.g. RendererFor(model.Info())).
	Renderer Renderer
	// Policy is the budget (e.g. PolicyFor(model.Info(), OverflowCompact)
	// with a Summarizer).
	Policy Policy
	// Codecs makes the blocks (nil: NewCodecs()). Set it before the
	// first BuildRequest: blocks built with it are cached.
	Codecs *Codecs
	// Bus receives a hooks.ContextCompile per turn; nil disables it.
	Bus *hooks.Bus
	// Session supplies the host's blocks; nil means none.
	Session SessionFunc
	// MaxRuns bounds the per-run memory (default DefaultMaxRuns).
	MaxRuns int

	once  sync.Once
	mu    sync.Mutex
	runs  map[string]*runMemo
	order []string

	// shared holds the blocks every run of the builder starts with (tool
	// schemas, the system prompt), so a new run reuses them instead of
	// canonicalizing, rendering and hashing them again.
	shared sharedBlocks
}

// maxSharedBlocks bounds each map of sharedBlocks; past it the map starts
// over (a host that generates tools or prompts per run just misses).
const maxSharedBlocks = 1024

// sharedBlocks caches blocks across runs, keyed by exact content: a tool
// block by the tool's name, checked against its description and schema
// (the only fields its block depends on); a system block by its text.
type sharedBlocks struct {
	mu     sync.Mutex
	tools  map[string]sharedTool
	system map[string]Block
}

type sharedTool struct {
	desc   string
	schema []byte
	block  Block
}

// toolBlock returns the reference block of s, from the cache when a tool
// of the same name, description and schema was seen before.
func (b *RequestBuilder) toolBlock(s *agents.ToolSpec) (Block, error) {
	c := &b.shared
	c.mu.Lock()
	e, ok := c.tools[s.Name]
	c.mu.Unlock()
	if ok && e.desc == s.Description && bytes.Equal(e.schema, s.Schema) {
		return e.block, nil
	}
	blk, err := b.Codecs.NewBlock(KindReference, CodecToolSchema, ToolSchemaOf(*s))
	if err != nil {
		return Block{}, err
	}
	e = sharedTool{desc: s.Description, schema: bytes.Clone(s.Schema), block: blk}
	c.mu.Lock()
	if c.tools == nil || len(c.tools) >= maxSharedBlocks {
		c.tools = map[string]sharedTool{}
	}
	c.tools[s.Name] = e
	c.mu.Unlock()
	return blk, nil
}

// systemBlock returns the pinned block of a system prompt, from the cache
// when the same text was seen before.
func (b *RequestBuilder) systemBlock(system string) (Block, error) {
	c := &b.shared
	c.mu.Lock()
	blk, ok := c.system[system]
	c.mu.Unlock()
	if ok {
		return blk, nil
	}
	blk, err := b.Codecs.NewBlock(KindPinned, CodecRules, Rules{Text: system})
	if err != nil {
		return Block{}, err
	}
	c.mu.Lock()
	if c.system == nil || len(c.system) >= maxSharedBlocks {
		c.system = map[string]Block{}
	}
	c.system[system] = blk
	c.mu.Unlock()
	return blk, nil
}

// NewRequestBuilder returns a RequestBuilder with a new Compiler and the
// default codecs; set Bus and Session on the result as needed.
func NewRequestBuilder(r Renderer, p Policy) *RequestBuilder {
	return &RequestBuilder{Compiler: NewCompiler(), Renderer: r, Policy: p}
}

var _ agents.RequestBuilder = (*RequestBuilder)(nil)

type runMemo struct {
	mu      sync.Mutex
	session []Block
	loaded  bool
	system  string
	sysBlk  []Block
	tools   toolMemo
	history sliceMemo
	steps   []stepMemo
	lastRaw int
}

type toolMemo struct {
	first  *agents.ToolSpec
	n      int
	blocks []Block
}

type sliceMemo struct {
	first  *agents.Message
	n      int
	blocks []Block
}

type stepMemo struct {
	first *domain.Part
	n     int
	role  domain.Role
	block Block
}

func (b *RequestBuilder) memo(runID string) *runMemo {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.runs == nil {
		b.runs = map[string]*runMemo{}
	}
	if m, ok := b.runs[runID]; ok {
		return m
	}
	limit := b.MaxRuns
	if limit <= 0 {
		limit = DefaultMaxRuns
	}
	for len(b.order) >= limit {
		delete(b.runs, b.order[0])
		b.order = b.order[1:]
	}
	m := &runMemo{}
	b.runs[runID] = m
	b.order = append(b.order, runID)
	return m
}

// BuildRequest implements agents.RequestBuilder.
func (b *RequestBuilder) BuildRequest(ctx stdctx.Context, t *agents.TurnContext) (*agents.Request, error) {
	if b.Compiler == nil || b.Renderer == nil {
		return nil, errors.New("context: RequestBuilder needs a Compiler and a Renderer")
	}
	b.once.Do(func() {
		if b.Codecs == nil {
			b.Codecs = NewCodecs()
		}
	})
	var in agents.Input
	if t.Input != nil {
		in = *t.Input
	}
	m := b.memo(in.RunID)
	m.mu.Lock()
	defer m.mu.Unlock()
	blocks, err := b.blocks(ctx, t, m)
	if err != nil {
		return nil, err
	}
	var opts []CompileOption
	if m.lastRaw > 0 && t.PrevUsage.PromptTokens > 0 {
		opts = append(opts, WithCalibration(m.lastRaw, t.PrevUsage.PromptTokens))
	}
	out, err := b.Compiler.Compile(ctx, blocks, b.Renderer, b.Policy, opts...)
	if err != nil {
		return nil, err
	}
	m.lastRaw = out.Report.RawTokens
	if b.Bus != nil {
		ev := out.Report.Event()
		ev.Meta = hooks.Meta{Time: time.Now(), TenantID: in.TenantID, UserID: in.UserID, SessionID: in.SessionID,
			MessageID: in.MessageID, RunID: in.RunID, ParentRunID: in.ParentRunID}
		b.Bus.Publish(ctx, ev)
	}
	req := out.Request
	req.Options = t.Options
	return req, nil
}

func (b *RequestBuilder) blocks(ctx stdctx.Context, t *agents.TurnContext, m *runMemo) ([]Block, error) {
	if !m.loaded && b.Session != nil {
		s, err := b.Session(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("context: session blocks: %w", err)
		}
		m.session = s
	}
	m.loaded = true
	system := t.System
	var note []Block
	if t.WrapUp && m.system != "" && len(system) > len(m.system) && strings.HasPrefix(system, m.system) {
		// The executor appends a wrap-up instruction to the system prompt
		// on the last turn. Sending it after the run's messages instead
		// keeps the cached prefix, the whole conversation, intact.
		blk, err := b.Codecs.NewBlock(KindTurn, CodecText, Text{Body: system[len(m.system):]}, AtPosition(len(t.Messages)))
		if err != nil {
			return nil, fmt.Errorf("context: wrap-up note: %w", err)
		}
		note = append(note, blk)
		system = m.system
	}
	if system != m.system || (system != "" && m.sysBlk == nil) {
		m.system, m.sysBlk = system, nil
		if system != "" {
			blk, err := b.systemBlock(system)
			if err != nil {
				return nil, fmt.Errorf("context: system prompt: %w", err)
			}
			m.sysBlk = []Block{blk}
		}
	}
	if err := b.toolBlocks(t.Tools, &m.tools); err != nil {
		return nil, err
	}
	if err := b.historyBlocks(t.History, &m.history); err != nil {
		return nil, err
	}
	if err := b.stepBlocks(t.Messages, m); err != nil {
		return nil, err
	}
	out := make([]Block, 0, len(m.session)+len(m.sysBlk)+len(m.tools.blocks)+len(m.history.blocks)+len(m.steps))
	out = append(out, m.session...)
	out = append(out, m.sysBlk...)
	out = append(out, m.tools.blocks...)
	out = append(out, m.history.blocks...)
	for _, s := range m.steps {
		out = append(out, s.block)
	}
	return append(out, note...), nil
}

func (b *RequestBuilder) toolBlocks(specs []agents.ToolSpec, tm *toolMemo) error {
	var first *agents.ToolSpec
	if len(specs) > 0 {
		first = &specs[0]
	}
	if tm.blocks != nil && tm.first == first && tm.n == len(specs) {
		return nil
	}
	tm.blocks = make([]Block, 0, len(specs))
	for i := range specs {
		s := &specs[i]
		blk, err := b.toolBlock(s)
		if err != nil {
			return fmt.Errorf("context: tool %s: %w", s.Name, err)
		}
		tm.blocks = append(tm.blocks, blk)
	}
	tm.first, tm.n = first, len(specs)
	return nil
}

func (b *RequestBuilder) historyBlocks(msgs []agents.Message, hm *sliceMemo) error {
	var first *agents.Message
	if len(msgs) > 0 {
		first = &msgs[0]
	}
	if hm.blocks != nil && hm.first == first && hm.n == len(msgs) {
		return nil
	}
	hm.blocks = make([]Block, 0, len(msgs))
	for i, msg := range msgs {
		blk, err := b.Codecs.NewBlock(KindHistory, CodecMessage, MessageOf(msg), AtPosition(i+1))
		if err != nil {
			return fmt.Errorf("context: history message %d: %w", i, err)
		}
		hm.blocks = append(hm.blocks, blk)
	}
	hm.first, hm.n = first, len(msgs)
	return nil
}

// stepBlocks makes the turn block (the run's first message) and step
// blocks, reusing those whose message is unchanged since the last turn.
func (b *RequestBuilder) stepBlocks(msgs []agents.Message, m *runMemo) error {
	if len(m.steps) > len(msgs) {
		m.steps = m.steps[:0]
	}
	for i, msg := range msgs {
		var first *domain.Part
		if len(msg.Parts) > 0 {
			first = &msg.Parts[0]
		}
		if i < len(m.steps) && m.steps[i].first == first && m.steps[i].n == len(msg.Parts) && m.steps[i].role == msg.Role {
			continue
		}
		var blk Block
		var err error
		if i == 0 && msg.Role == domain.RoleUser {
			blk, err = b.Codecs.NewBlock(KindTurn, CodecTurn, Turn{Parts: msg.Parts})
		}
		if i > 0 || msg.Role != domain.RoleUser || err != nil {
			blk, err = b.Codecs.NewBlock(KindTurn, CodecStep, MessageOf(msg), AtPosition(i))
		}
		if err != nil {
			return fmt.Errorf("context: run message %d: %w", i, err)
		}
		sm := stepMemo{first: first, n: len(msg.Parts), role: msg.Role, block: blk}
		if i < len(m.steps) {
			m.steps[i] = sm
			m.steps = m.steps[:i+1]
		} else {
			m.steps = append(m.steps, sm)
		}
	}
	return nil
}
