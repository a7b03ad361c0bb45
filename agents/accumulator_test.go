package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"math"
	"reflect"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// Helpers of this file are prefixed with acc.

func accCall(index int, id, name, args string) agents.Chunk {
	return agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{Index: index, ID: id, Name: name, Arguments: args}}
}

func accReason(index int, text, sig string) agents.Chunk {
	return agents.Chunk{Type: agents.ChunkReasoning, Index: index, Text: text, Signature: sig}
}

func accStop(s agents.StopReason) agents.Chunk { return agents.Chunk{Type: agents.ChunkStop, Stop: s} }

func accRun(t *testing.T, chunks ...agents.Chunk) (*agents.Response, error) {
	t.Helper()
	var a agents.Accumulator
	for i, c := range chunks {
		if err := a.Add(c); err != nil {
			return nil, &accAddError{i: i, err: err}
		}
	}
	return a.Response()
}

type accAddError struct {
	i   int
	err error
}

func (e *accAddError) Error() string { return e.err.Error() }
func (e *accAddError) Unwrap() error { return e.err }

func accMust(t *testing.T, chunks ...agents.Chunk) *agents.Response {
	t.Helper()
	resp, err := accRun(t, chunks...)
	if err != nil {
		t.Fatalf("accumulate: %v", err)
	}
	return resp
}

func accCallPart(id, name, args string) domain.Part {
	return domain.Part{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}}
}

func accEqualParts(t *testing.T, got, want []domain.Part) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		t.Errorf("parts =\n%s\nwant\n%s", gb, wb)
	}
}

func TestAccumulatorParts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		chunks []agents.Chunk
		want   []domain.Part
	}{
		{
			name:   "empty stream",
			chunks: nil,
			want:   nil,
		},
		{
			name:   "text fragments concatenate",
			chunks: []agents.Chunk{agents.TextChunk("Revenue "), agents.TextChunk(""), agents.TextChunk("was "), agents.TextChunk("1.2 M€.")},
			want:   []domain.Part{domain.TextPart("Revenue was 1.2 M€.")},
		},
		{
			name: "reasoning block with signature",
			chunks: []agents.Chunk{
				accReason(0, "Let me ", ""), accReason(0, "think.", ""), accReason(0, "", "sig-a"), accReason(0, "", "sig-b"),
			},
			want: []domain.Part{{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "Let me think.", Signature: "sig-asig-b"}}},
		},
		{
			name: "two reasoning blocks stay separate",
			chunks: []agents.Chunk{
				accReason(0, "first ", ""), accReason(1, "second", ""), accReason(0, "block", "s0"), accReason(1, "", "s1"),
			},
			want: []domain.Part{
				{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "first block", Signature: "s0"}},
				{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "second", Signature: "s1"}},
			},
		},
		{
			name: "interleaved calls by index",
			chunks: []agents.Chunk{
				accCall(0, "c1", "revenue", ""), accCall(1, "c2", "costs", ""),
				accCall(0, "", "", `{"ye`), accCall(1, "", "", `{"quar`),
				accCall(1, "", "", `ter":2}`), accCall(0, "", "", `ar":2025}`),
			},
			want: []domain.Part{accCallPart("c1", "revenue", `{"year":2025}`), accCallPart("c2", "costs", `{"quarter":2}`)},
		},
		{
			name: "NoIndex fragment appends to the latest call",
			chunks: []agents.Chunk{
				accCall(0, "c1", "revenue", `{"year"`), accCall(agents.NoIndex, "", "", `:2025}`),
			},
			want: []domain.Part{accCallPart("c1", "revenue", `{"year":2025}`)},
		},
		{
			name: "calls without index at all",
			chunks: []agents.Chunk{
				accCall(agents.NoIndex, "c1", "a", `{"x":`), accCall(agents.NoIndex, "", "", `1}`),
				accCall(agents.NoIndex, "c2", "b", `{}`),
			},
			want: []domain.Part{accCallPart("c1", "a", `{"x":1}`), accCallPart("c2", "b", `{}`)},
		},
		{
			name: "reused index with a new id starts a new call",
			chunks: []agents.Chunk{
				accCall(0, "c1", "a", `{"n":1}`), accCall(0, "c2", "b", `{"n":`), accCall(0, "", "", `2}`),
			},
			want: []domain.Part{accCallPart("c1", "a", `{"n":1}`), accCallPart("c2", "b", `{"n":2}`)},
		},
		{
			name: "same id repeated at its index continues the call",
			chunks: []agents.Chunk{
				accCall(0, "c1", "a", `{"n":`), accCall(0, "c1", "", `1}`),
			},
			want: []domain.Part{accCallPart("c1", "a", `{"n":1}`)},
		},
		{
			name:   "whole call in one fragment",
			chunks: []agents.Chunk{accCall(0, "c1", "revenue", `{"year":2025}`)},
			want:   []domain.Part{accCallPart("c1", "revenue", `{"year":2025}`)},
		},
		{
			name:   "text before calls",
			chunks: []agents.Chunk{agents.TextChunk("Checking"), agents.TextChunk("..."), accCall(0, "c1", "revenue", `{}`)},
			want:   []domain.Part{domain.TextPart("Checking..."), accCallPart("c1", "revenue", `{}`)},
		},
		{
			name:   "zero-argument call",
			chunks: []agents.Chunk{accCall(0, "c1", "now", "")},
			want:   []domain.Part{accCallPart("c1", "now", `{}`)},
		},
		{
			name:   "whitespace-only arguments",
			chunks: []agents.Chunk{accCall(0, "c1", "now", " \n"), accCall(0, "", "", "\t ")},
			want:   []domain.Part{accCallPart("c1", "now", `{}`)},
		},
		{
			name:   "arguments are trimmed",
			chunks: []agents.Chunk{accCall(0, "c1", "a", ` {"x":1} `)},
			want:   []domain.Part{accCallPart("c1", "a", `{"x":1}`)},
		},
		{
			name:   "empty fragment without a call is ignored",
			chunks: []agents.Chunk{accCall(3, "", "", ""), agents.TextChunk("hi")},
			want:   []domain.Part{domain.TextPart("hi")},
		},
		{
			name: "part order is first-seen order",
			chunks: []agents.Chunk{
				accReason(0, "think", ""), agents.TextChunk("Let me "), accCall(0, "c1", "a", ""),
				agents.TextChunk("Then."), accReason(0, " more", ""), accCall(0, "", "", `{}`),
			},
			want: []domain.Part{
				{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "think more"}},
				domain.TextPart("Let me "),
				accCallPart("c1", "a", `{}`),
				domain.TextPart("Then."),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := accMust(t, tc.chunks...)
			if resp.Message.Role != domain.RoleAssistant {
				t.Errorf("role = %q", resp.Message.Role)
			}
			accEqualParts(t, resp.Message.Parts, tc.want)
		})
	}
}

