package otel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/bichat-go/bichat/hooks"
)

// TracerName is the instrumentation scope name of bichat's spans, the name
// New asks the TracerProvider for.
const TracerName = "github.com/bichat-go/bichat"

// DefaultMaxOpenRuns is the number of runs traced at once when
// Options.MaxOpenRuns is zero.
const DefaultMaxOpenRuns = 10000

// taskTool is the name of the agents package's built-in sub-agent tool
// (agents.ToolTask); a sub-agent run's span is a child of the parent's
// open call of it.
const taskTool = "task"

// Attribute keys: the OpenTelemetry GenAI semantic conventions where they
// name the value, "bichat." otherwise.
const (
	keyOperation       = attribute.Key("gen_ai.operation.name")
	keyProvider        = attribute.Key("gen_ai.provider.name")
	keyAgentName       = attribute.Key("gen_ai.agent.name")
	keyConversation    = attribute.Key("gen_ai.conversation.id")
	keyRequestModel    = attribute.Key("gen_ai.request.model")
	keyResponseModel   = attribute.Key("gen_ai.response.model")
	keyFinishReasons   = attribute.Key("gen_ai.response.finish_reasons")
	keyFirstChunk      = attribute.Key("gen_ai.response.time_to_first_chunk")
	keyInputTokens     = attribute.Key("gen_ai.usage.input_tokens")
	keyOutputTokens    = attribute.Key("gen_ai.usage.output_tokens")
	keyCacheRead       = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	keyCacheCreation   = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	keyToolName        = attribute.Key("gen_ai.tool.name")
	keyToolCallID      = attribute.Key("gen_ai.tool.call.id")
	keyToolType        = attribute.Key("gen_ai.tool.type")
	keyToolArguments   = attribute.Key("gen_ai.tool.call.arguments")
	keyToolResult      = attribute.Key("gen_ai.tool.call.result")
	keyInputMessages   = attribute.Key("gen_ai.input.messages")
	keyOutputMessages  = attribute.Key("gen_ai.output.messages")
	keyErrorType       = attribute.Key("error.type")
	keyDBSystem        = attribute.Key("db.system.name")
	keyDBQueryText     = attribute.Key("db.query.text")
	keyDBReturnedRows  = attribute.Key("db.response.returned_rows")
	keyRunID           = attribute.Key("bichat.run_id")
	keyParentRunID     = attribute.Key("bichat.parent_run_id")
	keyTenantID        = attribute.Key("bichat.tenant_id")
	keyMessageID       = attribute.Key("bichat.message_id")
	keyResumed         = attribute.Key("bichat.resumed")
	keyTurn            = attribute.Key("bichat.turn")
	keyTurns           = attribute.Key("bichat.turns")
	keyToolCalls       = attribute.Key("bichat.tool_calls")
	keyAttempt         = attribute.Key("bichat.attempt")
	keyCostUSD         = attribute.Key("bichat.cost_usd")
	keyFinishReason    = attribute.Key("bichat.finish_reason")
	keyReasoningTokens = attribute.Key("bichat.usage.reasoning_tokens")
	keyRequestMessages = attribute.Key("bichat.request.messages")
	keyRequestTools    = attribute.Key("bichat.request.tools")
	keySummaryBytes    = attribute.Key("bichat.tool.summary_bytes")
	keyTruncated       = attribute.Key("bichat.truncated")
	keyArtifacts       = attribute.Key("bichat.tool.artifacts")
	keyDurationMS      = attribute.Key("bichat.duration_ms")
	keyTool            = attribute.Key("bichat.tool")
	keyCallID          = attribute.Key("bichat.call_id")
	keyReason          = attribute.Key("bichat.reason")
	keyText            = attribute.Key("bichat.text")
)

