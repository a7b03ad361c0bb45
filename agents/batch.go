package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/internal/textutil"
)

// batchOutcome is what one turn's tool calls produced.
type batchOutcome struct {
	toolMsg   Message
	final     *string
	interrupt *interruptInfo
}

// ArgumentValidator is implemented by tools that can check arguments
// without running (NewTool and NewRawTool tools do). The executor uses it
// to avoid asking the user to approve a call that would fail anyway.
type ArgumentValidator interface {
	ValidateArguments(args json.RawMessage) error
}

// ValidateArguments checks args against the tool's schema.
func (t *funcTool[In, Out]) ValidateArguments(args json.RawMessage) error {
	return t.validator.validate(args)
}

// ValidateArguments checks args against the tool's schema.
func (t *rawTool) ValidateArguments(args json.RawMessage) error {
	return t.validator.validate(args)
}

// callJob is one tool call in flight.
type callJob struct {
	idx  int
	call domain.ToolCall
	tool Tool
	spec ToolSpec
	out  chan toolOutcome
}

type toolOutcome struct {
	res   Result
	err   error
	code  string
	stack []byte
	dur   time.Duration
	// notRun: the tool was never called (the run was cancelled first).
	notRun bool
}

func (r *run) runBatch(calls []domain.ToolCall) (*batchOutcome, error) {
	cfg := &r.e.cfg
	out := &batchOutcome{}
	parts := make([]domain.Part, len(calls))
	for i := 0; i < len(calls); {
		c := calls[i]
		if out.final != nil {
			parts[i] = resultPart(c, "not run: the final answer was already given", true)
			i++
			continue
		}
		t, known := r.e.tools[c.Name]
		if !known {
			names := make([]string, 0, len(r.e.specs))
			for _, s := range r.e.specs {
				names = append(names, s.Name)
			}
			msg := fmt.Sprintf("unknown tool %q; available tools: %s", c.Name, strings.Join(names, ", "))
			if err := r.refuse(parts, i, c, PermRead, "unknown_tool", msg); err != nil {
				return nil, err
			}
			i++
			continue
		}
		spec := r.specOf(c.Name, t)
		if b, ok := t.(builtin); ok && b.builtinKind() == builtinFinal {
			answer, err := parseFinalAnswer(c.Arguments)
			if err != nil {
				if err := r.refuse(parts, i, c, spec.Permission, "invalid_arguments", err.Error()+". Fix the arguments and call it again."); err != nil {
					return nil, err
				}
				i++
				continue
			}
			parts[i] = resultPart(c, "The answer was delivered to the user.", false)
			out.final = &answer
			i++
			continue
		}
		if !isObject(c.Arguments) {
			if err := r.refuse(parts, i, c, spec.Permission, "invalid_arguments",
				fmt.Sprintf("invalid arguments for %s: (root): arguments must be a JSON object. Fix the arguments and call it again.", c.Name)); err != nil {
				return nil, err
			}
			i++
			continue
		}
		if r.st.toolCalls >= cfg.MaxToolCalls {
			r.st.limitHit = true
			msg := fmt.Sprintf("not run: this question has used its limit of %d tool calls; answer with what you have", cfg.MaxToolCalls)
			if err := r.refuse(parts, i, c, spec.Permission, "limit", msg); err != nil {
				return nil, err
			}
			i++
			continue
		}
		if b, ok := t.(builtin); ok {
			r.st.toolCalls++
			var err error
			switch b.builtinKind() {
			case builtinAsk:
				err = r.prepareQuestion(out, parts, i, c, spec)
			case builtinTask:
				err = r.runTask(parts, i, c, t.(*taskTool))
			}
			if err != nil {
				return nil, err
			}
			i++
			continue
		}
		if spec.Permission.NeedsConfirmation() {
			r.st.toolCalls++
			if err := r.prepareConfirmation(out, parts, i, c, t, spec); err != nil {
				return nil, err
			}
			i++
			continue
		}
		// A group of consecutive parallel-safe plain calls runs
		// concurrently; anything else runs alone.
		j := i + 1
		if spec.ParallelSafe {
			for j < len(calls) && r.st.toolCalls+(j-i) < cfg.MaxToolCalls && r.parallelizable(calls[j]) {
				j++
			}
		}
		jobs := make([]*callJob, 0, j-i)
		for k := i; k < j; k++ {
			tk := r.e.tools[calls[k].Name]
			jobs = append(jobs, &callJob{idx: k, call: calls[k], tool: tk, spec: r.specOf(calls[k].Name, tk)})
		}
		r.st.toolCalls += len(jobs)
		if err := r.runJobs(jobs, parts); err != nil {
			return nil, err
		}
		i = j
	}
	if out.final != nil && out.interrupt != nil {
		// Waiting for the user wins: the answer would be premature.
		for k, c := range calls {
			if c.Name == ToolFinalAnswer && parts[k].ToolResult != nil && !parts[k].ToolResult.IsError {
				parts[k] = resultPart(c, "not delivered: the user has to answer first; give the final answer after that", true)
			}
		}
		out.final = nil
	}
	out.toolMsg = Message{Role: domain.RoleTool, Parts: parts}
	return out, nil
}