func TestAccumulatorReasoningOpaque(t *testing.T) {
	t.Parallel()
	// Opaque data must survive byte for byte: odd spacing, key order and
	// escapes included.
	opaque := json.RawMessage(`{ "z":1,"a" : "\u00e9", "data":"AAEC/w=="}`)
	later := json.RawMessage(`{"redacted":true}`)
	src := append([]byte(nil), opaque...)
	resp := accMust(t,
		agents.Chunk{Type: agents.ChunkReasoning, Index: 0, Provider: "anthropic", Opaque: src},
		agents.Chunk{Type: agents.ChunkReasoning, Index: 1, Text: "visible", Provider: "openai"},
		agents.Chunk{Type: agents.ChunkReasoning, Index: 1, Signature: "sig"},
		agents.Chunk{Type: agents.ChunkReasoning, Index: 2, Provider: "gemini", Opaque: json.RawMessage(`"first"`)},
		agents.Chunk{Type: agents.ChunkReasoning, Index: 2, Provider: "gemini", Opaque: later},
		agents.Chunk{Type: agents.ChunkReasoning, Index: 2, Provider: "other"},
	)
	// Mutating the chunk's buffer afterwards must not change the response.
	src[3] = 'X'
	want := []domain.Part{
		{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Provider: "anthropic", Opaque: opaque}},
		{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "visible", Signature: "sig", Provider: "openai"}},
		{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Provider: "gemini", Opaque: later}},
	}
	accEqualParts(t, resp.Message.Parts, want)
	if got := string(resp.Message.Parts[0].Reasoning.Opaque); got != `{ "z":1,"a" : "\u00e9", "data":"AAEC/w=="}` {
		t.Errorf("opaque = %s, want it byte-exact", got)
	}
}

