package agents

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/internal/backoff"
)

// Defaults of Config.
const (
	DefaultMaxTurns           = 15
	DefaultMaxToolCalls       = 15
	DefaultMaxParallelTools   = 4
	DefaultToolTimeout        = 60 * time.Second
	DefaultMaxToolOutputBytes = 16 << 10
	DefaultConfirmationTTL    = 10 * time.Minute
	DefaultModelAttempts      = 3
	DefaultCancelGrace        = 2 * time.Second
)

// Config configures an Executor. Only Model is required; zero values of
// the other fields mean the documented defaults.
type Config struct {
	// Name names the agent in events; leave empty for the top-level agent.
	Name string
	// Model answers every turn.
	Model Model
	// System is the system prompt; Input.System overrides it per run.
	System string
	// Tools the model may call. Names must be unique and must not clash
	// with the built-ins.
	Tools []Tool
	// DisableAskUser removes the built-in ask_user_question tool.
	DisableAskUser bool
	// DisableFinalAnswer removes the built-in final_answer tool.
	DisableFinalAnswer bool

	// MaxTurns caps model calls per run (default 15). The last allowed turn
	// is a wrap-up turn without tool calls, so the user still gets an
	// answer.
	MaxTurns int
	// MaxToolCalls caps tool calls per run, across resumptions (default
	// 15). Calls beyond it are refused with an explanation and the next
	// turn is a wrap-up turn.
	MaxToolCalls int
	// MaxParallelTools bounds concurrently running parallel-safe calls
	// (default 4).
	MaxParallelTools int
	// ToolTimeout bounds a call whose spec sets no timeout (default 60 s).
	ToolTimeout time.Duration
	// MaxToolOutputBytes caps the summary each tool call returns to the
	// model (default 16 KiB); longer summaries are cut with a note.
	MaxToolOutputBytes int
	// Options are the default model request options.
	Options Options

	// ModelAttempts is how many times a model call is tried when it fails
	// with a transient error before anything was streamed (default 3).
	ModelAttempts int
	// Backoff spaces those attempts (default 500 ms doubling to 8 s, with
	// jitter).
	Backoff backoff.Policy

	// ConfirmationKey signs confirmation tokens (HMAC-SHA256; 16 bytes or
	// more). Empty means a random per-process key: tokens then do not
	// survive a restart. Set it when runs are resumed by other processes.
	ConfirmationKey []byte
	// ConfirmationTTL is how long a confirmation token is valid (default
	// 10 minutes).
	ConfirmationTTL time.Duration
	// ReplayGuard makes each token work once (default: in memory).
	ReplayGuard ReplayGuard

	// Builder assembles each turn's request (default: system prompt,
	// history, this run's messages and the tool specs, unchanged). The
	// context compiler plugs in here.
	Builder RequestBuilder
	// Bus receives agent, LLM, tool and interrupt events; nil disables them.
	Bus *hooks.Bus
	// CancelGrace is how long a stopping run waits for running tools to
	// return after cancelling them (default 2 s).
	CancelGrace time.Duration
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// NewID returns fresh ids for runs and checkpoints (default
	// domain.NewID).
	NewID func() string

	// Guard, when set, is called before each model call of a run (not
	// before retries of the same call) with the turn's context, whose
	// Usage and CostUSD say what the run spent so far. Sub-agents run by
	// the task tool inherit it when their executor sets none (and so
	// Redact). A non-nil error
	// stops the run without that call: the run fails with it (an error
	// implementing RunFailure sets RunFailed's code and message). Budgets
	// and quotas plug in here.
	Guard func(ctx context.Context, t *TurnContext) error
	// Redact, when set, scrubs secrets from what leaves the run: every
	// request sent to the model (system prompt, messages, tool calls and
	// results; reasoning is left alone, providers sign it) and every event
	// yielded (text and reasoning deltas, tool arguments and summaries,
	// questions, failure messages, transcripts). Streamed text is held back
	// to the end of the current word so a secret split across two deltas
	// is still caught. bichat.Service sets it from Config.Redactor.
	Redact func(string) string
}

// RequestBuilder assembles the model request of each turn. Implementations
// must not modify the slices in t; they may return them in the request.
type RequestBuilder interface {
	BuildRequest(ctx context.Context, t *TurnContext) (*Request, error)
}