func (r *run) specOf(name string, t Tool) ToolSpec {
	for i := range r.e.specs {
		if r.e.specs[i].Name == name {
			return r.e.specs[i]
		}
	}
	return t.Spec()
}

func (r *run) parallelizable(c domain.ToolCall) bool {
	t, ok := r.e.tools[c.Name]
	if !ok {
		return false
	}
	if _, isBuiltin := t.(builtin); isBuiltin {
		return false
	}
	s := r.specOf(c.Name, t)
	return s.ParallelSafe && !s.Permission.NeedsConfirmation() && isObject(c.Arguments)
}

func isObject(args json.RawMessage) bool {
	for _, b := range args {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}

// refuse records a call that does not run, with both events.
func (r *run) refuse(parts []domain.Part, i int, c domain.ToolCall, perm Permission, code, msg string) error {
	parts[i] = resultPart(c, msg, true)
	if err := r.emit(&ToolCallStarted{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, Permission: perm}); err != nil {
		return err
	}
	if r.e.cfg.Bus != nil {
		r.publish(&hooks.ToolError{Meta: r.meta(), CallID: c.ID, Tool: c.Name, Code: code, Err: errors.New(msg)})
	}
	return r.emit(&ToolCallFinished{CallID: c.ID, Name: c.Name, Summary: msg, Error: msg, ErrorCode: code})
}

func (r *run) prepareQuestion(out *batchOutcome, parts []domain.Part, i int, c domain.ToolCall, spec ToolSpec) error {
	qs, err := parseQuestions(c.Arguments)
	if err != nil {
		return r.refuse(parts, i, c, spec.Permission, "invalid_arguments", err.Error()+". Fix the arguments and call it again.")
	}
	if out.interrupt != nil {
		return r.refuse(parts, i, c, spec.Permission, "not_run",
			"not run: another question or confirmation is already pending; ask again after it is resolved")
	}
	parts[i] = resultPart(c, "", false)
	out.interrupt = &interruptInfo{kind: domain.CheckpointQuestion, call: c, part: i, questions: qs}
	return r.emit(&ToolCallStarted{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, Permission: spec.Permission})
}

func (r *run) prepareConfirmation(out *batchOutcome, parts []domain.Part, i int, c domain.ToolCall, t Tool, spec ToolSpec) error {
	if v, ok := t.(ArgumentValidator); ok {
		if err := v.ValidateArguments(c.Arguments); err != nil {
			return r.refuse(parts, i, c, spec.Permission, "invalid_arguments", err.Error()+". Fix the arguments and call it again.")
		}
	}
	if out.interrupt != nil {
		return r.refuse(parts, i, c, spec.Permission, "not_run",
			"not run: another question or confirmation is already pending; call it again after that is resolved")
	}
	exp := r.e.cfg.Now().Add(r.e.cfg.ConfirmationTTL)
	// The token binds the canonical form of the arguments, which is what
	// the checkpoint carries, so it still verifies after the host stored
	// and re-encoded the checkpoint.
	pending := c
	pending.Arguments = canonicalArgs(c.Arguments)
	hash := ArgumentsHash(pending.Arguments)
	token, err := r.e.signer.Issue(TokenClaims{Tenant: r.in.TenantID, User: r.in.UserID, Tool: c.Name, Call: c.ID,
		Args: hash, Exp: exp.Unix()})
	if err != nil {
		return err
	}
	parts[i] = resultPart(c, "", false)
	out.interrupt = &interruptInfo{kind: domain.CheckpointConfirmation, call: pending, part: i, conf: &ConfirmationRequest{
		Token: token, CallID: c.ID, Tool: c.Name, Description: spec.Description, Permission: spec.Permission,
		Arguments: pending.Arguments, ArgumentsHash: hash, ExpiresAt: time.Unix(exp.Unix(), 0)}}
	return r.emit(&ToolCallStarted{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, Permission: spec.Permission})
}

// canonicalArgs returns tool arguments in a canonical JSON form: compact,
// object keys sorted, strings escaped as encoding/json escapes them,
// numbers kept verbatim. Storing a checkpoint re-encodes its raw JSON
// (encoding/json compacts it and escapes <, > and &; a jsonb column also
// reorders keys), so a hash of the bytes as the model sent them would no
// longer match; a hash of the canonical form does. Invalid JSON is
// returned unchanged.
func canonicalArgs(args json.RawMessage) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return args
	}
	b, err := json.Marshal(v)
	if err != nil {
		return args
	}
	return b
}