func TestAccumulatorToolCallOpaque(t *testing.T) {
	t.Parallel()
	opaque := []byte(`{"thought_signature": "abc=="}`)
	resp := accMust(t, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{
		Index: 0, ID: "c1", Name: "a", Provider: "gemini", Opaque: opaque, Arguments: `{}`}})
	opaque[0] = 'X'
	tc := resp.Message.ToolCalls()[0]
	if tc.Provider != "gemini" || string(tc.Opaque) != `{"thought_signature": "abc=="}` {
		t.Errorf("call provider/opaque = %q %s", tc.Provider, tc.Opaque)
	}
}

func TestAccumulatorInvalidArguments(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`{"year": 20`, `not json`, `{"a":1}}`, `'single'`} {
		resp := accMust(t, accCall(0, "c1", "revenue", raw))
		args := resp.Message.ToolCalls()[0].Arguments
		if !json.Valid(args) {
			t.Errorf("%q: arguments %s are not valid JSON", raw, args)
			continue
		}
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			t.Errorf("%q: arguments %s are not a JSON string: %v", raw, args, err)
		}
		if s != raw {
			t.Errorf("unquoted arguments = %q, want %q", s, raw)
		}
	}
}

func TestAccumulatorErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		chunks []agents.Chunk
	}{
		{"call without a name", []agents.Chunk{accCall(0, "c1", "", `{}`)}},
		{"arguments without any head", []agents.Chunk{accCall(agents.NoIndex, "", "", `{"x":1}`)}},
		{"second call without a name", []agents.Chunk{accCall(0, "c1", "a", `{}`), accCall(1, "c2", "", `{}`)}},
		{"unknown chunk type", []agents.Chunk{{Type: 99}}},
		{"zero chunk type", []agents.Chunk{{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, err := accRun(t, tc.chunks...)
			if !errors.Is(err, agents.ErrMalformedStream) {
				t.Errorf("got %v, %v; want an error wrapping ErrMalformedStream", resp, err)
			}
		})
	}
}

func TestAccumulatorUsageAndStop(t *testing.T) {
	t.Parallel()
	u1 := domain.Usage{PromptTokens: 10, CompletionTokens: 1, TotalTokens: 11}
	u2 := domain.Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: 4, TotalTokens: 15}
	usage := func(u domain.Usage) agents.Chunk { return agents.Chunk{Type: agents.ChunkUsage, Usage: u} }
	call := accCall(0, "c1", "a", `{}`)
	tests := []struct {
		name      string
		chunks    []agents.Chunk
		wantUsage domain.Usage
		wantStop  agents.StopReason
	}{
		{"no stop chunk", []agents.Chunk{agents.TextChunk("hi")}, domain.Usage{}, agents.StopEndTurn},
		{"last usage wins", []agents.Chunk{usage(u1), agents.TextChunk("hi"), usage(u2)}, u2, agents.StopEndTurn},
		{"explicit end_turn", []agents.Chunk{agents.TextChunk("hi"), accStop(agents.StopEndTurn)}, domain.Usage{}, agents.StopEndTurn},
		{"max tokens kept", []agents.Chunk{agents.TextChunk("hi"), accStop(agents.StopMaxTokens)}, domain.Usage{}, agents.StopMaxTokens},
		{"content filter kept", []agents.Chunk{accStop(agents.StopContentFilter)}, domain.Usage{}, agents.StopContentFilter},
		{"last stop wins", []agents.Chunk{accStop(agents.StopOther), accStop(agents.StopRefusal)}, domain.Usage{}, agents.StopRefusal},
		{"calls with end_turn become tool_use", []agents.Chunk{call, accStop(agents.StopEndTurn)}, domain.Usage{}, agents.StopToolUse},
		{"calls without stop become tool_use", []agents.Chunk{call}, domain.Usage{}, agents.StopToolUse},
		{"calls with tool_use", []agents.Chunk{call, accStop(agents.StopToolUse), usage(u1)}, u1, agents.StopToolUse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := accMust(t, tc.chunks...)
			if resp.Usage != tc.wantUsage {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tc.wantUsage)
			}
			if resp.Stop != tc.wantStop {
				t.Errorf("stop = %q, want %q", resp.Stop, tc.wantStop)
			}
		})
	}
}

