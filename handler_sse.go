package bichat

import (
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
	"github.com/bichat-go/bichat/internal/jsonenc"
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

// sseReadAhead is how many events WriteSSE reads ahead of the one it
// writes; sseFlushBytes is how much it buffers before writing without a
// pause in the events.
const (
	sseReadAhead  = 32
	sseFlushBytes = 32 << 10
)

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
// <json>" (see SSEEvent for the names and the Event* types for the data).
// Events are read ahead of the writer (up to 32) and written in
// batches: the stream is flushed whenever no further event is ready, so
// an event never waits for a later one, and a burst of events costs one
// write. A ": heartbeat" comment goes out every opts.Heartbeat while no
// event is due. The stream ends after the terminal event
// (message_complete, message_error, interrupt or confirmation_required
// of the top-level run) or when the request's context ends. WriteSSE
// never reads past the terminal event, and stops ranging over the events
// when it returns: the iterator's next yield returns false. An iterator
// that blocks should end with r.Context(), as Service.Watch does.
//
// An error that comes before any event (within a short wait) is answered
// with its JSON error response (WriteError) and returned; a sequence
// that ends with no event at all is answered 204 No Content, which tells
// an EventSource not to reconnect. An error after the stream started is
// sent as a stream_error event (the client reconnects with Last-Event-ID)
// and returned. WriteSSE returns nil when the stream ended normally and
// the context's error when the client went away.
func WriteSSE(w http.ResponseWriter, r *http.Request, events iter.Seq2[agents.Event, error], opts SSEOptions) error {
	return writeSSE(w, r, events, opts, sseFirstWait)
}

// writeSSE is WriteSSE waiting up to firstWait for the first item before
// it commits to a 200 event stream.
func writeSSE(w http.ResponseWriter, r *http.Request, events iter.Seq2[agents.Event, error], opts SSEOptions,
	firstWait time.Duration) error {
	ctx := r.Context()
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// The producer reads the iterator into a small buffer ahead of the
	// writer; it stops after the terminal event or an error, so nothing is
	// read past them, and at its next yield once done is closed.
	items := make(chan sseItem, sseReadAhead)
	done := make(chan struct{})
	go func() {
		defer close(items)
		for ev, err := range events {
			if err == nil && ev == nil {
				continue
			}
			select {
			case <-done:
				return
			default:
			}
			select {
			case items <- sseItem{ev, err}:
			case <-done:
				return
			}
			if err != nil || sseTerminal(ev) {
				return
			}
		}
	}()
	defer close(done)

	first := time.NewTimer(firstWait)
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
	buf := make([]byte, 0, 1024)
	flush := func() error {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("bichat: write event stream: %w", err)
		}
		buf = buf[:0]
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return fmt.Errorf("bichat: flush event stream: %w", err)
		}
		return nil
	}
	if pending == nil {
		// Nothing yet: open the stream so the client and proxies see it.
		buf = append(buf, ": stream open\n\n"...)
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
				buf = append(buf, ": heartbeat\n\n"...)
				if err := flush(); err != nil {
					return err
				}
				continue
			case x, ok := <-items:
				if !ok {
					// The sequence ended without a terminal event.
					if len(buf) > 0 {
						return flush()
					}
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
			buf, _ = appendSSE(buf, 0, false, SSEStreamError, EventError{Code: "stream_error", Message: body.Error.Message})
			_ = flush()
			return it.err
		}
		var (
			terminal bool
			err      error
		)
		buf, terminal, _, err = appendSSEEvent(buf, it.ev, opts)
		if err != nil {
			logger.Error("bichat: encode event", "type", it.ev.Type(), "error", err)
		}
		// Flush when the next event is not ready yet (or the batch is
		// large): a burst goes out in one write, and no event waits for a
		// later one.
		if len(buf) > 0 && (terminal || len(items) == 0 || len(buf) >= sseFlushBytes) {
			if err := flush(); err != nil {
				return err
			}
			ticker.Reset(hb)
		}
		if terminal {
			return nil
		}
	}
}

