package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxEventSize bounds a line and the data of one event for readers
// made by NewReader: 16 MiB, far above the largest tool arguments or final
// response objects providers send.
const DefaultMaxEventSize = 16 << 20

// ErrEventTooLarge is returned (wrapped, with the limit) by Next when a line
// or the data of one event exceeds the Reader's maximum size. The stream
// cannot be resumed after it.
var ErrEventTooLarge = errors.New("sse: event too large")

const initialBufSize = 32 << 10

// Event is one dispatched server-sent event.
type Event struct {
	// Name is the value of the last "event:" line of the event, "" when the
	// event had none (the SSE default type "message").
	Name string
	// Data is the event's "data:" lines joined with "\n". It aliases the
	// Reader's buffer and is valid only until the next call to Next: copy
	// it (or decode it) before reading on.
	Data []byte
	// ID is the last event id seen so far in the stream ("id:" lines
	// persist across events, as the SSE specification says).
	ID string
}

// Reader reads events from an event stream. It buffers its input; it is not
// safe for concurrent use.
type Reader struct {
	rd  io.Reader
	buf []byte
	r   int // start of unread bytes
	w   int // end of buffered bytes
	// scanned counts bytes after r already known to hold no CR or LF.
	scanned int
	rerr    error // sticky error from rd
	err     error // sticky error returned by Next
	max     int
	skipLF  bool // the previous line ended with CR at the end of the buffer
	started bool // the BOM check is done

	data []byte
	name string
	id   string
}

// NewReader returns a Reader of r with the DefaultMaxEventSize limit.
func NewReader(r io.Reader) *Reader {
	return NewReaderSize(r, DefaultMaxEventSize)
}

// NewReaderSize returns a Reader of r whose lines and event data may not
// exceed maxEventSize bytes; values below 1 KiB mean 1 KiB.
func NewReaderSize(r io.Reader, maxEventSize int) *Reader {
	if maxEventSize < 1<<10 {
		maxEventSize = 1 << 10
	}
	return &Reader{rd: r, max: maxEventSize}
}

// Next returns the next event. It returns io.EOF when the stream ended
// between events, io.ErrUnexpectedEOF when it ended inside one, an error
// wrapping ErrEventTooLarge when a line or the event's data exceeds the
// limit, and otherwise the underlying reader's error. Errors are sticky:
// once Next failed, it keeps returning the same error.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	r.data = r.data[:0]
	name := ""
	hasData := false
	pending := false // a field line was read since the last dispatch
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && pending {
				err = io.ErrUnexpectedEOF
			}
			r.err = err
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData {
				return Event{Name: name, Data: r.data, ID: r.id}, nil
			}
			name, pending = "", false
			continue
		}
		if line[0] == ':' {
			continue
		}
		pending = true
		var field, value []byte
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		} else {
			field = line
		}
		switch string(field) {
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			hasData = true
			if len(r.data)+len(value) > r.max {
				r.err = fmt.Errorf("%w: event data exceeds %d bytes", ErrEventTooLarge, r.max)
				return Event{}, r.err
			}
			r.data = append(r.data, value...)
		case "event":
			// Reuse the previous name's string when it repeats, which it
			// does for nearly every event of a stream.
			if string(value) == r.name {
				name = r.name
			} else {
				name = string(value)
				r.name = name
			}
		case "id":
			if bytes.IndexByte(value, 0) < 0 && string(value) != r.id {
				r.id = string(value)
			}
		}
		// "retry" and unknown fields are ignored.
	}
}

// readLine returns the next line without its terminator. The slice aliases
// r.buf and is valid until the next call. A final line without terminator
// is returned as a line; the call after it returns io.EOF.
func (r *Reader) readLine() ([]byte, error) {
	for {
		if r.skipLF || !r.started {
			need := 1
			if !r.started {
				need = 3
			}
			if r.w-r.r < need && r.rerr == nil {
				r.fill()
				continue
			}
			if !r.started && r.w-r.r >= 3 && r.buf[r.r] == 0xEF && r.buf[r.r+1] == 0xBB && r.buf[r.r+2] == 0xBF {
				r.r += 3
			}
			r.started = true
			if r.skipLF && r.w > r.r && r.buf[r.r] == '\n' {
				r.r++
			}
			r.skipLF = false
		}
		seg := r.buf[r.r:r.w]
		rest := seg[r.scanned:]
		lf := bytes.IndexByte(rest, '\n')
		lim := rest
		if lf >= 0 {
			lim = rest[:lf]
		}
		if cr := bytes.IndexByte(lim, '\r'); cr >= 0 {
			end := r.scanned + cr
			line := seg[:end]
			r.r += end + 1
			r.scanned = 0
			if end+1 < len(seg) {
				if seg[end+1] == '\n' {
					r.r++
				}
			} else {
				r.skipLF = true
			}
			return r.checkLen(line)
		}
		if lf >= 0 {
			end := r.scanned + lf
			line := seg[:end]
			r.r += end + 1
			r.scanned = 0
			return r.checkLen(line)
		}
		r.scanned = len(seg)
		if len(seg) > r.max {
			return nil, fmt.Errorf("%w: line exceeds %d bytes", ErrEventTooLarge, r.max)
		}
		if r.rerr != nil {
			if len(seg) > 0 {
				r.r = r.w
				r.scanned = 0
				return seg, nil
			}
			return nil, r.rerr
		}
		r.fill()
	}
}

func (r *Reader) checkLen(line []byte) ([]byte, error) {
	if len(line) > r.max {
		return nil, fmt.Errorf("%w: line exceeds %d bytes", ErrEventTooLarge, r.max)
	}
	return line, nil
}

// fill reads more input, compacting or growing the buffer first. It sets
// r.rerr when the reader fails or makes no progress.
func (r *Reader) fill() {
	if r.buf == nil {
		r.buf = make([]byte, initialBufSize)
	}
	if r.r > 0 {
		n := copy(r.buf, r.buf[r.r:r.w])
		r.w = n
		r.r = 0
	}
	if r.w == len(r.buf) {
		size := 2 * len(r.buf)
		if limit := r.max + 4; size > limit {
			size = limit
		}
		if size <= len(r.buf) {
			size = len(r.buf) + 1 // past the limit; readLine reports it
		}
		nb := make([]byte, size)
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	for i := 0; i < 100; i++ {
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			r.rerr = errors.New("sse: reader returned an invalid count")
			return
		}
		r.w += n
		if err != nil {
			r.rerr = err
			return
		}
		if n > 0 {
			return
		}
	}
	r.rerr = io.ErrNoProgress
}