func TestAccumulatorHasToolCalls(t *testing.T) {
	t.Parallel()
	var a agents.Accumulator
	if a.HasToolCalls() {
		t.Error("zero Accumulator has tool calls")
	}
	_ = a.Add(agents.TextChunk("x"))
	if a.HasToolCalls() {
		t.Error("text counts as a tool call")
	}
	_ = a.Add(accCall(0, "c1", "a", ""))
	if !a.HasToolCalls() {
		t.Error("HasToolCalls = false after a call head")
	}
}

// accStream is a Model that streams fixed chunks and then an optional error.
type accStream struct {
	chunks []agents.Chunk
	err    error
}

func (m accStream) Stream(context.Context, *agents.Request) iter.Seq2[agents.Chunk, error] {
	return func(yield func(agents.Chunk, error) bool) {
		for _, c := range m.chunks {
			if !yield(c, nil) {
				return
			}
		}
		if m.err != nil {
			yield(agents.Chunk{}, m.err)
		}
	}
}

func (accStream) Info() agents.ModelInfo { return agents.ModelInfo{Name: "acc"} }

func TestGenerate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := &agents.Request{Messages: []agents.Message{agents.UserMessage("revenue?")}}

	t.Run("scripted model", func(t *testing.T) {
		t.Parallel()
		usage := domain.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}
		m := &scripted.Model{ChunkSize: 2, Turns: []scripted.Turn{{
			Reasoning: "Need data.", ReasoningSignature: "sig", Text: "Looking it up.",
			ToolCalls: []scripted.Call{
				{ID: "a", Name: "revenue", Args: `{"year":2025}`},
				{ID: "b", Name: "costs", Args: `{"year":2024,"unit":"EUR"}`},
				{ID: "c", Name: "now"},
			},
			Usage: usage,
		}}}
		resp, err := agents.Generate(ctx, m, req)
		if err != nil {
			t.Fatal(err)
		}
		want := []domain.Part{
			{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "Need data.", Signature: "sig", Provider: "scripted"}},
			domain.TextPart("Looking it up."),
			accCallPart("a", "revenue", `{"year":2025}`),
			accCallPart("b", "costs", `{"year":2024,"unit":"EUR"}`),
			accCallPart("c", "now", `{}`),
		}
		for _, p := range want[2:] {
			p.ToolCall.Provider = "scripted"
		}
		accEqualParts(t, resp.Message.Parts, want)
		if resp.Usage != usage || resp.Stop != agents.StopToolUse {
			t.Errorf("usage %+v stop %q", resp.Usage, resp.Stop)
		}
	})

	t.Run("same as the accumulator", func(t *testing.T) {
		t.Parallel()
		chunks := []agents.Chunk{accReason(0, "r", ""), agents.TextChunk("a"), agents.TextChunk("b"),
			accCall(0, "c1", "x", `{"k"`), accCall(0, "", "", `:1}`), accStop(agents.StopEndTurn)}
		resp, err := agents.Generate(ctx, accStream{chunks: chunks}, req)
		if err != nil {
			t.Fatal(err)
		}
		direct := accMust(t, chunks...)
		if !reflect.DeepEqual(resp, direct) {
			t.Errorf("Generate = %+v, Accumulator = %+v", resp, direct)
		}
	})

	t.Run("stream error", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("connection reset")
		m := &scripted.Model{Turns: []scripted.Turn{{Text: "partial answer", Err: boom, FailAfter: 1}}}
		resp, err := agents.Generate(ctx, m, req)
		if !errors.Is(err, boom) || resp != nil {
			t.Errorf("Generate = %v, %v; want nil, %v", resp, err, boom)
		}
	})

	t.Run("malformed chunk", func(t *testing.T) {
		t.Parallel()
		resp, err := agents.Generate(ctx, accStream{chunks: []agents.Chunk{agents.TextChunk("x"), {Type: 42}}}, req)
		if !errors.Is(err, agents.ErrMalformedStream) || resp != nil {
			t.Errorf("Generate = %v, %v", resp, err)
		}
	})

	t.Run("call without name", func(t *testing.T) {
		t.Parallel()
		resp, err := agents.Generate(ctx, accStream{chunks: []agents.Chunk{accCall(0, "c1", "", "{}")}}, req)
		if !errors.Is(err, agents.ErrMalformedStream) || resp != nil {
			t.Errorf("Generate = %v, %v", resp, err)
		}
	})
}