// Options configure a Tracer. The zero value records no content and
// tracks up to DefaultMaxOpenRuns runs.
type Options struct {
	// CaptureContent records what users and models wrote: the prompt of
	// each model call (gen_ai.input.messages, the GenAI JSON messages) and
	// its answer text (gen_ai.output.messages), tool-call arguments
	// (gen_ai.tool.call.arguments) and results (gen_ai.tool.call.result),
	// SQL text (db.query.text on
	// sqldb.query span events), tool error messages, the refusal or
	// failure message of a SQL statement, a denial's reason, artifact
	// names and message text (message.save events that carry it). Off by
	// default: traces then carry ids, names, counts, sizes, durations,
	// token usage, costs and error codes, never content.
	CaptureContent bool
	// MaxOpenRuns bounds the runs tracked at once (default
	// DefaultMaxOpenRuns). When a new run would exceed it, the oldest open
	// run's spans are ended at once with an error status (error.type
	// "evicted") and its later events are ignored.
	MaxOpenRuns int
}

// Tracer turns the events of bichat runs into OpenTelemetry spans. It is a
// hooks.Handler: subscribe it to the bus. It is safe for concurrent use;
// events of different runs may arrive concurrently and in any
// interleaving.
type Tracer struct {
	tracer  trace.Tracer
	capture bool
	max     int

	mu     sync.Mutex
	runs   map[string]*runState
	oldest *runState // start order, for eviction
	newest *runState
}

// New returns a Tracer that starts spans with tp's tracer named
// TracerName. tp is the host's provider (the one its exporter and
// sampler are configured on); New panics when it is nil, a programming
// error like http.Handle with a nil handler. Pass
// go.opentelemetry.io/otel/trace/noop.NewTracerProvider() to trace
// nothing.
func New(tp trace.TracerProvider, opts Options) *Tracer {
	if tp == nil || (reflect.ValueOf(tp).Kind() == reflect.Pointer && reflect.ValueOf(tp).IsNil()) {
		panic("otel: New with a nil TracerProvider (pass the host's provider, or noop.NewTracerProvider() to trace nothing)")
	}
	maxRuns := opts.MaxOpenRuns
	if maxRuns <= 0 {
		maxRuns = DefaultMaxOpenRuns
	}
	return &Tracer{
		tracer:  tp.Tracer(TracerName),
		capture: opts.CaptureContent,
		max:     maxRuns,
		runs:    make(map[string]*runState),
	}
}

// OpenRuns returns how many runs are being traced: started and not yet
// finished, failed or evicted. Export it as a gauge to watch for runs
// whose end event never arrives.
func (t *Tracer) OpenRuns() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.runs)
}

// runState is one traced run. The Tracer's mutex guards prev and next; the
// run's own mutex guards everything else.
type runState struct {
	id         string
	prev, next *runState

	mu           sync.Mutex
	ended        bool
	span         trace.Span
	turn         int
	turnSpan     trace.Span
	model        trace.Span // the open model call, if any
	modelAttempt int
	tools        map[string]*toolCall // open tool calls by call id
	seq          int                  // numbers tool calls in start order
}

type toolCall struct {
	span trace.Span
	name string
	seq  int
}

// Handle records e. Events of the agent loop (agent.*, llm.*, tool.*),
// sqldb.query, sandbox.run and interrupt shape the span tree; other
// events of an open run (context.compile, message.save, artifact.save,
// policy.decision, budget.exceeded, model fallbacks) become span events.
// Events of runs that are not open (not started while the Tracer was
// subscribed, already ended or evicted) and events without a run id are
// ignored. Handle only fails for an agent.start without a run id.
func (t *Tracer) Handle(ctx context.Context, e hooks.Event) error {
	if e == nil {
		return nil
	}
	switch ev := e.(type) {
	case *hooks.AgentStart:
		return t.start(ctx, ev)
	case *hooks.AgentFinish:
		t.end(ev.RunID, ev.Time, func(r *runState) {
			r.span.SetAttributes(keyFinishReason.String(ev.Reason), keyTurns.Int(ev.Turns),
				keyToolCalls.Int(ev.ToolCalls), keyInputTokens.Int(ev.Usage.PromptTokens),
				keyOutputTokens.Int(ev.Usage.CompletionTokens), keyCostUSD.Float64(ev.CostUSD))
		})
		return nil
	case *hooks.AgentError:
		t.end(ev.RunID, ev.Time, func(r *runState) {
			r.span.SetAttributes(keyErrorType.String(ev.Code))
			msg := ev.Code
			if ev.Err != nil {
				msg = ev.Err.Error()
				r.span.RecordError(ev.Err, trace.WithTimestamp(at(ev.Time)))
			}
			r.span.SetStatus(codes.Error, msg)
		})
		return nil
	}
	id := e.Header().RunID
	if id == "" {
		return nil
	}
	r := t.lookup(id)
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return nil
	}
	t.record(r, e)
	return nil
}

