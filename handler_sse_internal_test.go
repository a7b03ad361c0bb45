package bichat

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
)

// sseTrickyTexts are strings whose JSON encoding has special cases:
// quotes and backslashes, every control character, HTML characters
// (escaped by encoding/json), invalid UTF-8, U+2028 and U+2029, and
// multi-byte characters split across the escapes.
var sseTrickyTexts = []string{
	"",
	"plain prose of an answer",
	`say "hi" \ back\slash \"`,
	"line one\nline two\r\n\ttabbed",
	"\b\f\x00\x01\x1f\x7f",
	"<script>alert('x')</script> & a > b < c",
	"bad \xff utf-8 \xc3 cut \xe2\x80",
	"separators \u2028 and \u2029 inline",
	"emoji 😀, accents é ü, CJK 数据",
	"\u2028",
	"\xff",
	strings.Repeat("a<\"\n\u2028é", 50),
}

func textHeaders() []agents.EventHeader {
	t := time.Date(2026, 11, 23, 14, 30, 1, 123456789, time.UTC)
	return []agents.EventHeader{
		{Seq: 1, RunID: "run-1", Time: t},
		{Seq: 42, RunID: "run-1", SessionID: "s-1", MessageID: "m-1", Time: t.Truncate(time.Second)},
		{Seq: 9, RunID: "sub<1>", SessionID: "s\"1", MessageID: "m\n1", Agent: "hélper\u2028", ParentRunID: "run-1",
			Time: t.In(time.FixedZone("east", 5*3600+30*60))},
		{Seq: 1 << 40, RunID: "", Time: time.Time{}},
		{Seq: 7, RunID: "r", Time: t.In(time.FixedZone("west", -(23*3600 + 59*60)))},
	}
}

// wantTextFrame is the frame the reflection path writes for a text or
// reasoning event: json.Marshal of EventText.
func wantTextFrame(t testing.TB, name string, h agents.EventHeader, text string) []byte {
	t.Helper()
	data, err := json.Marshal(EventText{EventHeader: EventHeader{Seq: h.Seq, RunID: h.RunID, SessionID: h.SessionID,
		MessageID: h.MessageID, Agent: h.Agent, ParentRunID: h.ParentRunID, Time: h.Time}, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return []byte("id: " + strconv.FormatInt(h.Seq, 10) + "\nevent: " + name + "\ndata: " + string(data) + "\n\n")
}

// TestSSETextEncodingMatchesJSON: text and reasoning events are encoded
// without reflection, byte for byte as encoding/json encodes EventText.
func TestSSETextEncodingMatchesJSON(t *testing.T) {
	t.Parallel()
	for _, h := range textHeaders() {
		for _, text := range sseTrickyTexts {
			for _, ev := range []agents.Event{&agents.TextDelta{EventHeader: h, Text: text},
				&agents.ReasoningDelta{EventHeader: h, Text: text}} {
				name := SSEText
				if _, ok := ev.(*agents.ReasoningDelta); ok {
					name = SSEReasoning
				}
				prefix := []byte("earlier frame\n\n")
				got, terminal, ok, err := appendSSEEvent(bytes.Clone(prefix), ev, SSEOptions{})
				if err != nil || !ok || terminal {
					t.Fatalf("%s %q: terminal %v ok %v err %v", name, text, terminal, ok, err)
				}
				if !bytes.HasPrefix(got, prefix) {
					t.Fatalf("the buffer's earlier content was overwritten: %q", got)
				}
				if want := wantTextFrame(t, name, h, text); !bytes.Equal(got[len(prefix):], want) {
					t.Errorf("%s %+v %q:\n got %s\nwant %s", name, h, text, got[len(prefix):], want)
				}
			}
		}
	}
}

// A time encoding/json refuses (year outside 0-9999) takes the
// reflection path and is reported as an error, as before.
func TestSSETextEncodingBadTime(t *testing.T) {
	t.Parallel()
	ev := &agents.TextDelta{EventHeader: agents.EventHeader{Seq: 1, RunID: "r", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, Text: "x"}
	got, _, ok, err := appendSSEEvent(nil, ev, SSEOptions{})
	if err == nil || ok || len(got) != 0 {
		t.Fatalf("got %q ok %v err %v, want an encoding error and nothing written", got, ok, err)
	}
}

// TestSSETextEncodingAllocs: encoding a text event into a buffer with
// room allocates nothing (json.Marshal allocated the event, its
// interface boxing and the output on every event).
func TestSSETextEncodingAllocs(t *testing.T) {
	ev := &agents.TextDelta{EventHeader: textHeaders()[1], Text: "a fragment of the answer, <b>bold</b> & \"quoted\"\n"}
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(200, func() {
		buf, _, _, _ = appendSSEEvent(buf[:0], ev, SSEOptions{})
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per text event, want 0", allocs)
	}
}

func FuzzSSETextEncoding(f *testing.F) {
	for _, s := range sseTrickyTexts {
		f.Add(s, "run-1", "helper", int64(3), int64(1700000000123456789))
	}
	f.Fuzz(func(t *testing.T, text, runID, agent string, seq, nanos int64) {
		h := agents.EventHeader{Seq: seq, RunID: runID, SessionID: "s", Agent: agent, Time: time.Unix(0, nanos).UTC()}
		got, _, ok, err := appendSSEEvent(nil, &agents.TextDelta{EventHeader: h, Text: text}, SSEOptions{})
		if err != nil || !ok {
			t.Fatalf("ok %v err %v", ok, err)
		}
		if want := wantTextFrame(t, SSEText, h, text); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}
