package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/internal/llmhttp"
)

// ScenarioTimeout bounds every scenario: a model that has not finished by
// then hangs, and the scenario fails.
const ScenarioTimeout = 15 * time.Second

// Run runs the conformance suite against h. Scenarios run in parallel,
// each with its own fake server.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.NewModel == nil || h.Stream == nil || h.HTTPError == nil || h.Inspect == nil || h.Malformed == nil {
		t.Fatal("providertest: Harness needs NewModel, Stream, HTTPError, Malformed and Inspect")
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, &suite{h: h, cfg: DefaultConfig()})
		})
	}
}

type scenario struct {
	name string
	run  func(t *testing.T, s *suite)
}

// suite is the per-scenario state.
type suite struct {
	h   Harness
	cfg Config
	srv *llmfake.Server
	m   agents.Model
}

// start starts the fake server with replies and builds the model.
func (s *suite) start(t *testing.T, replies ...llmfake.Reply) {
	s.srv = llmfake.NewServer(t, replies...)
	s.m = s.h.NewModel(t, s.srv.URL, s.cfg)
	if s.m == nil {
		t.Fatal("providertest: NewModel returned nil")
	}
}

// outcome is what one Stream produced.
type outcome struct {
	chunks []agents.Chunk
	err    error
	resp   *agents.Response
	accErr error
	took   time.Duration
}

