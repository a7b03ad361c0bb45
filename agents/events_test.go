package agents_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// Helpers of this file are prefixed with ev.

var evTime = time.Date(2025, 3, 14, 15, 9, 26, 535000000, time.UTC)

func evHeader(seq int64) agents.EventHeader {
	return agents.EventHeader{RunID: "run-1", ParentRunID: "run-0", Agent: "analyst", SessionID: "s1", MessageID: "m1", Seq: seq, Time: evTime}
}

func evMessages() []agents.Message {
	return []agents.Message{
		agents.UserMessage("Revenue 2025?"),
		{Role: domain.RoleAssistant, Parts: []domain.Part{
			{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "t", Signature: "s", Provider: "p", Opaque: json.RawMessage(`{"k":[1,2]}`)}},
			{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "c1", Name: "revenue", Arguments: json.RawMessage(`{"year":2025}`)}},
		}},
		{Role: domain.RoleTool, Parts: []domain.Part{
			{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: "c1", Name: "revenue", Content: "1.2M", IsError: true}},
		}},
	}
}

// evAll returns one fully populated event of each of the nine types.
func evAll() []agents.Event {
	usage := domain.Usage{PromptTokens: 100, CompletionTokens: 20, CachedTokens: 10, CacheWriteTokens: 5, ReasoningTokens: 3, TotalTokens: 120}
	conf := &agents.ConfirmationRequest{
		Token: "tok.sig", CallID: "c2", Tool: "delete_report", Description: "Deletes a report.",
		Permission: agents.PermDestructive, Arguments: json.RawMessage(`{"id":"r1"}`),
		ArgumentsHash: "abc123", ExpiresAt: evTime.Add(10 * time.Minute),
	}
	questions := []agents.Question{{
		ID: "q1", Question: "Which year?", MultiSelect: true, AllowOther: true,
		Options: []agents.QuestionOption{{Label: "2024", Description: "last year"}, {Label: "2025"}},
	}}
	cp := &agents.Checkpoint{
		Version: agents.CheckpointVersion, ID: "cp-1", RunID: "run-1", Agent: "analyst",
		Kind: domain.CheckpointConfirmation, TenantID: "t1", UserID: "u1", SessionID: "s1", MessageID: "m1",
		System: "be brief", History: []agents.Message{agents.UserMessage("earlier")}, Messages: evMessages(),
		Pending:   agents.PendingCall{CallID: "c1", Tool: "revenue", Arguments: json.RawMessage(`{"year":2025}`), Part: 0},
		Questions: questions, Confirmation: conf, Turn: 2, ToolCalls: 3, LimitHit: true, Usage: usage, CreatedAt: evTime,
	}
	return []agents.Event{
		&agents.RunStarted{EventHeader: evHeader(1), Model: "gpt", ResumedFrom: "run-prev"},
		&agents.TextDelta{EventHeader: evHeader(2), Text: "Zürich \"quoted\" \n東京"},
		&agents.ReasoningDelta{EventHeader: evHeader(3), Text: "thinking <b>"},
		&agents.ToolCallStarted{EventHeader: evHeader(4), CallID: "c1", Name: "revenue", Arguments: json.RawMessage(`{"year":2025,"tags":["a"]}`), Permission: agents.PermWrite},
		&agents.ToolCallFinished{
			EventHeader: evHeader(5), CallID: "c1", Name: "revenue", Summary: "1.2M", Truncated: true,
			Payload: map[string]any{"rows": []any{map[string]any{"year": 2025.0, "total": 1.2e6}}, "ok": true, "note": nil},
			Artifacts: []domain.Artifact{{ID: "a1", TenantID: "t1", SessionID: "s1", MessageID: "m1", Kind: domain.ArtifactChart,
				Name: "chart.json", MediaType: "application/json", SHA256: "ff", Size: 12, URI: "artifact://a1",
				Metadata: map[string]string{"k": "v"}, CreatedAt: evTime}},
			Datasets:  []string{"sales", "costs"},
			Citations: []domain.Citation{{Source: "kb", DocumentID: "d1", Title: "T", URL: "https://example.com", Snippet: "s", Score: 0.5}},
			Error:     "boom", ErrorCode: "timeout", Duration: 1500 * time.Millisecond,
		},
		&agents.Interrupted{EventHeader: evHeader(6), Kind: domain.CheckpointConfirmation, Questions: questions, Confirmation: conf, Checkpoint: cp},
		&agents.UsageReported{EventHeader: evHeader(7), Turn: 2, Usage: usage, Total: usage.Add(usage), CostUSD: 0.0125},
		&agents.RunFinished{EventHeader: evHeader(8), Text: "Revenue was 1.2M.", Reason: agents.FinishToolLimit, Note: "limit",
			Usage: usage, Turns: 3, ToolCalls: 4, Messages: evMessages()},
		&agents.RunFailed{EventHeader: evHeader(9), Code: "model_error", Message: "The language model failed.", Messages: evMessages()},
	}
}