// runJobs runs calls concurrently (bounded by MaxParallelTools), emitting
// ToolCallStarted for all, then ToolCallFinished in call order as results
// become available.
func (r *run) runJobs(jobs []*callJob, parts []domain.Part) error {
	for _, j := range jobs {
		if err := r.emit(&ToolCallStarted{CallID: j.call.ID, Name: j.call.Name, Arguments: j.call.Arguments, Permission: j.spec.Permission}); err != nil {
			return err
		}
		if r.e.cfg.Bus != nil && r.ctx.Err() == nil {
			r.publish(&hooks.ToolStart{Meta: r.meta(), CallID: j.call.ID, Tool: j.call.Name, Arguments: j.call.Arguments})
		}
	}
	var sem chan struct{}
	if len(jobs) > 1 && len(jobs) > r.e.cfg.MaxParallelTools {
		sem = make(chan struct{}, r.e.cfg.MaxParallelTools)
	}
	for _, j := range jobs {
		j.out = make(chan toolOutcome, 1)
		r.wg.Add(1)
		go r.runTool(j, sem)
	}
	for _, j := range jobs {
		o := <-j.out
		if err := r.finishJob(j, o, parts); err != nil {
			return err
		}
	}
	return nil
}

// runTool runs one call with its timeout and panic recovery and sends
// exactly one outcome. A tool that ignores its context is abandoned at the
// deadline; its goroutine ends when the tool returns.
func (r *run) runTool(j *callJob, sem chan struct{}) {
	defer r.wg.Done()
	if sem != nil {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		case <-r.ctx.Done():
			j.out <- toolOutcome{err: r.ctx.Err(), code: "cancelled", notRun: true}
			return
		}
	}
	// No tool starts once the run is cancelled (the consumer may cancel
	// while handling ToolCallStarted, or a sibling call may have been
	// stopped): the call is reported as cancelled and not run.
	if err := r.ctx.Err(); err != nil {
		j.out <- toolOutcome{err: err, code: "cancelled", notRun: true}
		return
	}
	timeout := j.spec.Timeout
	if timeout <= 0 {
		timeout = r.e.cfg.ToolTimeout
	}
	ctx, cancel := context.WithTimeout(r.ctx, timeout)
	defer cancel()
	start := time.Now()
	done := make(chan toolOutcome, 1)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			if p := recover(); p != nil {
				done <- toolOutcome{err: fmt.Errorf("panic: %v", p), code: "panic", stack: debug.Stack()}
			}
		}()
		res, err := j.tool.Call(WithCallInfo(ctx, CallInfo{
			RunID: r.in.RunID, ParentRunID: r.in.ParentRunID,
			TenantID: r.in.TenantID, UserID: r.in.UserID,
			SessionID: r.in.SessionID, MessageID: r.in.MessageID,
			CallID: j.call.ID, Tool: j.call.Name, Attributes: r.in.Attributes,
		}), j.call.Arguments)
		done <- toolOutcome{res: res, err: err}
	}()
	var o toolOutcome
	select {
	case o = <-done:
	case <-ctx.Done():
		if r.ctx.Err() != nil {
			o = toolOutcome{err: r.ctx.Err(), code: "cancelled"}
		} else {
			o = toolOutcome{err: fmt.Errorf("%s did not finish within %s", j.call.Name, timeout), code: "timeout"}
		}
	}
	o.dur = time.Since(start)
	if o.err != nil && o.code == "" {
		switch {
		case errors.Is(o.err, ErrInvalidArguments):
			o.code = "invalid_arguments"
		case errors.Is(o.err, context.DeadlineExceeded) && ctx.Err() != nil && r.ctx.Err() == nil:
			o.code = "timeout"
		case errors.Is(o.err, context.Canceled) && r.ctx.Err() != nil:
			o.code = "cancelled"
		default:
			o.code = "error"
		}
	}
	j.out <- o
}