func (o *outcome) text() string {
	var b strings.Builder
	for _, c := range o.chunks {
		if c.Type == agents.ChunkText {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// stream runs the model on req under the scenario deadline. stopAfter > 0
// stops ranging after that many chunks; onChunk (optional) runs after
// each chunk.
func (s *suite) stream(t *testing.T, ctx context.Context, req *agents.Request, stopAfter int, onChunk func(int)) *outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, ScenarioTimeout)
	defer cancel()
	done := make(chan *outcome, 1)
	go func() {
		o := &outcome{}
		start := time.Now()
		var acc agents.Accumulator
		for c, err := range s.m.Stream(ctx, req) {
			if err != nil {
				o.err = err
				break
			}
			c.Opaque = append([]byte(nil), c.Opaque...)
			c.ToolCall.Opaque = append([]byte(nil), c.ToolCall.Opaque...)
			o.chunks = append(o.chunks, c)
			if o.accErr == nil {
				o.accErr = acc.Add(c)
			}
			if onChunk != nil {
				onChunk(len(o.chunks))
			}
			if stopAfter > 0 && len(o.chunks) >= stopAfter {
				break
			}
		}
		o.took = time.Since(start)
		if o.err == nil && o.accErr == nil && stopAfter == 0 {
			o.resp, o.accErr = acc.Response()
		}
		done <- o
	}()
	select {
	case o := <-done:
		return o
	case <-time.After(ScenarioTimeout + 5*time.Second):
		t.Fatalf("providertest: the model's stream did not end within %v (hang)", ScenarioTimeout)
		return nil
	}
}

// ok runs req and requires a complete, error-free response.
func (s *suite) ok(t *testing.T, req *agents.Request) *outcome {
	t.Helper()
	o := s.stream(t, context.Background(), req, 0, nil)
	if o.err != nil {
		t.Fatalf("stream failed: %v", o.err)
	}
	if o.accErr != nil {
		t.Fatalf("chunks do not assemble: %v", o.accErr)
	}
	return o
}

// failed runs req and requires the stream to end with an error.
func (s *suite) failed(t *testing.T, req *agents.Request) *outcome {
	t.Helper()
	o := s.stream(t, context.Background(), req, 0, nil)
	if o.err == nil {
		t.Fatalf("stream ended without error after %d chunks (text %q): a partial answer presented as complete", len(o.chunks), o.text())
	}
	if strings.Contains(o.err.Error(), s.cfg.APIKey) {
		t.Fatalf("the error contains the API key: %v", o.err)
	}
	return o
}

func (s *suite) wantRequests(t *testing.T, n int) {
	t.Helper()
	if got := s.srv.Count(); got != n {
		t.Fatalf("the server received %d requests, want %d", got, n)
	}
}

// Tool specs of the suite.
var (
	specSQL = agents.ToolSpec{Name: "run_sql", Description: "Run one read-only SQL query.",
		Schema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string","description":"The query."}},"required":["sql"],"additionalProperties":false}`)}
	specSearch = agents.ToolSpec{Name: "search_kb", Description: "Search the knowledge base.",
		Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"limit":{"type":"integer"}},"required":["q"],"additionalProperties":false}`)}
	specNow = agents.ToolSpec{Name: "now", Description: "Current time.",
		Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}
)

const (
	suiteSystem = "You are a BI analyst."
	suiteUser   = "Monthly revenue for 2024?"
)

func baseRequest() *agents.Request {
	return &agents.Request{
		System:   suiteSystem,
		Messages: []agents.Message{agents.UserMessage(suiteUser)},
		Tools:    []agents.ToolSpec{specSQL, specSearch, specNow},
	}
}

var textTurn = llmfake.Turn{Text: []string{"Revenue ", "grew 5 % — ", "größer ✓"},
	Usage: domain.Usage{PromptTokens: 12, CompletionTokens: 5, TotalTokens: 17}}

const textTurnText = "Revenue grew 5 % — größer ✓"

// checkText requires o to be the complete textTurn.
func checkText(t *testing.T, o *outcome) {
	t.Helper()
	if got := o.text(); got != textTurnText {
		t.Fatalf("text = %q, want %q", got, textTurnText)
	}
	if o.resp == nil || o.resp.Stop != agents.StopEndTurn {
		t.Fatalf("response = %+v, want stop end_turn", o.resp)
	}
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func (s *suite) checkCalls(t *testing.T, got []domain.ToolCall, want []llmfake.Call) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d tool calls %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if !s.h.Features.NoCallIDs && g.ID != w.ID {
			t.Errorf("call %d id = %q, want %q", i, g.ID, w.ID)
		}
		if g.Name != w.Name {
			t.Errorf("call %d name = %q, want %q", i, g.Name, w.Name)
		}
		wantArgs := w.ArgsText()
		if wantArgs == "" {
			wantArgs = "{}"
		}
		if !sameJSON(string(g.Arguments), wantArgs) {
			t.Errorf("call %d arguments = %s, want %s", i, g.Arguments, wantArgs)
		}
		if s.h.Features.CallOpaque && len(w.Opaque) > 0 && string(g.Opaque) != string(w.Opaque) {
			t.Errorf("call %d opaque = %q, want %q unchanged", i, g.Opaque, w.Opaque)
		}
	}
}

func errorIs(t *testing.T, err error, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v (%T), want one wrapping %v", err, err, target)
	}
}

func apiError(t *testing.T, err error) *llmhttp.APIError {
	t.Helper()
	var ae *llmhttp.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error = %v (%T), want an *llmhttp.APIError", err, err)
	}
	return ae
}

var scenarios = []scenario{
	{"text", func(t *testing.T, s *suite) {
		r := s.h.Stream(textTurn)
		r.SplitWrites = true
		s.start(t, r)
		o := s.ok(t, baseRequest())
		checkText(t, o)
		n := 0
		for _, c := range o.chunks {
			if c.Type == agents.ChunkText && c.Text != "" {
				n++
			}
		}
		if n < 2 {
			t.Errorf("text arrived in %d chunk(s); a streamed answer must be yielded as it arrives", n)
		}
		seen := s.h.Inspect(t, s.srv.Request(0))
		if !seen.Stream {
			t.Error("the request did not ask for streaming")
		}
		if !strings.Contains(seen.System, suiteSystem) {
			t.Errorf("system = %q, want it to contain %q", seen.System, suiteSystem)
		}
		if len(seen.UserText) != 1 || seen.UserText[0] != suiteUser {
			t.Errorf("user text = %q, want [%q]", seen.UserText, suiteUser)
		}
		if want := []string{"run_sql", "search_kb", "now"}; !reflect.DeepEqual(seen.ToolNames, want) {
			t.Errorf("tools = %q, want %q", seen.ToolNames, want)
		}
	}},
	{"tool_call", func(t *testing.T, s *suite) {
		calls := []llmfake.Call{{ID: "call_A", Name: "run_sql", Args: []string{`{"sql":`, `"SELECT 1"}`}}}
		s.start(t, s.h.Stream(llmfake.Turn{Calls: calls}))
		o := s.ok(t, baseRequest())
		s.checkCalls(t, o.resp.Message.ToolCalls(), calls)
		if o.resp.Stop != agents.StopToolUse {
			t.Errorf("stop = %q, want tool_use", o.resp.Stop)
		}
	}},
	{"parallel_tool_calls_interleaved", func(t *testing.T, s *suite) {
		calls := []llmfake.Call{
			{ID: "call_A", Name: "run_sql", Args: []string{`{"sql":"SEL`, `ECT month, sum(rev) `, `FROM sales GROUP BY 1"}`}},
			{ID: "call_B", Name: "search_kb", Args: []string{`{"q":"rev`, `enue definition",`, `"limit":3}`}},
		}
		r := s.h.Stream(llmfake.Turn{Calls: calls, Interleave: true})
		r.SplitWrites = true
		s.start(t, r)
		o := s.ok(t, baseRequest())
		s.checkCalls(t, o.resp.Message.ToolCalls(), calls)
	}},
	{"zero_argument_tool", func(t *testing.T, s *suite) {
		calls := []llmfake.Call{{ID: "call_Z", Name: "now"}}
		s.start(t, s.h.Stream(llmfake.Turn{Calls: calls}))
		o := s.ok(t, baseRequest())
		s.checkCalls(t, o.resp.Message.ToolCalls(), calls)
		if got := string(o.resp.Message.ToolCalls()[0].Arguments); got != "{}" {
			t.Errorf("arguments = %s, want {}", got)
		}
	}},
	{"text_before_tool_call", func(t *testing.T, s *suite) {
		calls := []llmfake.Call{{ID: "call_T", Name: "run_sql", Args: []string{`{"sql":"SELECT 2"}`}}}
		s.start(t, s.h.Stream(llmfake.Turn{Text: []string{"Let me ", "query that."}, Calls: calls}))
		o := s.ok(t, baseRequest())
		if got := o.resp.Message.Text(); got != "Let me query that." {
			t.Errorf("text = %q", got)
		}
		s.checkCalls(t, o.resp.Message.ToolCalls(), calls)
		parts := o.resp.Message.Parts
		if len(parts) < 2 || parts[0].Type != domain.PartText || parts[len(parts)-1].Type != domain.PartToolCall {
			t.Errorf("parts out of order: %+v", parts)
		}
	}},
	{"tool_result_round_trip", func(t *testing.T, s *suite) {
		calls := []llmfake.Call{
			{ID: "call_A", Name: "run_sql", Args: []string{`{"sql":"SELECT 1"}`}},
			{ID: "call_B", Name: "search_kb", Args: []string{`{"q":"revenue"}`}},
		}
		s.start(t, s.h.Stream(llmfake.Turn{Calls: calls}), s.h.Stream(textTurn))
		req := baseRequest()
		o := s.ok(t, req)
		results := []domain.ToolResult{
			{CallID: o.resp.Message.ToolCalls()[0].ID, Name: "run_sql", Content: `[{"m":"2024-01","rev":10}]`},
			{CallID: o.resp.Message.ToolCalls()[1].ID, Name: "search_kb", Content: "timeout", IsError: true},
		}
		req2 := baseRequest()
		req2.Messages = append(req2.Messages, o.resp.Message, agents.Message{Role: domain.RoleTool, Parts: []domain.Part{
			{Type: domain.PartToolResult, ToolResult: &results[0]},
			{Type: domain.PartToolResult, ToolResult: &results[1]},
		}})
		checkText(t, s.ok(t, req2))
		seen := s.h.Inspect(t, s.srv.Request(1))
		s.checkCalls(t, seen.ToolCalls, calls)
		if len(seen.ToolResults) != 2 {
			t.Fatalf("tool results sent = %+v, want 2", seen.ToolResults)
		}
		for i, w := range results {
			g := seen.ToolResults[i]
			if !s.h.Features.NoCallIDs && g.CallID != w.CallID {
				t.Errorf("result %d call id = %q, want %q", i, g.CallID, w.CallID)
			}
			if !strings.Contains(g.Content, w.Content) {
				t.Errorf("result %d content = %q, want %q", i, g.Content, w.Content)
			}
		}
	}},
	{"reasoning_round_trip", func(t *testing.T, s *suite) {
		f := s.h.Features
		if !f.ReasoningText && !f.CallOpaque {
			t.Skip("the protocol streams no reasoning")
		}
		turn := llmfake.Turn{Text: []string{"Querying."}}
		r := llmfake.Reasoning{Text: []string{"Need monthly ", "sums."}}
		if f.ReasoningSignature {
			r.Signature = "EqQBCkYIARgCKkD+sig/opaque=="
		}
		if f.ReasoningOpaque {
			// Opaque data travels as a JSON string on every wire (base64
			// in practice), so it is ASCII here, with the characters a
			// careless re-encoding would mangle.
			r.Opaque = []byte("EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw+/=\u003c>&")
		}
		if f.ReasoningText {
			turn.Reasoning = []llmfake.Reasoning{r}
		}
		call := llmfake.Call{ID: "call_R", Name: "run_sql", Args: []string{`{"sql":"SELECT 3"}`}}
		if f.CallOpaque {
			call.Opaque = []byte("CiQBthoughtSignature+/==")
		}
		turn.Calls = []llmfake.Call{call}
		s.start(t, s.h.Stream(turn), s.h.Stream(textTurn))
		o := s.ok(t, baseRequest())
		var rs []domain.Reasoning
		for _, p := range o.resp.Message.Parts {
			if p.Type == domain.PartReasoning {
				rs = append(rs, *p.Reasoning)
			}
		}
		if f.ReasoningText {
			if len(rs) == 0 || rs[0].Text != r.Joined() {
				t.Fatalf("reasoning = %+v, want text %q", rs, r.Joined())
			}
			if f.ReasoningSignature && rs[0].Signature != r.Signature {
				t.Errorf("signature = %q, want %q", rs[0].Signature, r.Signature)
			}
			if f.ReasoningOpaque {
				found := false
				for _, x := range rs {
					found = found || string(x.Opaque) == string(r.Opaque)
				}
				if !found {
					t.Errorf("no reasoning block carries the opaque data %q: %+v", r.Opaque, rs)
				}
			}
			if got := o.resp.Message.Parts[0].Type; got != domain.PartReasoning {
				t.Errorf("first part is %q, want reasoning", got)
			}
		}
		s.checkCalls(t, o.resp.Message.ToolCalls(), turn.Calls)
		req2 := baseRequest()
		tc := o.resp.Message.ToolCalls()[0]
		req2.Messages = append(req2.Messages, o.resp.Message, agents.Message{Role: domain.RoleTool, Parts: []domain.Part{
			{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: tc.ID, Name: tc.Name, Content: "3"}}}})
		s.ok(t, req2)
		seen := s.h.Inspect(t, s.srv.Request(1))
		s.checkCalls(t, seen.ToolCalls, turn.Calls)
		if f.ReasoningEcho {
			if len(seen.Reasoning) == 0 {
				t.Fatal("the reasoning was not sent back")
			}
			if f.ReasoningSignature && seen.Reasoning[0].Signature != r.Signature {
				t.Errorf("signature sent back = %q, want %q unchanged", seen.Reasoning[0].Signature, r.Signature)
			}
			if f.ReasoningOpaque {
				found := false
				for _, x := range seen.Reasoning {
					found = found || string(x.Opaque) == string(r.Opaque)
				}
				if !found {
					t.Errorf("opaque reasoning not sent back unchanged: %+v", seen.Reasoning)
				}
			}
		}
	}},
	{"usage", func(t *testing.T, s *suite) {
		want := domain.Usage{PromptTokens: 1200, CompletionTokens: 80, CachedTokens: 1000, TotalTokens: 1280}
		if s.h.Features.ReasoningTokens {
			want.ReasoningTokens = 30
		}
		if s.h.Features.CacheWriteTokens {
			want.CachedTokens, want.CacheWriteTokens = 900, 100
		}
		turn := textTurn
		turn.Usage = want
		s.start(t, s.h.Stream(turn))
		o := s.ok(t, baseRequest())
		if o.resp.Usage != want {
			t.Errorf("usage = %+v, want %+v", o.resp.Usage, want)
		}
	}},

	// Faults.
	{"retry_429_retry_after", func(t *testing.T, s *suite) {
		s.start(t, s.h.HTTPError(429, "Rate limit reached").WithHeader("Retry-After", "0.2"), s.h.Stream(textTurn))
		o := s.ok(t, baseRequest())
		checkText(t, o)
		s.wantRequests(t, 2)
		if o.took < 200*time.Millisecond {
			t.Errorf("retried after %v, before the 200 ms Retry-After", o.took)
		}
	}},
	{"retry_429_retry_after_ms_wins", func(t *testing.T, s *suite) {
		// Retry-After alone (1 h) exceeds the cap and would fail at once.
		s.start(t, s.h.HTTPError(429, "Rate limit reached").WithHeader("Retry-After", "3600").WithHeader("Retry-After-Ms", "20"),
			s.h.Stream(textTurn))
		checkText(t, s.ok(t, baseRequest()))
		s.wantRequests(t, 2)
	}},
	{"retry_after_too_long_fails_fast", func(t *testing.T, s *suite) {
		s.start(t, s.h.HTTPError(429, "Rate limit reached").WithHeader("Retry-After", "3600"))
		o := s.failed(t, baseRequest())
		s.wantRequests(t, 1)
		if ae := apiError(t, o.err); ae.StatusCode != 429 || !agents.Retryable(o.err) {
			t.Errorf("error = %+v, want a retryable 429 (a fallback model may take over)", ae)
		}
		if o.took > 5*time.Second {
			t.Errorf("took %v: waited for a Retry-After beyond the cap", o.took)
		}
	}},
	{"retry_500", func(t *testing.T, s *suite) {
		s.start(t, s.h.HTTPError(500, "internal error"), s.h.Stream(textTurn))
		checkText(t, s.ok(t, baseRequest()))
		s.wantRequests(t, 2)
	}},
	{"retry_503", func(t *testing.T, s *suite) {
		s.start(t, s.h.HTTPError(503, "unavailable"), s.h.Stream(textTurn))
		checkText(t, s.ok(t, baseRequest()))
		s.wantRequests(t, 2)
	}},
	{"retry_529_overloaded", func(t *testing.T, s *suite) {
		s.start(t, s.h.HTTPError(529, "Overloaded"), s.h.HTTPError(529, "Overloaded"), s.h.Stream(textTurn))
		checkText(t, s.ok(t, baseRequest()))
		s.wantRequests(t, 3)
	}},
	{"retries_exhausted", func(t *testing.T, s *suite) {
		s.start(t, s.h.HTTPError(503, "unavailable"), s.h.HTTPError(503, "unavailable"), s.h.HTTPError(503, "unavailable"))
		o := s.failed(t, baseRequest())
		s.wantRequests(t, 3)
		if ae := apiError(t, o.err); ae.StatusCode != 503 || !agents.Retryable(o.err) {
			t.Errorf("error = %v, want a retryable 503", o.err)
		}
	}},
	{"no_retry_400", func(t *testing.T, s *suite) {
		s.start(t, s.h.HTTPError(400, "Invalid schema for function 'run_sql'"))
		o := s.failed(t, baseRequest())
		s.wantRequests(t, 1)
		ae := apiError(t, o.err)
		if ae.StatusCode != 400 || agents.Retryable(o.err) || !strings.Contains(ae.Message, "Invalid schema") {
			t.Errorf("error = %+v, want a permanent 400 with the provider's message", ae)
		}
		if len(o.chunks) != 0 {
			t.Errorf("%d chunks before the error", len(o.chunks))
		}
	}},
	{"no_retry_401_key_redacted", func(t *testing.T, s *suite) {
		s.start(t, s.h.HTTPError(401, "Incorrect API key provided: "+s.cfg.APIKey+"."))
		o := s.failed(t, baseRequest()) // checks the key is absent from the error
		s.wantRequests(t, 1)
		if ae := apiError(t, o.err); ae.StatusCode != 401 || agents.Retryable(o.err) {
			t.Errorf("error = %+v, want a permanent 401", ae)
		}
		if strings.Contains(fmt.Sprintf("%+v %#v", o.err, o.err), s.cfg.APIKey) {
			t.Error("the error's fields contain the API key")
		}
	}},
	{"drop_before_response", func(t *testing.T, s *suite) {
		s.start(t, llmfake.Reply{DropConnection: true}, s.h.Stream(textTurn))
		checkText(t, s.ok(t, baseRequest()))
		s.wantRequests(t, 2)
	}},
	{"reset_before_first_chunk", func(t *testing.T, s *suite) {
		r := s.h.Stream(textTurn)
		r.ResetAfter = 1
		s.start(t, r, s.h.Stream(textTurn))
		checkText(t, s.ok(t, baseRequest()))
		s.wantRequests(t, 2)
	}},
	{"reset_mid_stream", func(t *testing.T, s *suite) {
		r := s.h.Stream(textTurn)
		r.ResetAfter = len(r.Events) - 1
		s.start(t, r, s.h.Stream(textTurn))
		o := s.failed(t, baseRequest())
		if len(o.chunks) == 0 {
			t.Fatalf("no chunk before the reset; the scenario needs some (error %v)", o.err)
		}
		s.wantRequests(t, 1) // chunks were handed out: no retry
		var ce *llmhttp.ConnError
		if !errors.As(o.err, &ce) || !agents.Retryable(o.err) {
			t.Errorf("error = %v (%T), want a retryable *llmhttp.ConnError", o.err, o.err)
		}
	}},
	{"malformed_chunk", func(t *testing.T, s *suite) {
		r := s.h.Stream(textTurn)
		s.start(t, r.Inject(len(r.Events)/2, s.h.Malformed))
		o := s.failed(t, baseRequest())
		if o.text() == textTurnText {
			t.Error("the whole text arrived although a chunk was malformed")
		}
	}},
	{"truncated_between_events", func(t *testing.T, s *suite) {
		r := s.h.Stream(textTurn)
		s.start(t, r.Truncated(len(r.Events)-2), s.h.Stream(textTurn))
		o := s.failed(t, baseRequest())
		errorIs(t, o.err, llmhttp.ErrIncomplete)
	}},
	{"truncated_inside_event", func(t *testing.T, s *suite) {
		r := s.h.Stream(textTurn)
		s.start(t, r.CutInside(len(r.Events)-2), s.h.Stream(textTurn))
		o := s.failed(t, baseRequest())
		errorIs(t, o.err, llmhttp.ErrIncomplete)
	}},
	{"stream_error_event", func(t *testing.T, s *suite) {
		frame := s.h.StreamError(false)
		if frame == nil {
			t.Skip("the protocol has no in-stream error event")
		}
		r := s.h.Stream(textTurn)
		s.start(t, r.Truncated(len(r.Events)-2).Inject(len(r.Events)-2, frame))
		o := s.failed(t, baseRequest())
		if ae := apiError(t, o.err); ae.StatusCode != 0 || ae.Message == "" {
			t.Errorf("error = %+v, want an in-stream APIError (status 0) with the provider's message", ae)
		}
		s.wantRequests(t, 1)
	}},
	{"stream_error_first_event_retried", func(t *testing.T, s *suite) {
		frame := s.h.StreamError(true)
		if frame == nil {
			t.Skip("the protocol has no transient in-stream error event")
		}
		s.start(t, llmfake.Reply{Events: [][]byte{frame}}, s.h.Stream(textTurn))
		checkText(t, s.ok(t, baseRequest()))
		s.wantRequests(t, 2)
	}},
	{"slow_first_byte_and_drip", func(t *testing.T, s *suite) {
		r := s.h.Stream(textTurn)
		r.FirstByteDelay = 150 * time.Millisecond
		r.EventDelay = 20 * time.Millisecond
		s.start(t, r)
		checkText(t, s.ok(t, baseRequest()))
		s.wantRequests(t, 1)
	}},
	{"stalled_stream", func(t *testing.T, s *suite) {
		s.cfg.IdleTimeout = 300 * time.Millisecond
		r := s.h.Stream(textTurn)
		r = r.Truncated(len(r.Events) - 2)
		r.Hang = true
		s.start(t, r)
		o := s.failed(t, baseRequest())
		errorIs(t, o.err, llmhttp.ErrStalled)
		if o.took > 5*time.Second {
			t.Errorf("stall detected after %v; idle timeout is %v", o.took, s.cfg.IdleTimeout)
		}
		if !s.srv.WaitDisconnected(1, 5*time.Second) {
			t.Error("the connection stayed open after the stall")
		}
	}},
	{"cancel_mid_stream", func(t *testing.T, s *suite) {
		r := s.h.Stream(textTurn)
		r = r.Truncated(len(r.Events) - 2)
		r.Hang = true
		s.cfg.IdleTimeout = time.Minute
		s.start(t, r)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var cancelled time.Time
		o := s.stream(t, ctx, baseRequest(), 0, func(n int) {
			if n == 1 {
				cancelled = time.Now()
				cancel()
			}
		})
		errorIs(t, o.err, context.Canceled)
		if d := time.Since(cancelled); d > 3*time.Second {
			t.Errorf("the stream ended %v after cancellation", d)
		}
		if !s.srv.WaitDisconnected(1, 5*time.Second) {
			t.Error("the server never saw the connection close after cancellation")
		}
	}},
	{"cancel_while_waiting", func(t *testing.T, s *suite) {
		s.cfg.IdleTimeout = time.Minute
		s.start(t, llmfake.Reply{Hang: true, Events: [][]byte{}})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		o := s.stream(t, ctx, baseRequest(), 0, nil)
		errorIs(t, o.err, context.DeadlineExceeded)
		if !s.srv.WaitDisconnected(1, 5*time.Second) {
			t.Error("the server never saw the connection close")
		}
	}},
	{"consumer_stops", func(t *testing.T, s *suite) {
		r := s.h.Stream(textTurn)
		r = r.Truncated(len(r.Events) - 2)
		r.Hang = true
		s.cfg.IdleTimeout = time.Minute
		s.start(t, r)
		o := s.stream(t, context.Background(), baseRequest(), 1, nil)
		if o.err != nil || len(o.chunks) != 1 {
			t.Fatalf("got %d chunks, err %v", len(o.chunks), o.err)
		}
		if !s.srv.WaitDisconnected(1, 5*time.Second) {
			t.Error("breaking out of the loop left the connection open")
		}
	}},
	{"executor_conversation", runExecutor},
}

// runExecutor runs a two-tool-turn conversation through agents.Executor.
func runExecutor(t *testing.T, s *suite) {
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	add := agents.MustTool("add", "Add two integers.", func(_ context.Context, in addIn) (string, error) {
		return fmt.Sprint(in.A + in.B), nil
	}, agents.WithParallel())
	s.start(t,
		s.h.Stream(llmfake.Turn{Text: []string{"Adding."}, Calls: []llmfake.Call{
			{ID: "call_1", Name: "add", Args: []string{`{"a":2,`, `"b":3}`}},
			{ID: "call_2", Name: "add", Args: []string{`{"a":10,"b":20}`}},
		}, Interleave: true, Usage: domain.Usage{PromptTokens: 50, CompletionTokens: 10, TotalTokens: 60}}),
		s.h.Stream(llmfake.Turn{Calls: []llmfake.Call{{ID: "call_3", Name: "add", Args: []string{`{"a":5,"b":30}`}}},
			Usage: domain.Usage{PromptTokens: 80, CompletionTokens: 10, TotalTokens: 90}}),
		s.h.Stream(llmfake.Turn{Text: []string{"The total ", "is 35."},
			Usage: domain.Usage{PromptTokens: 100, CompletionTokens: 5, TotalTokens: 105}}),
	)
	ex, err := agents.NewExecutor(agents.Config{Model: s.m, System: suiteSystem, Tools: []agents.Tool{add},
		DisableAskUser: true, DisableFinalAnswer: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ScenarioTimeout)
	defer cancel()
	var (
		finished *agents.RunFinished
		results  = map[string]string{}
		runErr   error
	)
	for ev, err := range ex.Run(ctx, agents.Input{Message: agents.UserMessage("What is 2+3+10+20?")}) {
		if err != nil {
			runErr = err
			break
		}
		switch e := ev.(type) {
		case *agents.ToolCallFinished:
			if e.Error != "" {
				t.Errorf("tool call %s failed: %s", e.CallID, e.Error)
			}
			results[e.CallID] = e.Summary
		case *agents.RunFinished:
			finished = e
		}
	}
	if runErr != nil || finished == nil {
		t.Fatalf("run failed: %v", runErr)
	}
	if finished.Text != "The total is 35." || finished.Turns != 3 || finished.ToolCalls != 3 {
		t.Errorf("finished = %q after %d turns, %d calls", finished.Text, finished.Turns, finished.ToolCalls)
	}
	if finished.Usage.PromptTokens != 230 || finished.Usage.CompletionTokens != 25 {
		t.Errorf("usage = %+v, want the sum of the three turns", finished.Usage)
	}
	s.wantRequests(t, 3)
	seen2 := s.h.Inspect(t, s.srv.Request(1))
	if len(seen2.ToolResults) != 2 || !strings.Contains(seen2.ToolResults[0].Content, "5") || !strings.Contains(seen2.ToolResults[1].Content, "30") {
		t.Errorf("turn 2 tool results = %+v, want 5 and 30", seen2.ToolResults)
	}
	if !s.h.Features.NoCallIDs && len(seen2.ToolResults) == 2 && (seen2.ToolResults[0].CallID != "call_1" || seen2.ToolResults[1].CallID != "call_2") {
		t.Errorf("turn 2 results answer %q and %q, want call_1 and call_2", seen2.ToolResults[0].CallID, seen2.ToolResults[1].CallID)
	}
	seen3 := s.h.Inspect(t, s.srv.Request(2))
	if len(seen3.ToolCalls) != 3 || len(seen3.ToolResults) != 3 || !strings.Contains(seen3.ToolResults[2].Content, "35") {
		t.Errorf("turn 3 carries %d calls and results %+v, want the whole transcript", len(seen3.ToolCalls), seen3.ToolResults)
	}
	if results["call_1"] != "5" || results["call_2"] != "30" || results["call_3"] != "35" {
		t.Errorf("tool summaries = %v", results)
	}
}
