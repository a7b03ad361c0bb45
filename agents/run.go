package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/internal/backoff"
)

// state is what a run carries from turn to turn; a checkpoint saves it.
type state struct {
	system    string
	history   []Message
	messages  []Message
	turn      int
	toolCalls int
	limitHit  bool
	usage     domain.Usage
	cost      float64
}

type pendingResolution struct {
	cp  *Checkpoint
	res resolution
}

// run is one execution of the loop, from RunStarted to its last event.
type run struct {
	e      *Executor
	ctx    context.Context
	cancel context.CancelFunc
	in     *Input
	st     *state
	yield  func(Event, error) bool

	seq     int64
	stopped bool // the consumer stopped ranging
	started time.Time
	wg      sync.WaitGroup // tool goroutines

	resumeFrom        string
	pendingResolution *pendingResolution
	// lastUsage is the usage of the run's previous model call.
	lastUsage domain.Usage
	// firstChunk is when the current model call's first chunk arrived.
	firstChunk time.Time
	// text and reasoning hold streamed text back to the end of the
	// current word when Config.Redact is set.
	text, reasoning textHold
}

// errStopped unwinds a run whose consumer stopped ranging.
var errStopped = errors.New("agents: consumer stopped")

func (e *Executor) newRun(ctx context.Context, in *Input, st *state, yield func(Event, error) bool) *run {
	rctx, cancel := context.WithCancel(ctx)
	return &run{e: e, ctx: rctx, cancel: cancel, in: in, st: st, yield: yield, started: e.cfg.Now()}
}