func TestEventTypes(t *testing.T) {
	t.Parallel()
	want := []agents.EventType{
		agents.EventRunStarted, agents.EventTextDelta, agents.EventReasoningDelta, agents.EventToolCallStarted,
		agents.EventToolCallFinished, agents.EventInterrupted, agents.EventUsage, agents.EventRunFinished, agents.EventRunFailed,
	}
	all := evAll()
	if len(all) != len(want) {
		t.Fatalf("%d events, want %d", len(all), len(want))
	}
	seen := map[agents.EventType]bool{}
	for i, e := range all {
		if e.Type() != want[i] {
			t.Errorf("%T.Type() = %q, want %q", e, e.Type(), want[i])
		}
		if seen[e.Type()] {
			t.Errorf("duplicate type %q", e.Type())
		}
		seen[e.Type()] = true
		if h := e.Header(); h.Seq != int64(i+1) || h.RunID != "run-1" {
			t.Errorf("%T.Header() = %+v", e, h)
		}
		// Header returns a pointer into the event: writes stick.
		e.Header().Agent = "changed"
		if e.Header().Agent != "changed" {
			t.Errorf("%T.Header() is not the event's own header", e)
		}
	}
}

func TestMarshalEventRoundTrip(t *testing.T) {
	t.Parallel()
	for _, ev := range evAll() {
		t.Run(string(ev.Type()), func(t *testing.T) {
			t.Parallel()
			b, err := agents.MarshalEvent(ev)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(b) {
				t.Fatalf("not valid JSON: %s", b)
			}
			prefix := `{"type":"` + string(ev.Type()) + `",`
			if !bytes.HasPrefix(b, []byte(prefix)) {
				t.Errorf("encoding does not start with %s: %s", prefix, b)
			}
			// The type member appears once, and the header fields are flat.
			if n := bytes.Count(b, []byte(`"type":"`+string(ev.Type())+`"`)); n != 1 {
				t.Errorf("type member appears %d times", n)
			}
			var flat map[string]any
			if err := json.Unmarshal(b, &flat); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"run_id", "parent_run_id", "agent", "seq", "time"} {
				if _, ok := flat[k]; !ok {
					t.Errorf("header member %q missing at top level: %s", k, b)
				}
			}

			back, err := agents.UnmarshalEvent(b)
			if err != nil {
				t.Fatalf("UnmarshalEvent: %v\n%s", err, b)
			}
			if reflect.TypeOf(back) != reflect.TypeOf(ev) {
				t.Fatalf("decoded %T, want %T", back, ev)
			}
			if !reflect.DeepEqual(back, ev) {
				gb, _ := json.Marshal(back)
				wb, _ := json.Marshal(ev)
				t.Errorf("round trip differs:\n got %s\nwant %s", gb, wb)
			}
			// Encoding again gives the same bytes.
			b2, err := agents.MarshalEvent(back)
			if err != nil || !bytes.Equal(b, b2) {
				t.Errorf("re-encoding differs:\n%s\n%s", b, b2)
			}
		})
	}
}

