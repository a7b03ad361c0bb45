package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/jsonenc"
)

// Event is one step of a run, yielded by Executor.Run and Executor.Resume.
// The set is sealed: *RunStarted, *TextDelta, *ReasoningDelta,
// *ProviderItemReported, *ToolCallStarted, *ToolCallFinished,
// *Interrupted, *UsageReported, *RunFinished and *RunFailed. Switch on the concrete type:
//
//	switch e := ev.(type) {
//	case *agents.TextDelta:
//		fmt.Print(e.Text)
//	case *agents.ToolCallFinished:
//		render(e.Payload)
//	}
type Event interface {
	// Header returns the fields every event has.
	Header() *EventHeader
	// Type returns the event's stable wire name, e.g. "text.delta".
	Type() EventType
	isEvent()
}

// EventType is the stable name of an event type, used in the run log (the
// "type" member of MarshalEvent's JSON) and fit to name the event in a
// host's own transport, such as a server-sent event.
type EventType string

// Event types.
const (
	EventRunStarted       EventType = "run.started"
	EventTextDelta        EventType = "text.delta"
	EventReasoningDelta   EventType = "reasoning.delta"
	EventProviderItem     EventType = "provider.item"
	EventToolCallStarted  EventType = "tool.started"
	EventToolCallFinished EventType = "tool.finished"
	EventInterrupted      EventType = "interrupted"
	EventUsage            EventType = "usage"
	EventRunFinished      EventType = "run.finished"
	EventRunFailed        EventType = "run.failed"
)

// EventHeader is embedded in every event.
type EventHeader struct {
	// RunID identifies the run that produced the event. Events of a
	// sub-agent carry the sub-agent's run id and ParentRunID.
	RunID       string `json:"run_id"`
	ParentRunID string `json:"parent_run_id,omitempty"`
	// Agent names the sub-agent that produced the event; empty for the
	// top-level agent.
	Agent string `json:"agent,omitempty"`
	// SessionID and MessageID are the run's Input ids, when set: the
	// session and the assistant message the run produces.
	SessionID string `json:"session_id,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	// Seq increases by one with every event of a stream, sub-agent events
	// included, starting at 1.
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
}

// Header returns h.
func (h *EventHeader) Header() *EventHeader { return h }

func (*EventHeader) isEvent() {}

// RunStarted opens every run.
type RunStarted struct {
	EventHeader
	Model string `json:"model"`
	// ResumedFrom is the id of the interrupted run this run continues.
	ResumedFrom string `json:"resumed_from,omitempty"`
}

// TextDelta is a fragment of the assistant's answer.
type TextDelta struct {
	EventHeader
	Text string `json:"text"`
}

// ReasoningDelta is a fragment of the model's visible reasoning.
type ReasoningDelta struct {
	EventHeader
	Text string `json:"text"`
}

// ProviderItemReported carries something the provider sent besides text,
// reasoning and client tool calls, as it arrives: a citation, a server-side
// tool call or its result (web search, code execution run by the vendor),
// code and its output, inline media, grounding metadata, a safety or other
// notice, or an item the adapter could not interpret (Kind ItemUnsupported,
// with the vendor's JSON in Item.Raw). Nothing a vendor sends vanishes
// silently: render what your UI knows and log the rest. These items are
// never sent back to the model.
type ProviderItemReported struct {
	EventHeader
	Item ProviderItem `json:"item"`
}

// ToolCallStarted is emitted when a tool call is about to run (or to be
// refused: a ToolCallFinished with Error always follows).
type ToolCallStarted struct {
	EventHeader
	CallID     string          `json:"call_id"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Permission Permission      `json:"permission"`
}