// TurnContext is what a RequestBuilder gets each turn.
type TurnContext struct {
	// Input is the run's input (for a resumed run: the checkpoint's ids and
	// history).
	Input *Input
	// Turn counts model calls of the run, from 1.
	Turn int
	// WrapUp is true on a turn that may not call tools: the builder should
	// keep Options.ToolChoice none.
	WrapUp  bool
	System  string
	History []Message
	// Messages is this run so far, starting with the user turn.
	Messages []Message
	Tools    []ToolSpec
	Options  Options
	// PrevUsage is the usage the provider reported for the previous model
	// call of this run (zero on a run's first call): a builder that
	// estimates tokens can calibrate against its exact prompt size.
	PrevUsage domain.Usage
	// Usage sums the run's model calls so far (across resumptions), and
	// CostUSD prices them (Config.Guard uses them for budgets).
	Usage   domain.Usage
	CostUSD float64
}

// BuilderFunc adapts a function to a RequestBuilder.
type BuilderFunc func(ctx context.Context, t *TurnContext) (*Request, error)

// BuildRequest calls f.
func (f BuilderFunc) BuildRequest(ctx context.Context, t *TurnContext) (*Request, error) {
	return f(ctx, t)
}

// DefaultBuilder assembles System, History, Messages, Tools and Options
// into a request without changing them.
var DefaultBuilder RequestBuilder = BuilderFunc(func(_ context.Context, t *TurnContext) (*Request, error) {
	msgs := make([]Message, 0, len(t.History)+len(t.Messages))
	msgs = append(msgs, t.History...)
	msgs = append(msgs, t.Messages...)
	return &Request{System: t.System, Messages: msgs, Tools: t.Tools, Options: t.Options}, nil
})

// Input starts a run.
type Input struct {
	// RunID is generated when empty.
	RunID string
	// ParentRunID is set by the task tool on sub-agent runs.
	ParentRunID string
	// TenantID and UserID bind confirmation tokens and tag events.
	TenantID string
	UserID   string
	// SessionID and MessageID tag events.
	SessionID string
	MessageID string
	// System overrides Config.System when non-empty.
	System string
	// History is the conversation before this turn, oldest first.
	History []Message
	// Message is the new user turn; it must have at least one part.
	Message Message
	// Attributes are the caller's data-scoping attributes, handed to
	// every tool call (CallInfo.Attributes). Not kept in checkpoints:
	// Resume takes them again. Sub-agents get their parent's.
	Attributes map[string]string

	// parentGuard and parentRedact are the parent run's Config.Guard and
	// Config.Redact, which a sub-agent whose executor sets none uses (the
	// task tool sets them).
	parentGuard  func(context.Context, *TurnContext) error
	parentRedact func(string) string
}

// Executor runs the ReAct loop: the model streams, tool calls are collected
// and run, results go back to the model, until it answers, calls
// final_answer, asks the user, needs a confirmation, hits a limit, or the
// context ends. An Executor is safe for concurrent use by many runs.
type Executor struct {
	cfg     Config
	tools   map[string]Tool
	specs   []ToolSpec
	signer  *TokenSigner
	guard   ReplayGuard
	builder RequestBuilder
	info    ModelInfo
}

// NewExecutor validates cfg and returns an Executor.
func NewExecutor(cfg Config) (*Executor, error) {
	if cfg.Model == nil {
		return nil, errors.New("agents: Config.Model is required")
	}
	if cfg.MaxTurns < 0 || cfg.MaxToolCalls < 0 || cfg.MaxParallelTools < 0 || cfg.ToolTimeout < 0 ||
		cfg.MaxToolOutputBytes < 0 || cfg.ModelAttempts < 0 || cfg.ConfirmationTTL < 0 || cfg.CancelGrace < 0 {
		return nil, errors.New("agents: Config limits must not be negative")
	}
	setDefault(&cfg.MaxTurns, DefaultMaxTurns)
	setDefault(&cfg.MaxToolCalls, DefaultMaxToolCalls)
	setDefault(&cfg.MaxParallelTools, DefaultMaxParallelTools)
	setDefault(&cfg.ToolTimeout, DefaultToolTimeout)
	setDefault(&cfg.MaxToolOutputBytes, DefaultMaxToolOutputBytes)
	setDefault(&cfg.ModelAttempts, DefaultModelAttempts)
	setDefault(&cfg.ConfirmationTTL, DefaultConfirmationTTL)
	setDefault(&cfg.CancelGrace, DefaultCancelGrace)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = domain.NewID
	}
	e := &Executor{cfg: cfg, tools: map[string]Tool{}, builder: cfg.Builder, guard: cfg.ReplayGuard, info: cfg.Model.Info()}
	if e.builder == nil {
		e.builder = DefaultBuilder
	}
	if e.guard == nil {
		e.guard = &MemoryReplayGuard{}
	}
	s, err := NewTokenSigner(cfg.ConfirmationKey, ExecutorTokenPurpose)
	if err != nil {
		return nil, err
	}
	e.signer = s
	add := func(t Tool) error {
		if t == nil {
			return errors.New("agents: nil tool in Config.Tools")
		}
		spec := t.Spec()
		if err := spec.Validate(); err != nil {
			return err
		}
		if _, dup := e.tools[spec.Name]; dup {
			return fmt.Errorf("agents: two tools are named %s", spec.Name)
		}
		e.tools[spec.Name] = t
		e.specs = append(e.specs, spec)
		return nil
	}
	for _, t := range cfg.Tools {
		if _, isBuiltin := t.(*builtinTool); isBuiltin {
			return nil, fmt.Errorf("agents: %s is built in; do not list it in Config.Tools", t.Spec().Name)
		}
		if err := add(t); err != nil {
			return nil, err
		}
	}
	if !cfg.DisableAskUser {
		if err := add(askTool); err != nil {
			return nil, fmt.Errorf("%w (disable the built-in with DisableAskUser)", err)
		}
	}
	if !cfg.DisableFinalAnswer {
		if err := add(finalTool); err != nil {
			return nil, fmt.Errorf("%w (disable the built-in with DisableFinalAnswer)", err)
		}
	}
	return e, nil
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// Tools returns the specs of every tool the model can call, built-ins
// included, in registration order.
func (e *Executor) Tools() []ToolSpec { return append([]ToolSpec(nil), e.specs...) }