// record applies e to the open run r; r.mu is held.
func (t *Tracer) record(r *runState, e hooks.Event) {
	switch ev := e.(type) {
	case *hooks.LLMRequest:
		t.openTurn(r, ev.Turn, ev.Time)
		if r.model != nil {
			// A request without its response: close it before the next.
			endUnfinished(r.model, ev.Time)
		}
		r.model = t.startModel(r, ev.Provider, ev.Model, ev.Turn, ev.Attempt, at(ev.Time))
		r.model.SetAttributes(keyRequestMessages.Int(ev.Messages), keyRequestTools.Int(ev.Tools))
		if t.capture && ev.Input != nil {
			if in := ev.Input(); len(in) > 0 {
				r.model.SetAttributes(keyInputMessages.String(string(in)))
			}
		}
		r.modelAttempt = ev.Attempt
	case *hooks.LLMResponse:
		s := r.model
		if s == nil || r.modelAttempt != ev.Attempt || r.turn != ev.Turn {
			// The request was not seen: the call started Duration ago.
			if s != nil {
				endUnfinished(s, ev.Time)
			}
			t.openTurn(r, ev.Turn, at(ev.Time).Add(-ev.Duration))
			s = t.startModel(r, ev.Provider, ev.Model, ev.Turn, ev.Attempt, at(ev.Time).Add(-ev.Duration))
		}
		r.model = nil
		t.endModel(s, ev)
	case *hooks.ToolStart:
		if old := r.tools[ev.CallID]; old != nil {
			endUnfinished(old.span, ev.Time)
		}
		r.seq++
		r.tools[ev.CallID] = &toolCall{span: t.startTool(r, ev.Tool, ev.CallID, ev.Arguments, at(ev.Time)),
			name: ev.Tool, seq: r.seq}
	case *hooks.ToolFinish:
		s := t.takeTool(r, ev.CallID, ev.Tool, ev.Time, ev.Duration)
		s.SetAttributes(keySummaryBytes.Int(ev.SummaryBytes), keyTruncated.Bool(ev.Truncated),
			keyArtifacts.Int(ev.Artifacts))
		if t.capture && ev.Result != "" {
			s.SetAttributes(keyToolResult.String(ev.Result))
		}
		s.End(trace.WithTimestamp(at(ev.Time)))
	case *hooks.ToolError:
		s := t.takeTool(r, ev.CallID, ev.Tool, ev.Time, ev.Duration)
		s.SetAttributes(keyErrorType.String(ev.Code))
		msg := ev.Code
		if t.capture && ev.Err != nil {
			msg = ev.Err.Error()
		}
		s.SetStatus(codes.Error, msg)
		s.End(trace.WithTimestamp(at(ev.Time)))
	case *hooks.SQLQuery:
		attrs := []attribute.KeyValue{keyDBSystem.String(dbSystem(ev.Dialect)), keyTool.String(ev.Tool),
			keyDBReturnedRows.Int(ev.Rows), keyTruncated.Bool(ev.Truncated), durationMS(ev.Duration)}
		if ev.Error != "" {
			attrs = append(attrs, keyErrorType.String(ev.Error))
		}
		if t.capture {
			attrs = appendNonEmpty(attrs, keyDBQueryText, ev.SQL)
			attrs = appendNonEmpty(attrs, keyReason, ev.Reason)
		}
		r.target(ev.CallID).AddEvent("bichat.sql.query", trace.WithTimestamp(at(ev.Time)), trace.WithAttributes(attrs...))
	case *hooks.SandboxRun:
		attrs := []attribute.KeyValue{attribute.String("bichat.sandbox.outcome", ev.Outcome),
			attribute.Int("bichat.sandbox.exit_code", ev.ExitCode), durationMS(ev.Duration),
			attribute.Int("bichat.sandbox.files", ev.Files)}
		if len(ev.Unenforced) > 0 {
			attrs = append(attrs, attribute.StringSlice("bichat.sandbox.unenforced", ev.Unenforced))
		}
		r.target(ev.CallID).AddEvent("bichat.sandbox.run", trace.WithTimestamp(at(ev.Time)), trace.WithAttributes(attrs...))
	case *hooks.Interrupt:
		r.span.AddEvent("bichat.interrupt", trace.WithTimestamp(at(ev.Time)), trace.WithAttributes(
			keyReason.String(ev.Reason), keyTool.String(ev.Tool), keyCallID.String(ev.CallID)))
	case *hooks.ContextCompile:
		r.span.AddEvent("bichat.context.compile", trace.WithTimestamp(at(ev.Time)), trace.WithAttributes(
			attribute.Int("bichat.context.tokens", ev.Tokens), attribute.Int("bichat.context.budget", ev.Budget),
			attribute.Int("bichat.context.dropped", ev.Dropped), attribute.Int("bichat.context.compacted", ev.Compacted),
			attribute.Int("bichat.context.redacted", ev.Redacted),
			attribute.Int("bichat.context.cache_prefix_tokens", ev.CachePrefixTokens), durationMS(ev.Duration)))
	case *hooks.MessageSave:
		attrs := []attribute.KeyValue{attribute.String("bichat.message.role", string(ev.Role)),
			attribute.String("bichat.message.status", string(ev.Status)), keyMessageID.String(ev.MessageID)}
		if t.capture {
			attrs = appendNonEmpty(attrs, keyText, ev.Text)
		}
		r.span.AddEvent("bichat.message.save", trace.WithTimestamp(at(ev.Time)), trace.WithAttributes(attrs...))
	case *hooks.ArtifactSave:
		attrs := []attribute.KeyValue{attribute.String("bichat.artifact.id", ev.ArtifactID),
			attribute.String("bichat.artifact.media_type", ev.MediaType), attribute.Int64("bichat.artifact.size", ev.Size)}
		if t.capture {
			attrs = appendNonEmpty(attrs, attribute.Key("bichat.artifact.name"), ev.Name)
		}
		r.target(ev.CallID).AddEvent("bichat.artifact.save", trace.WithTimestamp(at(ev.Time)), trace.WithAttributes(attrs...))
	case *hooks.Decision:
		attrs := []attribute.KeyValue{attribute.String("bichat.decision.policy", ev.Policy),
			attribute.String("bichat.decision.outcome", ev.Outcome)}
		attrs = appendNonEmpty(attrs, keyTool, ev.Tool)
		attrs = appendNonEmpty(attrs, keyCallID, ev.CallID)
		if t.capture {
			attrs = appendNonEmpty(attrs, keyReason, ev.Reason)
		}
		r.target(ev.CallID).AddEvent("bichat.decision", trace.WithTimestamp(at(ev.Time)), trace.WithAttributes(attrs...))
	case *hooks.BudgetExceeded:
		r.span.AddEvent("bichat.budget.exceeded", trace.WithTimestamp(at(ev.Time)), trace.WithAttributes(
			attribute.String("bichat.budget.scope", ev.Scope), attribute.Float64("bichat.budget.limit_usd", ev.LimitUSD),
			attribute.Float64("bichat.budget.spent_usd", ev.SpentUSD)))
	case hooks.Fallback:
		fp, fm, tp, tm := ev.FallbackModels()
		target := r.model
		if target == nil {
			target = r.span
		}
		target.AddEvent("bichat.model.fallback", trace.WithTimestamp(at(ev.Header().Time)), trace.WithAttributes(
			attribute.String("bichat.fallback.from_provider", providerName(fp)), attribute.String("bichat.fallback.from_model", fm),
			attribute.String("bichat.fallback.to_provider", providerName(tp)), attribute.String("bichat.fallback.to_model", tm)))
	}
}