func TestMessageHelpers(t *testing.T) {
	t.Parallel()
	u := agents.UserMessage("hello")
	if u.Role != domain.RoleUser || u.Text() != "hello" || len(u.Parts) != 1 {
		t.Errorf("UserMessage = %+v", u)
	}
	a := agents.AssistantMessage("hi")
	if a.Role != domain.RoleAssistant || a.Text() != "hi" {
		t.Errorf("AssistantMessage = %+v", a)
	}
	m := agents.Message{Role: domain.RoleAssistant, Parts: []domain.Part{
		{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "hidden"}},
		domain.TextPart("Revenue "),
		accCallPart("c1", "a", `{}`),
		{Type: domain.PartToolCall}, // no call: skipped
		domain.TextPart("grew."),
		{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: "c1", Content: "not text"}},
		accCallPart("c2", "b", `{"x":1}`),
	}}
	if got := m.Text(); got != "Revenue grew." {
		t.Errorf("Text() = %q", got)
	}
	calls := m.ToolCalls()
	if len(calls) != 2 || calls[0].ID != "c1" || calls[1].ID != "c2" || string(calls[1].Arguments) != `{"x":1}` {
		t.Errorf("ToolCalls() = %+v", calls)
	}
	var empty agents.Message
	if empty.Text() != "" || empty.ToolCalls() != nil {
		t.Errorf("empty message: %q %v", empty.Text(), empty.ToolCalls())
	}
}

func TestPricingCost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		p     agents.Pricing
		u     domain.Usage
		want  float64
		exact bool
	}{
		{"zero prices", agents.Pricing{}, domain.Usage{PromptTokens: 1000, CompletionTokens: 1000}, 0, true},
		{"zero usage", agents.Pricing{InputPerMTok: 3, OutputPerMTok: 15}, domain.Usage{}, 0, true},
		{"plain", agents.Pricing{InputPerMTok: 3, OutputPerMTok: 15},
			domain.Usage{PromptTokens: 1_000_000, CompletionTokens: 500_000}, 3 + 7.5, false},
		{"cached and cache-write prices", agents.Pricing{InputPerMTok: 3, OutputPerMTok: 15, CachedInputPerMTok: 0.3, CacheWritePerMTok: 3.75},
			domain.Usage{PromptTokens: 1000, CachedTokens: 200, CacheWriteTokens: 100, CompletionTokens: 500},
			(700*3 + 200*0.3 + 100*3.75 + 500*15) / 1e6, false},
		{"cache-write price zero means input price", agents.Pricing{InputPerMTok: 2, OutputPerMTok: 8, CachedInputPerMTok: 0.5},
			domain.Usage{PromptTokens: 1000, CachedTokens: 400, CacheWriteTokens: 100, CompletionTokens: 10},
			(500*2 + 400*0.5 + 100*2 + 10*8) / 1e6, false},
		{"cached price zero means input price", agents.Pricing{InputPerMTok: 2, OutputPerMTok: 8},
			domain.Usage{PromptTokens: 1000, CachedTokens: 400, CompletionTokens: 10},
			(1000*2 + 10*8) / 1e6, false},
		{"more cached than prompt does not go negative", agents.Pricing{InputPerMTok: 1, CachedInputPerMTok: 0.1},
			domain.Usage{PromptTokens: 100, CachedTokens: 150},
			150 * 0.1 / 1e6, false},
		{"only output price", agents.Pricing{OutputPerMTok: 10},
			domain.Usage{PromptTokens: 5000, CachedTokens: 1000, CompletionTokens: 100_000}, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.p.Cost(tc.u)
			if tc.exact && got != tc.want {
				t.Errorf("Cost = %v, want exactly %v", got, tc.want)
			}
			if math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Cost = %.12f, want %.12f", got, tc.want)
			}
			if got < 0 {
				t.Errorf("negative cost %v", got)
			}
		})
	}
}
