package agents

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
)

// maxHeldText bounds the text a redacting run holds back waiting for the
// end of a run of secret characters; a longer run is scrubbed and sent
// as it is.
const maxHeldText = 1024

// maxHoldContext is how much of the text already sent a textHold keeps as
// context, so a secret whose marker was sent in an earlier delta
// ("Bearer ", "password: ") is still recognised.
const maxHoldContext = 128

// secretByte reports whether c can be part of a secret: printable ASCII
// other than space. API keys, tokens, passwords in URLs and the like are
// made of these; whitespace and non-ASCII text (most prose, CJK) end
// them.
func secretByte(c byte) bool { return c > ' ' && c < 0x7f }

// textHold buffers streamed text of one kind (answer or reasoning) so that
// Config.Redact sees every secret whole: it holds back the trailing run of
// characters that may belong to a secret (see secretByte) until something
// else follows it, and scrubs what it sends together with the end of what
// it sent before, so a marker sent earlier still counts. Text without
// such a run (prose ending in a space, CJK) goes out at once.
type textHold struct {
	held string // raw text not sent yet
	ctx  string // the end of the scrubbed text sent so far
}

// take adds s and returns the scrubbed text that can be sent now.
func (h *textHold) take(s string, f func(string) string) string {
	h.held += s
	cut := len(h.held)
	for cut > 0 && secretByte(h.held[cut-1]) {
		cut--
	}
	if cut == 0 && len(h.held) < maxHeldText {
		return ""
	}
	if len(h.held) >= maxHeldText {
		cut = len(h.held)
	}
	body := h.scrub(f)
	keep := h.held[cut:]
	if keep != "" {
		if !strings.HasSuffix(body, keep) {
			// The held run is being scrubbed already (a secret in the
			// making): hold everything until the run ends.
			return ""
		}
		body = body[:len(body)-len(keep)]
	}
	h.held = keep
	h.sent(body)
	return body
}

// flush returns the scrubbed text held back, and forgets it.
func (h *textHold) flush(f func(string) string) string {
	if h.held == "" {
		return ""
	}
	body := h.scrub(f)
	h.held = ""
	h.sent(body)
	return body
}

// scrub returns the held text scrubbed in the context of what was sent.
func (h *textHold) scrub(f func(string) string) string {
	if out := f(h.ctx + h.held); strings.HasPrefix(out, h.ctx) {
		return out[len(h.ctx):]
	}
	// A match reached back into text already sent, which cannot be taken
	// back: scrub the held text on its own.
	return f(h.held)
}

// sent records body as sent, keeping the end of it (from a word start) as
// context for the next scrub.
func (h *textHold) sent(body string) {
	c := h.ctx + body
	if len(c) > maxHoldContext {
		c = c[len(c)-maxHoldContext:]
		if i := strings.IndexFunc(c, unicode.IsSpace); i >= 0 {
			c = c[i:]
		}
	}
	if !utf8.ValidString(c) {
		c = strings.ToValidUTF8(c, "")
	}
	h.ctx = c
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
		if nm, changed := redactMessage(m, f, false); changed {
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
// arguments, tool results and reasoning of each message. Reasoning whose
// text changes loses its signature (the provider would reject the
// scrubbed text; unsigned reasoning is dropped from later requests
// instead). Neither ms nor its messages are modified: changed messages
// are copies, and ms itself is returned when nothing changed.
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
		if nm, changed := redactMessage(m, f, true); changed {
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
// and tool results (and, with reasoning, its reasoning text), and whether
// anything changed (m is then a copy).
func redactMessage(m Message, f func(string) string, reasoning bool) (Message, bool) {
	var parts []domain.Part
	for i, p := range m.Parts {
		np, changed := redactPart(p, f, reasoning)
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

func redactPart(p domain.Part, f func(string) string, reasoning bool) (domain.Part, bool) {
	switch {
	case p.Reasoning != nil && reasoning:
		t := f(p.Reasoning.Text)
		if t == p.Reasoning.Text {
			return p, false
		}
		// The signature covered the original text: a scrubbed copy is
		// unsigned, so providers drop it rather than reject it when it
		// comes back in a later question's history.
		r := *p.Reasoning
		r.Text, r.Signature = t, ""
		p.Reasoning = &r
		return p, true
	case p.Type == domain.PartText:
		t := f(p.Text)
		if t == p.Text {
			return p, false
		}
		p.Text = t
		return p, true
	case p.ToolCall != nil:
		a := hooks.ScrubJSON(p.ToolCall.Arguments, f)
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
		e.Item.Input = hooks.ScrubJSON(e.Item.Input, f)
	case *ToolCallStarted:
		e.Arguments = hooks.ScrubJSON(e.Arguments, f)
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
			c.Arguments = hooks.ScrubJSON(c.Arguments, f)
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