// start opens a run span. A sub-agent's run is a child of the parent
// run's open task call (or of the parent run); a top-level run is a child
// of the span in ctx, if any (the host's request span).
func (t *Tracer) start(ctx context.Context, e *hooks.AgentStart) error {
	if e.RunID == "" {
		return errors.New("otel: agent.start without a run id: the run cannot be traced")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if e.ParentRunID != "" {
		if p := t.lookup(e.ParentRunID); p != nil {
			if s := p.childParent(); s != nil {
				ctx = trace.ContextWithSpan(ctx, s)
			}
		}
	}
	name := spanName("invoke_agent", e.Agent)
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, keyOperation.String("invoke_agent"), keyRunID.String(e.RunID))
	attrs = appendNonEmpty(attrs, keyAgentName, e.Agent)
	attrs = appendNonEmpty(attrs, keyRequestModel, e.Model)
	attrs = appendNonEmpty(attrs, keyConversation, e.SessionID)
	attrs = appendNonEmpty(attrs, keyTenantID, e.TenantID)
	attrs = appendNonEmpty(attrs, keyMessageID, e.MessageID)
	attrs = appendNonEmpty(attrs, keyParentRunID, e.ParentRunID)
	if e.Resumed {
		attrs = append(attrs, keyResumed.Bool(true))
	}
	_, span := t.tracer.Start(ctx, name, trace.WithTimestamp(at(e.Time)),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	r := &runState{id: e.RunID, span: span, tools: make(map[string]*toolCall)}

	var dropped []*runState
	t.mu.Lock()
	if old := t.runs[e.RunID]; old != nil {
		// The same run id started again before it ended.
		t.unlinkLocked(old)
		dropped = append(dropped, old)
	}
	t.runs[e.RunID] = r
	r.prev = t.newest
	if t.newest != nil {
		t.newest.next = r
	} else {
		t.oldest = r
	}
	t.newest = r
	for len(t.runs) > t.max {
		o := t.oldest
		t.unlinkLocked(o)
		dropped = append(dropped, o)
	}
	t.mu.Unlock()

	for _, o := range dropped {
		o.mu.Lock()
		if !o.ended {
			o.ended = true
			now := time.Now()
			o.closeChildren(now)
			o.span.SetAttributes(keyErrorType.String("evicted"))
			o.span.SetStatus(codes.Error, fmt.Sprintf("otel: run no longer traced: more than %d runs open, or its id started again", t.max))
			o.span.End(trace.WithTimestamp(now))
			o.tools = nil
		}
		o.mu.Unlock()
	}
	return nil
}

// end removes run id, applies final to its span and ends every span of
// the run at time ts.
func (t *Tracer) end(id string, ts time.Time, final func(*runState)) {
	if id == "" {
		return
	}
	t.mu.Lock()
	r := t.runs[id]
	if r != nil {
		t.unlinkLocked(r)
	}
	t.mu.Unlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.ended = true
	r.closeChildren(ts)
	final(r)
	r.span.End(trace.WithTimestamp(at(ts)))
	r.tools = nil
}

func (t *Tracer) lookup(id string) *runState {
	t.mu.Lock()
	r := t.runs[id]
	t.mu.Unlock()
	return r
}

// unlinkLocked removes r from the map and the start-order list; t.mu must
// be held.
func (t *Tracer) unlinkLocked(r *runState) {
	delete(t.runs, r.id)
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		t.oldest = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		t.newest = r.prev
	}
	r.prev, r.next = nil, nil
}

