package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

func userReq(text string) *agents.Request {
	return &agents.Request{Messages: []agents.Message{agents.UserMessage(text)}}
}

// collect drains one stream, returning its chunks and the error (if any)
// it ended with. It fails the test if anything follows an error.
func collect(t *testing.T, ctx context.Context, m agents.Model, req *agents.Request) ([]agents.Chunk, error) {
	t.Helper()
	var (
		chunks []agents.Chunk
		err    error
	)
	for c, e := range m.Stream(ctx, req) {
		if err != nil {
			t.Fatalf("stream yielded %+v, %v after the error %v", c, e, err)
		}
		if e != nil {
			err = e
			continue
		}
		chunks = append(chunks, c)
	}
	return chunks, err
}

func texts(chunks []agents.Chunk, typ agents.ChunkType) []string {
	var out []string
	for _, c := range chunks {
		if c.Type == typ && c.Text != "" {
			out = append(out, c.Text)
		}
	}
	return out
}

func TestTurnsPlayedInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := &scripted.Model{Turns: []scripted.Turn{{Text: "one"}, {Text: "two"}, {Text: "three"}}}
	for i, want := range []string{"one", "two", "three"} {
		resp, err := agents.Generate(ctx, m, userReq(fmt.Sprint(i)))
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if got := resp.Message.Text(); got != want {
			t.Errorf("turn %d text = %q, want %q", i, got, want)
		}
		if m.Calls() != i+1 {
			t.Errorf("Calls() = %d, want %d", m.Calls(), i+1)
		}
	}
	chunks, err := collect(t, ctx, m, userReq("more"))
	if !errors.Is(err, scripted.ErrNoTurns) || len(chunks) != 0 {
		t.Errorf("after the script: %d chunks, %v; want ErrNoTurns only", len(chunks), err)
	}
	if m.Calls() != 4 {
		t.Errorf("the failed request was not recorded: Calls() = %d", m.Calls())
	}
}

func TestTextChunking(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		size int
		text string
		want []string
	}{
		{"one rune per chunk", 1, "Zürich 東京", []string{"Z", "ü", "r", "i", "c", "h", " ", "東", "京"}},
		{"four runes per chunk", 4, "Zürich 東京", []string{"Züri", "ch 東", "京"}},
		{"emoji", 1, "a😀b", []string{"a", "😀", "b"}},
		{"default size 16", 0, strings.Repeat("x", 40), []string{strings.Repeat("x", 16), strings.Repeat("x", 16), strings.Repeat("x", 8)}},
		{"negative size means default", -3, strings.Repeat("é", 17), []string{strings.Repeat("é", 16), "é"}},
		{"exact multiple", 3, "abcdef", []string{"abc", "def"}},
		{"larger than the text", 100, "short", []string{"short"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &scripted.Model{ChunkSize: tc.size, Turns: []scripted.Turn{{Text: tc.text, Reasoning: tc.text}}}
			chunks, err := collect(t, context.Background(), m, userReq("q"))
			if err != nil {
				t.Fatal(err)
			}
			for _, typ := range []agents.ChunkType{agents.ChunkText, agents.ChunkReasoning} {
				got := texts(chunks, typ)
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("chunk type %d pieces = %q, want %q", typ, got, tc.want)
				}
				for _, p := range got {
					if !utf8.ValidString(p) {
						t.Errorf("piece %q is not valid UTF-8", p)
					}
				}
			}
		})
	}
}

