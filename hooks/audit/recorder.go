package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/internal/canonjson"
)

// Options configure a Recorder.
type Options struct {
	// Redact, when set, rewrites every string value inside an entry's
	// Data (questions, answers, SQL, the string values of tool arguments,
	// reasons, error messages, ...; object keys are kept) before the
	// entry is hashed and stored, e.g. to mask secrets or personal data.
	// It must be safe for concurrent use. Nil stores text as given.
	Redact func(string) string
	// Now returns the time of entries that come without one; nil means
	// time.Now.
	Now func() time.Time
}

// Recorder seals entries into per-tenant hash chains and appends them to
// a Sink. It is a hooks.Handler: subscribe it to a bus to record what
// bichat does (see Handle). It is safe for concurrent use; the order of
// one tenant's entries is the order in which their Appends ran.
type Recorder struct {
	sink   Sink
	redact func(string) string
	now    func() time.Time

	mu    sync.Mutex
	locks map[string]*tenantLock
}

var _ hooks.Handler = (*Recorder)(nil)

// tenantLock queues one tenant's appends in this process, so they wait
// here rather than each holding a database connection while waiting for
// the tenant's row lock.
type tenantLock struct {
	ch   chan struct{}
	refs int
}

// New returns a Recorder that appends to sink.
func New(sink Sink, opts Options) (*Recorder, error) {
	if sink == nil {
		return nil, errors.New("audit: new recorder: sink is nil")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Recorder{sink: sink, redact: opts.Redact, now: opts.Now, locks: map[string]*tenantLock{}}, nil
}

// Record appends e to tenantID's chain and returns the stored entry. The
// Recorder sets TenantID, Seq, Prev and Hash (values given there are
// ignored) from the sink's head, inside Sink.Append; it sets Time to
// Options.Now when e.Time is zero, and stores it in UTC truncated to
// microseconds; it passes every string of Data through Options.Redact and
// stores Data in canonical form (nil Data is {}). e.Type must be set;
// Data must be a JSON object; the ids must be valid UTF-8 without NUL
// characters.
func (r *Recorder) Record(ctx context.Context, tenantID string, e Entry) (Entry, error) {
	if err := r.prepare(tenantID, &e); err != nil {
		return Entry{}, fmt.Errorf("audit: record: %w", err)
	}
	unlock, err := r.lock(ctx, tenantID)
	if err != nil {
		return Entry{}, fmt.Errorf("audit: record: %w", err)
	}
	defer unlock()
	stored, err := r.sink.Append(ctx, tenantID, func(head Anchor) (Entry, error) {
		s := e
		s.Seq = head.Seq + 1
		s.Prev = head.Hash
		h, err := s.ComputeHash()
		if err != nil {
			return Entry{}, err
		}
		s.Hash = h
		return s, nil
	})
	if err != nil {
		return Entry{}, fmt.Errorf("audit: record for tenant %q: %w", tenantID, err)
	}
	return stored, nil
}

// prepare validates e and fills in what Record sets before sealing.
func (r *Recorder) prepare(tenantID string, e *Entry) error {
	e.TenantID = tenantID
	if e.Type == "" {
		return errors.New("entry type is empty")
	}
	for _, f := range []struct{ name, v string }{{"tenant id", tenantID}, {"type", e.Type},
		{"user id", e.UserID}, {"session id", e.SessionID}, {"message id", e.MessageID}, {"run id", e.RunID}} {
		if err := checkText(f.name, f.v); err != nil {
			return err
		}
	}
	if e.Time.IsZero() {
		e.Time = r.now()
	}
	e.Time = e.Time.UTC().Truncate(time.Microsecond)
	if y := e.Time.Year(); y < 1 || y > 9999 {
		return fmt.Errorf("time %v is outside years 1 to 9999", e.Time)
	}
	data, err := r.data(e.Data)
	if err != nil {
		return err
	}
	e.Data = data
	e.Seq, e.Prev, e.Hash = 0, "", ""
	return nil
}

// data returns raw redacted and canonical.
func (r *Recorder) data(raw json.RawMessage) (json.RawMessage, error) {
	if r.redact != nil && len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("data is not valid JSON: %w", err)
		}
		if dec.More() {
			return nil, errors.New("data is not valid JSON: data after the value")
		}
		b, err := json.Marshal(redactValue(v, r.redact))
		if err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
		raw = b
	}
	return canonicalData(raw)
}

