package agents_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
)

// refMarshalEvent is MarshalEvent as it was before the hand-written
// encoder: encoding/json's bytes with the "type" member in front. The hand
// encoder must produce exactly these bytes.
func refMarshalEvent(e agents.Event) ([]byte, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	tb, _ := json.Marshal(string(e.Type()))
	out := append([]byte(`{"type":`), tb...)
	if len(body) > 2 {
		return append(append(out, ','), body[1:]...), nil
	}
	return append(out, '}'), nil
}

// fastEvents builds the events MarshalEvent encodes by hand, with every
// string field set to s and times t.
func fastEvents(s string, seq int64, t time.Time, full bool) []agents.Event {
	h := agents.EventHeader{RunID: s, Seq: seq, Time: t}
	if full {
		h.ParentRunID, h.Agent, h.SessionID, h.MessageID = s+"p", s+"a", s+"s", s+"m"
	}
	rs := &agents.RunStarted{EventHeader: h, Model: s}
	if full {
		rs.ResumedFrom = s + "r"
	}
	return []agents.Event{&agents.TextDelta{EventHeader: h, Text: s}, &agents.ReasoningDelta{EventHeader: h, Text: s}, rs}
}

func checkSameAsEncodingJSON(t *testing.T, e agents.Event) {
	t.Helper()
	want, werr := refMarshalEvent(e)
	got, gerr := agents.MarshalEvent(e)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%T: error %v, encoding/json says %v", e, gerr, werr)
	}
	if werr == nil && !bytes.Equal(got, want) {
		t.Fatalf("%T:\n got %s\nwant %s", e, got, want)
	}
	// AppendEvent extends a buffer with the same bytes and keeps its
	// prefix.
	buf, err := agents.AppendEvent([]byte("prefix"), e)
	if werr == nil && (err != nil || string(buf) != "prefix"+string(want)) {
		t.Fatalf("%T: AppendEvent = %q, %v", e, buf, err)
	}
	if werr != nil && (err == nil || string(buf) != "prefix") {
		t.Fatalf("%T: AppendEvent on a failing event = %q, %v; want the buffer unchanged and an error", e, buf, err)
	}
}

// TestMarshalEventMatchesEncodingJSON checks the hand-written encoder of
// the hot event types against encoding/json on strings that need every
// kind of escaping, times in several zones and precisions, and times
// encoding/json refuses.
func TestMarshalEventMatchesEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", `quote " backslash \ slash /`, "<b>&amp;</b>", "\b\f\n\r\t\x00\x01\x1f\x7f",
		"caf\u00e9 \u6771\u4eac \U0001F600", "line\u2028para\u2029end", "bad \xff\xfe utf8 \xe2\x82", "\xed\xa0\x80 surrogate",
		"emoji cut \xf0\x9f\x98"}
	times := []time.Time{
		{},
		time.Date(2025, 3, 14, 15, 9, 26, 535000000, time.UTC),
		time.Date(2025, 3, 14, 15, 9, 26, 1, time.FixedZone("x", 5*3600+30*60)),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.FixedZone("w", -8*3600)),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),               // refused by encoding/json
		time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("s", 30)), // seconds in the offset
		time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("h", 24*3600)),
		time.Now(), // with a monotonic reading
	}
	// Every escaped character at every offset of a longer string, so each
	// lands in every position of the 8-byte words the encoder skips over.
	for _, c := range []string{`"`, `\`, "<", ">", "&", "\x00", "\x1f", "\x7f", "\u00e9", "\u2028", "\xff", "\U0001F600"} {
		for at := range 20 {
			strs = append(strs, strings.Repeat("a", at)+c+strings.Repeat("b", 20-at))
		}
	}
	for _, s := range strs {
		for _, tm := range times {
			for _, full := range []bool{false, true} {
				for _, e := range fastEvents(s, 42, tm, full) {
					checkSameAsEncodingJSON(t, e)
				}
			}
		}
	}
	for _, e := range []agents.Event{(*agents.TextDelta)(nil), (*agents.ReasoningDelta)(nil), (*agents.RunStarted)(nil)} {
		if _, err := agents.MarshalEvent(e); err == nil {
			t.Errorf("MarshalEvent(nil %T) succeeded", e)
		}
	}
	if _, err := agents.MarshalEvent(nil); err == nil {
		t.Error("MarshalEvent(nil) succeeded")
	}
	// The other types still go through encoding/json unchanged.
	for _, e := range evAll() {
		checkSameAsEncodingJSON(t, e)
	}
}

// FuzzMarshalEvent compares the hand-written encoder with encoding/json on
// arbitrary strings, sequence numbers and times.
func FuzzMarshalEvent(f *testing.F) {
	f.Add("hello", int64(1), int64(1742000000), int64(535000000), 0, true)
	f.Add("<&>\u2028\xff", int64(-7), int64(-62135596800), int64(0), -3600, false)
	f.Add("\x00\"\\", int64(1<<62), int64(253402300800), int64(999999999), 86399, true)
	f.Fuzz(func(t *testing.T, s string, seq, sec, nsec int64, offset int, full bool) {
		tm := time.Unix(sec, nsec%1e9).In(time.FixedZone("z", offset%(48*3600)))
		for _, e := range fastEvents(s, seq, tm, full) {
			checkSameAsEncodingJSON(t, e)
		}
	})
}

// TestMarshalEventDeltaAllocs pins the cost of the most frequent event:
// one allocation for the result, none when AppendEvent reuses a buffer
// (encoding/json needed several per delta, for the reflection walk, the
// time and the copy behind the "type" member).
func TestMarshalEventDeltaAllocs(t *testing.T) {
	e := &agents.TextDelta{EventHeader: agents.EventHeader{RunID: "01890a5d-ac96-774b-bcce-b302099a8057",
		SessionID: "01890a5d-ac96-774b-bcce-b302099a8058", MessageID: "01890a5d-ac96-774b-bcce-b302099a8059",
		Seq: 17, Time: time.Date(2025, 3, 14, 15, 9, 26, 535000000, time.UTC)}, Text: "EMEA sales in 2025 were 1.34 M$"}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := agents.MarshalEvent(e); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("MarshalEvent(TextDelta): %v allocations, want at most 1", n)
	}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = agents.AppendEvent(buf[:0], e); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("AppendEvent(TextDelta) into a large enough buffer: %v allocations, want 0", n)
	}
}

// BenchmarkMarshalEventDelta measures the encoding of one text delta.
func BenchmarkMarshalEventDelta(b *testing.B) {
	e := &agents.TextDelta{EventHeader: agents.EventHeader{RunID: "01890a5d-ac96-774b-bcce-b302099a8057",
		SessionID: "01890a5d-ac96-774b-bcce-b302099a8058", MessageID: "01890a5d-ac96-774b-bcce-b302099a8059",
		Seq: 17, Time: time.Now()}, Text: "EMEA sales in 2025 were 1.34 M$"}
	b.Run("MarshalEvent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := agents.MarshalEvent(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := refMarshalEvent(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
