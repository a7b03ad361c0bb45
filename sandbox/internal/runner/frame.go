package runner

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// WriteFrame writes v as one frame: a 4-byte big-endian length, then JSON.
func WriteFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > 1<<31 {
		return fmt.Errorf("frame of %d bytes is too large", len(b))
	}
	buf := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// ReadFrame reads one frame of at most max bytes into v.
func ReadFrame(r io.Reader, max int, v any) error {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint32(h[:]))
	if n > max {
		return fmt.Errorf("runner frame of %d bytes exceeds %d", n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