// modelText turns a tool failure into what the model reads.
func modelText(name string, o toolOutcome, timeout time.Duration) string {
	switch o.code {
	case "invalid_arguments":
		return o.err.Error() + ". Fix the arguments and call it again."
	case "timeout":
		return fmt.Sprintf("%s did not finish within %s and was stopped; try a smaller or simpler request", name, timeout)
	case "panic":
		return fmt.Sprintf("%s failed with an internal error", name)
	case "cancelled":
		if o.notRun {
			return fmt.Sprintf("%s was not run: the run was cancelled before it started", name)
		}
		return fmt.Sprintf("%s was cancelled", name)
	}
	return fmt.Sprintf("%s failed: %v", name, o.err)
}

func (r *run) finishJob(j *callJob, o toolOutcome, parts []domain.Part) error {
	cfg := &r.e.cfg
	ev := &ToolCallFinished{CallID: j.call.ID, Name: j.call.Name, Duration: o.dur}
	if o.err != nil {
		timeout := j.spec.Timeout
		if timeout <= 0 {
			timeout = cfg.ToolTimeout
		}
		msg := modelText(j.call.Name, o, timeout)
		ev.Summary, ev.Truncated = textutil.Truncate(msg, cfg.MaxToolOutputBytes)
		ev.Error = ev.Summary
		ev.ErrorCode = o.code
		parts[j.idx] = resultPart(j.call, ev.Summary, true)
		if cfg.Bus != nil {
			r.publish(&hooks.ToolError{Meta: r.meta(), CallID: j.call.ID, Tool: j.call.Name, Code: o.code, Err: o.err,
				Duration: o.dur, Stack: o.stack})
		}
		return r.emit(ev)
	}
	summary := o.res.Summary
	if strings.TrimSpace(summary) == "" {
		summary = "(the tool returned no output)"
	}
	ev.Summary, ev.Truncated = textutil.Truncate(summary, cfg.MaxToolOutputBytes)
	ev.Payload = o.res.Payload
	ev.Artifacts = o.res.Artifacts
	ev.Datasets = o.res.Datasets
	ev.Citations = o.res.Citations
	parts[j.idx] = resultPart(j.call, ev.Summary, false)
	if cfg.Bus != nil {
		r.publish(&hooks.ToolFinish{Meta: r.meta(), CallID: j.call.ID, Tool: j.call.Name, Duration: o.dur,
			SummaryBytes: len(ev.Summary), Truncated: ev.Truncated, Artifacts: len(ev.Artifacts), Result: r.scrubbed(ev.Summary)})
	}
	return r.emit(ev)
}