// sseTerminal reports whether ev ends the stream (see SSEEvent).
func sseTerminal(ev agents.Event) bool {
	if ev.Header().ParentRunID != "" {
		return false
	}
	switch ev.(type) {
	case *agents.RunFinished, *agents.RunFailed, *agents.Interrupted:
		return true
	}
	return false
}

// appendSSEEvent appends the SSE frame of ev to buf. ok is false when ev is
// not sent (or could not be encoded: err); terminal reports the event
// that ends the stream. Text and reasoning fragments, most of a stream,
// are encoded without reflection.
func appendSSEEvent(buf []byte, ev agents.Event, opts SSEOptions) (_ []byte, terminal, ok bool, err error) {
	switch e := ev.(type) {
	case *agents.TextDelta:
		if b, fast := appendTextEvent(buf, SSEText, &e.EventHeader, e.Text); fast {
			return b, false, true, nil
		}
	case *agents.ReasoningDelta:
		if b, fast := appendTextEvent(buf, SSEReasoning, &e.EventHeader, e.Text); fast {
			return b, false, true, nil
		}
	}
	name, data, terminal, ok := SSEEvent(ev, opts)
	if !ok {
		return buf, terminal, false, nil
	}
	b, err := appendSSE(buf, ev.Header().Seq, true, name, data)
	if err != nil {
		return buf, terminal, false, err
	}
	return b, terminal, true, nil
}

// appendSSE appends one event with its JSON data (encoding/json), with
// seq as its id when withID is set. JSON never contains a raw newline, so the data is one
// line. On error buf is returned unchanged.
func appendSSE(buf []byte, seq int64, withID bool, name string, data any) ([]byte, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return buf, err
	}
	buf = appendFrameStart(buf, seq, withID, name)
	buf = append(buf, b...)
	return append(buf, "\n\n"...), nil
}

// appendFrameStart appends the id (seq, when withID is set), the event
// name and "data: ".
func appendFrameStart(buf []byte, seq int64, withID bool, name string) []byte {
	if withID {
		buf = append(buf, "id: "...)
		buf = strconv.AppendInt(buf, seq, 10)
		buf = append(buf, '\n')
	}
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	return append(buf, "\ndata: "...)
}

// appendTextEvent appends the frame of a text or reasoning event, its data
// byte for byte what json.Marshal writes for EventText. fast is false
// (and buf unchanged) when the time cannot be written as RFC 3339, which
// json.Marshal reports as an error.
func appendTextEvent(buf []byte, name string, h *agents.EventHeader, text string) (_ []byte, fast bool) {
	if y := h.Time.Year(); y < 0 || y > 9999 {
		return buf, false
	}
	if _, off := h.Time.Zone(); off <= -24*3600 || off >= 24*3600 {
		return buf, false
	}
	buf = appendFrameStart(buf, h.Seq, true, name)
	buf = append(buf, `{"seq":`...)
	buf = strconv.AppendInt(buf, h.Seq, 10)
	buf = append(buf, `,"run_id":`...)
	buf = jsonenc.AppendString(buf, h.RunID)
	if h.SessionID != "" {
		buf = append(buf, `,"session_id":`...)
		buf = jsonenc.AppendString(buf, h.SessionID)
	}
	if h.MessageID != "" {
		buf = append(buf, `,"message_id":`...)
		buf = jsonenc.AppendString(buf, h.MessageID)
	}
	if h.Agent != "" {
		buf = append(buf, `,"agent":`...)
		buf = jsonenc.AppendString(buf, h.Agent)
	}
	if h.ParentRunID != "" {
		buf = append(buf, `,"parent_run_id":`...)
		buf = jsonenc.AppendString(buf, h.ParentRunID)
	}
	buf = append(buf, `,"time":"`...)
	buf = h.Time.AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","text":`...)
	buf = jsonenc.AppendString(buf, text)
	return append(buf, "}\n\n"...), true
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
