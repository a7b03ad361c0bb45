package bichat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// Names of the server-sent events WriteSSE writes. Each event's data is
// one JSON object (the Event* payload types below); its id is the run
// seq, so a client that reconnects with Last-Event-ID resumes after it.
const (
	SSEMessageStart         = "message_start"         // EventStart: the run started
	SSEText                 = "text"                  // EventText: a fragment of the answer
	SSEReasoning            = "reasoning"             // EventText: a fragment of visible reasoning
	SSEToolCall             = "tool_call"             // EventToolCall: a tool call starts
	SSEToolResult           = "tool_result"           // EventToolResult: a tool call's outcome
	SSETokenUpdate          = "token_update"          // EventTokenUpdate: usage after a model call
	SSEInterrupt            = "interrupt"             // EventInterrupt: questions for the user (terminal)
	SSEConfirmationRequired = "confirmation_required" // EventConfirmation: a write needs approval (terminal)
	SSEMessageComplete      = "message_complete"      // EventComplete: the answer is complete (terminal)
	SSEMessageError         = "message_error"         // EventError: the run failed (terminal)
	SSEProviderItem         = "provider_item"         // EventProviderItem: a citation, server tool, code, media or notice from the provider
	// SSEStreamError reports that watching failed (not the run): the
	// client should reconnect with Last-Event-ID. It has no id.
	SSEStreamError = "stream_error"
)

// Defaults of SSEOptions and HandlerOptions.
const (
	DefaultHeartbeat          = 15 * time.Second
	DefaultMaxToolResultBytes = 64 << 10
)

// SSEOptions configure WriteSSE. The zero value is ready to use.
type SSEOptions struct {
	// Heartbeat is the interval of the ": heartbeat" comment sent while
	// no event is due, so proxies keep the connection open (default 15 s).
	Heartbeat time.Duration
	// MaxToolResultBytes caps the JSON of a tool_result payload (default
	// 64 KiB): longer arrays are cut (the largest first) and the event
	// says "truncated": true; a payload that cannot be cut is sent as null.
	// Negative means no payload at all.
	MaxToolResultBytes int
	// ArtifactURL, when set, gives the download address of an artifact
	// (the "url" of EventArtifact); NewHandler points it at its own
	// download route.
	ArtifactURL func(a domain.Artifact) string
	// Logger reports stream errors; nil means slog.Default().
	Logger *slog.Logger
}

// EventHeader is in every SSE payload: the run's ids and the event's seq
// (also the SSE id) and time. Agent and ParentRunID are set on events of
// a sub-agent.
type EventHeader struct {
	Seq         int64     `json:"seq"`
	RunID       string    `json:"run_id"`
	SessionID   string    `json:"session_id,omitempty"`
	MessageID   string    `json:"message_id,omitempty"`
	Agent       string    `json:"agent,omitempty"`
	ParentRunID string    `json:"parent_run_id,omitempty"`
	Time        time.Time `json:"time"`
}

// EventStart is the data of message_start.
type EventStart struct {
	EventHeader
	Model string `json:"model"`
	// ResumedFrom is the run this one continues (after an answer or a
	// decision).
	ResumedFrom string `json:"resumed_from,omitempty"`
}

// EventText is the data of text and reasoning: append Text to what came
// before.
type EventText struct {
	EventHeader
	Text string `json:"text"`
}

// EventToolCall is the data of tool_call.
type EventToolCall struct {
	EventHeader
	CallID     string            `json:"call_id"`
	Name       string            `json:"name"`
	Arguments  json.RawMessage   `json:"arguments"`
	Permission agents.Permission `json:"permission"`
}

// EventToolResult is the data of tool_result. Payload is the rich result
// (rows, chart spec) for the UI, cut to SSEOptions.MaxToolResultBytes with
// Truncated set; Summary is what the model saw (SummaryTruncated when the
// executor cut it). Error and ErrorCode are set when the call failed.
type EventToolResult struct {
	EventHeader
	CallID           string            `json:"call_id"`
	Name             string            `json:"name"`
	Summary          string            `json:"summary"`
	SummaryTruncated bool              `json:"summary_truncated,omitempty"`
	Payload          json.RawMessage   `json:"payload"`
	Truncated        bool              `json:"truncated"`
	Artifacts        []EventArtifact   `json:"artifacts,omitempty"`
	Datasets         []string          `json:"datasets,omitempty"`
	Citations        []domain.Citation `json:"citations,omitempty"`
	Error            string            `json:"error,omitempty"`
	ErrorCode        string            `json:"error_code,omitempty"`
	DurationMS       int64             `json:"duration_ms"`
}