// ToolCallFinished carries a tool call's outcome. Payload is the rich
// result for the host; the model only saw Summary.
type ToolCallFinished struct {
	EventHeader
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	// Summary is exactly what the model received (after truncation).
	Summary   string            `json:"summary"`
	Truncated bool              `json:"truncated,omitempty"`
	Payload   any               `json:"payload,omitempty"`
	Artifacts []domain.Artifact `json:"artifacts,omitempty"`
	Datasets  []string          `json:"datasets,omitempty"`
	Citations []domain.Citation `json:"citations,omitempty"`
	// Error is set when the call failed; ErrorCode is one of
	// "invalid_arguments", "unknown_tool", "timeout", "panic", "cancelled",
	// "denied", "limit", "not_run" or "error". "cancelled" is also the code
	// of a call that never started because the run's context was
	// cancelled first (its Error says it was not run).
	Error     string        `json:"error,omitempty"`
	ErrorCode string        `json:"error_code,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
}

// Interrupted ends a run that waits for the user: answers to Questions, or
// a decision on Confirmation. Pass Checkpoint to Executor.Resume,
// Executor.Approve or Executor.Deny. bichat.Service stores the checkpoint
// itself and streams this event with Checkpoint nil; resume there by
// message id.
type Interrupted struct {
	EventHeader
	Kind         domain.CheckpointKind `json:"kind"`
	Questions    []Question            `json:"questions,omitempty"`
	Confirmation *ConfirmationRequest  `json:"confirmation,omitempty"`
	Checkpoint   *Checkpoint           `json:"checkpoint"`
}

// UsageReported follows every model call.
type UsageReported struct {
	EventHeader
	Turn  int          `json:"turn"`
	Usage domain.Usage `json:"usage"`
	// Total sums the run's model calls so far.
	Total   domain.Usage `json:"total"`
	CostUSD float64      `json:"cost_usd"`
	// TotalCostUSD sums the cost of the run's model calls so far (across
	// resumptions).
	TotalCostUSD float64 `json:"total_cost_usd,omitempty"`
}

// FinishReason says why a run finished.
type FinishReason string

// Finish reasons.
const (
	// FinishEndTurn: the model answered with text and no tool calls.
	FinishEndTurn FinishReason = "end_turn"
	// FinishFinalAnswer: the model called final_answer.
	FinishFinalAnswer FinishReason = "final_answer"
	// FinishMaxTurns: the run used all its model turns.
	FinishMaxTurns FinishReason = "max_turns"
	// FinishToolLimit: the run reached its tool-call cap.
	FinishToolLimit FinishReason = "tool_limit"
	// FinishMaxTokens: the answer was cut at the completion token limit.
	FinishMaxTokens FinishReason = "max_tokens"
	// FinishContentFilter: the provider withheld or cut the answer.
	FinishContentFilter FinishReason = "content_filter"
)

// RunFinished closes a run that produced an answer.
type RunFinished struct {
	EventHeader
	// Text is the final answer.
	Text   string       `json:"text"`
	Reason FinishReason `json:"reason"`
	// Note explains a limit that ended the run; empty otherwise.
	Note  string       `json:"note,omitempty"`
	Usage domain.Usage `json:"usage"`
	// CostUSD prices the run's model calls (across resumptions).
	CostUSD   float64 `json:"cost_usd,omitempty"`
	Turns     int     `json:"turns"`
	ToolCalls int     `json:"tool_calls"`
	// Messages is the run's transcript, starting with the user turn (also
	// on resumed runs, whose transcript includes the interrupted part),
	// then assistant messages and tool results, in order.
	Messages []Message `json:"messages,omitempty"`
}

// RunFailed closes a run that failed. The iterator yields the error itself
// right after this event.
type RunFailed struct {
	EventHeader
	// Code is "cancelled", "timeout", "model_error", "invalid_answer" or
	// "internal".
	Code    string `json:"code"`
	Message string `json:"message"`
	Err     error  `json:"-"`
	// Messages is the transcript up to the failure.
	Messages []Message `json:"messages,omitempty"`
}

// Type returns EventRunStarted.
func (*RunStarted) Type() EventType { return EventRunStarted }

// Type returns EventTextDelta.
func (*TextDelta) Type() EventType { return EventTextDelta }

// Type returns EventReasoningDelta.
func (*ReasoningDelta) Type() EventType { return EventReasoningDelta }

// Type returns EventProviderItem.
func (*ProviderItemReported) Type() EventType { return EventProviderItem }

// Type returns EventToolCallStarted.
func (*ToolCallStarted) Type() EventType { return EventToolCallStarted }

// Type returns EventToolCallFinished.
func (*ToolCallFinished) Type() EventType { return EventToolCallFinished }

// Type returns EventInterrupted.
func (*Interrupted) Type() EventType { return EventInterrupted }

// Type returns EventUsage.
func (*UsageReported) Type() EventType { return EventUsage }

// Type returns EventRunFinished.
func (*RunFinished) Type() EventType { return EventRunFinished }

// Type returns EventRunFailed.
func (*RunFailed) Type() EventType { return EventRunFailed }

// MarshalEvent encodes e as a JSON object with a "type" member (the
// EventType) followed by the event's fields. bichat.Service stores events
// in its run log in this form and Replay decodes them with UnmarshalEvent.
// It is also a ready-made payload for a host that streams events to a
// browser (e.g. as the data of a server-sent event named after the type),
// but the SDK has no SSE writer: the host writes its own transport.
// Decoding gives payloads back as generic JSON values.
//
// The bytes are exactly those of encoding/json (HTML-safe escaping, RFC
// 3339 times); the frequent small events (text and reasoning deltas, run
// start) are encoded without reflection.
func MarshalEvent(e Event) ([]byte, error) {
	return AppendEvent(nil, e)
}

// AppendEvent appends MarshalEvent's encoding of e to dst and returns the
// extended buffer. A writer that copies the bytes away (a run log, a
// socket) can reuse one buffer for every event: buf, err =
// AppendEvent(buf[:0], ev). On error dst is returned unchanged.
func AppendEvent(dst []byte, e Event) ([]byte, error) {
	if out, ok := appendEventFast(dst, e); ok {
		return out, nil
	}
	if e == nil {
		return dst, errors.New("agents: encode event: nil event")
	}
	body, err := json.Marshal(e)
	if err != nil {
		return dst, fmt.Errorf("agents: encode %s event: %w", e.Type(), err)
	}
	if len(body) < 2 || body[0] != '{' {
		return dst, fmt.Errorf("agents: encode %s event: not an object (nil event?)", e.Type())
	}
	dst = grow(dst, len(body)+len(e.Type())+10)
	dst = append(dst, `{"type":`...)
	dst = jsonenc.AppendString(dst, string(e.Type()))
	if len(body) > 2 {
		dst = append(dst, ',')
		dst = append(dst, body[1:]...)
	} else {
		dst = append(dst, '}')
	}
	return dst, nil
}

// appendEventFast encodes the hot event types by hand. It reports false,
// leaving the work to encoding/json, for other types, nil pointers and
// times encoding/json refuses.
func appendEventFast(dst []byte, e Event) ([]byte, bool) {
	var (
		h    *EventHeader
		text string
	)
	switch ev := e.(type) {
	case *TextDelta:
		if ev == nil {
			return dst, false
		}
		h, text = &ev.EventHeader, ev.Text
	case *ReasoningDelta:
		if ev == nil {
			return dst, false
		}
		h, text = &ev.EventHeader, ev.Text
	case *RunStarted:
		if ev == nil {
			return dst, false
		}
		h = &ev.EventHeader
	default:
		return dst, false
	}
	// Grow the buffer once, to the size when no string needs escaping (35
	// bytes is the longest RFC 3339 time).
	size := 50 + len(e.Type()) + 20 + 35 + len(h.RunID) + len(text)
	if h.Seq >= 0 && h.Seq < 1e6 {
		size -= 14 // at most 6 digits
	}
	for _, f := range [...]string{h.ParentRunID, h.Agent, h.SessionID, h.MessageID} {
		if f != "" {
			size += 19 + len(f)
		}
	}
	if rs, ok := e.(*RunStarted); ok {
		size += 20 + len(rs.Model) + len(rs.ResumedFrom)
	}
	n0 := len(dst)
	dst = grow(dst, size)
	dst = append(dst, `{"type":"`...)
	dst = append(dst, e.Type()...) // constant, nothing to escape
	dst = append(dst, `","run_id":`...)
	dst = jsonenc.AppendString(dst, h.RunID)
	if h.ParentRunID != "" {
		dst = append(dst, `,"parent_run_id":`...)
		dst = jsonenc.AppendString(dst, h.ParentRunID)
	}
	if h.Agent != "" {
		dst = append(dst, `,"agent":`...)
		dst = jsonenc.AppendString(dst, h.Agent)
	}
	if h.SessionID != "" {
		dst = append(dst, `,"session_id":`...)
		dst = jsonenc.AppendString(dst, h.SessionID)
	}
	if h.MessageID != "" {
		dst = append(dst, `,"message_id":`...)
		dst = jsonenc.AppendString(dst, h.MessageID)
	}
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, h.Seq, 10)
	dst = append(dst, `,"time":"`...)
	// AppendText is the RFC 3339 form Time.MarshalJSON quotes, with the
	// same range checks.
	withTime, err := h.Time.AppendText(dst)
	if err != nil {
		return dst[:n0], false
	}
	dst = append(withTime, '"')
	switch ev := e.(type) {
	case *TextDelta, *ReasoningDelta:
		dst = append(dst, `,"text":`...)
		dst = jsonenc.AppendString(dst, text)
	case *RunStarted:
		dst = append(dst, `,"model":`...)
		dst = jsonenc.AppendString(dst, ev.Model)
		if ev.ResumedFrom != "" {
			dst = append(dst, `,"resumed_from":`...)
			dst = jsonenc.AppendString(dst, ev.ResumedFrom)
		}
	}
	return append(dst, '}'), true
}

// grow returns b with room for n more bytes (one allocation when it has
// not; slices.Grow makes two under the race detector).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}

// UnmarshalEvent decodes what MarshalEvent produced. Payloads decode as
// generic JSON values (maps, slices, numbers as float64).
func UnmarshalEvent(data []byte) (Event, error) {
	var head struct {
		Type EventType `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("agents: decode event: %w", err)
	}
	var e Event
	switch head.Type {
	case EventRunStarted:
		e = new(RunStarted)
	case EventTextDelta:
		e = new(TextDelta)
	case EventReasoningDelta:
		e = new(ReasoningDelta)
	case EventProviderItem:
		e = new(ProviderItemReported)
	case EventToolCallStarted:
		e = new(ToolCallStarted)
	case EventToolCallFinished:
		e = new(ToolCallFinished)
	case EventInterrupted:
		e = new(Interrupted)
	case EventUsage:
		e = new(UsageReported)
	case EventRunFinished:
		e = new(RunFinished)
	case EventRunFailed:
		e = new(RunFailed)
	default:
		return nil, fmt.Errorf("agents: decode event: unknown type %q", head.Type)
	}
	if err := json.Unmarshal(data, e); err != nil {
		return nil, fmt.Errorf("agents: decode %s event: %w", head.Type, err)
	}
	return e, nil
}
