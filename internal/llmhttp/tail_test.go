package llmhttp_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/internal/sse"
)

// TestTailReader: an unterminated last event is dispatched, whatever the
// read sizes; Flushed says whether the tail was needed; CutTail tells a
// last event cut mid-way from an earlier malformed one; Stray keeps JSON
// written outside data: lines.
func TestTailReader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body    string
		data    []string
		flushed bool
	}{
		{"data: a\n\ndata: b", []string{"a", "b"}, true},
		{"data: a\n\ndata: b\n", []string{"a", "b"}, true},
		{"data: a\r\n\r\ndata: b\r\n", []string{"a", "b"}, true},
		{"data: a\n\ndata: b\n\n", []string{"a", "b"}, false},
		{"data: a\r\n\r\n", []string{"a"}, false},
		{"", nil, false},
	} {
		for _, half := range []bool{false, true} {
			var rd io.Reader = strings.NewReader(tc.body)
			if half {
				rd = iotest.OneByteReader(rd)
			}
			tail := llmhttp.NewTailReader(rd, false)
			r := sse.NewReader(tail)
			var got []string
			for {
				ev, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%q: %v", tc.body, err)
				}
				got = append(got, string(ev.Data))
			}
			if strings.Join(got, "|") != strings.Join(tc.data, "|") || tail.Flushed() != tc.flushed {
				t.Errorf("%q (one byte reads %v): events %q flushed %v, want %q %v", tc.body, half, got, tail.Flushed(), tc.data, tc.flushed)
			}
		}
	}

	tail := llmhttp.NewTailReader(strings.NewReader("data: {\"a\":1}\n\ndata: {\"b\""), false)
	r := sse.NewReader(tail)
	if ev, _ := r.Next(); string(ev.Data) != `{"a":1}` {
		t.Fatalf("first event %q", ev.Data)
	}
	if ev, _ := r.Next(); string(ev.Data) != `{"b"` {
		t.Fatalf("flushed event %q", ev.Data)
	}
	if !llmhttp.CutTail(tail, r) {
		t.Error("CutTail = false for a cut last event")
	}
	if err := llmhttp.CutTailError("p", errors.New("bad json")); !errors.Is(err, llmhttp.ErrIncomplete) || !strings.Contains(err.Error(), "bad json") {
		t.Errorf("CutTailError = %v", err)
	}

	tail = llmhttp.NewTailReader(strings.NewReader("data: x}\n\ndata: y\n\n"), false)
	r = sse.NewReader(tail)
	_, _ = r.Next()
	if llmhttp.CutTail(tail, r) {
		t.Error("CutTail = true for a terminated stream")
	}

	tail = llmhttp.NewTailReader(iotest.OneByteReader(strings.NewReader("data: {\"x\":1}\n\n{\n  \"error\": {}\n}\n")), true)
	if _, err := io.ReadAll(tail); err != nil {
		t.Fatal(err)
	}
	if string(tail.Stray()) != "{\n  \"error\": {}\n}\n" {
		t.Errorf("Stray = %q", tail.Stray())
	}
	tail = llmhttp.NewTailReader(strings.NewReader("data: {\"x\":1}\n\n"), true)
	_, _ = io.ReadAll(tail)
	if tail.Stray() != nil {
		t.Errorf("Stray = %q for a clean stream", tail.Stray())
	}
}
