package context

import (
	"bytes"
	stdctx "context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
)

// DefaultMaxCacheEntries bounds the Compiler's token cache.
const DefaultMaxCacheEntries = 1 << 17

// Compiler turns blocks into a model request within a token budget. It
// caches token counts by (renderer, block hash), so a turn that adds one
// message to a long conversation counts only that message, and summaries
// by the blocks they cover. A Compiler is safe for concurrent use; share
// one per process.
type Compiler struct {
	// MaxCacheEntries bounds the token cache (default
	// DefaultMaxCacheEntries); set it before the first Compile.
	MaxCacheEntries int

	mu        sync.Mutex
	tokens    genCache[tokenKey, int]
	summaries genCache[[32]byte, string]
	summary   Codec
}

type tokenKey struct {
	renderer string
	hash     [32]byte
}

// NewCompiler returns a Compiler with empty caches.
func NewCompiler() *Compiler { return &Compiler{} }

// CompileOption tunes one Compile call.
type CompileOption func(*compileOptions)

type compileOptions struct {
	prevRaw, prevActual int
}

// CalibratedMargin is added on top of a calibrated ratio (see
// WithCalibration) to absorb the growth of the new turn.
const CalibratedMargin = 0.02

// WithCalibration corrects the estimate of an inexact renderer by the
// previous request of the same conversation: prevRaw is that request's
// Report.RawTokens and prevActual the prompt size the provider reported
// for it (domain.Usage.PromptTokens). The factor becomes
// prevActual/prevRaw + CalibratedMargin (clamped to [0.5, 4]) instead of
// 1 + Margin(). Exact renderers ignore it; zero values are ignored.
func WithCalibration(prevRaw, prevActual int) CompileOption {
	return func(o *compileOptions) { o.prevRaw, o.prevActual = prevRaw, prevActual }
}

// Compiled is the result of Compile.
type Compiled struct {
	// Request is the rendered request; the caller sets Options.
	Request *agents.Request
	// Blocks are the blocks that made it, in render order, after
	// redaction and compaction.
	Blocks []Block
	// Summary is the summary block made by compaction, nil when none. Hosts
	// may persist it and pass it (with the remaining history) next time.
	Summary *Block
	Report  Report
}

// BlockRef identifies a block in a Report.
type BlockRef struct {
	Kind     Kind   `json:"kind"`
	Codec    string `json:"codec"`
	Position int    `json:"position,omitempty"`
	Hash     string `json:"hash"`
	// Tokens is the block's raw count (text plus framing).
	Tokens int `json:"tokens"`
	// Reason says why the block is listed: "sensitivity", "budget",
	// "kind_max", "orphan", "compacted", "redacted".
	Reason string `json:"reason,omitempty"`
}

// Report describes a compilation.
type Report struct {
	// Renderer is the renderer's Name.
	Renderer string `json:"renderer"`
	// Tokens is the prompt size as estimated for the provider:
	// RawTokens × Factor, rounded up. Exact when Factor is 1.
	Tokens int `json:"tokens"`
	// RawTokens is the tokenizer's count, framing included.
	RawTokens int     `json:"raw_tokens"`
	Factor    float64 `json:"factor"`
	// Calibrated is true when a provider's count set Factor.
	Calibrated bool `json:"calibrated,omitempty"`
	// Budget is the policy's prompt budget; Remaining = Budget - Tokens.
	Budget    int `json:"budget"`
	Remaining int `json:"remaining"`
	// ByKind holds the estimated tokens of each kind present.
	ByKind map[Kind]int `json:"by_kind"`
	// Blocks counts the blocks rendered.
	Blocks    int        `json:"blocks"`
	Dropped   []BlockRef `json:"dropped,omitempty"`
	Compacted []BlockRef `json:"compacted,omitempty"`
	Redacted  []BlockRef `json:"redacted,omitempty"`
	// Summary is the summary block compaction made.
	Summary *BlockRef `json:"summary,omitempty"`
	// CachePrefixHash identifies the stable prefix (renderer, pinned and
	// reference blocks); CachePrefixTokens is its estimated size.
	CachePrefixHash   string `json:"cache_prefix_hash"`
	CachePrefixTokens int    `json:"cache_prefix_tokens"`
	// CacheHits and CacheMisses count token-cache lookups.
	CacheHits   int           `json:"cache_hits"`
	CacheMisses int           `json:"cache_misses"`
	Duration    time.Duration `json:"duration"`
}