// ModelInfo returns the executor's model description.
func (e *Executor) ModelInfo() ModelInfo { return e.info }

// Run starts a run and yields its events. The sequence ends after
// RunFinished, Interrupted or RunFailed; RunFailed is followed by the error
// as the last element. Breaking out of the loop cancels the model stream and
// running tools and returns once they have stopped (bounded by
// Config.CancelGrace). Once ctx is cancelled no tool call starts (here, in
// Resume, Approve or Deny): a call not started yet finishes with
// ErrorCode "cancelled" and an Error saying it was not run. Invalid input
// yields only an error.
func (e *Executor) Run(ctx context.Context, in Input) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if len(in.Message.Parts) == 0 {
			yield(nil, fmt.Errorf("agents: Input.Message has no parts: %w", domain.ErrInvalid))
			return
		}
		if in.Message.Role == "" {
			in.Message.Role = domain.RoleUser
		}
		if in.RunID == "" {
			in.RunID = e.cfg.NewID()
		}
		st := &state{
			system:   e.system(in.System),
			history:  in.History,
			messages: make([]Message, 1, 8),
		}
		st.messages[0] = in.Message
		r := e.newRun(ctx, &in, st, yield)
		defer r.close()
		r.run("")
	}
}

func (e *Executor) system(override string) string {
	if override != "" {
		return override
	}
	return e.cfg.System
}

// ValidateAnswers checks answers against a question checkpoint without
// resuming it. The service calls it before consuming the checkpoint, so an
// invalid answer leaves the checkpoint in place.
func (e *Executor) ValidateAnswers(cp *Checkpoint, answers Answers) error {
	if err := cp.check(domain.CheckpointQuestion); err != nil {
		return err
	}
	return ValidateAnswers(cp.Questions, answers)
}

// VerifyDecision checks a confirmation token against the checkpoint and the
// deciding user without consuming the token: it reports forged, expired and
// mismatched tokens (replays are detected when Approve or Deny consume it).
func (e *Executor) VerifyDecision(cp *Checkpoint, d Decision) error {
	if err := cp.check(domain.CheckpointConfirmation); err != nil {
		return err
	}
	_, err := e.verify(cp, d)
	return err
}

func (e *Executor) verify(cp *Checkpoint, d Decision) (TokenClaims, error) {
	want := TokenClaims{Tenant: d.TenantID, User: d.UserID, Tool: cp.Pending.Tool, Call: cp.Pending.CallID,
		Args: ArgumentsHash(canonicalArgs(cp.Pending.Arguments))}
	// The decider must be the user the run belongs to.
	if d.TenantID != cp.TenantID || d.UserID != cp.UserID {
		return TokenClaims{}, ErrTokenMismatch
	}
	if cp.Confirmation == nil || d.Token != cp.Confirmation.Token {
		// A token for another checkpoint: still verify the signature so
		// forgeries are reported as such.
		if _, err := e.signer.Verify(d.Token, want, e.cfg.Now()); err != nil {
			return TokenClaims{}, err
		}
		return TokenClaims{}, ErrTokenMismatch
	}
	return e.signer.Verify(d.Token, want, e.cfg.Now())
}