func TestChunkSequence(t *testing.T) {
	t.Parallel()
	usage := domain.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}
	m := &scripted.Model{ChunkSize: 4, Turns: []scripted.Turn{{
		Reasoning: "hmm", ReasoningSignature: "sig", Text: "ok",
		ToolCalls: []scripted.Call{{Name: "a", Args: `{"x":12}`}, {ID: "given", Name: "b"}, {Name: "c", Args: `{}`}},
		Usage:     usage,
	}}}
	chunks, err := collect(t, context.Background(), m, userReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	call := func(d agents.ToolCallDelta) agents.Chunk {
		return agents.Chunk{Type: agents.ChunkToolCall, ToolCall: d}
	}
	want := []agents.Chunk{
		{Type: agents.ChunkReasoning, Text: "hmm", Provider: "scripted"},
		{Type: agents.ChunkReasoning, Signature: "sig", Provider: "scripted"},
		agents.TextChunk("ok"),
		call(agents.ToolCallDelta{Index: 0, ID: "call_1_1", Name: "a", Provider: "scripted"}),
		call(agents.ToolCallDelta{Index: 1, ID: "given", Name: "b", Provider: "scripted"}),
		call(agents.ToolCallDelta{Index: 2, ID: "call_1_3", Name: "c", Provider: "scripted"}),
		call(agents.ToolCallDelta{Index: 0, Arguments: `{"x"`}),
		call(agents.ToolCallDelta{Index: 2, Arguments: `{}`}),
		call(agents.ToolCallDelta{Index: 0, Arguments: `:12}`}),
		{Type: agents.ChunkUsage, Usage: usage},
		{Type: agents.ChunkStop, Stop: agents.StopToolUse},
	}
	if !reflect.DeepEqual(chunks, want) {
		t.Errorf("chunks =\n%+v\nwant\n%+v", chunks, want)
	}
}

