package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// refEvent is an event as the reference parser sees it.
type refEvent struct {
	Name, Data, ID string
}

// refParse is a direct transcription of the WHATWG event-stream rules over
// a whole input, used as the oracle for Reader. final is io.EOF or
// io.ErrUnexpectedEOF.
func refParse(in []byte, max int) (events []refEvent, final error) {
	s := string(in)
	s = strings.TrimPrefix(s, "\uFEFF")
	var lines []string
	terminated := true
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			lines = append(lines, s)
			terminated = false
			break
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			s = s[i+2:]
		} else {
			s = s[i+1:]
		}
	}
	var data []string
	name, id := "", ""
	hasData, pending := false, false
	for _, l := range lines {
		if len(l) > max {
			return events, ErrEventTooLarge
		}
		if l == "" {
			if hasData {
				events = append(events, refEvent{name, strings.Join(data, "\n"), id})
			}
			data, name, hasData, pending = nil, "", false, false
			continue
		}
		if l[0] == ':' {
			continue
		}
		pending = true
		field, value, ok := strings.Cut(l, ":")
		if ok {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "data":
			data = append(data, value)
			hasData = true
			if len(strings.Join(data, "\n")) > max {
				return events, ErrEventTooLarge
			}
		case "event":
			name = value
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
	_ = terminated
	if pending {
		return events, io.ErrUnexpectedEOF
	}
	return events, io.EOF
}

func readAll(r *Reader) ([]refEvent, error) {
	var out []refEvent
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, refEvent{ev.Name, string(ev.Data), ev.ID})
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 3<<20) // 3 MiB, far past bufio.Scanner's 64 KiB
	tests := []struct {
		name string
		in   string
		want []refEvent
		err  error
	}{
		{"openai", "data: {\"a\":1}\n\ndata: [DONE]\n\n",
			[]refEvent{{"", `{"a":1}`, ""}, {"", "[DONE]", ""}}, io.EOF},
		{"no space after colon", "data:{\"a\":1}\n\n", []refEvent{{"", `{"a":1}`, ""}}, io.EOF},
		{"only first space stripped", "data:  two\n\n", []refEvent{{"", " two", ""}}, io.EOF},
		{"crlf", "event: ping\r\ndata: {}\r\n\r\n", []refEvent{{"ping", "{}", ""}}, io.EOF},
		{"lone cr", "event: a\rdata: 1\r\rdata: 2\r\r", []refEvent{{"a", "1", ""}, {"", "2", ""}}, io.EOF},
		{"mixed endings", "data: 1\r\ndata: 2\ndata: 3\r\r\n", []refEvent{{"", "1\n2\n3", ""}}, io.EOF},
		{"multi-line data", "data: a\ndata:\ndata: b\n\n", []refEvent{{"", "a\n\nb", ""}}, io.EOF},
		{"comments and keep-alives", ": ping\n\n:\ndata: x\n: inside\n\n: bye\n",
			[]refEvent{{"", "x", ""}}, io.EOF},
		{"event names reset", "event: message_start\ndata: 1\n\ndata: 2\n\n",
			[]refEvent{{"message_start", "1", ""}, {"", "2", ""}}, io.EOF},
		{"event without data is not dispatched", "event: x\n\ndata: y\n\n", []refEvent{{"", "y", ""}}, io.EOF},
		{"empty data line dispatches", "data\n\n", []refEvent{{"", "", ""}}, io.EOF},
		{"id persists", "id: 7\ndata: a\n\ndata: b\n\n", []refEvent{{"", "a", "7"}, {"", "b", "7"}}, io.EOF},
		{"unknown fields and retry ignored", "retry: 10\nfoo: bar\ndata: z\n\n", []refEvent{{"", "z", ""}}, io.EOF},
		{"bom", "\uFEFFdata: a\n\n", []refEvent{{"", "a", ""}}, io.EOF},
		{"cut inside event", "data: a\n\ndata: {\"partial", []refEvent{{"", "a", ""}}, io.ErrUnexpectedEOF},
		{"cut before blank line", "data: a\n", nil, io.ErrUnexpectedEOF},
		{"event line then eof", "event: message_stop\n", nil, io.ErrUnexpectedEOF},
		{"empty stream", "", nil, io.EOF},
		{"huge line", "data: " + big + "\n\n", []refEvent{{"", big, ""}}, io.EOF},
	}
	for _, tc := range tests {
		for _, mode := range []string{"whole", "onebyte", "half"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				if tc.name == "huge line" && mode == "onebyte" {
					t.Skip("3 MiB one byte at a time is slow under -race; covered by half")
				}
				var src io.Reader = strings.NewReader(tc.in)
				switch mode {
				case "onebyte":
					src = iotest.OneByteReader(src)
				case "half":
					src = iotest.HalfReader(src)
				}
				got, err := readAll(NewReader(src))
				if !errors.Is(err, tc.err) {
					t.Fatalf("final error = %v, want %v", err, tc.err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("got %d events, want %d: %q", len(got), len(tc.want), got)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("event %d = %.80q, want %.80q", i, got[i], tc.want[i])
					}
				}
			})
		}
	}
}

