package agents

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bichat-go/bichat/domain"
)

// maxHeldText bounds the text a redacting run holds back waiting for the
// end of a word; a longer word is scrubbed and sent as it is.
const maxHeldText = 4096

// textHold buffers streamed text of one kind (answer or reasoning) up to
// the end of the current word, so Config.Redact sees a secret whole even
// when the provider splits it across deltas.
type textHold struct {
	pending strings.Builder
}

// take adds s and returns the part that can be sent now: everything up to
// and including the last whitespace, or everything when the held word grew
// past maxHeldText.
func (h *textHold) take(s string) string {
	h.pending.WriteString(s)
	p := h.pending.String()
	cut := strings.LastIndexFunc(p, unicode.IsSpace)
	if cut < 0 {
		if len(p) < maxHeldText {
			return ""
		}
		h.pending.Reset()
		return p
	}
	_, size := utf8.DecodeRuneInString(p[cut:])
	cut += size
	h.pending.Reset()
	h.pending.WriteString(p[cut:])
	return p[:cut]
}

// flush returns and forgets what is held.
func (h *textHold) flush() string {
	p := h.pending.String()
	h.pending.Reset()
	return p
}

// redactRequest returns req with f applied to everything it sends as text:
// the system prompt, text parts, tool-call arguments and tool results.
// Reasoning is left untouched (providers sign it). req itself and the
// slices it shares with the run's state are never modified: changed
// messages are copies.
func redactRequest(req *Request, f func(string) string) *Request {
	out := *req
	out.System = f(req.System)
	var msgs []Message
	for i, m := range req.Messages {
		if nm, changed := redactMessage(m, f); changed {
			if msgs == nil {
				msgs = append([]Message(nil), req.Messages...)
			}
			msgs[i] = nm
		}
	}
	if msgs != nil {
		out.Messages = msgs
	}
	if out.System != req.System && out.Cache.SystemPrefix > len(out.System) {
		out.Cache.SystemPrefix = len(out.System)
	}
	return &out
}

// RedactMessages returns ms with f applied to the text, tool-call
// arguments and tool results of each message (reasoning is left alone).
// Neither ms nor its messages are modified: changed messages are copies,
// and ms itself is returned when nothing changed.
func RedactMessages(ms []Message, f func(string) string) []Message {
	if f == nil {
		return ms
	}
	return redactMessages(ms, f)
}

// redactMessages applies redactMessage to each message, copying the slice
// only when something changed.
func redactMessages(ms []Message, f func(string) string) []Message {
	var out []Message
	for i, m := range ms {
		if nm, changed := redactMessage(m, f); changed {
			if out == nil {
				out = append([]Message(nil), ms...)
			}
			out[i] = nm
		}
	}
	if out == nil {
		return ms
	}
	return out
}

// redactMessage returns m with f applied to its text, tool-call arguments
// and tool results, and whether anything changed (m is then a copy).
func redactMessage(m Message, f func(string) string) (Message, bool) {
	var parts []domain.Part
	for i, p := range m.Parts {
		np, changed := redactPart(p, f)
		if !changed {
			continue
		}
		if parts == nil {
			parts = append([]domain.Part(nil), m.Parts...)
		}
		parts[i] = np
	}
	if parts == nil {
		return m, false
	}
	m.Parts = parts
	return m, true
}

func redactPart(p domain.Part, f func(string) string) (domain.Part, bool) {
	switch {
	case p.Type == domain.PartText:
		t := f(p.Text)
		if t == p.Text {
			return p, false
		}
		p.Text = t
		return p, true
	case p.ToolCall != nil:
		a := redactJSON(p.ToolCall.Arguments, f)
		if string(a) == string(p.ToolCall.Arguments) {
			return p, false
		}
		tc := *p.ToolCall
		tc.Arguments = a
		p.ToolCall = &tc
		return p, true
	case p.ToolResult != nil:
		c := f(p.ToolResult.Content)
		if c == p.ToolResult.Content {
			return p, false
		}
		tr := *p.ToolResult
		tr.Content = c
		p.ToolResult = &tr
		return p, true
	}
	return p, false
}

// redactJSON applies f to raw JSON text, keeping the result valid JSON:
// when scrubbing the text would break it, the string values are scrubbed
// one by one instead.
func redactJSON(raw json.RawMessage, f func(string) string) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	s := f(string(raw))
	if s == string(raw) {
		return raw
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return json.RawMessage(s)
	}
	out, err := json.Marshal(redactValue(v, f))
	if err != nil {
		return json.RawMessage(s)
	}
	return out
}

func redactValue(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case []any:
		for i := range x {
			x[i] = redactValue(x[i], f)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = redactValue(e, f)
		}
	}
	return v
}

// redactEvent applies f to the text an event carries to the consumer. It
// replaces fields, never writing into slices the run still uses (the
// checkpoint of an Interrupted event stays as it was: it is resumed, not
// shown).
func redactEvent(ev Event, f func(string) string) {
	switch e := ev.(type) {
	case *TextDelta:
		e.Text = f(e.Text)
	case *ReasoningDelta:
		e.Text = f(e.Text)
	case *ProviderItemReported:
		e.Item.Text = f(e.Item.Text)
		e.Item.Input = redactJSON(e.Item.Input, f)
	case *ToolCallStarted:
		e.Arguments = redactJSON(e.Arguments, f)
	case *ToolCallFinished:
		e.Summary = f(e.Summary)
		e.Error = f(e.Error)
	case *Interrupted:
		if len(e.Questions) > 0 {
			qs := append([]Question(nil), e.Questions...)
			for i := range qs {
				qs[i].Question = f(qs[i].Question)
			}
			e.Questions = qs
		}
		if e.Confirmation != nil {
			c := *e.Confirmation
			c.Description = f(c.Description)
			c.Arguments = redactJSON(c.Arguments, f)
			e.Confirmation = &c
		}
	case *RunFinished:
		e.Text = f(e.Text)
		e.Note = f(e.Note)
		e.Messages = redactMessages(e.Messages, f)
	case *RunFailed:
		e.Message = f(e.Message)
		e.Messages = redactMessages(e.Messages, f)
	}
}