// redactValue applies redact to every string inside v (a value decoded
// with UseNumber), keeping object keys.
func redactValue(v any, redact func(string) string) any {
	switch x := v.(type) {
	case string:
		return redact(x)
	case map[string]any:
		for k, val := range x {
			x[k] = redactValue(val, redact)
		}
		return x
	case []any:
		for i, val := range x {
			x[i] = redactValue(val, redact)
		}
		return x
	default:
		return v
	}
}

// lock takes tenantID's in-process lock, waiting at most until ctx ends.
func (r *Recorder) lock(ctx context.Context, tenantID string) (unlock func(), err error) {
	r.mu.Lock()
	l := r.locks[tenantID]
	if l == nil {
		l = &tenantLock{ch: make(chan struct{}, 1)}
		r.locks[tenantID] = l
	}
	l.refs++
	r.mu.Unlock()
	release := func() {
		r.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(r.locks, tenantID)
		}
		r.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// Handle records the events that matter for an audit (the Type constants
// say which, and what each entry's Data holds) in the chain of the
// event's tenant (Meta.TenantID; events without one go to the chain of
// tenant ""), with the event's time and ids; it ignores other events and
// returns nil for them. Subscribe the Recorder to a bus for all
// events, or for these kinds: message.save, llm.response, tool.start,
// sqldb.query, policy.decision, interrupt, artifact.save,
// budget.exceeded, quota.exceeded, agent.error. A Recorder appending to a
// slow sink can be wrapped in hooks.Async (SubscribeAsync), at the price
// of entries lost when its queue overflows (see hooks.Bus.Dropped).
func (r *Recorder) Handle(ctx context.Context, ev hooks.Event) error {
	typ, data, ok := eventData(ev)
	if !ok {
		return nil
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("audit: handle %s: %w", ev.Kind(), err)
	}
	m := ev.Header()
	e := Entry{Time: m.Time, Type: typ, UserID: m.UserID, SessionID: m.SessionID, MessageID: m.MessageID, RunID: m.RunID, Data: b}
	if _, err := r.Record(ctx, m.TenantID, e); err != nil {
		return fmt.Errorf("audit: handle %s: %w", ev.Kind(), err)
	}
	return nil
}

// Kinds lists the event kinds Handle records, for Bus.Subscribe.
func Kinds() []hooks.Kind {
	return []hooks.Kind{hooks.KindMessageSave, hooks.KindLLMResponse, hooks.KindToolStart, hooks.KindSQLQuery,
		hooks.KindDecision, hooks.KindInterrupt, hooks.KindArtifactSave, hooks.KindBudgetExceeded,
		hooks.KindQuotaExceeded, hooks.KindAgentError}
}

type usageData struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CachedTokens     int `json:"cached_tokens"`
	ReasoningTokens  int `json:"reasoning_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func usage(u domain.Usage) usageData {
	return usageData{u.PromptTokens, u.CompletionTokens, u.CachedTokens, u.ReasoningTokens, u.TotalTokens}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// arguments returns tool arguments as a JSON value: as given when they are
// valid JSON, as a string otherwise (so they are still recorded).
func arguments(raw json.RawMessage) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if canon, err := canonjson.Canonicalize(raw); err == nil {
		return json.RawMessage(canon)
	}
	return string(raw)
}

// eventData maps an event to an entry type and its data; ok is false for
// events the audit does not record.
func eventData(ev hooks.Event) (typ string, data any, ok bool) {
	switch e := ev.(type) {
	case *hooks.MessageSave:
		switch {
		case e.Role == domain.RoleUser:
			return TypeQuestion, struct {
				Text string `json:"text"`
			}{e.Text}, true
		case e.Role == domain.RoleAssistant && e.Status == domain.StatusComplete:
			return TypeAnswer, struct {
				Text    string    `json:"text"`
				CostUSD float64   `json:"cost_usd"`
				Usage   usageData `json:"usage"`
			}{e.Text, e.CostUSD, usage(e.Usage)}, true
		case e.Role == domain.RoleAssistant && e.Status == domain.StatusFailed:
			return TypeFailure, struct {
				ErrorCode string  `json:"error_code"`
				CostUSD   float64 `json:"cost_usd"`
			}{e.ErrorCode, e.CostUSD}, true
		}
	case *hooks.LLMResponse:
		return TypeModelCall, struct {
			Provider   string    `json:"provider"`
			Model      string    `json:"model"`
			Turn       int       `json:"turn"`
			Attempt    int       `json:"attempt"`
			Usage      usageData `json:"usage"`
			StopReason string    `json:"stop_reason"`
			ToolCalls  int       `json:"tool_calls"`
			CostUSD    float64   `json:"cost_usd"`
			Error      string    `json:"error,omitempty"`
		}{e.Provider, e.Model, e.Turn, e.Attempt, usage(e.Usage), e.StopReason, e.ToolCalls, e.CostUSD, errText(e.Err)}, true
	case *hooks.ToolStart:
		return TypeToolCall, struct {
			CallID    string `json:"call_id"`
			Tool      string `json:"tool"`
			Arguments any    `json:"arguments"`
		}{e.CallID, e.Tool, arguments(e.Arguments)}, true
	case *hooks.SQLQuery:
		if e.Error == "rejected" {
			return TypeDecision, struct {
				Policy  string `json:"policy"`
				Outcome string `json:"outcome"`
				Tool    string `json:"tool"`
				CallID  string `json:"call_id"`
				Reason  string `json:"reason"`
				SQL     string `json:"sql"`
			}{"sql_read_only", hooks.DecisionRefused, e.Tool, e.CallID, e.Reason, e.SQL}, true
		}
		return TypeSQL, struct {
			CallID    string `json:"call_id"`
			Tool      string `json:"tool"`
			Dialect   string `json:"dialect"`
			SQL       string `json:"sql"`
			Rows      int    `json:"rows"`
			Truncated bool   `json:"truncated"`
			Error     string `json:"error,omitempty"`
			Reason    string `json:"reason,omitempty"`
		}{e.CallID, e.Tool, e.Dialect, e.SQL, e.Rows, e.Truncated, e.Error, e.Reason}, true
	case *hooks.Decision:
		return TypeDecision, struct {
			Policy  string `json:"policy"`
			Outcome string `json:"outcome"`
			Tool    string `json:"tool"`
			CallID  string `json:"call_id"`
			Reason  string `json:"reason"`
		}{e.Policy, e.Outcome, e.Tool, e.CallID, e.Reason}, true
	case *hooks.Interrupt:
		return TypeInterrupt, struct {
			Reason string `json:"reason"`
			Tool   string `json:"tool"`
			CallID string `json:"call_id"`
		}{e.Reason, e.Tool, e.CallID}, true
	case *hooks.ArtifactSave:
		return TypeArtifact, struct {
			ArtifactID string `json:"artifact_id"`
			Name       string `json:"name"`
			MediaType  string `json:"media_type"`
			SHA256     string `json:"sha256"`
			Size       int64  `json:"size"`
			Tool       string `json:"tool"`
			CallID     string `json:"call_id"`
		}{e.ArtifactID, e.Name, e.MediaType, e.SHA256, e.Size, e.Tool, e.CallID}, true
	case *hooks.BudgetExceeded:
		return TypeBudgetExceeded, struct {
			Scope    string  `json:"scope"`
			LimitUSD float64 `json:"limit_usd"`
			SpentUSD float64 `json:"spent_usd"`
		}{e.Scope, e.LimitUSD, e.SpentUSD}, true
	case *hooks.QuotaExceeded:
		return TypeQuotaExceeded, struct {
			Scope        string `json:"scope"`
			Limit        string `json:"limit"`
			RetryAfterMS int64  `json:"retry_after_ms"`
		}{e.Scope, e.Limit, e.RetryAfter.Milliseconds()}, true
	case *hooks.AgentError:
		return TypeRunError, struct {
			Agent string `json:"agent"`
			Code  string `json:"code"`
			Error string `json:"error"`
		}{e.Agent, e.Code, errText(e.Err)}, true
	}
	return "", nil, false
}