// EventArtifact describes a file a tool produced; URL downloads it.
type EventArtifact struct {
	ID        string              `json:"id"`
	Kind      domain.ArtifactKind `json:"kind"`
	Name      string              `json:"name"`
	MediaType string              `json:"media_type"`
	Size      int64               `json:"size"`
	URL       string              `json:"url,omitempty"`
}

// EventTokenUpdate is the data of token_update, after every model call.
type EventTokenUpdate struct {
	EventHeader
	Turn    int          `json:"turn"`
	Usage   domain.Usage `json:"usage"`
	Total   domain.Usage `json:"total"`
	CostUSD float64      `json:"cost_usd"`
}

// EventInterrupt is the data of interrupt: answer the questions with the
// answers route (Service.Resume).
type EventInterrupt struct {
	EventHeader
	Questions []agents.Question `json:"questions"`
}

// EventConfirmation is the data of confirmation_required: approve or deny
// with Confirmation.Token (Service.Approve, Service.Deny).
type EventConfirmation struct {
	EventHeader
	Confirmation *agents.ConfirmationRequest `json:"confirmation"`
}

// EventComplete is the data of message_complete: Text is the whole
// answer.
type EventComplete struct {
	EventHeader
	Text      string              `json:"text"`
	Reason    agents.FinishReason `json:"reason"`
	Note      string              `json:"note,omitempty"`
	Usage     domain.Usage        `json:"usage"`
	Turns     int                 `json:"turns"`
	ToolCalls int                 `json:"tool_calls"`
}

// EventError is the data of message_error (the run failed: Code is
// "cancelled", "timeout", "model_error", "invalid_answer", "internal",
// ...) and of stream_error (watching failed: Code "stream_error").
type EventError struct {
	EventHeader
	Code    string `json:"code"`
	Message string `json:"message"`
}

// EventProviderItem is the data of provider_item: something the provider
// sent besides text and client tool calls (see agents.ProviderItemReported).
// Truncated reports that Item.Data and Item.Raw were left out because
// together they exceeded SSEOptions.MaxToolResultBytes.
type EventProviderItem struct {
	EventHeader
	Item      agents.ProviderItem `json:"item"`
	Truncated bool                `json:"truncated,omitempty"`
}

// SSEEvent converts an agents event into the SSE event name and data
// WriteSSE sends. ok is false for events that are not sent: the start,
// end and interrupt of a sub-agent's run (the parent's tool_call and
// tool_result bracket them). terminal reports the event that ends the
// stream: the top-level run's RunFinished, RunFailed or Interrupted.
func SSEEvent(ev agents.Event, opts SSEOptions) (name string, data any, terminal, ok bool) {
	h := ev.Header()
	hdr := EventHeader{Seq: h.Seq, RunID: h.RunID, SessionID: h.SessionID, MessageID: h.MessageID,
		Agent: h.Agent, ParentRunID: h.ParentRunID, Time: h.Time}
	root := h.ParentRunID == ""
	switch e := ev.(type) {
	case *agents.RunStarted:
		return SSEMessageStart, EventStart{EventHeader: hdr, Model: e.Model, ResumedFrom: e.ResumedFrom}, false, root
	case *agents.TextDelta:
		return SSEText, EventText{EventHeader: hdr, Text: e.Text}, false, true
	case *agents.ReasoningDelta:
		return SSEReasoning, EventText{EventHeader: hdr, Text: e.Text}, false, true
	case *agents.ToolCallStarted:
		args := e.Arguments
		if len(args) == 0 || !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		return SSEToolCall, EventToolCall{EventHeader: hdr, CallID: e.CallID, Name: e.Name, Arguments: args,
			Permission: e.Permission}, false, true
	case *agents.ToolCallFinished:
		payload, cut := cutPayload(e.Payload, opts.maxToolResult())
		r := EventToolResult{EventHeader: hdr, CallID: e.CallID, Name: e.Name, Summary: e.Summary,
			SummaryTruncated: e.Truncated, Payload: payload, Truncated: cut, Datasets: e.Datasets,
			Citations: e.Citations, Error: e.Error, ErrorCode: e.ErrorCode, DurationMS: e.Duration.Milliseconds()}
		for _, a := range e.Artifacts {
			ea := EventArtifact{ID: a.ID, Kind: a.Kind, Name: a.Name, MediaType: a.MediaType, Size: a.Size}
			if opts.ArtifactURL != nil && a.ID != "" {
				ea.URL = opts.ArtifactURL(a)
			}
			r.Artifacts = append(r.Artifacts, ea)
		}
		return SSEToolResult, r, false, true
	case *agents.ProviderItemReported:
		item, cut := e.Item, false
		if limit := opts.maxToolResult(); limit > 0 && len(item.Data)+len(item.Raw) > limit {
			item.Data, item.Raw, cut = nil, nil, true
		}
		return SSEProviderItem, EventProviderItem{EventHeader: hdr, Item: item, Truncated: cut}, false, true
	case *agents.UsageReported:
		return SSETokenUpdate, EventTokenUpdate{EventHeader: hdr, Turn: e.Turn, Usage: e.Usage, Total: e.Total,
			CostUSD: e.CostUSD}, false, true
	case *agents.Interrupted:
		if e.Kind == domain.CheckpointConfirmation || e.Confirmation != nil {
			return SSEConfirmationRequired, EventConfirmation{EventHeader: hdr, Confirmation: e.Confirmation}, root, root
		}
		qs := e.Questions
		if qs == nil {
			qs = []agents.Question{}
		}
		return SSEInterrupt, EventInterrupt{EventHeader: hdr, Questions: qs}, root, root
	case *agents.RunFinished:
		return SSEMessageComplete, EventComplete{EventHeader: hdr, Text: e.Text, Reason: e.Reason, Note: e.Note,
			Usage: e.Usage, Turns: e.Turns, ToolCalls: e.ToolCalls}, root, root
	case *agents.RunFailed:
		return SSEMessageError, EventError{EventHeader: hdr, Code: e.Code, Message: e.Message}, root, root
	}
	return "", nil, false, false
}