func TestToolCallsInterleaveAndReassemble(t *testing.T) {
	t.Parallel()
	opaque := json.RawMessage(`{"thought_signature":"c2ln", "n": [1, 2]}`)
	calls := []scripted.Call{
		scripted.CallJSON("revenue", map[string]any{"year": 2025, "region": "EU", "unit": "EUR"}),
		{Name: "costs", Args: `{"year":2024,"categories":["rent","salaries","marketing"]}`, Opaque: opaque},
		{ID: "fixed", Name: "now"},
	}
	m := &scripted.Model{ChunkSize: 5, Turns: []scripted.Turn{{Text: "Let me check.", ToolCalls: calls}}}

	chunks, err := collect(t, context.Background(), m, userReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	// Argument fragments of the two calls alternate.
	var order []int
	for _, c := range chunks {
		if c.Type == agents.ChunkToolCall && c.ToolCall.Arguments != "" {
			order = append(order, c.ToolCall.Index)
		}
	}
	if len(order) < 4 || order[0] != 0 || order[1] != 1 || order[2] != 0 || order[3] != 1 {
		t.Errorf("argument fragments by call index = %v, want them interleaved 0,1,0,1,...", order)
	}
	for _, c := range chunks {
		if c.Type == agents.ChunkToolCall && utf8.RuneCountInString(c.ToolCall.Arguments) > 5 {
			t.Errorf("argument fragment %q longer than ChunkSize", c.ToolCall.Arguments)
		}
	}

	m.Reset()
	resp, err := agents.Generate(context.Background(), m, userReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Message.ToolCalls()
	if len(got) != 3 {
		t.Fatalf("%d calls, want 3", len(got))
	}
	wantIDs := []string{"call_1_1", "call_1_2", "fixed"}
	for i, c := range got {
		if c.ID != wantIDs[i] || c.Name != calls[i].Name || c.Provider != "scripted" {
			t.Errorf("call %d = %+v", i, c)
		}
		wantArgs := calls[i].Args
		if wantArgs == "" {
			wantArgs = "{}"
		}
		if string(c.Arguments) != wantArgs {
			t.Errorf("call %d arguments = %s, want %s", i, c.Arguments, wantArgs)
		}
	}
	if string(got[1].Opaque) != string(opaque) {
		t.Errorf("opaque = %s, want %s byte for byte", got[1].Opaque, opaque)
	}
	if got[0].Opaque != nil || got[2].Opaque != nil {
		t.Errorf("opaque on calls without one: %s %s", got[0].Opaque, got[2].Opaque)
	}
	if resp.Message.Text() != "Let me check." || resp.Stop != agents.StopToolUse {
		t.Errorf("text %q stop %q", resp.Message.Text(), resp.Stop)
	}
}

func TestReasoningReassembles(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{ChunkSize: 3, Turns: []scripted.Turn{{Reasoning: "Sum the rows.", ReasoningSignature: "c2ln", Text: "Done."}}}
	resp, err := agents.Generate(context.Background(), m, userReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	want := []domain.Part{
		{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "Sum the rows.", Signature: "c2ln", Provider: "scripted"}},
		domain.TextPart("Done."),
	}
	if !reflect.DeepEqual(resp.Message.Parts, want) {
		t.Errorf("parts = %+v", resp.Message.Parts)
	}
}

func TestRequestsRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := &scripted.Model{Turns: []scripted.Turn{{Text: "a"}, {Text: "b"}}}
	req1 := &agents.Request{System: "sys", Messages: []agents.Message{agents.UserMessage("first")},
		Tools: []agents.ToolSpec{{Name: "t", Description: "d"}}, Options: agents.Options{MaxTokens: 7}}
	if _, err := agents.Generate(ctx, m, req1); err != nil {
		t.Fatal(err)
	}
	// The caller reusing its request after the call does not change the
	// recording.
	req1.System = "changed"
	req1.Messages[0] = agents.UserMessage("changed")
	req1.Messages = append(req1.Messages, agents.AssistantMessage("a"))

	if _, err := agents.Generate(ctx, m, req1); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || m.Calls() != 2 {
		t.Fatalf("Requests() has %d, Calls() = %d; want 2", len(reqs), m.Calls())
	}
	if reqs[0].System != "sys" || len(reqs[0].Messages) != 1 || reqs[0].Messages[0].Text() != "first" ||
		len(reqs[0].Tools) != 1 || reqs[0].Options.MaxTokens != 7 {
		t.Errorf("first request recorded as %+v", reqs[0])
	}
	if reqs[1].System != "changed" || len(reqs[1].Messages) != 2 || reqs[1].Messages[1].Text() != "a" {
		t.Errorf("second request recorded as %+v", reqs[1])
	}

	// Requests returns a copy: changing it does not affect the model.
	reqs[0] = agents.Request{System: "mutated"}
	reqs[1] = agents.Request{}
	again := m.Requests()
	if len(again) != 2 || again[0].System != "sys" || again[1].System != "changed" {
		t.Errorf("Requests() after mutating a previous result = %+v", again)
	}
}

func TestStreamDoesNotModifyRequest(t *testing.T) {
	t.Parallel()
	req := &agents.Request{System: "s", Messages: []agents.Message{agents.UserMessage("q")}}
	before, _ := json.Marshal(req)
	m := &scripted.Model{Turns: []scripted.Turn{{Text: "a", ToolCalls: []scripted.Call{{Name: "x"}}}}}
	if _, err := agents.Generate(context.Background(), m, req); err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(req)
	if string(before) != string(after) {
		t.Errorf("request changed:\n%s\n%s", before, after)
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := &scripted.Model{Turns: []scripted.Turn{{Text: "first", ToolCalls: []scripted.Call{{Name: "x"}}}, {Text: "second"}}}
	for range 2 {
		if _, err := agents.Generate(ctx, m, userReq("q")); err != nil {
			t.Fatal(err)
		}
	}
	old := m.Requests()
	m.Reset()
	if m.Calls() != 0 || len(m.Requests()) != 0 {
		t.Errorf("after Reset: Calls() = %d, %d requests", m.Calls(), len(m.Requests()))
	}
	resp, err := agents.Generate(ctx, m, userReq("again"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "first" {
		t.Errorf("after Reset the script plays %q, want it from the start", resp.Message.Text())
	}
	if id := resp.Message.ToolCalls()[0].ID; id != "call_1_1" {
		t.Errorf("default call id after Reset = %q, want call_1_1", id)
	}
	// Earlier results of Requests are not overwritten by new requests.
	if len(old) != 2 || old[0].Messages[0].Text() != "q" {
		t.Errorf("a Requests() result taken before Reset changed: %+v", old)
	}
	if m.Calls() != 1 {
		t.Errorf("Calls() = %d", m.Calls())
	}
}

func TestRespond(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var seen []string
	m := &scripted.Model{
		Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{Name: "lookup"}}}},
		Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
			last := req.Messages[len(req.Messages)-1]
			seen = append(seen, last.Text())
			if last.Text() == "fail" {
				return scripted.Turn{}, errors.New("respond failed")
			}
			return scripted.Turn{Text: "echo: " + last.Text(), ToolCalls: []scripted.Call{{Name: "n"}}}, nil
		},
	}
	// The scripted turn comes first; Respond is not consulted.
	resp, err := agents.Generate(ctx, m, userReq("one"))
	if err != nil || resp.Message.ToolCalls()[0].Name != "lookup" || len(seen) != 0 {
		t.Fatalf("first turn: %+v, %v, Respond saw %q", resp, err, seen)
	}
	resp, err = agents.Generate(ctx, m, userReq("two"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "echo: two" {
		t.Errorf("Respond turn text = %q", resp.Message.Text())
	}
	// Default ids of responded turns count requests.
	if id := resp.Message.ToolCalls()[0].ID; id != "call_2_1" {
		t.Errorf("responded call id = %q, want call_2_1", id)
	}
	_, err = agents.Generate(ctx, m, userReq("fail"))
	if err == nil || err.Error() != "respond failed" {
		t.Errorf("Respond error: %v", err)
	}
	if !reflect.DeepEqual(seen, []string{"two", "fail"}) || m.Calls() != 3 {
		t.Errorf("Respond saw %q, Calls() = %d", seen, m.Calls())
	}
}

func TestErrFailAfter(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	// "abcdef" with ChunkSize 2: 3 text chunks, then usage and stop.
	tests := []struct {
		name      string
		failAfter int
		want      int // chunks before the error
	}{
		{"before any chunk", 0, 0},
		{"after two chunks", 2, 2},
		{"after all but stop", 4, 4},
		{"at the end", 5, 5},
		{"beyond the end", 50, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &scripted.Model{ChunkSize: 2, Turns: []scripted.Turn{{Text: "abcdef", Err: boom, FailAfter: tc.failAfter}}}
			chunks, err := collect(t, context.Background(), m, userReq("q"))
			if !errors.Is(err, boom) {
				t.Errorf("err = %v, want %v", err, boom)
			}
			if len(chunks) != tc.want {
				t.Errorf("%d chunks before the error, want %d", len(chunks), tc.want)
			}
		})
	}
	// The failing turn is used up; the next one plays normally.
	m := &scripted.Model{Turns: []scripted.Turn{{Text: "x", Err: boom}, {Text: "ok"}}}
	if _, err := agents.Generate(context.Background(), m, userReq("q")); !errors.Is(err, boom) {
		t.Errorf("first: %v", err)
	}
	if resp, err := agents.Generate(context.Background(), m, userReq("q")); err != nil || resp.Message.Text() != "ok" {
		t.Errorf("second: %v, %v", resp, err)
	}
}

func TestContextCancellation(t *testing.T) {
	t.Parallel()
	t.Run("cancelled during a delay", func(t *testing.T) {
		t.Parallel()
		m := &scripted.Model{Turns: []scripted.Turn{{Text: "never", Delay: time.Hour}}}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		start := time.Now()
		chunks, err := collect(t, ctx, m, userReq("q"))
		if !errors.Is(err, context.Canceled) || len(chunks) != 0 {
			t.Errorf("%d chunks, %v; want context.Canceled", len(chunks), err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v to notice the cancellation", d)
		}
	})
	t.Run("deadline during a delay", func(t *testing.T) {
		t.Parallel()
		m := &scripted.Model{ChunkSize: 1, Turns: []scripted.Turn{{Text: "abc", Delay: 5 * time.Millisecond}}}
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Millisecond)
		defer cancel()
		_, err := collect(t, ctx, m, userReq("q"))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want DeadlineExceeded", err)
		}
	})
	t.Run("already cancelled without delay", func(t *testing.T) {
		t.Parallel()
		m := &scripted.Model{Turns: []scripted.Turn{{Text: "never"}}}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		chunks, err := collect(t, ctx, m, userReq("q"))
		if !errors.Is(err, context.Canceled) || len(chunks) != 0 {
			t.Errorf("%d chunks, %v; want context.Canceled", len(chunks), err)
		}
	})
	t.Run("cancelled mid-stream", func(t *testing.T) {
		t.Parallel()
		m := &scripted.Model{ChunkSize: 1, Turns: []scripted.Turn{{Text: "abcdef"}}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var n int
		var err error
		for c, e := range m.Stream(ctx, userReq("q")) {
			if e != nil {
				err = e
				break
			}
			if c.Type == agents.ChunkText {
				n++
			}
			if n == 2 {
				cancel()
			}
		}
		if n != 2 || !errors.Is(err, context.Canceled) {
			t.Errorf("%d text chunks, %v; want 2 then context.Canceled", n, err)
		}
	})
}

func TestBreakStopsStream(t *testing.T) {
	t.Parallel()
	// 200 chunks of 20 ms each would take 4 s; breaking after the first
	// must return at once. (Were the producer to keep calling yield after
	// the break, the range-over-func runtime would panic.)
	m := &scripted.Model{ChunkSize: 1, Turns: []scripted.Turn{{Text: strings.Repeat("x", 200), Delay: 20 * time.Millisecond}, {Text: "next"}}}
	start := time.Now()
	n := 0
	for _, err := range m.Stream(context.Background(), userReq("q")) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("breaking out took %v", d)
	}
	if n != 1 {
		t.Errorf("n = %d", n)
	}
	// The abandoned turn is used up; the next request gets the next turn.
	resp, err := agents.Generate(context.Background(), m, userReq("q"))
	if err != nil || resp.Message.Text() != "next" {
		t.Errorf("after break: %v, %v", resp, err)
	}
	// Breaking out at each position, for every kind of chunk.
	full := scripted.Turn{Reasoning: "rr", ReasoningSignature: "s", Text: "tt", ToolCalls: []scripted.Call{{Name: "a", Args: `{"k":1}`}, {Name: "b", Args: `{}`}}}
	total := len(mustCollect(t, &scripted.Model{ChunkSize: 1, Turns: []scripted.Turn{full}}))
	for stopAt := 1; stopAt <= total; stopAt++ {
		m := &scripted.Model{ChunkSize: 1, Turns: []scripted.Turn{full}}
		got := 0
		for _, err := range m.Stream(context.Background(), userReq("q")) {
			if err != nil {
				t.Fatal(err)
			}
			got++
			if got == stopAt {
				break
			}
		}
		if got != stopAt {
			t.Errorf("stopAt %d: got %d chunks", stopAt, got)
		}
	}
}