// openTurn makes turn n the current turn, ending the previous turn's span
// (and any call of it still open) at ts and starting n's.
func (t *Tracer) openTurn(r *runState, n int, ts time.Time) {
	if r.turnSpan != nil && r.turn == n {
		return
	}
	if r.turnSpan != nil {
		// Calls of the old turn still open now never reported: end them
		// with it, so that spans nest.
		r.closeChildren(ts)
	}
	r.turn = n
	_, r.turnSpan = t.tracer.Start(trace.ContextWithSpan(context.Background(), r.span), fmt.Sprintf("turn %d", n),
		trace.WithTimestamp(at(ts)), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(keyTurn.Int(n), keyRunID.String(r.id)))
}

func (t *Tracer) startModel(r *runState, provider, model string, turn, attempt int, ts time.Time) trace.Span {
	parent := r.turnSpan
	if parent == nil {
		parent = r.span
	}
	_, s := t.tracer.Start(trace.ContextWithSpan(context.Background(), parent), spanName("chat", model),
		trace.WithTimestamp(ts), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(keyOperation.String("chat"), keyProvider.String(providerName(provider)),
			keyRequestModel.String(model), keyTurn.Int(turn), keyAttempt.Int(attempt)))
	return s
}

func (t *Tracer) endModel(s trace.Span, e *hooks.LLMResponse) {
	u := e.Usage
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, keyResponseModel.String(e.Model), keyInputTokens.Int(u.PromptTokens),
		keyOutputTokens.Int(u.CompletionTokens), keyCostUSD.Float64(e.CostUSD))
	if e.StopReason != "" {
		attrs = append(attrs, keyFinishReasons.StringSlice([]string{e.StopReason}))
	}
	if u.CachedTokens > 0 {
		attrs = append(attrs, keyCacheRead.Int(u.CachedTokens))
	}
	if u.CacheWriteTokens > 0 {
		attrs = append(attrs, keyCacheCreation.Int(u.CacheWriteTokens))
	}
	if u.ReasoningTokens > 0 {
		attrs = append(attrs, keyReasoningTokens.Int(u.ReasoningTokens))
	}
	if e.TimeToFirstToken > 0 {
		attrs = append(attrs, keyFirstChunk.Float64(e.TimeToFirstToken.Seconds()))
	}
	if t.capture && e.Output != "" {
		out, _ := json.Marshal([]outputMessage{{Role: "assistant", Parts: []outputPart{{Type: "text", Content: e.Output}},
			FinishReason: e.StopReason}})
		attrs = append(attrs, keyOutputMessages.String(string(out)))
	}
	if e.Err != nil {
		attrs = append(attrs, keyErrorType.String(errorType(e.Err)))
		s.RecordError(e.Err, trace.WithTimestamp(at(e.Time)))
		s.SetStatus(codes.Error, e.Err.Error())
	}
	s.SetAttributes(attrs...)
	s.End(trace.WithTimestamp(at(e.Time)))
}