func TestReaderStickyError(t *testing.T) {
	t.Parallel()
	r := NewReader(strings.NewReader("data: a\n"))
	for range 3 {
		if _, err := r.Next(); err != io.ErrUnexpectedEOF {
			t.Fatalf("err = %v, want io.ErrUnexpectedEOF every time", err)
		}
	}
}

func TestReaderUnderlyingError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	src := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	r := NewReader(src)
	if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first event = %q, %v", ev.Data, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the reader's error", err)
	}
}

func TestReaderMaxSize(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 5000)
	for name, in := range map[string]string{
		"line":       "data: " + long + "\n\n",
		"multiline":  strings.Repeat("data: "+long[:900]+"\n", 8) + "\n",
		"no newline": "data: " + long,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := NewReaderSize(iotest.HalfReader(strings.NewReader(in)), 4096)
			_, err := r.Next()
			if !errors.Is(err, ErrEventTooLarge) || !strings.Contains(err.Error(), "4096") {
				t.Fatalf("err = %v, want ErrEventTooLarge naming the limit", err)
			}
		})
	}
	// Just under the limit passes.
	r := NewReaderSize(strings.NewReader("data: "+long[:4000]+"\n\n"), 4096)
	if ev, err := r.Next(); err != nil || len(ev.Data) != 4000 {
		t.Fatalf("event under the limit: %d bytes, %v", len(ev.Data), err)
	}
}

// TestReaderDataReuse documents that Data is only valid until Next.
func TestReaderDataReuse(t *testing.T) {
	t.Parallel()
	r := NewReader(strings.NewReader("data: first\n\ndata: other\n\n"))
	ev1, _ := r.Next()
	saved := bytes.Clone(ev1.Data)
	ev2, _ := r.Next()
	if string(saved) != "first" || string(ev2.Data) != "other" {
		t.Fatalf("saved %q, second %q", saved, ev2.Data)
	}
}

// chunkReader returns its input in pieces whose sizes cycle through sizes.
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)])%64 + 1
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func FuzzReader(f *testing.F) {
	seeds := []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"event: message_start\r\ndata: {}\r\n\r\n",
		"event: a\rdata: 1\r\r",
		": keep-alive\n\ndata:x\ndata: y\n\n",
		"\uFEFFid: 1\ndata\n\n",
		"data: cut",
		"data: a\r",
		"\r\n\r\n\n\r",
		"event:\ndata:\n\n",
		"id: a\x00b\ndata: 1\n\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s), []byte{3, 1, 7})
	}
	f.Fuzz(func(t *testing.T, in, sizes []byte) {
		const max = 4096
		want, wantErr := refParse(in, max)
		got, err := readAll(NewReaderSize(&chunkReader{data: in, sizes: sizes}, max))
		if errors.Is(wantErr, ErrEventTooLarge) {
			// The reader may notice an over-long line before or after
			// dispatching earlier events; it must fail with the sentinel
			// and never yield more events than the reference.
			if !errors.Is(err, ErrEventTooLarge) {
				t.Fatalf("err = %v, want ErrEventTooLarge", err)
			}
			if len(got) > len(want) {
				t.Fatalf("got %d events past the limit, reference %d", len(got), len(want))
			}
			return
		}
		if err != wantErr {
			t.Fatalf("final error = %v, want %v (input %q)", err, wantErr, in)
		}
		if len(got) != len(want) {
			t.Fatalf("got %d events, want %d\ninput %q\ngot  %q\nwant %q", len(got), len(want), in, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("event %d = %q, want %q (input %q)", i, got[i], want[i], in)
			}
		}
	})
}
