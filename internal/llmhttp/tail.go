package llmhttp

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/bichat-go/bichat/internal/sse"
)

// TailReader wraps an event-stream body so that a last event the server
// did not close with a blank line is dispatched by the shared SSE reader
// instead of being discarded (the SSE standard drops such an event; several
// vendors end their streams that way and their own SDKs flush it). After
// the body's EOF it reads "\n\n" once, which ends the pending event.
// Whether the flushed event counts is still the decoder's call: the
// provider's end marker rules are unchanged, and an event whose data was
// cut in the middle fails to decode and is reported by CutTail as an
// incomplete stream.
type TailReader struct {
	r         io.Reader
	last      [4]byte // the body's last bytes, newest at the end
	n         int
	eof       bool
	tail      int // bytes of the appended "\n\n" already read
	flushed   bool
	keepStray bool
	// lineStart: the bytes read so far end a line (or none were read).
	lineStart bool
	// stray holds the body from the first line that starts with '{' on:
	// JSON outside any data: field, which the SSE reader skips.
	stray []byte
}

// maxStray bounds the stray content kept.
const maxStray = 1 << 20

// NewTailReader returns a TailReader of r. With keepStray it also keeps
// JSON written outside data: lines (see Stray), at the cost of a substring
// search over the body (a few percent of a provider's decoding time).
func NewTailReader(r io.Reader, keepStray bool) *TailReader {
	return &TailReader{r: r, keepStray: keepStray, lineStart: true}
}

// Read reads the body, then the closing blank line.
func (t *TailReader) Read(p []byte) (int, error) {
	if !t.eof {
		n, err := t.r.Read(p)
		if n > 0 {
			t.remember(p[:n])
			if t.keepStray {
				t.watch(p[:n])
			}
		}
		if err == io.EOF {
			t.eof = true
			t.flushed = !t.terminated()
			if n > 0 {
				return n, nil
			}
		} else {
			return n, err
		}
	}
	const end = "\n\n"
	if t.tail >= len(end) || len(p) == 0 {
		return 0, io.EOF
	}
	n := copy(p, end[t.tail:])
	t.tail += n
	return n, nil
}

func (t *TailReader) remember(b []byte) {
	if len(b) >= len(t.last) {
		copy(t.last[:], b[len(b)-len(t.last):])
		t.n = len(t.last)
		return
	}
	copy(t.last[:], t.last[len(b):])
	copy(t.last[len(t.last)-len(b):], b)
	t.n = min(t.n+len(b), len(t.last))
}

// watch looks for a line that starts with '{' and keeps the body from
// there on. It searches for "\n{" (a fast substring search), so lines
// ended by a lone CR, which no provider sends, are not looked at.
func (t *TailReader) watch(b []byte) {
	if t.stray != nil {
		if room := maxStray - len(t.stray); room > 0 {
			t.stray = append(t.stray, b[:min(len(b), room)]...)
		}
		return
	}
	i := -1
	if t.lineStart && b[0] == '{' {
		i = 0
	} else if j := bytes.Index(b, []byte("\n{")); j >= 0 {
		i = j + 1
	}
	t.lineStart = b[len(b)-1] == '\n'
	if i >= 0 {
		t.stray = append([]byte{}, b[i:min(len(b), i+maxStray)]...)
	}
}

// Stray returns the body from the first line that starts with '{' on (at
// most 1 MiB), or nil; always nil unless the TailReader was made with
// keepStray. Such a line is not an SSE field and the SSE reader skips it;
// servers write a JSON error body that way when they fail in the middle
// of a stream (Gemini does), so a provider checks it instead of letting
// the error vanish.
func (t *TailReader) Stray() []byte { return t.stray }

// terminated reports whether the body ended with a blank line (or was
// empty), i.e. its last event was already dispatched.
func (t *TailReader) terminated() bool {
	b := t.last[len(t.last)-t.n:]
	if len(b) == 0 {
		return true
	}
	for _, s := range []string{"\n\n", "\r\r", "\r\n\r\n", "\n\r\n"} {
		if len(b) >= len(s) && string(b[len(b)-len(s):]) == s {
			return true
		}
	}
	return false
}

// Flushed reports whether the body ended without a blank line, so that its
// last event was dispatched only thanks to the TailReader.
func (t *TailReader) Flushed() bool { return t.eof && t.flushed }

// CutTail reports whether an event that failed to decode was the
// unterminated last event of the body (the connection closed in the middle
// of it): t flushed a tail and r has no event after it. It consumes r's
// next event, so call it only on the way to returning an error.
func CutTail(t *TailReader, r *sse.Reader) bool {
	if !t.Flushed() {
		return false
	}
	_, err := r.Next()
	return errors.Is(err, io.EOF)
}

// CutTailError returns the error for a last event cut in the middle
// (see CutTail): a ConnError wrapping ErrIncomplete that also names the
// decode failure.
func CutTailError(provider string, decodeErr error) error {
	return &ConnError{Provider: provider, Op: "read response",
		Err: fmt.Errorf("%w: the last event was cut (%v)", ErrIncomplete, decodeErr)}
}