func (o SSEOptions) maxToolResult() int {
	if o.MaxToolResultBytes == 0 {
		return DefaultMaxToolResultBytes
	}
	return o.MaxToolResultBytes
}

func (o SSEOptions) heartbeat() time.Duration {
	if o.Heartbeat <= 0 {
		return DefaultHeartbeat
	}
	return o.Heartbeat
}

// sseFirstWait is how long WriteSSE waits for the first item before it
// commits to a 200 event stream: an error that comes first (unknown
// message, no permission) is still answered with its JSON status.
const sseFirstWait = 200 * time.Millisecond

type sseItem struct {
	ev  agents.Event
	err error
}

// WriteSSE streams events as server-sent events (text/event-stream), for
// hosts that mount their own routes, e.g.:
//
//	http.HandleFunc("GET /runs/{id}", func(w http.ResponseWriter, r *http.Request) {
//		p := principalOf(r)
//		bichat.WriteSSE(w, r, svc.Watch(r.Context(), p, r.PathValue("id"), 0), bichat.SSEOptions{})
//	})
//
// Each event is written as "id: <seq>", "event: <name>" and "data:
// <json>" (see SSEEvent for the names and the Event* types for the data)
// and flushed at once. A ": heartbeat" comment goes out every
// opts.Heartbeat while no event is due. The stream ends after the
// terminal event (message_complete, message_error, interrupt or
// confirmation_required of the top-level run) or when the request's
// context ends. WriteSSE reads events one at a time, never past the
// terminal event, and stops ranging over them when it returns: the
// iterator's next yield returns false. An iterator that blocks should end
// with r.Context(), as Service.Watch does.
//
// An error that comes before any event (within a short wait) is answered
// with its JSON error response (WriteError) and returned; a sequence
// that ends with no event at all is answered 204 No Content, which tells
// an EventSource not to reconnect. An error after the stream started is
// sent as a stream_error event (the client reconnects with Last-Event-ID)
// and returned. WriteSSE returns nil when the stream ended normally and
// the context's error when the client went away.
func WriteSSE(w http.ResponseWriter, r *http.Request, events iter.Seq2[agents.Event, error], opts SSEOptions) error {
	ctx := r.Context()
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// The producer runs the iterator in lockstep with the writer: it
	// yields the next item only when the writer asks (cont), so nothing is
	// read past the terminal event, and it stops at the next yield once
	// done is closed.
	items := make(chan sseItem)
	cont := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(items)
		for ev, err := range events {
			select {
			case items <- sseItem{ev, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
			select {
			case <-cont:
			case <-done:
				return
			}
		}
	}()
	defer close(done)
	more := func() {
		select {
		case cont <- struct{}{}:
		case <-done:
		}
	}

	first := time.NewTimer(sseFirstWait)
	defer first.Stop()
	var pending *sseItem
	select {
	case it, ok := <-items:
		if !ok {
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		if it.err != nil {
			WriteError(w, r, logger, it.err)
			return it.err
		}
		pending = &it
	case <-first.C:
	case <-ctx.Done():
		return ctx.Err()
	}

	rc := http.NewResponseController(w)
	hb := opts.heartbeat()
	writeTimeout := max(2*hb, 30*time.Second)
	_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	var buf bytes.Buffer
	flush := func() error {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := w.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("bichat: write event stream: %w", err)
		}
		buf.Reset()
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return fmt.Errorf("bichat: flush event stream: %w", err)
		}
		return nil
	}
	if pending == nil {
		// Nothing yet: open the stream so the client and proxies see it.
		buf.WriteString(": stream open\n\n")
		if err := flush(); err != nil {
			return err
		}
	}
	ticker := time.NewTicker(hb)
	defer ticker.Stop()
	for {
		var it sseItem
		if pending != nil {
			it, pending = *pending, nil
		} else {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-ticker.C:
				buf.WriteString(": heartbeat\n\n")
				if err := flush(); err != nil {
					return err
				}
				continue
			case x, ok := <-items:
				if !ok {
					return nil
				}
				it = x
			}
		}
		if it.err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			logger.Warn("bichat: event stream failed", "path", r.URL.Path, "error", it.err)
			_, body := ErrorResponse(it.err)
			appendSSE(&buf, "", SSEStreamError, EventError{Code: "stream_error", Message: body.Error.Message})
			_ = flush()
			return it.err
		}
		name, data, terminal, ok := SSEEvent(it.ev, opts)
		if !ok {
			more()
			continue
		}
		if err := appendSSE(&buf, strconv.FormatInt(it.ev.Header().Seq, 10), name, data); err != nil {
			logger.Error("bichat: encode event", "type", it.ev.Type(), "error", err)
			more()
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		ticker.Reset(hb)
		if terminal {
			return nil
		}
		more()
	}
}

