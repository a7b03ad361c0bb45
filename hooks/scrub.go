package hooks

import (
	"bytes"
	"encoding/json"
)

// Scrubber is implemented by events that carry free text (error messages,
// tool arguments, titles, message text, SQL). Scrub replaces each such
// field with f applied to it; a Bus with Options.Redact calls it once per
// event, before any handler sees the event. Implementations replace
// fields and never write into a byte slice the publisher owns; an error
// field becomes an error with the scrubbed message that still unwraps to
// the original (errors.Is and errors.As keep working). Custom events
// implement it to be scrubbed too.
type Scrubber interface {
	Scrub(f func(string) string)
}

// Scrub scrubs Err.
func (e *AgentError) Scrub(f func(string) string) { e.Err = scrubError(e.Err, f) }

// Scrub scrubs Err and Output.
func (e *LLMResponse) Scrub(f func(string) string) {
	e.Err = scrubError(e.Err, f)
	e.Output = f(e.Output)
}

// Scrub scrubs the string values of Arguments, keeping it valid JSON.
func (e *ToolStart) Scrub(f func(string) string) { e.Arguments = scrubJSON(e.Arguments, f) }

// Scrub scrubs Err and Stack.
func (e *ToolError) Scrub(f func(string) string) {
	e.Err = scrubError(e.Err, f)
	if len(e.Stack) > 0 {
		if s := f(string(e.Stack)); s != string(e.Stack) {
			e.Stack = []byte(s)
		}
	}
}

// Scrub scrubs Title.
func (e *SessionCreate) Scrub(f func(string) string) { e.Title = f(e.Title) }

// Scrub scrubs Title.
func (e *SessionUpdate) Scrub(f func(string) string) { e.Title = f(e.Title) }

// Scrub scrubs Text.
func (e *MessageSave) Scrub(f func(string) string) { e.Text = f(e.Text) }

// Scrub scrubs SQL and Reason.
func (e *SQLQuery) Scrub(f func(string) string) {
	e.SQL = f(e.SQL)
	e.Reason = f(e.Reason)
}

// Scrub scrubs Name.
func (e *ArtifactSave) Scrub(f func(string) string) { e.Name = f(e.Name) }

// Scrub scrubs Reason.
func (e *Decision) Scrub(f func(string) string) { e.Reason = f(e.Reason) }

// Scrub makes Input return scrubbed JSON.
func (e *LLMRequest) Scrub(f func(string) string) {
	if in := e.Input; in != nil {
		e.Input = func() []byte { return scrubJSON(in(), f) }
	}
}

// Scrub scrubs Result.
func (e *ToolFinish) Scrub(f func(string) string) { e.Result = f(e.Result) }

// ScrubError returns err when f leaves its message alone, otherwise an
// error with the scrubbed message that unwraps to err (errors.Is and
// errors.As keep working). Events of other packages use it in their Scrub
// methods.
func ScrubError(err error, f func(string) string) error { return scrubError(err, f) }

// scrubError returns err when f leaves its message alone, otherwise an
// error with the scrubbed message that unwraps to err.
func scrubError(err error, f func(string) string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	s := f(msg)
	if s == msg {
		return err
	}
	return &scrubbedError{msg: s, err: err}
}

// scrubbedError carries a scrubbed message and the original error.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// ScrubJSON applies f to the text of raw JSON and returns valid JSON
// (raw itself when nothing changed, and never writing into raw): every
// string value is scrubbed, then the whole text when that keeps it valid
// (so a secret spread over a key and its value is caught too). Invalid
// JSON is scrubbed as text. The agent loop scrubs tool arguments with it.
func ScrubJSON(raw json.RawMessage, f func(string) string) json.RawMessage { return scrubJSON(raw, f) }

// scrubJSON applies f to raw JSON: first to each string (keys and values,
// unescaped, so an escaped newline or quote does not hide a secret), then
// to the whole text (so f sees "password": "..." pairs), keeping the
// latter only when it is still valid JSON. raw is returned when nothing
// changed and is never modified; invalid JSON is scrubbed as text.
func scrubJSON(raw json.RawMessage, f func(string) string) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	if !json.Valid(raw) {
		if s := f(string(raw)); s != string(raw) {
			return json.RawMessage(s)
		}
		return raw
	}
	out := scrubStrings(raw, f)
	if s := f(string(out)); s != string(out) && json.Valid([]byte(s)) {
		out = json.RawMessage(s)
	}
	if bytes.Equal(out, raw) {
		return raw
	}
	return out
}

// scrubStrings returns valid JSON raw with f applied to each of its
// strings, in place of the original, or raw itself when f changed none.
func scrubStrings(raw json.RawMessage, f func(string) string) json.RawMessage {
	var out []byte
	prev := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		end, escaped := i+1, false
		for ; end < len(raw) && raw[end] != '"'; end++ {
			if raw[end] == '\\' {
				escaped = true
				end++
			}
		}
		lit := raw[i : end+1]
		var s string
		if escaped {
			if err := json.Unmarshal(lit, &s); err != nil {
				s = string(lit[1 : len(lit)-1])
			}
		} else {
			s = string(lit[1 : len(lit)-1])
		}
		if ns := f(s); ns != s {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(ns) // a string always encodes
			out = append(out, raw[prev:i]...)
			out = append(out, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
			prev = end + 1
		}
		i = end
	}
	if out == nil {
		return raw
	}
	return append(out, raw[prev:]...)
}