func TestMarshalEventPayloadIsGeneric(t *testing.T) {
	t.Parallel()
	type row struct {
		Year  int     `json:"year"`
		Total float64 `json:"total"`
	}
	ev := &agents.ToolCallFinished{EventHeader: evHeader(1), CallID: "c", Name: "n",
		Payload: struct {
			Rows []row `json:"rows"`
		}{Rows: []row{{2025, 1.5}}}}
	b, err := agents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	back, err := agents.UnmarshalEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"rows": []any{map[string]any{"year": 2025.0, "total": 1.5}}}
	if got := back.(*agents.ToolCallFinished).Payload; !reflect.DeepEqual(got, want) {
		t.Errorf("payload = %#v, want %#v", got, want)
	}
}

func TestMarshalEventRunFailedDropsErr(t *testing.T) {
	t.Parallel()
	ev := &agents.RunFailed{EventHeader: evHeader(1), Code: "internal", Message: "m", Err: errors.New("secret dsn")}
	b, err := agents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("secret dsn")) {
		t.Errorf("the underlying error leaked into the encoding: %s", b)
	}
	back, err := agents.UnmarshalEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	if f := back.(*agents.RunFailed); f.Err != nil || f.Code != "internal" || f.Message != "m" {
		t.Errorf("decoded %+v", f)
	}
}

func TestMarshalEventZeroValue(t *testing.T) {
	t.Parallel()
	b, err := agents.MarshalEvent(&agents.TextDelta{})
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) || !bytes.HasPrefix(b, []byte(`{"type":"text.delta",`)) {
		t.Errorf("encoding = %s", b)
	}
	back, err := agents.UnmarshalEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, &agents.TextDelta{}) {
		t.Errorf("decoded %+v", back)
	}
}

func TestMarshalEventNilPointer(t *testing.T) {
	b, err := agents.MarshalEvent((*agents.TextDelta)(nil))
	if err == nil && !json.Valid(b) {
		t.Errorf("MarshalEvent(nil *TextDelta) = %s, nil; want an error or valid JSON", b)
	}
}

func TestMarshalEventUnencodablePayload(t *testing.T) {
	t.Parallel()
	ev := &agents.ToolCallFinished{EventHeader: evHeader(1), CallID: "c", Name: "n", Payload: make(chan int)}
	b, err := agents.MarshalEvent(ev)
	if err == nil {
		t.Fatalf("MarshalEvent = %s, want an error", b)
	}
	if !strings.Contains(err.Error(), string(agents.EventToolCallFinished)) {
		t.Errorf("error %q does not name the event type", err)
	}
	var ute *json.UnsupportedTypeError
	if !errors.As(err, &ute) {
		t.Errorf("error %v does not wrap the json error", err)
	}
}

func TestUnmarshalEventErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want string
	}{
		{"unknown type", `{"type":"run.exploded","run_id":"r"}`, "run.exploded"},
		{"no type", `{"run_id":"r"}`, "unknown type"},
		{"empty", ``, "decode event"},
		{"invalid JSON", `{"type":`, "decode event"},
		{"not an object", `[1,2]`, "decode event"},
		{"type not a string", `{"type":5}`, "decode event"},
		{"bad field type", `{"type":"text.delta","text":5}`, "text.delta"},
		{"bad permission", `{"type":"tool.started","permission":"root"}`, "tool.started"},
		{"bad time", `{"type":"usage","time":"yesterday"}`, "usage"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := agents.UnmarshalEvent([]byte(tc.data))
			if err == nil {
				t.Fatalf("UnmarshalEvent = %#v, want an error", ev)
			}
			if ev != nil {
				t.Errorf("got event %#v with error", ev)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestUnmarshalEventIgnoresUnknownMembers(t *testing.T) {
	t.Parallel()
	ev, err := agents.UnmarshalEvent([]byte(`{"type":"text.delta","seq":4,"text":"hi","future_field":{"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	td, ok := ev.(*agents.TextDelta)
	if !ok || td.Text != "hi" || td.Seq != 4 {
		t.Errorf("decoded %#v", ev)
	}
}
