package context

import (
	"bytes"
	stdctx "context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

const bigWindow = 1 << 20

func compile(t testing.TB, c *Compiler, blocks []Block, r Renderer, p Policy) *Compiled {
	t.Helper()
	out, err := c.Compile(stdctx.Background(), blocks, r, p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func requestJSON(t testing.TB, req *agents.Request) []byte {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCompileDeterministic(t *testing.T) {
	t.Parallel()
	codecs := NewCodecs()
	blocks := sessionBlocks(t, codecs, 40)
	blocks = append(blocks,
		mustBlock(t, codecs, KindMemory, CodecText, Text{Title: "note", Body: "Fiscal year starts in April."}),
		mustBlock(t, codecs, KindMemory, CodecText, Text{Title: "note", Body: "EUR only."}),
		mustBlock(t, codecs, KindReference, CodecText, Text{Body: "Prefer sales.orders over raw tables."}))
	for _, r := range []Renderer{openAI(t), must(NewAnthropicRenderer()), must(NewGeminiRenderer())} {
		c := NewCompiler()
		p := Policy{ContextWindow: bigWindow}
		want := compile(t, c, blocks, r, p)
		wantJSON := requestJSON(t, want.Request)
		rng := rand.New(rand.NewPCG(1, 2))
		runs := 1000
		if r.Name() != "openai/o200k_base" {
			runs = 100 // the ordering is shared; the other layouts get fewer runs
		}
		for i := range runs {
			in := slices.Clone(blocks)
			// Duplicates are deduplicated by hash.
			in = append(in, in[rng.IntN(len(in))], in[rng.IntN(len(in))])
			rng.Shuffle(len(in), func(a, b int) { in[a], in[b] = in[b], in[a] })
			cc := c
			if i%250 == 0 {
				cc = NewCompiler() // cold cache gives the same bytes too
			}
			got := compile(t, cc, in, r, p)
			if g := requestJSON(t, got.Request); !bytes.Equal(g, wantJSON) {
				t.Fatalf("%s run %d: request differs:\n%s\nwant\n%s", r.Name(), i, g, wantJSON)
			}
			if got.Report.Tokens != want.Report.Tokens || got.Report.CachePrefixHash != want.Report.CachePrefixHash {
				t.Fatalf("%s run %d: report differs", r.Name(), i)
			}
		}
	}
}

// TestReportMatchesRenderedRequest recounts the rendered OpenAI request
// from scratch (system prompt as one string, each wire message, each tool)
// and expects the compiler's per-block sum to equal it exactly.
func TestReportMatchesRenderedRequest(t *testing.T) {
	t.Parallel()
	for _, model := range []string{"gpt-4o", "gpt-4", "gpt-4o/context-last"} {
		r, err := NewOpenAIRenderer(strings.TrimSuffix(model, "/context-last"))
		if err != nil {
			t.Fatal(err)
		}
		r.ContextAfterHistory = strings.HasSuffix(model, "/context-last")
		// A session with query results, and a run with parallel tool calls.
		blocks := append(sessionBlocks(t, NewCodecs(), 24), renderBlocks(t)...)
		out := compile(t, NewCompiler(), blocks, r, Policy{ContextWindow: bigWindow})
		tok := r.Tokenizer
		req := out.Request
		n := framingReply + framingPerMessage + tok.Count(req.System)
		for _, ts := range req.Tools {
			n += framingPerTool + tok.Count(ts.Name+"\n"+ts.Description+"\n"+string(ts.Schema))
		}
		for _, m := range req.Messages {
			n += framingPerMessage
			for _, part := range m.Parts {
				n += tok.Count(renderParts([]domain.Part{part}))
			}
			n += framingPerCall * len(m.ToolCalls())
		}
		if out.Report.RawTokens != n || out.Report.Tokens != n {
			t.Errorf("%s: report says %d (raw %d), recount of the rendered request %d", model, out.Report.Tokens, out.Report.RawTokens, n)
		}
		if out.Report.Factor != 1 {
			t.Errorf("%s: exact renderer has factor %v", model, out.Report.Factor)
		}
	}
}

func TestBudgetEdges(t *testing.T) {
	t.Parallel()
	blocks := sessionBlocks(t, NewCodecs(), 12)
	r := openAI(t)
	c := NewCompiler()
	full := compile(t, c, blocks, r, Policy{ContextWindow: bigWindow})
	T := full.Report.Tokens
	const reserve = 1000
	for _, strategy := range []Overflow{OverflowError, OverflowTruncate} {
		for _, delta := range []int{-1, 0, 1} {
			p := Policy{ContextWindow: T + delta + reserve, CompletionReserve: reserve, Overflow: strategy}
			out, err := c.Compile(stdctx.Background(), blocks, r, p)
			name := fmt.Sprintf("%s budget%+d", strategy, delta)
			switch {
			case delta >= 0:
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if out.Report.Tokens != T || out.Report.Remaining != delta || len(out.Report.Dropped) != 0 {
					t.Errorf("%s: tokens %d remaining %d dropped %d", name, out.Report.Tokens, out.Report.Remaining, len(out.Report.Dropped))
				}
			case strategy == OverflowError:
				var be *BudgetError
				if !errors.As(err, &be) || !errors.Is(err, ErrBudgetExceeded) {
					t.Fatalf("%s: error %v, want *BudgetError", name, err)
				}
				if be.Tokens != T || be.Budget != T-1 || be.Kind != 0 {
					t.Errorf("%s: %+v, want tokens %d budget %d", name, be, T, T-1)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("need %d tokens, 1 over the budget of %d", T, T-1)) {
					t.Errorf("message: %v", err)
				}
			default:
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				// Exactly one block goes: the oldest tool output.
				if len(out.Report.Dropped) != 1 || out.Report.Dropped[0].Kind != KindToolOutput || out.Report.Dropped[0].Reason != "budget" {
					t.Fatalf("%s: dropped %+v", name, out.Report.Dropped)
				}
				if out.Report.Tokens > T-1 || out.Report.Tokens != T-out.Report.Dropped[0].Tokens {
					t.Errorf("%s: tokens %d after dropping %d", name, out.Report.Tokens, out.Report.Dropped[0].Tokens)
				}
			}
		}
	}
}

func TestTruncateOrderAndLimits(t *testing.T) {
	t.Parallel()
	codecs := NewCodecs()
	blocks := sessionBlocks(t, codecs, 16)
	r := openAI(t)
	c := NewCompiler()
	full := compile(t, c, blocks, r, Policy{ContextWindow: bigWindow})
	by := full.Report.ByKind
	T := full.Report.Tokens

	// Room for everything but ~half the history: tool output goes first,
	// then the oldest history, never memory.
	p := Policy{ContextWindow: T - by[KindToolOutput] - by[KindHistory]/2, Overflow: OverflowTruncate}
	out := compile(t, c, blocks, r, p)
	var kinds []Kind
	lastPos := 0
	for _, d := range out.Report.Dropped {
		kinds = append(kinds, d.Kind)
		if d.Kind == KindHistory {
			if d.Position < lastPos {
				t.Errorf("history dropped out of order: %d after %d", d.Position, lastPos)
			}
			lastPos = d.Position
		}
	}
	if kinds[0] != KindToolOutput || slices.Contains(kinds, KindMemory) || slices.Contains(kinds, KindPinned) {
		t.Errorf("dropped kinds %v", kinds)
	}
	first := -1
	for _, b := range out.Blocks {
		if b.Kind == KindHistory {
			first = b.Position
			break
		}
	}
	if m := out.Blocks; first < 0 || m[len(m)-1].Kind != KindTurn {
		t.Fatalf("history or turn missing")
	}
	// The remaining history does not start with orphaned tool results.
	for _, msg := range out.Request.Messages {
		for _, part := range msg.Parts {
			if part.Type == domain.PartToolResult && !strings.Contains(string(requestJSON(t, out.Request)), `"id":"`+part.ToolResult.CallID+`"`) {
				t.Errorf("orphan tool result %s", part.ToolResult.CallID)
			}
		}
	}

	// A history minimum protects history: memory and state go instead.
	p.Kinds = map[Kind]KindBudget{KindHistory: {Min: by[KindHistory]}}
	out = compile(t, c, blocks, r, p)
	for _, d := range out.Report.Dropped {
		if d.Kind == KindHistory {
			t.Errorf("history dropped below its minimum: %+v", d)
		}
	}
	if out.Report.ByKind[KindHistory] != by[KindHistory] || out.Report.ByKind[KindMemory] != 0 {
		t.Errorf("by kind %v", out.Report.ByKind)
	}

	// A per-kind maximum is enforced even when the overall budget has room.
	oneMemory := by[KindMemory] - 1
	p = Policy{ContextWindow: bigWindow, Overflow: OverflowTruncate, Kinds: map[Kind]KindBudget{KindMemory: {Max: oneMemory}}}
	out = compile(t, c, blocks, r, p)
	if len(out.Report.Dropped) != 1 || out.Report.Dropped[0].Reason != "kind_max" || out.Report.ByKind[KindMemory] > oneMemory {
		t.Errorf("kind max: dropped %+v, memory %d", out.Report.Dropped, out.Report.ByKind[KindMemory])
	}
	p.Overflow = OverflowError
	_, err := c.Compile(stdctx.Background(), blocks, r, p)
	var be *BudgetError
	if !errors.As(err, &be) || be.Kind != KindMemory || be.Budget != oneMemory || be.Tokens != by[KindMemory] {
		t.Errorf("kind max error: %v", err)
	}

	// Pinned rules, tool schemas and the turn are never dropped.
	p = Policy{ContextWindow: by[KindPinned] + by[KindTurn], Overflow: OverflowTruncate}
	_, err = c.Compile(stdctx.Background(), blocks, r, p)
	if !errors.As(err, &be) || be.Strategy != OverflowTruncate {
		t.Fatalf("impossible budget: %v", err)
	}
	p = Policy{ContextWindow: T, Overflow: OverflowTruncate, Kinds: map[Kind]KindBudget{KindTurn: {Max: 1}}}
	if _, err = c.Compile(stdctx.Background(), blocks, r, p); !errors.As(err, &be) || be.Kind != KindTurn {
		t.Errorf("turn above its max: %v", err)
	}
	// Invalid policies are refused.
	for _, bad := range []Policy{{}, {ContextWindow: 10, CompletionReserve: 10}, {ContextWindow: 100, Overflow: OverflowCompact},
		{ContextWindow: 100, Kinds: map[Kind]KindBudget{KindMemory: {Min: 60}, KindState: {Min: 60}}}, {ContextWindow: 100, Kinds: map[Kind]KindBudget{KindMemory: {Min: 6, Max: 5}}}} {
		if _, err := c.Compile(stdctx.Background(), blocks, r, bad); !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("policy %+v: %v", bad, err)
		}
	}
}

type recordingSummarizer struct {
	calls atomic.Int32
	reqs  []SummaryRequest
}

func (s *recordingSummarizer) Summarize(_ stdctx.Context, req SummaryRequest) (string, error) {
	n := s.calls.Add(1)
	s.reqs = append(s.reqs, req)
	ext := ""
	if req.Previous != "" {
		ext = " (extends an earlier summary)"
	}
	return fmt.Sprintf("SUMMARY#%d of %d messages%s", n, len(req.Messages), ext), nil
}

func TestCompaction(t *testing.T) {
	t.Parallel()
	codecs := NewCodecs()
	blocks := sessionBlocks(t, codecs, 40)
	r := openAI(t)
	c := NewCompiler()
	full := compile(t, c, blocks, r, Policy{ContextWindow: bigWindow})
	sum := &recordingSummarizer{}
	p := Policy{ContextWindow: full.Report.Tokens - full.Report.ByKind[KindHistory]/2, Overflow: OverflowCompact, Summarizer: sum, SummaryTokens: 200}
	out := compile(t, c, blocks, r, p)
	checkOneSummary(t, out)
	if out.Report.Summary == nil || len(out.Report.Compacted) == 0 || out.Summary == nil {
		t.Fatalf("no compaction reported: %+v", out.Report)
	}
	if got := len(out.Report.Compacted); got != len(sum.reqs[0].Messages) {
		t.Errorf("compacted %d blocks, summarizer got %d messages", got, len(sum.reqs[0].Messages))
	}
	if out.Report.Tokens > p.Budget() {
		t.Errorf("compacted request still over budget: %d > %d", out.Report.Tokens, p.Budget())
	}
	// Same input again: the cached summary is reused, bytes identical.
	again := compile(t, c, blocks, r, p)
	if sum.calls.Load() != 1 || !bytes.Equal(requestJSON(t, again.Request), requestJSON(t, out.Request)) {
		t.Errorf("second compile: %d summarizer calls, same bytes %v", sum.calls.Load(), bytes.Equal(requestJSON(t, again.Request), requestJSON(t, out.Request)))
	}

	// Next question: the host passes the summary and the remaining history
	// plus a new exchange; compacting again replaces the summary.
	next := slices.Clone(out.Blocks[:len(out.Blocks)-1]) // without the old turn
	pos := out.Blocks[len(out.Blocks)-2].Position
	for _, m := range exchange(99) {
		pos++
		next = append(next, mustBlock(t, codecs, KindHistory, CodecMessage, MessageOf(m), AtPosition(pos)))
	}
	next = append(next, mustBlock(t, codecs, KindTurn, CodecTurn, TextTurn("And for 2023?")))
	p.ContextWindow -= full.Report.ByKind[KindHistory] / 4
	out2 := compile(t, c, next, r, p)
	checkOneSummary(t, out2)
	last := sum.reqs[len(sum.reqs)-1]
	if !strings.HasPrefix(last.Previous, "SUMMARY#1") {
		t.Errorf("the second summary did not get the first as Previous: %q", last.Previous)
	}
	if !strings.Contains(string(requestJSON(t, out2.Request)), "SUMMARY#2") || strings.Contains(string(requestJSON(t, out2.Request)), "SUMMARY#1") {
		t.Errorf("summary not replaced")
	}
	if got, want := out2.Summary.Payload.(Summary).Messages, len(sum.reqs[0].Messages)+len(last.Messages); got != want {
		t.Errorf("summary stands for %d messages, want %d", got, want)
	}
	for _, ref := range out2.Report.Compacted {
		if ref.Hash == out.Summary.HashHex() {
			return
		}
	}
	t.Errorf("the replaced summary is not reported as compacted")
}

// checkOneSummary asserts one summary, placed after the system prompt and
// before the remaining history, never after the turn.
func checkOneSummary(t *testing.T, out *Compiled) {
	t.Helper()
	var summaries, firstHistory, summaryAt, turnAt = 0, -1, -1, -1
	for i, b := range out.Blocks {
		if _, ok := b.Payload.(Summary); ok {
			summaries++
			summaryAt = i
			continue
		}
		if b.Kind == KindHistory && firstHistory < 0 {
			firstHistory = i
		}
		if b.Kind == KindTurn && turnAt < 0 {
			turnAt = i
		}
	}
	if summaries != 1 || summaryAt > firstHistory || summaryAt > turnAt {
		t.Fatalf("summaries %d at %d, first history %d, turn %d", summaries, summaryAt, firstHistory, turnAt)
	}
	msgs := out.Request.Messages
	if !strings.HasPrefix(msgs[0].Text(), "Summary of the earlier conversation") {
		t.Errorf("first message is not the summary: %q", msgs[0].Text())
	}
	if n := strings.Count(string(requestJSON(t, out.Request)), "Summary of the earlier conversation"); n != 1 {
		t.Errorf("summary appears %d times", n)
	}
	if msgs[len(msgs)-1].Text() == "" || strings.HasPrefix(msgs[len(msgs)-1].Text(), "Summary") {
		t.Errorf("last message is not the turn")
	}
}

func TestSensitivity(t *testing.T) {
	t.Parallel()
	codecs := NewCodecs()
	secretHist := HistoryMessage{Role: domain.RoleAssistant, Parts: []domain.Part{domain.TextPart("The CEO salary is 999k."),
		call("c9", "query_database", `{"sql":"SELECT salary FROM hr.pay"}`)}}
	blocks := []Block{
		mustBlock(t, codecs, KindPinned, CodecRules, Rules{Text: "rules"}),
		mustBlock(t, codecs, KindMemory, CodecText, Text{Body: "salary bands: A=50k"}, WithSensitivity(SensitivityRestricted)),
		mustBlock(t, codecs, KindMemory, CodecText, Text{Body: "public note"}, WithSensitivity(SensitivityPublic)),
		mustBlock(t, codecs, KindHistory, CodecMessage, MessageOf(agents.UserMessage("salaries?")), AtPosition(1)),
		mustBlock(t, codecs, KindHistory, CodecMessage, secretHist, AtPosition(2), WithSensitivity(SensitivityRestricted)),
		mustBlock(t, codecs, KindHistory, CodecMessage, HistoryMessage{Role: domain.RoleTool, Parts: []domain.Part{result("c9", "query_database", "999000")}},
			AtPosition(3), WithSensitivity(SensitivityRestricted)),
		mustBlock(t, codecs, KindTurn, CodecTurn, TextTurn("my id is 123-45-6789"), WithSensitivity(SensitivityRestricted)),
	}
	r := openAI(t)
	c := NewCompiler()
	p := Policy{ContextWindow: bigWindow, MaxSensitivity: SensitivityInternal, OnSensitive: SensitiveRedact}
	out := compile(t, c, blocks, r, p)
	js := string(requestJSON(t, out.Request))
	for _, secret := range []string{"50k", "999k", "hr.pay", "999000", "123-45-6789"} {
		if strings.Contains(js, secret) {
			t.Errorf("redacted request contains %q", secret)
		}
	}
	if len(out.Report.Redacted) != 4 || !strings.Contains(js, "public note") || !strings.Contains(js, `"id":"c9"`) || !strings.Contains(js, "[redacted]") {
		t.Errorf("redacted %d; request %s", len(out.Report.Redacted), js)
	}
	if out.Report.Event().Redacted != 4 {
		t.Error("event lacks the redaction count")
	}

	p.OnSensitive = SensitiveDrop
	out = compile(t, c, blocks, r, p)
	js = string(requestJSON(t, out.Request))
	if len(out.Report.Dropped) != 3 || len(out.Report.Redacted) != 1 || out.Report.Redacted[0].Kind != KindTurn {
		t.Errorf("drop mode: dropped %+v redacted %+v", out.Report.Dropped, out.Report.Redacted)
	}
	for _, d := range out.Report.Dropped {
		if d.Reason != "sensitivity" {
			t.Errorf("reason %q", d.Reason)
		}
	}
	if strings.Contains(js, "999") || strings.Contains(js, "123-45") || !strings.Contains(js, "salaries?") {
		t.Errorf("drop mode request: %s", js)
	}
	// At the ceiling nothing happens.
	p.MaxSensitivity = SensitivityRestricted
	out = compile(t, c, blocks, r, p)
	if len(out.Report.Dropped)+len(out.Report.Redacted) != 0 {
		t.Errorf("restricted ceiling changed blocks")
	}
}

func TestCalibration(t *testing.T) {
	t.Parallel()
	blocks := sessionBlocks(t, NewCodecs(), 8)
	r := must(NewAnthropicRenderer())
	c := NewCompiler()
	p := Policy{ContextWindow: bigWindow}
	out := compile(t, c, blocks, r, p)
	raw := out.Report.RawTokens
	if out.Report.Factor != 1+DefaultAnthropicMargin || out.Report.Tokens != int(float64(raw)*1.25+0.999999) {
		t.Errorf("uncalibrated: factor %v tokens %d raw %d", out.Report.Factor, out.Report.Tokens, raw)
	}
	cal, err := c.Compile(stdctx.Background(), blocks, r, p, WithCalibration(raw, raw*11/10))
	if err != nil {
		t.Fatal(err)
	}
	if !cal.Report.Calibrated || cal.Report.Factor < 1.11 || cal.Report.Factor > 1.13 || cal.Report.Tokens >= out.Report.Tokens {
		t.Errorf("calibrated: %+v", cal.Report)
	}
	// Exact renderers ignore calibration.
	ex, _ := c.Compile(stdctx.Background(), blocks, openAI(t), p, WithCalibration(100, 1000))
	if ex.Report.Calibrated || ex.Report.Factor != 1 {
		t.Errorf("exact renderer calibrated: %+v", ex.Report)
	}
}

func TestTokenCache(t *testing.T) {
	t.Parallel()
	blocks := sessionBlocks(t, NewCodecs(), 30)
	c := NewCompiler()
	r := openAI(t)
	p := Policy{ContextWindow: bigWindow}
	cold := compile(t, c, blocks, r, p)
	if cold.Report.CacheHits != 0 || cold.Report.CacheMisses != len(blocks) {
		t.Errorf("cold: %d hits %d misses", cold.Report.CacheHits, cold.Report.CacheMisses)
	}
	more := append(slices.Clone(blocks), mustBlock(t, NewCodecs(), KindHistory, CodecMessage, MessageOf(agents.UserMessage("one more")), AtPosition(31)))
	warm := compile(t, c, more, r, p)
	if warm.Report.CacheMisses != 1 || warm.Report.CacheHits != len(blocks) {
		t.Errorf("warm: %d hits %d misses", warm.Report.CacheHits, warm.Report.CacheMisses)
	}
	// Counts are per renderer: another tokenizer misses.
	other := compile(t, c, blocks, must(NewOpenAIRenderer("gpt-4")), p)
	if other.Report.CacheHits != 0 {
		t.Errorf("cl100k reused o200k counts")
	}
	// The bounded cache keeps working past its limit.
	small := &Compiler{MaxCacheEntries: 8}
	for range 3 {
		compile(t, small, blocks, r, p)
	}
	if n := len(small.tokens.cur) + len(small.tokens.prev); n > 8 {
		t.Errorf("cache holds %d entries, limit 8", n)
	}
}