func mustCollect(t *testing.T, m agents.Model) []agents.Chunk {
	t.Helper()
	chunks, err := collect(t, context.Background(), m, userReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	return chunks
}

func TestInfo(t *testing.T) {
	t.Parallel()
	var m scripted.Model
	info := m.Info()
	want := agents.ModelInfo{
		Provider: "scripted", Name: "scripted", ContextWindow: 128000,
		Capabilities: agents.Capabilities{Tools: true, ParallelTools: true, Reasoning: true, JSON: true},
	}
	if !reflect.DeepEqual(info, want) {
		t.Errorf("default Info() = %+v, want %+v", info, want)
	}
	custom := agents.ModelInfo{Provider: "p", Name: "big", ContextWindow: 1000, MaxOutputTokens: 10,
		Pricing: agents.Pricing{InputPerMTok: 1, OutputPerMTok: 2}}
	m2 := scripted.Model{ModelInfo: custom}
	if got := m2.Info(); !reflect.DeepEqual(got, custom) {
		t.Errorf("Info() = %+v, want the configured ModelInfo", got)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("estimate", func(t *testing.T) {
		t.Parallel()
		req := &agents.Request{
			System:   "abcd",                                                                           // 4 bytes
			Messages: []agents.Message{agents.UserMessage("hello")},                                    // 5 bytes
			Tools:    []agents.ToolSpec{{Name: "ab", Description: "c", Schema: json.RawMessage(`{}`)}}, // 5 bytes
		}
		turn := scripted.Turn{Text: "Hello world!", ToolCalls: []scripted.Call{{Name: "ab", Args: `{"x":1}`}}} // 12 + 2 + 7 bytes
		want := domain.Usage{PromptTokens: (14 + 3) / 4, CompletionTokens: (21 + 3) / 4}
		want.TotalTokens = want.PromptTokens + want.CompletionTokens
		for i := 0; i < 3; i++ {
			m := &scripted.Model{Turns: []scripted.Turn{turn}}
			resp, err := agents.Generate(ctx, m, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage != want {
				t.Errorf("run %d: usage = %+v, want %+v", i, resp.Usage, want)
			}
		}
		if want.PromptTokens == 0 || want.CompletionTokens == 0 {
			t.Error("estimate is zero")
		}
	})
	t.Run("estimate counts tool calls and results in the request", func(t *testing.T) {
		t.Parallel()
		short := userReq("q")
		long := &agents.Request{Messages: []agents.Message{
			agents.UserMessage("q"),
			{Role: domain.RoleAssistant, Parts: []domain.Part{{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "c", Name: "lookup", Arguments: json.RawMessage(`{"year":2025}`)}}}},
			{Role: domain.RoleTool, Parts: []domain.Part{{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: "c", Content: strings.Repeat("r", 100)}}}},
		}}
		m := &scripted.Model{Turns: []scripted.Turn{{Text: "a"}, {Text: "a"}}}
		r1, err1 := agents.Generate(ctx, m, short)
		r2, err2 := agents.Generate(ctx, m, long)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if r1.Usage.PromptTokens != 1 || r2.Usage.PromptTokens != (1+6+13+100+3)/4 {
			t.Errorf("prompt tokens %d and %d", r1.Usage.PromptTokens, r2.Usage.PromptTokens)
		}
	})
	t.Run("explicit usage verbatim", func(t *testing.T) {
		t.Parallel()
		u := domain.Usage{PromptTokens: 1234, CompletionTokens: 56, CachedTokens: 1000, CacheWriteTokens: 3, ReasoningTokens: 7, TotalTokens: 999}
		m := &scripted.Model{Turns: []scripted.Turn{{Text: "x", Usage: u}}}
		resp, err := agents.Generate(ctx, m, userReq("q"))
		if err != nil || resp.Usage != u {
			t.Errorf("usage = %+v, %v; want %+v verbatim", resp.Usage, err, u)
		}
	})
}

func TestStopReason(t *testing.T) {
	t.Parallel()
	calls := []scripted.Call{{Name: "x"}}
	tests := []struct {
		name string
		turn scripted.Turn
		want agents.StopReason
	}{
		{"text defaults to end_turn", scripted.Turn{Text: "hi"}, agents.StopEndTurn},
		{"empty turn defaults to end_turn", scripted.Turn{}, agents.StopEndTurn},
		{"calls default to tool_use", scripted.Turn{ToolCalls: calls}, agents.StopToolUse},
		{"explicit max_tokens", scripted.Turn{Text: "cut", Stop: agents.StopMaxTokens}, agents.StopMaxTokens},
		{"explicit content_filter", scripted.Turn{Stop: agents.StopContentFilter}, agents.StopContentFilter},
		{"explicit refusal", scripted.Turn{Text: "no", Stop: agents.StopRefusal}, agents.StopRefusal},
		{"explicit end_turn with calls is streamed as is", scripted.Turn{ToolCalls: calls, Stop: agents.StopEndTurn}, agents.StopEndTurn},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &scripted.Model{Turns: []scripted.Turn{tc.turn}}
			chunks, err := collect(t, context.Background(), m, userReq("q"))
			if err != nil {
				t.Fatal(err)
			}
			last := chunks[len(chunks)-1]
			if last.Type != agents.ChunkStop || last.Stop != tc.want {
				t.Errorf("last chunk = %+v, want stop %q", last, tc.want)
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	const n = 30
	turns := make([]scripted.Turn, n)
	for i := range turns {
		turns[i] = scripted.Turn{Text: fmt.Sprintf("answer %02d", i), ToolCalls: []scripted.Call{{Name: "x", Args: `{"a":1}`}}}
	}
	m := &scripted.Model{ChunkSize: 3, Turns: turns}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := agents.Generate(context.Background(), m, userReq(fmt.Sprint(i)))
			if err != nil {
				t.Error(err)
				return
			}
			_ = m.Requests()
			mu.Lock()
			seen[resp.Message.Text()]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(seen) != n || m.Calls() != n || len(m.Requests()) != n {
		t.Errorf("%d distinct answers, Calls() = %d; want each of %d turns played once", len(seen), m.Calls(), n)
	}
	for text, k := range seen {
		if k != 1 {
			t.Errorf("%q played %d times", text, k)
		}
	}
}

func TestCallJSON(t *testing.T) {
	t.Parallel()
	c := scripted.CallJSON("revenue", map[string]any{"year": 2025, "region": "EU"})
	if c.Name != "revenue" || c.Args != `{"region":"EU","year":2025}` || c.ID != "" || c.Opaque != nil {
		t.Errorf("CallJSON = %+v", c)
	}
	if c := scripted.CallJSON("none", nil); c.Args != "null" {
		t.Errorf("CallJSON(nil).Args = %q", c.Args)
	}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "bad") {
			t.Errorf("CallJSON with an unencodable value: recover() = %v, want a panic naming the tool", r)
		}
	}()
	scripted.CallJSON("bad", make(chan int))
}
