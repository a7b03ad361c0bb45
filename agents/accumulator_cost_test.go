package agents_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// TestAccumulatorManyFragmentsLinear checks that a long streamed answer is
// assembled in linear time and memory: appending 4,000 text fragments
// (and as many reasoning fragments) takes a few dozen allocations, where
// string concatenation took one per fragment and copied the whole text
// each time (about 130 MB for this answer).
func TestAccumulatorManyFragmentsLinear(t *testing.T) {
	const n = 4000
	frag := "0123456789abcdef"
	want := strings.Repeat(frag, n)
	var resp *agents.Response
	allocs := testing.AllocsPerRun(1, func() {
		var a agents.Accumulator
		for range n {
			if err := a.Add(agents.Chunk{Type: agents.ChunkReasoning, Text: frag, Signature: "s"}); err != nil {
				t.Fatal(err)
			}
		}
		for range n {
			if err := a.Add(agents.TextChunk(frag)); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		if resp, err = a.Response(); err != nil {
			t.Fatal(err)
		}
	})
	if len(resp.Message.Parts) != 2 || resp.Message.Text() != want || resp.Message.Parts[0].Reasoning.Text != want ||
		resp.Message.Parts[0].Reasoning.Signature != strings.Repeat("s", n) {
		t.Fatalf("assembled %d parts; text of %d bytes, want %d", len(resp.Message.Parts), len(resp.Message.Text()), len(want))
	}
	if allocs > 100 {
		t.Errorf("accumulating %d text and %d reasoning fragments took %v allocations, want at most 100", n, n, allocs)
	}
}

// accNaive is the reference the Accumulator must agree with for text and
// reasoning: plain string concatenation, one text part per run of text
// chunks, one reasoning part per reasoning index.
type accNaive struct {
	parts  []domain.Part
	reason map[int]int
}

func (r *accNaive) add(c agents.Chunk) {
	switch c.Type {
	case agents.ChunkText:
		if c.Text == "" {
			return
		}
		if n := len(r.parts); n > 0 && r.parts[n-1].Type == domain.PartText {
			r.parts[n-1].Text += c.Text
			return
		}
		r.parts = append(r.parts, domain.TextPart(c.Text))
	case agents.ChunkReasoning:
		pi, ok := r.reason[c.Index]
		if !ok {
			r.parts = append(r.parts, domain.Part{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{}})
			pi = len(r.parts) - 1
			r.reason[c.Index] = pi
		}
		rs := r.parts[pi].Reasoning
		rs.Text += c.Text
		rs.Signature += c.Signature
		if c.Provider != "" && rs.Provider == "" {
			rs.Provider = c.Provider
		}
	case agents.ChunkToolCall:
		r.parts = append(r.parts, domain.Part{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{
			ID: c.ToolCall.ID, Name: c.ToolCall.Name, Arguments: []byte("{}")}})
	}
}

// TestAccumulatorMatchesConcatenation feeds random interleavings of text,
// reasoning (several blocks, with signatures) and tool-call chunks to the
// Accumulator and to plain concatenation, asking for the Response midway
// as well as at the end: the parts must be identical every time.
func TestAccumulatorMatchesConcatenation(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	pieces := []string{"", "a", "héllo ", "東京", "\n", "0123456789", "\xff"}
	for trial := range 500 {
		var a agents.Accumulator
		ref := accNaive{reason: map[int]int{}}
		calls := 0
		n := r.IntN(60)
		for i := range n {
			var c agents.Chunk
			switch k := r.IntN(10); {
			case k < 5:
				c = agents.TextChunk(pieces[r.IntN(len(pieces))])
			case k < 9:
				c = agents.Chunk{Type: agents.ChunkReasoning, Index: r.IntN(3), Text: pieces[r.IntN(len(pieces))], Provider: "p"}
				if r.IntN(4) == 0 {
					c.Signature = pieces[r.IntN(len(pieces))]
				}
			default:
				calls++
				c = agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{Index: 100 + calls,
					ID: fmt.Sprint("call_", calls), Name: "tool"}}
			}
			if err := a.Add(c); err != nil {
				t.Fatal(err)
			}
			ref.add(c)
			if i == n/2 || i == n-1 {
				resp, err := a.Response()
				if err != nil {
					t.Fatal(err)
				}
				got := resp.Message.Parts
				if len(got) == 0 {
					got = nil
				}
				if !reflect.DeepEqual(got, ref.parts) {
					t.Fatalf("trial %d after %d chunks:\n got %s\nwant %s", trial, i+1, accDump(got), accDump(ref.parts))
				}
			}
		}
	}
}

func accDump(parts []domain.Part) string {
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case domain.PartReasoning:
			fmt.Fprintf(&b, "[reasoning %q sig %q %s] ", p.Reasoning.Text, p.Reasoning.Signature, p.Reasoning.Provider)
		case domain.PartToolCall:
			fmt.Fprintf(&b, "[call %s] ", p.ToolCall.ID)
		default:
			fmt.Fprintf(&b, "[%s %q] ", p.Type, p.Text)
		}
	}
	return b.String()
}

// BenchmarkAccumulatorText assembles an answer of 200 text fragments.
func BenchmarkAccumulatorText(b *testing.B) {
	frag := "0123456789abcdef"
	b.ReportAllocs()
	for b.Loop() {
		var a agents.Accumulator
		for range 200 {
			_ = a.Add(agents.TextChunk(frag))
		}
		if _, err := a.Response(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMessageText checks Text on zero, one and several text parts mixed
// with other parts, and that the usual single text part is returned
// without a copy (the executor calls Text on every model response).
func TestMessageText(t *testing.T) {
	call := domain.Part{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "c", Name: "n"}}
	reason := domain.Part{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "thinking"}}
	cases := []struct {
		parts []domain.Part
		want  string
	}{
		{nil, ""},
		{[]domain.Part{call}, ""},
		{[]domain.Part{reason, domain.TextPart("answer"), call}, "answer"},
		{[]domain.Part{domain.TextPart("a"), call, domain.TextPart("b"), reason, domain.TextPart("c")}, "abc"},
	}
	for _, tc := range cases {
		if got := (agents.Message{Role: domain.RoleAssistant, Parts: tc.parts}).Text(); got != tc.want {
			t.Errorf("Text of %s = %q, want %q", accDump(tc.parts), got, tc.want)
		}
	}
	m := agents.Message{Role: domain.RoleAssistant, Parts: []domain.Part{reason, domain.TextPart(strings.Repeat("x", 4096)), call}}
	if n := testing.AllocsPerRun(100, func() { _ = m.Text() }); n != 0 {
		t.Errorf("Text of one text part: %v allocations, want 0", n)
	}
}
