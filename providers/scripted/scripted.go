package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// Turn is one scripted model response.
type Turn struct {
	// Reasoning is streamed first as reasoning deltas, with
	// ReasoningSignature attached to the block.
	Reasoning          string
	ReasoningSignature string
	// Text is streamed next.
	Text string
	// ToolCalls are streamed last, their fragments interleaved.
	ToolCalls []Call
	// Usage is reported at the end; zero means an estimate of one token
	// per four bytes of request and response.
	Usage domain.Usage
	// Stop is the stop reason; empty means tool_use with calls, else
	// end_turn.
	Stop agents.StopReason
	// Err ends the stream with this error after FailAfter chunks (0: before
	// any chunk).
	Err       error
	FailAfter int
	// Delay is waited before each chunk (the wait ends when the context
	// does).
	Delay time.Duration
}

// Call is one scripted tool call.
type Call struct {
	// ID defaults to "call_<turn>_<n>".
	ID   string
	Name string
	// Args is the raw JSON argument text; empty streams no arguments (the
	// executor reads that as {}).
	Args string
	// Opaque is provider data attached to the call, to test round trips.
	Opaque []byte
}

// CallJSON returns a Call whose arguments are the JSON encoding of v. It
// panics if v cannot be encoded, which is a bug in the script.
func CallJSON(name string, v any) Call {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("scripted: encode arguments of %s: %v", name, err))
	}
	return Call{Name: name, Args: string(b)}
}

// ErrNoTurns is returned when the script has no turn left and no Respond.
var ErrNoTurns = errors.New("scripted: no scripted turn left")

// Model plays back Turns. Configure the exported fields before first use;
// the Model is then safe for concurrent use.
type Model struct {
	// Turns are answered in order, one per request.
	Turns []Turn
	// Respond produces the turn for each request once Turns are used up.
	Respond func(ctx context.Context, req *agents.Request) (Turn, error)
	// ModelInfo is returned by Info; the zero value describes a scripted
	// model with a 128k context window and tool support.
	ModelInfo agents.ModelInfo
	// ChunkSize is the number of characters per text or argument
	// fragment (default 16).
	ChunkSize int

	mu       sync.Mutex
	next     int
	requests []agents.Request
}

// Info describes the model.
func (m *Model) Info() agents.ModelInfo {
	if m.ModelInfo.Name != "" {
		return m.ModelInfo
	}
	return agents.ModelInfo{
		Provider:      "scripted",
		Name:          "scripted",
		ContextWindow: 128000,
		Capabilities:  agents.Capabilities{Tools: true, ParallelTools: true, Reasoning: true, JSON: true},
	}
}

// Requests returns a copy of every request received so far.
func (m *Model) Requests() []agents.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}

// Calls returns how many requests the model has received.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// Reset forgets recorded requests and starts the script over.
func (m *Model) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next = 0
	m.requests = m.requests[:0]
}

// Stream plays the next turn.
func (m *Model) Stream(ctx context.Context, req *agents.Request) iter.Seq2[agents.Chunk, error] {
	return func(yield func(agents.Chunk, error) bool) {
		m.mu.Lock()
		rec := *req
		rec.Messages = slices.Clone(req.Messages)
		m.requests = append(m.requests, rec)
		turnNo := len(m.requests)
		var (
			t   Turn
			err error
			ok  bool
		)
		if m.next < len(m.Turns) {
			t, ok = m.Turns[m.next], true
			m.next++
		}
		m.mu.Unlock()
		if !ok {
			if m.Respond == nil {
				yield(agents.Chunk{}, ErrNoTurns)
				return
			}
			if t, err = m.Respond(ctx, req); err != nil {
				yield(agents.Chunk{}, err)
				return
			}
		}
		m.play(ctx, req, t, turnNo, yield)
	}
}

func (m *Model) play(ctx context.Context, req *agents.Request, t Turn, turnNo int, yield func(agents.Chunk, error) bool) {
	size := m.ChunkSize
	if size <= 0 {
		size = 16
	}
	sent := 0
	send := func(c agents.Chunk) bool {
		if t.Err != nil && sent >= t.FailAfter {
			yield(agents.Chunk{}, t.Err)
			return false
		}
		if t.Delay > 0 {
			timer := time.NewTimer(t.Delay)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				yield(agents.Chunk{}, ctx.Err())
				return false
			}
		} else if err := ctx.Err(); err != nil {
			yield(agents.Chunk{}, err)
			return false
		}
		sent++
		return yield(c, nil)
	}
	for _, piece := range split(t.Reasoning, size) {
		if !send(agents.Chunk{Type: agents.ChunkReasoning, Text: piece, Provider: "scripted"}) {
			return
		}
	}
	if t.ReasoningSignature != "" {
		if !send(agents.Chunk{Type: agents.ChunkReasoning, Signature: t.ReasoningSignature, Provider: "scripted"}) {
			return
		}
	}
	for _, piece := range split(t.Text, size) {
		if !send(agents.TextChunk(piece)) {
			return
		}
	}
	// Tool calls: a head fragment per call, then argument pieces
	// interleaved round-robin, as parallel calls arrive from real providers.
	pieces := make([][]string, len(t.ToolCalls))
	for k, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", turnNo, k+1)
		}
		if !send(agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{Index: k, ID: id, Name: c.Name,
			Provider: "scripted", Opaque: c.Opaque}}) {
			return
		}
		pieces[k] = split(c.Args, size)
	}
	for more := true; more; {
		more = false
		for k := range pieces {
			if len(pieces[k]) == 0 {
				continue
			}
			more = true
			if !send(agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{Index: k, Arguments: pieces[k][0]}}) {
				return
			}
			pieces[k] = pieces[k][1:]
		}
	}
	u := t.Usage
	if u.IsZero() {
		u = estimate(req, t)
	}
	if !send(agents.Chunk{Type: agents.ChunkUsage, Usage: u}) {
		return
	}
	stop := t.Stop
	if stop == "" {
		stop = agents.StopEndTurn
		if len(t.ToolCalls) > 0 {
			stop = agents.StopToolUse
		}
	}
	if !send(agents.Chunk{Type: agents.ChunkStop, Stop: stop}) {
		return
	}
	if t.Err != nil {
		// FailAfter is at or beyond the number of chunks: fail at the end,
		// like a stream cut before its terminator.
		yield(agents.Chunk{}, t.Err)
	}
}

// split cuts s into pieces of at most n runes.
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	out := make([]string, 0, len(s)/n+1)
	for len(s) > 0 {
		i, runes := 0, 0
		for i < len(s) && runes < n {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			runes++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// estimate counts one token per four bytes, deterministically.
func estimate(req *agents.Request, t Turn) domain.Usage {
	in := len(req.System)
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			in += len(p.Text)
			if p.ToolCall != nil {
				in += len(p.ToolCall.Name) + len(p.ToolCall.Arguments)
			}
			if p.ToolResult != nil {
				in += len(p.ToolResult.Content)
			}
		}
	}
	for _, s := range req.Tools {
		in += len(s.Name) + len(s.Description) + len(s.Schema)
	}
	out := len(t.Text) + len(t.Reasoning)
	for _, c := range t.ToolCalls {
		out += len(c.Name) + len(c.Args)
	}
	u := domain.Usage{PromptTokens: (in + 3) / 4, CompletionTokens: (out + 3) / 4}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}