// Event returns the report as a hooks.ContextCompile event (Meta is left
// for the caller to fill).
func (r *Report) Event() *hooks.ContextCompile {
	by := make(map[string]int, len(r.ByKind))
	for k, v := range r.ByKind {
		by[k.String()] = v
	}
	return &hooks.ContextCompile{Tokens: r.Tokens, Budget: r.Budget, ByKind: by, Dropped: len(r.Dropped),
		Compacted: len(r.Compacted), Redacted: len(r.Redacted), CachePrefixTokens: r.CachePrefixTokens,
		CachePrefixHash: r.CachePrefixHash, Duration: r.Duration}
}

// entry is a block being compiled with its raw token count.
type entry struct {
	b   *Block
	tok int
}

type compilation struct {
	c      *Compiler
	ctx    stdctx.Context
	r      Renderer
	p      *Policy
	factor float64
	es     []entry
	rep    *Report
}

// Compile orders blocks (kind, then position, then hash; equal hashes are
// deduplicated), applies the sensitivity ceiling, counts tokens, enforces
// per-kind maximums and the budget with the policy's overflow strategy,
// and renders the request.
//
// The output depends only on the set of blocks, the renderer and the
// policy (and the Summarizer's answers): the same input gives a
// byte-identical request.
func (c *Compiler) Compile(ctx stdctx.Context, blocks []Block, r Renderer, p Policy, opts ...CompileOption) (*Compiled, error) {
	start := time.Now()
	if r == nil {
		return nil, fmt.Errorf("context: Compile: nil renderer")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var o compileOptions
	for _, f := range opts {
		f(&o)
	}
	rep := &Report{Renderer: r.Name(), Budget: p.Budget(), Factor: 1 + r.Margin()}
	if r.Margin() > 0 && o.prevRaw > 0 && o.prevActual > 0 {
		rep.Factor = min(max(float64(o.prevActual)/float64(o.prevRaw)+CalibratedMargin, 0.5), 4)
		rep.Calibrated = true
	}
	cp := &compilation{c: c, ctx: ctx, r: r, p: &p, factor: rep.Factor, rep: rep}
	if err := cp.prepare(blocks); err != nil {
		return nil, err
	}
	c.count(r, cp.es, rep)
	if err := cp.enforceKindMax(); err != nil {
		return nil, err
	}
	if err := cp.fit(); err != nil {
		return nil, err
	}
	out := &Compiled{Blocks: make([]Block, len(cp.es)), Report: *rep}
	for i, e := range cp.es {
		out.Blocks[i] = *e.b
	}
	req, err := r.Render(out.Blocks)
	if err != nil {
		return nil, fmt.Errorf("context: render with %s: %w", r.Name(), err)
	}
	out.Request = req
	cp.finishReport(&out.Report)
	if out.Report.Summary != nil {
		for i := range out.Blocks {
			if out.Blocks[i].HashHex() == out.Report.Summary.Hash {
				out.Summary = &out.Blocks[i]
			}
		}
	}
	out.Report.Duration = time.Since(start)
	return out, nil
}

func compareBlocks(a, b *Block) int {
	if a.Kind != b.Kind {
		return int(a.Kind) - int(b.Kind)
	}
	if a.Position != b.Position {
		if a.Position < b.Position {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.Hash[:], b.Hash[:])
}

func ref(e *entry, reason string) BlockRef {
	return BlockRef{Kind: e.b.Kind, Codec: e.b.Codec, Position: e.b.Position, Hash: e.b.HashHex(), Tokens: e.tok, Reason: reason}
}

// prepare validates, applies the sensitivity ceiling, sorts and
// deduplicates.
func (cp *compilation) prepare(blocks []Block) error {
	ceiling := cp.p.ceiling()
	cp.es = make([]entry, 0, len(blocks))
	for i := range blocks {
		b := &blocks[i]
		if !b.valid() {
			return fmt.Errorf("%w: block %d (%s) was not made by a codec; use Codecs.NewBlock or a Builder", ErrInvalidBlock, i, b.Kind)
		}
		if !b.Kind.Valid() {
			return fmt.Errorf("%w: block %d has kind %s", ErrInvalidBlock, i, b.Kind)
		}
		if b.Sensitivity.normalize() > ceiling {
			if cp.p.OnSensitive == SensitiveDrop && b.Kind != KindPinned && b.Kind != KindTurn {
				cp.rep.Dropped = append(cp.rep.Dropped, ref(&entry{b: b}, "sensitivity"))
				continue
			}
			red, err := redact(b, ceiling)
			if err != nil {
				return err
			}
			cp.rep.Redacted = append(cp.rep.Redacted, ref(&entry{b: b}, "redacted"))
			b = &red
		}
		cp.es = append(cp.es, entry{b: b})
	}
	slices.SortFunc(cp.es, func(a, b entry) int { return compareBlocks(a.b, b.b) })
	cp.es = slices.CompactFunc(cp.es, func(a, b entry) bool { return a.b.Hash == b.b.Hash })
	return nil
}

// redact returns b with its content replaced, at the ceiling's
// sensitivity.
func redact(b *Block, ceiling Sensitivity) (Block, error) {
	opts := []BlockOption{AtPosition(b.Position), WithSensitivity(ceiling)}
	if rd, ok := b.codec.(Redactor); ok {
		p, err := rd.Redact(b.Payload)
		if err != nil {
			return Block{}, fmt.Errorf("context: redact %s: %w", b, err)
		}
		return NewBlock(b.codec, b.Kind, p, opts...)
	}
	return NewBlock(redactedCodec, b.Kind, Redacted{Kind: b.Kind, Sensitivity: b.Sensitivity}, opts...)
}

var redactedCodec = NewCodec(CodecRedacted, 1, func(r Redacted) (Redacted, error) { return r, nil }, renderRedacted)

// count fills the raw token counts from the cache, counting misses.
func (c *Compiler) count(r Renderer, es []entry, rep *Report) {
	name := r.Name()
	var miss []int
	c.mu.Lock()
	c.tokens.limit = c.limit()
	for i := range es {
		if n, ok := c.tokens.get(tokenKey{name, es[i].b.Hash}); ok {
			es[i].tok = n
			rep.CacheHits++
		} else {
			miss = append(miss, i)
		}
	}
	c.mu.Unlock()
	if len(miss) == 0 {
		for i := range es {
			es[i].tok += r.BlockFraming(es[i].b)
		}
		return
	}
	counter := r.Counter()
	for _, i := range miss {
		es[i].tok = countBlock(counter, es[i].b)
	}
	rep.CacheMisses += len(miss)
	c.mu.Lock()
	for _, i := range miss {
		c.tokens.put(tokenKey{name, es[i].b.Hash}, es[i].tok)
	}
	c.mu.Unlock()
	for i := range es {
		es[i].tok += r.BlockFraming(es[i].b)
	}
}

func (c *Compiler) limit() int {
	if c.MaxCacheEntries > 0 {
		return c.MaxCacheEntries
	}
	return DefaultMaxCacheEntries
}

func (cp *compilation) est(raw int) int { return int(math.Ceil(float64(raw)*cp.factor - 1e-9)) }

func (cp *compilation) raw() int {
	n := 0
	var s Sections
	for i := range cp.es {
		e := &cp.es[i]
		n += e.tok
		if isSystemBlock(e.b) && e.b.Text() != "" {
			if e.b.Kind <= KindReference {
				s.Prefix = true
			} else {
				s.Volatile = true
			}
		}
	}
	return n + cp.r.RequestFraming(s)
}

func (cp *compilation) kindRaw(k Kind) int {
	n := 0
	for i := range cp.es {
		if cp.es[i].b.Kind == k {
			n += cp.es[i].tok
		}
	}
	return n
}

// droppable reports whether truncation may drop e.
func droppable(e *entry) bool {
	switch e.b.Kind {
	case KindPinned, KindTurn:
		return false
	case KindReference:
		return !isToolSchema(e.b)
	}
	return true
}

func (cp *compilation) drop(i int, reason string) {
	cp.rep.Dropped = append(cp.rep.Dropped, ref(&cp.es[i], reason))
	cp.es = slices.Delete(cp.es, i, i+1)
	// A history message of tool results whose calls were just dropped is
	// useless: drop it too.
	if i < len(cp.es) && cp.es[i].b.Kind == KindHistory && toolResultsOnly(cp.es[i].b) &&
		(i == 0 || cp.es[i-1].b.Kind != KindHistory) {
		cp.rep.Dropped = append(cp.rep.Dropped, ref(&cp.es[i], "orphan"))
		cp.es = slices.Delete(cp.es, i, i+1)
	}
}

func toolResultsOnly(b *Block) bool {
	m, ok := b.Payload.(HistoryMessage)
	if !ok || len(m.Parts) == 0 {
		return false
	}
	for _, p := range m.Parts {
		if p.Type != domain.PartToolResult {
			return false
		}
	}
	return true
}

func (cp *compilation) enforceKindMax() error {
	for _, k := range Kinds {
		kb, ok := cp.p.Kinds[k]
		if !ok || kb.Max <= 0 {
			continue
		}
		for cp.est(cp.kindRaw(k)) > kb.Max {
			if cp.p.Overflow == OverflowError || k == KindPinned || k == KindTurn {
				return &BudgetError{Kind: k, Tokens: cp.est(cp.kindRaw(k)), Budget: kb.Max, Strategy: cp.p.Overflow}
			}
			if k == KindHistory && cp.p.Overflow == OverflowCompact {
				done, err := cp.compact(func() bool { return cp.est(cp.kindRaw(k)) <= kb.Max }, cp.kindRaw(k)-int(float64(kb.Max)/cp.factor))
				if err != nil {
					return err
				}
				if done {
					continue
				}
			}
			i := cp.firstDroppable(k, 0)
			if i < 0 {
				return &BudgetError{Kind: k, Tokens: cp.est(cp.kindRaw(k)), Budget: kb.Max, Strategy: cp.p.Overflow}
			}
			cp.drop(i, "kind_max")
		}
	}
	return nil
}

// firstDroppable returns the index of the first droppable block of kind k
// whose removal keeps the kind at or above min, or -1.
func (cp *compilation) firstDroppable(k Kind, minTokens int) int {
	total := cp.kindRaw(k)
	for i := range cp.es {
		e := &cp.es[i]
		if e.b.Kind != k || !droppable(e) {
			continue
		}
		if minTokens > 0 && cp.est(total-e.tok) < minTokens {
			return -1
		}
		return i
	}
	return -1
}

// truncateOrder is the order kinds lose blocks for the overall budget.
var truncateOrder = []Kind{KindToolOutput, KindHistory, KindMemory, KindState, KindReference}

func (cp *compilation) fit() error {
	budget := cp.p.Budget()
	fits := func() bool { return cp.est(cp.raw()) <= budget }
	if fits() {
		return nil
	}
	if cp.p.Overflow == OverflowError {
		return &BudgetError{Tokens: cp.est(cp.raw()), Budget: budget, Strategy: cp.p.Overflow}
	}
	if cp.p.Overflow == OverflowCompact {
		need := cp.raw() - int(float64(budget)/cp.factor)
		if _, err := cp.compact(fits, need); err != nil {
			return err
		}
	}
	for _, k := range truncateOrder {
		for !fits() {
			i := cp.firstDroppable(k, cp.p.Kinds[k].Min)
			if i < 0 {
				break
			}
			cp.drop(i, "budget")
		}
	}
	if !fits() {
		return &BudgetError{Tokens: cp.est(cp.raw()), Budget: budget, Strategy: cp.p.Overflow}
	}
	return nil
}

// compact replaces the oldest history (an earlier summary included) with
// one summary block, growing the covered range until done() or the whole
// history is covered. need is the raw tokens to shed. It reports whether
// done() holds afterwards.
func (cp *compilation) compact(done func() bool, need int) (bool, error) {
	for !done() {
		var hist []int
		for i := range cp.es {
			if cp.es[i].b.Kind == KindHistory {
				hist = append(hist, i)
			}
		}
		if len(hist) == 0 {
			return false, nil
		}
		reserve := int(float64(cp.p.summaryTokens()) / cp.factor)
		_, hasPrev := cp.es[hist[0]].b.Payload.(Summary)
		cut, freed := 0, 0
		for cut < len(hist) && freed-reserve < need {
			freed += cp.es[hist[cut]].tok
			cut++
		}
		// Keep tool calls and their results together.
		for cut < len(hist) && toolResultsOnly(cp.es[hist[cut]].b) {
			cut++
		}
		if cut == 0 || (cut == 1 && hasPrev) {
			if len(hist) > cut {
				cut++
			} else {
				return false, nil
			}
		}
		if err := cp.summarize(hist[:cut]); err != nil {
			return false, err
		}
		if cut == len(hist) {
			return done(), nil
		}
		need = cp.raw() - int(float64(cp.p.Budget())/cp.factor)
	}
	return true, nil
}

// summarize replaces the history entries at idx (ascending) with a
// summary.
func (cp *compilation) summarize(idx []int) error {
	var prev string
	prevMsgs := 0
	var msgs []agents.Message
	var transcript strings.Builder
	key := sha256.New()
	key.Write([]byte("bichat/context.summary/v1"))
	key.Write(binary.AppendUvarint(nil, uint64(cp.p.summaryTokens())))
	var covered []BlockRef
	for _, i := range idx {
		e := &cp.es[i]
		key.Write(e.b.Hash[:])
		switch p := e.b.Payload.(type) {
		case Summary:
			prev, prevMsgs = p.Text, p.Messages
		case HistoryMessage:
			msgs = append(msgs, p.Message())
			if transcript.Len() > 0 {
				transcript.WriteString("\n\n")
			}
			transcript.WriteString(string(p.Role) + ": " + e.b.Text())
		default:
			msgs = append(msgs, agents.UserMessage(e.b.Text()))
			if transcript.Len() > 0 {
				transcript.WriteString("\n\n")
			}
			transcript.WriteString(e.b.Text())
		}
		if !cp.isOwnSummary(e) {
			covered = append(covered, ref(e, "compacted"))
		}
	}
	var k [32]byte
	copy(k[:], key.Sum(nil))
	c := cp.c
	c.mu.Lock()
	text, ok := c.summaries.get(k)
	c.mu.Unlock()
	if !ok {
		var err error
		text, err = cp.p.Summarizer.Summarize(cp.ctx, SummaryRequest{Previous: prev, Messages: msgs,
			Transcript: transcript.String(), MaxTokens: cp.p.summaryTokens()})
		if err != nil {
			return fmt.Errorf("context: compact history: %w", err)
		}
		c.mu.Lock()
		c.summaries.limit = 4096
		c.summaries.put(k, text)
		c.mu.Unlock()
	}
	first := cp.es[idx[0]].b.Position
	sb, err := NewBlock(c.summaryCodec(), KindHistory, Summary{Text: text, Messages: prevMsgs + len(msgs)}, AtPosition(first))
	if err != nil {
		return fmt.Errorf("context: compact history: %w", err)
	}
	se := entry{b: &sb, tok: cp.r.Counter().Count(sb.Text()) + cp.r.BlockFraming(&sb)}
	cp.rep.Compacted = append(cp.rep.Compacted, covered...)
	// idx is ascending and contiguous among history blocks.
	cp.es = slices.Delete(cp.es, idx[0], idx[len(idx)-1]+1)
	cp.es = slices.Insert(cp.es, idx[0], se)
	r := ref(&se, "summary")
	cp.rep.Summary = &r
	return nil
}

// isOwnSummary reports whether e is a summary this compilation made (so it
// is not reported as compacted input).
func (cp *compilation) isOwnSummary(e *entry) bool {
	return cp.rep.Summary != nil && cp.rep.Summary.Hash == e.b.HashHex()
}

func (c *Compiler) summaryCodec() Codec {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.summary == nil {
		c.summary = NewCodec(CodecSummary, 1, canonSummary, renderSummary)
	}
	return c.summary
}

func (cp *compilation) finishReport(rep *Report) {
	raw := cp.raw()
	rep.RawTokens = raw
	rep.Tokens = cp.est(raw)
	rep.Remaining = rep.Budget - rep.Tokens
	rep.Blocks = len(cp.es)
	byRaw := map[Kind]int{}
	h := sha256.New()
	h.Write([]byte(cp.r.Name()))
	prefix := 0
	for i := range cp.es {
		e := &cp.es[i]
		byRaw[e.b.Kind] += e.tok
		if e.b.Kind <= KindReference {
			h.Write(e.b.Hash[:])
			prefix += e.tok
		}
	}
	rep.ByKind = make(map[Kind]int, len(byRaw))
	for k, v := range byRaw {
		rep.ByKind[k] = cp.est(v)
	}
	rep.CachePrefixHash = hex.EncodeToString(h.Sum(nil))
	rep.CachePrefixTokens = cp.est(prefix)
}

// genCache is a bounded map: two generations, the older dropped when the
// newer fills up; hits in the older are promoted.
type genCache[K comparable, V any] struct {
	limit     int
	cur, prev map[K]V
}

func (g *genCache[K, V]) get(k K) (V, bool) {
	if v, ok := g.cur[k]; ok {
		return v, true
	}
	if v, ok := g.prev[k]; ok {
		g.put(k, v)
		return v, true
	}
	var zero V
	return zero, false
}

func (g *genCache[K, V]) put(k K, v V) {
	if g.cur == nil {
		g.cur = map[K]V{}
	}
	if g.limit > 0 && len(g.cur) >= g.limit/2 {
		g.prev, g.cur = g.cur, map[K]V{}
	}
	g.cur[k] = v
}