// appendSSE appends one event. JSON never contains a raw newline, so the
// data is one line.
func appendSSE(buf *bytes.Buffer, id, name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if id != "" {
		buf.WriteString("id: ")
		buf.WriteString(id)
		buf.WriteByte('\n')
	}
	buf.WriteString("event: ")
	buf.WriteString(name)
	buf.WriteString("\ndata: ")
	buf.Write(b)
	buf.WriteString("\n\n")
	return nil
}

// cutPayload encodes a tool payload within max bytes. When it is longer,
// the largest array inside it is halved until it fits (rows are dropped
// from the end, keeping the shape the UI renders) and cut is true; a
// payload that still does not fit becomes null.
func cutPayload(v any, max int) (json.RawMessage, bool) {
	if v == nil {
		return json.RawMessage("null"), false
	}
	if max < 0 {
		return json.RawMessage("null"), true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null"), true
	}
	if len(b) <= max {
		return b, false
	}
	var g any
	if err := json.Unmarshal(b, &g); err != nil {
		return json.RawMessage("null"), true
	}
	for range 64 {
		if !halve(&g) {
			break
		}
		b, err = json.Marshal(g)
		if err != nil {
			break
		}
		if len(b) <= max {
			return b, true
		}
	}
	return json.RawMessage("null"), true
}

// halve finds the longest non-empty array in the generic JSON value *v
// (the first in document order, keys sorted, among equals) and halves
// it; false when there is none.
func halve(v *any) bool {
	type slot struct {
		n   int
		set func([]any)
		a   []any
	}
	var best slot
	var walk func(x any, set func([]any))
	walk = func(x any, set func([]any)) {
		switch t := x.(type) {
		case []any:
			if len(t) > best.n {
				best = slot{n: len(t), set: set, a: t}
			}
			for i, e := range t {
				walk(e, func(n []any) { t[i] = n })
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(t[k], func(n []any) { t[k] = n })
			}
		}
	}
	walk(*v, func(n []any) { *v = n })
	if best.n == 0 {
		return false
	}
	best.set(best.a[:best.n/2])
	return true
}
