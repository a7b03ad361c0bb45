// Package sse reads Server-Sent Events (text/event-stream) as LLM providers
// send them: one Reader for OpenAI, Anthropic, Gemini and OpenAI-compatible
// servers.
//
// It follows the WHATWG event-stream parsing rules: lines end with LF, CRLF
// or a lone CR; "field: value" lines with or without the space after the
// colon; "event:" names the event, "data:" lines are joined with "\n", "id:"
// sets the last event id, lines starting with ":" are comments
// (keep-alives) and are skipped; a blank line dispatches the event. A UTF-8
// byte order mark at the start of the stream is ignored.
//
// Unlike bufio.Scanner it has no 64 KiB line limit: lines and events of
// several MiB are fine, up to a configurable maximum (DefaultMaxEventSize)
// beyond which Next fails with ErrEventTooLarge instead of growing without
// bound.
//
// Next returns io.EOF when the stream ends cleanly between events and
// io.ErrUnexpectedEOF when it ends inside an event (a field line was read
// but no blank line followed). Protocol terminators ("data: [DONE]" for
// OpenAI, "event: message_stop" for Anthropic) are the provider's concern:
// a stream that reaches io.EOF without its terminator was cut and the
// provider must report an error.
package sse