func (t *Tracer) startTool(r *runState, tool, callID string, args []byte, ts time.Time) trace.Span {
	parent := r.turnSpan
	if parent == nil {
		parent = r.span
	}
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, keyOperation.String("execute_tool"), keyToolName.String(tool),
		keyToolCallID.String(callID), keyToolType.String("function"))
	if t.capture && len(args) > 0 {
		attrs = append(attrs, keyToolArguments.String(string(args)))
	}
	_, s := t.tracer.Start(trace.ContextWithSpan(context.Background(), parent), spanName("execute_tool", tool),
		trace.WithTimestamp(ts), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return s
}

// takeTool removes and returns the open span of call id, or starts one
// that began d before ts when the call's start was not seen (a call
// refused before it ran has only its tool.error).
func (t *Tracer) takeTool(r *runState, id, tool string, ts time.Time, d time.Duration) trace.Span {
	if c := r.tools[id]; c != nil {
		delete(r.tools, id)
		return c.span
	}
	return t.startTool(r, tool, id, nil, at(ts).Add(-d))
}

// target returns the span that events of tool call id belong to: the
// call's span while it is open, else the current turn's, else the run's.
func (r *runState) target(id string) trace.Span {
	if c := r.tools[id]; id != "" && c != nil {
		return c.span
	}
	if r.turnSpan != nil {
		return r.turnSpan
	}
	return r.span
}