// Resume continues a run that stopped at ask_user_question with the user's
// answers. Invalid answers yield only an error matching ErrInvalidAnswer and
// leave cp untouched, so the caller can ask again.
func (e *Executor) Resume(ctx context.Context, cp *Checkpoint, answers Answers, opts ...ResumeOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if err := e.ValidateAnswers(cp, answers); err != nil {
			yield(nil, err)
			return
		}
		content := formatAnswers(cp.Questions, answers)
		e.resume(ctx, cp, yield, opts, func(r *run) resolution {
			return resolution{content: content}
		})
	}
}

// Approve runs the tool call a confirmation checkpoint waits for and
// continues the run. A forged, expired, mismatched or replayed token yields
// only an error matching ErrTokenRefused and nothing runs.
func (e *Executor) Approve(ctx context.Context, cp *Checkpoint, d Decision, opts ...ResumeOption) iter.Seq2[Event, error] {
	return e.decide(ctx, cp, d, true, opts)
}

// Deny refuses the tool call a confirmation checkpoint waits for; the model
// is told the user declined (with d.Reason) and the run continues. The token
// is checked and consumed as for Approve.
func (e *Executor) Deny(ctx context.Context, cp *Checkpoint, d Decision, opts ...ResumeOption) iter.Seq2[Event, error] {
	return e.decide(ctx, cp, d, false, opts)
}

func (e *Executor) decide(ctx context.Context, cp *Checkpoint, d Decision, approve bool, opts []ResumeOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if err := cp.check(domain.CheckpointConfirmation); err != nil {
			yield(nil, err)
			return
		}
		claims, err := e.verify(cp, d)
		if err != nil {
			yield(nil, err)
			return
		}
		if err := e.guard.Use(ctx, claims.Nonce, time.Unix(claims.Exp, 0)); err != nil {
			yield(nil, err)
			return
		}
		e.resume(ctx, cp, yield, opts, func(r *run) resolution {
			if !approve {
				msg := fmt.Sprintf("The user declined to run %s; it was not run.", cp.Pending.Tool)
				if d.Reason != "" {
					msg += " Reason given: " + d.Reason
				}
				return resolution{content: msg, isError: true, code: "denied", emit: true}
			}
			return resolution{approved: true}
		})
	}
}

// resolution fills the pending result slot of a resumed run.
type resolution struct {
	content  string
	isError  bool
	code     string
	emit     bool // emit ToolCallStarted/Finished for the resolution
	approved bool // run the pending tool now
}

func (e *Executor) resume(ctx context.Context, cp *Checkpoint, yield func(Event, error) bool, opts []ResumeOption, resolve func(*run) resolution) {
	var ro resumeOptions
	for _, o := range opts {
		o(&ro)
	}
	if ro.runID == "" {
		ro.runID = e.cfg.NewID()
	}
	in := &Input{
		RunID:     ro.runID,
		TenantID:  cp.TenantID,
		UserID:    cp.UserID,
		SessionID: cp.SessionID,
		MessageID: cp.MessageID,
		System:    cp.System,
		History:   cp.History,

		Attributes: ro.attributes,
	}
	// Copy what the run will change so cp stays reusable by the caller.
	msgs := make([]Message, len(cp.Messages), len(cp.Messages)+8)
	copy(msgs, cp.Messages)
	last := &msgs[len(msgs)-1]
	last.Parts = append([]domain.Part(nil), last.Parts...)
	st := &state{
		system:    cp.System,
		history:   cp.History,
		messages:  msgs,
		turn:      cp.Turn,
		toolCalls: cp.ToolCalls,
		limitHit:  cp.LimitHit,
		usage:     cp.Usage,
		cost:      cp.CostUSD,
	}
	r := e.newRun(ctx, in, st, yield)
	defer r.close()
	r.resumeFrom = cp.RunID
	res := resolve(r)
	r.pendingResolution = &pendingResolution{cp: cp, res: res}
	r.run(cp.RunID)
}

// ResumeOption tunes Resume, Approve and Deny.
type ResumeOption func(*resumeOptions)

type resumeOptions struct {
	runID      string
	attributes map[string]string
}

// WithAttributes sets the data-scoping attributes of the resumed run
// (Input.Attributes; checkpoints do not keep them).
func WithAttributes(attrs map[string]string) ResumeOption {
	return func(o *resumeOptions) { o.attributes = attrs }
}

// WithRunID sets the id of the resumed run (generated by default), for
// callers that record it before the run starts.
func WithRunID(id string) ResumeOption {
	return func(o *resumeOptions) { o.runID = id }
}