// close cancels whatever still runs and waits, within the grace period,
// for tool goroutines to return.
func (r *run) close() {
	r.cancel()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(r.e.cfg.CancelGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

func (r *run) emit(ev Event) error {
	if r.stopped {
		return errStopped
	}
	if f := r.redact(); f != nil {
		redactEvent(ev, f)
	}
	r.seq++
	h := ev.Header()
	h.RunID = r.in.RunID
	h.ParentRunID = r.in.ParentRunID
	h.Agent = r.e.cfg.Name
	h.SessionID = r.in.SessionID
	h.MessageID = r.in.MessageID
	h.Seq = r.seq
	h.Time = r.e.cfg.Now()
	if !r.yield(ev, nil) {
		r.stopped = true
		r.cancel()
		return errStopped
	}
	return nil
}

// forward yields a sub-agent's event, keeping its run ids and agent name
// but numbering it in this stream.
func (r *run) forward(ev Event, agent string) error {
	if r.stopped {
		return errStopped
	}
	if f := r.redact(); f != nil {
		redactEvent(ev, f)
	}
	r.seq++
	h := ev.Header()
	h.Seq = r.seq
	if h.Agent == "" {
		h.Agent = agent
	}
	if !r.yield(ev, nil) {
		r.stopped = true
		r.cancel()
		return errStopped
	}
	return nil
}

// guard is the run's Config.Guard, or, for a sub-agent whose executor has
// none, its parent's.
func (r *run) guard() func(context.Context, *TurnContext) error {
	if g := r.e.cfg.Guard; g != nil {
		return g
	}
	return r.in.parentGuard
}

// scrubbed returns s through the run's redactor, if any.
func (r *run) scrubbed(s string) string {
	if f := r.redact(); f != nil {
		return f(s)
	}
	return s
}

// redact is the run's Config.Redact, or, for a sub-agent whose executor
// has none, its parent's.
func (r *run) redact() func(string) string {
	if f := r.e.cfg.Redact; f != nil {
		return f
	}
	return r.in.parentRedact
}

func (r *run) meta() hooks.Meta {
	return hooks.Meta{
		Time:        r.e.cfg.Now(),
		TenantID:    r.in.TenantID,
		UserID:      r.in.UserID,
		SessionID:   r.in.SessionID,
		MessageID:   r.in.MessageID,
		RunID:       r.in.RunID,
		ParentRunID: r.in.ParentRunID,
	}
}

// publish sends ev to the bus with a context that keeps the run's values
// but is never cancelled, so the final events of a cancelled run still
// reach handlers that do I/O.
func (r *run) publish(ev hooks.Event) {
	r.e.cfg.Bus.Publish(context.WithoutCancel(r.ctx), ev)
}

func (r *run) run(resumedFrom string) {
	if r.e.cfg.Bus != nil {
		r.publish(&hooks.AgentStart{Meta: r.meta(), Agent: r.e.cfg.Name, Model: r.e.info.Name, Resumed: resumedFrom != ""})
	}
	if err := r.emit(&RunStarted{Model: r.e.info.Name, ResumedFrom: resumedFrom}); err != nil {
		r.fail(err)
		return
	}
	if pr := r.pendingResolution; pr != nil {
		if err := r.applyResolution(pr); err != nil {
			r.fail(err)
			return
		}
	}
	if err := r.loop(); err != nil {
		r.fail(err)
	}
}

const wrapUpNote = "\n\nYou have reached this question's limit of model turns or tool calls. Do not call any tool. " +
	"Answer now with what you have found, and say briefly what is still missing."

func (r *run) loop() error {
	cfg := &r.e.cfg
	for {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		wrapUp := r.st.limitHit || r.st.turn+1 >= cfg.MaxTurns
		r.st.turn++
		resp, err := r.callModel(wrapUp)
		if err != nil {
			return err
		}
		r.st.messages = append(r.st.messages, resp.Message)
		calls := resp.Message.ToolCalls()
		text := resp.Message.Text()
		if len(calls) == 0 {
			reason, note := FinishEndTurn, ""
			switch {
			case wrapUp && r.st.limitHit:
				reason, note = FinishToolLimit, fmt.Sprintf("The agent reached its limit of %d tool calls for this question and answered with what it had.", cfg.MaxToolCalls)
			case wrapUp:
				reason, note = FinishMaxTurns, fmt.Sprintf("The agent reached its limit of %d model turns for this question and answered with what it had.", cfg.MaxTurns)
			case resp.Stop == StopMaxTokens:
				reason, note = FinishMaxTokens, "The answer was cut off at the model's output token limit."
			case resp.Stop == StopContentFilter || resp.Stop == StopRefusal:
				reason, note = FinishContentFilter, "The model's provider withheld or cut the answer."
			}
			if strings.TrimSpace(text) == "" && reason == FinishEndTurn {
				return &ModelError{Err: errors.New("the model returned an empty answer")}
			}
			return r.finish(text, reason, note)
		}
		if wrapUp {
			// The model called tools on a turn that forbade them: close the
			// calls so the transcript stays valid, and stop.
			// A final_answer among them is still an answer.
			var answer string
			parts := make([]domain.Part, len(calls))
			for i, c := range calls {
				if a, err := parseFinalAnswer(c.Arguments); c.Name == ToolFinalAnswer && err == nil && answer == "" {
					answer = a
					parts[i] = resultPart(c, "The answer was delivered to the user.", false)
					continue
				}
				parts[i] = resultPart(c, "not run: the limit for this question was reached", true)
			}
			r.st.messages = append(r.st.messages, Message{Role: domain.RoleTool, Parts: parts})
			reason, note := FinishMaxTurns, fmt.Sprintf("The agent stopped after %d model turns without a final answer.", r.st.turn)
			if r.st.limitHit {
				reason, note = FinishToolLimit, fmt.Sprintf("The agent stopped after reaching its limit of %d tool calls without a final answer.", cfg.MaxToolCalls)
			}
			if answer != "" {
				note = strings.Replace(note, "without a final answer", "and answered with what it had", 1)
				r.st.messages = append(r.st.messages, AssistantMessage(answer))
				if err := r.emit(&TextDelta{Text: answer}); err != nil {
					return err
				}
				text = answer
			}
			return r.finish(text, reason, note)
		}
		out, err := r.runBatch(calls)
		if err != nil {
			return err
		}
		r.st.messages = append(r.st.messages, out.toolMsg)
		if out.interrupt != nil {
			r.interrupt(out.interrupt)
			return nil
		}
		if out.final != nil {
			r.st.messages = append(r.st.messages, AssistantMessage(*out.final))
			if err := r.emit(&TextDelta{Text: *out.final}); err != nil {
				return err
			}
			return r.finish(*out.final, FinishFinalAnswer, "")
		}
	}
}

func (r *run) finish(text string, reason FinishReason, note string) error {
	ev := &RunFinished{Text: text, Reason: reason, Note: note, Usage: r.st.usage, CostUSD: r.st.cost, Turns: r.st.turn,
		ToolCalls: r.st.toolCalls, Messages: r.runMessages()}
	if r.e.cfg.Bus != nil {
		r.publish(&hooks.AgentFinish{Meta: r.meta(), Agent: r.e.cfg.Name, Reason: string(reason), Turns: r.st.turn,
			ToolCalls: r.st.toolCalls, Usage: r.st.usage, CostUSD: r.st.cost, Duration: r.e.cfg.Now().Sub(r.started)})
	}
	// The run is over whether or not the consumer reads this last event; a
	// consumer that stops here must not turn it into a failure (agent.error
	// after agent.finish).
	_ = r.emit(ev)
	return nil
}

// runMessages returns the messages this run added: for a new run the user
// turn and everything after; for a resumed run everything (the checkpoint's
// messages included), since the caller persists the whole transcript.
func (r *run) runMessages() []Message {
	return r.st.messages
}

// ModelError wraps a model failure that ended a run.
type ModelError struct {
	Err error
}

// Error returns "model: " and the model's error.
func (e *ModelError) Error() string { return "model: " + e.Err.Error() }

// Unwrap returns the model's error.
func (e *ModelError) Unwrap() error { return e.Err }

func (r *run) fail(err error) {
	code, msg := classifyRunError(err)
	if r.e.cfg.Bus != nil {
		r.publish(&hooks.AgentError{Meta: r.meta(), Agent: r.e.cfg.Name, Code: code, Err: err,
			Duration: r.e.cfg.Now().Sub(r.started)})
	}
	if r.stopped {
		return
	}
	if e := r.emit(&RunFailed{Code: code, Message: msg, Err: err, Messages: r.runMessages()}); e != nil {
		return
	}
	r.yield(nil, err)
}

func classifyRunError(err error) (code, msg string) {
	var me *ModelError
	var rf RunFailure
	switch {
	case errors.Is(err, errStopped):
		return "cancelled", "The consumer stopped reading the run."
	case errors.Is(err, context.Canceled):
		return "cancelled", "The request was cancelled."
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", "The request took too long and was stopped."
	case errors.As(err, &me):
		return "model_error", "The language model failed: " + me.Err.Error()
	case errors.As(err, &rf):
		return rf.RunFailure()
	case errors.Is(err, domain.ErrInvalid):
		return "invalid", err.Error()
	}
	return "internal", "An internal error stopped the run."
}

// RunFailure is implemented by errors that know how a failed run should be
// reported: a short machine-readable code and a message fit for the end
// user (no internals). A request builder or tool error that implements it
// sets RunFailed.Code and RunFailed.Message; others are "internal".
type RunFailure interface {
	error
	RunFailure() (code, message string)
}

// Retryable reports whether err is transient: it (or an error it wraps)
// has a Retryable method returning true. Providers' typed errors do;
// TransientError marks others.
func Retryable(err error) bool {
	var r interface{ Retryable() bool }
	return errors.As(err, &r) && r.Retryable()
}

// TransientError marks err as worth retrying.
func TransientError(err error) error { return &transientError{err} }

type transientError struct{ err error }

func (e *transientError) Error() string   { return e.err.Error() }
func (e *transientError) Unwrap() error   { return e.err }
func (e *transientError) Retryable() bool { return true }

func (r *run) callModel(wrapUp bool) (*Response, error) {
	cfg := &r.e.cfg
	tc := &TurnContext{Input: r.in, Turn: r.st.turn, WrapUp: wrapUp, System: r.st.system,
		History: r.st.history, Messages: r.st.messages, Tools: r.e.specs, Options: cfg.Options, PrevUsage: r.lastUsage,
		Usage: r.st.usage, CostUSD: r.st.cost}
	if wrapUp {
		tc.Options.ToolChoice = ToolChoice{Mode: ToolChoiceNone}
		tc.System += wrapUpNote
	}
	if guard := r.guard(); guard != nil {
		if err := guard(r.ctx, tc); err != nil {
			return nil, err
		}
	}
	req, err := r.e.builder.BuildRequest(r.ctx, tc)
	if err != nil {
		return nil, fmt.Errorf("agents: build request: %w", err)
	}
	if f := r.redact(); f != nil {
		req = redactRequest(req, f)
	}
	for attempt := 1; ; attempt++ {
		if cfg.Bus != nil {
			r.publish(&hooks.LLMRequest{Meta: r.meta(), Provider: r.e.info.Provider, Model: r.e.info.Name,
				Turn: r.st.turn, Attempt: attempt, Messages: len(req.Messages), Tools: len(req.Tools),
				Input: func() []byte { return genAIInput(req) }})
		}
		start := cfg.Now()
		r.firstChunk = time.Time{}
		resp, emitted, err := r.stream(req)
		var ttft time.Duration
		if !r.firstChunk.IsZero() {
			ttft = r.firstChunk.Sub(start)
		}
		if errors.Is(err, errStopped) {
			return nil, err
		}
		if err == nil {
			r.st.usage = r.st.usage.Add(resp.Usage)
			r.lastUsage = resp.Usage
			cost := r.e.info.PricingAt(start).Cost(resp.Usage)
			r.st.cost += cost
			if cfg.Bus != nil {
				r.publish(&hooks.LLMResponse{Meta: r.meta(), Provider: r.e.info.Provider, Model: r.e.info.Name,
					Turn: r.st.turn, Attempt: attempt, Usage: resp.Usage, StopReason: string(resp.Stop),
					ToolCalls: len(resp.Message.ToolCalls()), Duration: cfg.Now().Sub(start), CostUSD: cost,
					TimeToFirstToken: ttft, Output: r.scrubbed(resp.Message.Text())})
			}
			if err := r.emit(&UsageReported{Turn: r.st.turn, Usage: resp.Usage, Total: r.st.usage, CostUSD: cost,
				TotalCostUSD: r.st.cost}); err != nil {
				return nil, err
			}
			return resp, nil
		}
		if cfg.Bus != nil {
			r.publish(&hooks.LLMResponse{Meta: r.meta(), Provider: r.e.info.Provider, Model: r.e.info.Name,
				Turn: r.st.turn, Attempt: attempt, Duration: cfg.Now().Sub(start), TimeToFirstToken: ttft, Err: err})
		}
		if cerr := r.ctx.Err(); cerr != nil {
			return nil, cerr
		}
		if emitted || attempt >= cfg.ModelAttempts || !Retryable(err) {
			return nil, &ModelError{Err: err}
		}
		if err := backoff.Sleep(r.ctx, cfg.Backoff.Delay(attempt)); err != nil {
			return nil, err
		}
	}
}

// stream runs one model call, yielding text and reasoning deltas as they
// arrive. emitted reports whether any event was yielded, which rules out a
// retry.
func (r *run) stream(req *Request) (resp *Response, emitted bool, err error) {
	var acc Accumulator
	for c, serr := range r.e.cfg.Model.Stream(r.ctx, req) {
		if serr != nil {
			return nil, emitted, serr
		}
		if r.firstChunk.IsZero() {
			r.firstChunk = r.e.cfg.Now()
		}
		if err := acc.Add(c); err != nil {
			return nil, emitted, err
		}
		switch c.Type {
		case ChunkText:
			if c.Text != "" {
				emitted = true
				if err := r.emitText(c.Text, false); err != nil {
					return nil, emitted, err
				}
			}
		case ChunkReasoning:
			if c.Text != "" {
				emitted = true
				if err := r.emitText(c.Text, true); err != nil {
					return nil, emitted, err
				}
			}
		case ChunkItem:
			if c.Item != nil {
				emitted = true
				if err := r.flushText(); err != nil {
					return nil, emitted, err
				}
				if err := r.emit(&ProviderItemReported{Item: *c.Item}); err != nil {
					return nil, emitted, err
				}
			}
		}
	}
	if err := r.ctx.Err(); err != nil {
		return nil, emitted, err
	}
	if err := r.flushText(); err != nil {
		return nil, emitted, err
	}
	resp, err = acc.Response()
	return resp, emitted, err
}

// emitText yields a text or reasoning delta; with Config.Redact set it
// holds the text back to the end of the current word (see textHold).
func (r *run) emitText(text string, reasoning bool) error {
	if f := r.redact(); f != nil {
		h := &r.text
		if reasoning {
			h = &r.reasoning
		}
		if text = h.take(text, f); text == "" {
			return nil
		}
	}
	if reasoning {
		return r.emit(&ReasoningDelta{Text: text})
	}
	return r.emit(&TextDelta{Text: text})
}

// flushText yields the text held back by emitText.
func (r *run) flushText() error {
	f := r.redact()
	if f == nil {
		return nil
	}
	if t := r.reasoning.flush(f); t != "" {
		if err := r.emit(&ReasoningDelta{Text: t}); err != nil {
			return err
		}
	}
	if t := r.text.flush(f); t != "" {
		return r.emit(&TextDelta{Text: t})
	}
	return nil
}

func resultPart(c domain.ToolCall, content string, isError bool) domain.Part {
	return domain.Part{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{
		CallID: c.ID, Name: c.Name, Content: content, IsError: isError}}
}

// interruptInfo describes the interrupt a batch ended with.
type interruptInfo struct {
	kind      domain.CheckpointKind
	call      domain.ToolCall
	part      int
	questions []Question
	conf      *ConfirmationRequest
}

func (r *run) interrupt(ii *interruptInfo) {
	cp := &Checkpoint{
		Version:      CheckpointVersion,
		ID:           r.e.cfg.NewID(),
		RunID:        r.in.RunID,
		Agent:        r.e.cfg.Name,
		Kind:         ii.kind,
		TenantID:     r.in.TenantID,
		UserID:       r.in.UserID,
		SessionID:    r.in.SessionID,
		MessageID:    r.in.MessageID,
		System:       r.st.system,
		History:      r.st.history,
		Messages:     r.st.messages,
		Pending:      PendingCall{CallID: ii.call.ID, Tool: ii.call.Name, Arguments: ii.call.Arguments, Part: ii.part},
		Questions:    ii.questions,
		Confirmation: ii.conf,
		Turn:         r.st.turn,
		ToolCalls:    r.st.toolCalls,
		LimitHit:     r.st.limitHit,
		Usage:        r.st.usage,
		CostUSD:      r.st.cost,
		CreatedAt:    r.e.cfg.Now(),
	}
	if r.e.cfg.Bus != nil {
		r.publish(&hooks.Interrupt{Meta: r.meta(), Reason: string(ii.kind), Tool: ii.call.Name, CallID: ii.call.ID})
		r.publish(&hooks.AgentFinish{Meta: r.meta(), Agent: r.e.cfg.Name, Reason: "interrupted", Turns: r.st.turn,
			ToolCalls: r.st.toolCalls, Usage: r.st.usage, CostUSD: r.st.cost, Duration: r.e.cfg.Now().Sub(r.started)})
	}
	_ = r.emit(&Interrupted{Kind: ii.kind, Questions: ii.questions, Confirmation: ii.conf, Checkpoint: cp})
}