// childParent returns the span a sub-agent run of r hangs under: the most
// recent open task call, else the most recent open call, else the run.
func (r *runState) childParent() trace.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return nil
	}
	var best *toolCall
	for _, c := range r.tools {
		if best == nil {
			best = c
			continue
		}
		if ct, bt := c.name == taskTool, best.name == taskTool; ct != bt {
			if ct {
				best = c
			}
		} else if c.seq > best.seq {
			best = c
		}
	}
	if best != nil {
		return best.span
	}
	return r.span
}

// closeChildren ends every open model, tool and turn span of r at ts; r.mu
// is held.
func (r *runState) closeChildren(ts time.Time) {
	if r.model != nil {
		endUnfinished(r.model, ts)
		r.model = nil
	}
	for id, c := range r.tools {
		endUnfinished(c.span, ts)
		delete(r.tools, id)
	}
	if r.turnSpan != nil {
		r.turnSpan.End(trace.WithTimestamp(at(ts)))
		r.turnSpan = nil
	}
}

// endUnfinished ends a model or tool span whose outcome never arrived.
func endUnfinished(s trace.Span, ts time.Time) {
	s.SetAttributes(keyErrorType.String("unfinished"))
	s.SetStatus(codes.Error, "otel: the call did not report an outcome before the run moved on or ended")
	s.End(trace.WithTimestamp(at(ts)))
}

// spanName returns "{operation} {subject}", or the operation alone when
// the subject is unknown, as the conventions name spans.
func spanName(operation, subject string) string {
	if subject == "" {
		return operation
	}
	return operation + " " + subject
}

// at returns ts, or now for events published without a time.
func at(ts time.Time) time.Time {
	if ts.IsZero() {
		return time.Now()
	}
	return ts
}

func appendNonEmpty(attrs []attribute.KeyValue, k attribute.Key, v string) []attribute.KeyValue {
	if v == "" {
		return attrs
	}
	return append(attrs, k.String(v))
}

func durationMS(d time.Duration) attribute.KeyValue {
	return keyDurationMS.Float64(float64(d) / float64(time.Millisecond))
}

// providerName maps bichat's provider names to the GenAI conventions'
// well-known gen_ai.provider.name values where they differ.
func providerName(p string) string {
	switch p {
	case "gemini":
		return "gcp.gemini"
	case "azure":
		return "azure.ai.openai"
	}
	return p
}

// dbSystem maps a sqldb dialect to the db.system.name convention.
func dbSystem(dialect string) string {
	if dialect == "postgres" {
		return "postgresql"
	}
	return dialect
}

// errorType names a model call's failure for error.type: "cancelled" and
// "timeout" for context errors, else the Go type of the first error in
// the chain that is not a plain wrapper, else "_OTHER" (the conventions'
// fallback).
func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		name := fmt.Sprintf("%T", e)
		switch name {
		case "*fmt.wrapError", "*fmt.wrapErrors", "*errors.errorString", "*errors.joinError", "*agents.transientError":
			continue
		}
		return name
	}
	return "_OTHER"
}

// outputMessage and outputPart encode gen_ai.output.messages.
type outputMessage struct {
	Role         string       `json:"role"`
	Parts        []outputPart `json:"parts"`
	FinishReason string       `json:"finish_reason,omitempty"`
}

type outputPart struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}