// runTask runs a sub-agent and forwards its events.
func (r *run) runTask(parts []domain.Part, i int, c domain.ToolCall, t *taskTool) error {
	spec := t.spec
	sa, task, err := t.parse(c.Arguments)
	if err != nil {
		return r.refuse(parts, i, c, spec.Permission, "invalid_arguments", err.Error()+". Fix the arguments and call it again.")
	}
	if err := r.emit(&ToolCallStarted{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, Permission: spec.Permission}); err != nil {
		return err
	}
	if r.e.cfg.Bus != nil {
		r.publish(&hooks.ToolStart{Meta: r.meta(), CallID: c.ID, Tool: c.Name, Arguments: c.Arguments})
	}
	start := time.Now()
	child := Input{
		RunID:       r.e.cfg.NewID(),
		ParentRunID: r.in.RunID,
		TenantID:    r.in.TenantID,
		UserID:      r.in.UserID,
		SessionID:   r.in.SessionID,
		MessageID:   r.in.MessageID,
		Message:     UserMessage(task),
		Attributes:  r.in.Attributes,
		// The parent's budgets and redaction apply to the child's model
		// calls too, unless its executor has its own.
		parentGuard:  r.guard(),
		parentRedact: r.redact(),
	}
	var (
		answer   string
		failure  error
		code     = "error"
		payloads []any
		res      Result
	)
	for ev, err := range sa.Executor.Run(r.ctx, child) {
		if err != nil {
			if failure == nil {
				failure = err
			}
			continue
		}
		switch e := ev.(type) {
		case *RunFinished:
			answer = e.Text
		case *Interrupted:
			code = "not_run"
			switch e.Kind {
			case domain.CheckpointQuestion:
				qs := make([]string, len(e.Questions))
				for k, q := range e.Questions {
					qs[k] = q.Question
				}
				failure = fmt.Errorf("the %s agent stopped to ask the user: %s; ask the user yourself if it matters",
					sa.Name, strings.Join(qs, " / "))
			default:
				failure = fmt.Errorf("the %s agent wanted to run %s, which needs the user's approval; sub-agents cannot get approvals",
					sa.Name, e.Confirmation.Tool)
			}
		case *RunFailed:
			failure = fmt.Errorf("the %s agent failed: %s", sa.Name, e.Message)
		case *ToolCallFinished:
			if e.Error == "" {
				res.Artifacts = append(res.Artifacts, e.Artifacts...)
				res.Citations = append(res.Citations, e.Citations...)
				for _, d := range e.Datasets {
					if !slices.Contains(res.Datasets, d) {
						res.Datasets = append(res.Datasets, d)
					}
				}
				if e.Payload != nil {
					payloads = append(payloads, e.Payload)
				}
			}
		}
		if err := r.forward(ev, sa.Name); err != nil {
			return err
		}
	}
	if err := r.ctx.Err(); err != nil {
		return err
	}
	o := toolOutcome{dur: time.Since(start)}
	if failure != nil {
		o.err, o.code = failure, code
		if code == "not_run" {
			// Surface the reason verbatim: it tells the parent what to do.
			o.code = "error"
		}
	} else {
		o.res = Result{Summary: answer, Artifacts: res.Artifacts, Datasets: res.Datasets, Citations: res.Citations}
		if len(payloads) > 0 {
			o.res.Payload = payloads
		}
	}
	return r.finishJob(&callJob{idx: i, call: c, tool: t, spec: spec}, o, parts)
}

// applyResolution fills the pending slot of a resumed run: with the user's
// answers or denial, or by running the approved tool.
func (r *run) applyResolution(pr *pendingResolution) error {
	cp, res := pr.cp, pr.res
	msgs := r.st.messages
	parts := msgs[len(msgs)-1].Parts
	call := domain.ToolCall{ID: cp.Pending.CallID, Name: cp.Pending.Tool, Arguments: cp.Pending.Arguments}
	if res.approved {
		t, ok := r.e.tools[call.Name]
		if !ok {
			return r.refuse(parts, cp.Pending.Part, call, PermWrite, "unknown_tool",
				fmt.Sprintf("%s is no longer available; it was not run", call.Name))
		}
		spec := r.specOf(call.Name, t)
		if err := r.emit(&ToolCallStarted{CallID: call.ID, Name: call.Name, Arguments: call.Arguments, Permission: spec.Permission}); err != nil {
			return err
		}
		if r.e.cfg.Bus != nil {
			r.publish(&hooks.ToolStart{Meta: r.meta(), CallID: call.ID, Tool: call.Name, Arguments: call.Arguments})
		}
		j := &callJob{idx: cp.Pending.Part, call: call, tool: t, spec: spec, out: make(chan toolOutcome, 1)}
		r.wg.Add(1)
		go r.runTool(j, nil)
		return r.finishJob(j, <-j.out, parts)
	}
	content, _ := textutil.Truncate(res.content, r.e.cfg.MaxToolOutputBytes)
	parts[cp.Pending.Part] = resultPart(call, content, res.isError)
	ev := &ToolCallFinished{CallID: call.ID, Name: call.Name, Summary: content}
	if res.isError {
		ev.Error, ev.ErrorCode = content, res.code
		if r.e.cfg.Bus != nil {
			r.publish(&hooks.ToolError{Meta: r.meta(), CallID: call.ID, Tool: call.Name, Code: res.code, Err: errors.New(content)})
		}
	}
	return r.emit(ev)
}
