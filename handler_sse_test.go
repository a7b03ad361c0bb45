package bichat_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

func hdr(seq int64) agents.EventHeader {
	return agents.EventHeader{RunID: "run-1", SessionID: "s-1", MessageID: "m-1", Seq: seq, Time: time.Unix(1700000000, 0).UTC()}
}

// sseServer serves WriteSSE over events and records what it returned.
func sseServer(t *testing.T, events iter.Seq2[agents.Event, error], opts bichat.SSEOptions) (*httptest.Server, chan error) {
	t.Helper()
	errs := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		errs <- bichat.WriteSSE(w, r, events, opts)
	}))
	t.Cleanup(srv.Close)
	return srv, errs
}

func getStream(t *testing.T, srv *httptest.Server) (*http.Response, *sseStream) {
	t.Helper()
	res, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return res, &sseStream{res: res, r: bufio.NewReader(res.Body), cancel: func() {}}
}

func TestSSEWriterEventsAndTerminal(t *testing.T) {
	t.Parallel()
	var after atomic.Bool
	events := func(yield func(agents.Event, error) bool) {
		evs := []agents.Event{
			&agents.RunStarted{EventHeader: hdr(1), Model: "m"},
			&agents.TextDelta{EventHeader: hdr(2), Text: "line one\nline two"},
			&agents.ReasoningDelta{EventHeader: hdr(3), Text: "thinking"},
			&agents.ToolCallStarted{EventHeader: hdr(4), CallID: "c1", Name: "q", Arguments: json.RawMessage(`{"sql":"SELECT 1"}`)},
			// A sub-agent's start and end are not sent; its text is.
			&agents.RunStarted{EventHeader: agents.EventHeader{RunID: "sub", ParentRunID: "run-1", Agent: "helper", Seq: 5}},
			&agents.TextDelta{EventHeader: agents.EventHeader{RunID: "sub", ParentRunID: "run-1", Agent: "helper", Seq: 6}, Text: "sub"},
			&agents.RunFinished{EventHeader: agents.EventHeader{RunID: "sub", ParentRunID: "run-1", Agent: "helper", Seq: 7}, Text: "sub"},
			&agents.ToolCallFinished{EventHeader: hdr(8), CallID: "c1", Name: "q", Summary: "1 row", Payload: []int{1},
				Artifacts: []domain.Artifact{{ID: "a1", Name: "x.png", MediaType: "image/png", Kind: domain.ArtifactChart, Size: 3}}},
			&agents.UsageReported{EventHeader: hdr(9), Turn: 1, Usage: domain.Usage{PromptTokens: 5}},
			&agents.RunFinished{EventHeader: hdr(10), Text: "line one\nline two", Reason: agents.FinishEndTurn},
			// Nothing after the terminal event is read.
			&agents.TextDelta{EventHeader: hdr(11), Text: "never"},
		}
		for _, ev := range evs {
			if ev.Header().Seq == 11 {
				after.Store(true)
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
	srv, errs := sseServer(t, events, bichat.SSEOptions{ArtifactURL: func(a domain.Artifact) string { return "/files/" + a.ID }})
	res, st := getStream(t, srv)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v", res.StatusCode, res.Header)
	}
	evs := st.all(t)
	if err := <-errs; err != nil {
		t.Fatalf("WriteSSE: %v", err)
	}
	want := []string{"message_start", "text", "reasoning", "tool_call", "text", "tool_result", "token_update", "message_complete"}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	ids := []string{}
	for _, e := range evs {
		ids = append(ids, e.id)
	}
	if !slices.Equal(ids, []string{"1", "2", "3", "4", "6", "8", "9", "10"}) {
		t.Errorf("ids %v", ids)
	}
	if txt := payload[bichat.EventText](t, evs[1]); txt.Text != "line one\nline two" || txt.RunID != "run-1" || txt.MessageID != "m-1" {
		t.Errorf("multi-line text = %+v", txt)
	}
	if sub := payload[bichat.EventText](t, evs[4]); sub.Agent != "helper" || sub.ParentRunID != "run-1" {
		t.Errorf("sub-agent text = %+v", sub)
	}
	if r := payload[bichat.EventToolResult](t, evs[5]); len(r.Artifacts) != 1 || r.Artifacts[0].URL != "/files/a1" || string(r.Payload) != "[1]" {
		t.Errorf("tool_result = %+v", r)
	}
	if after.Load() {
		t.Error("WriteSSE read past the terminal event")
	}
}

func TestSSEWriterHeartbeatAndDisconnect(t *testing.T) {
	t.Parallel()
	stopped := make(chan struct{})
	release := make(chan struct{})
	events := func(yield func(agents.Event, error) bool) {
		defer close(stopped)
		if !yield(&agents.RunStarted{EventHeader: hdr(1)}, nil) {
			return
		}
		<-release // a model that thinks for a long time
		yield(&agents.TextDelta{EventHeader: hdr(2), Text: "late"}, nil)
	}
	srv, errs := sseServer(t, events, bichat.SSEOptions{Heartbeat: 10 * time.Millisecond})
	_, st := getStream(t, srv)
	if ev, err := st.next(); err != nil || ev.name != bichat.SSEMessageStart {
		t.Fatalf("first event %+v %v", ev, err)
	}
	// Heartbeats arrive as comments while no event is due.
	deadline := time.Now().Add(httpGuard)
	for len(st.comments) < 3 {
		line, err := st.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, ":") {
			st.comments = append(st.comments, line)
		}
		if time.Now().After(deadline) {
			t.Fatal("no heartbeats")
		}
	}
	if !strings.HasPrefix(st.comments[0], ": heartbeat") {
		t.Errorf("comment %q", st.comments[0])
	}
	// The client leaves while no event is due: WriteSSE returns at once
	// with the context's error, and the iterator stops at its next yield.
	st.res.Body.Close()
	select {
	case err := <-errs:
		if err == nil {
			t.Error("WriteSSE returned nil after the client left")
		}
	case <-time.After(httpGuard):
		t.Fatal("WriteSSE did not return after the client left")
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(httpGuard):
		t.Fatal("the iterator was not stopped")
	}
}

func TestSSEWriterErrors(t *testing.T) {
	t.Parallel()
	t.Run("error first is a JSON response", func(t *testing.T) {
		t.Parallel()
		srv, errs := sseServer(t, func(yield func(agents.Event, error) bool) {
			yield(nil, errors.Join(errors.New("bichat: message"), domain.ErrNotFound))
		}, bichat.SSEOptions{})
		res, _ := getStream(t, srv)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 404 || !strings.Contains(string(b), `"code":"not_found"`) {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
		if err := <-errs; !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("WriteSSE: %v", err)
		}
	})
	t.Run("empty is 204", func(t *testing.T) {
		t.Parallel()
		srv, errs := sseServer(t, func(func(agents.Event, error) bool) {}, bichat.SSEOptions{})
		res, _ := getStream(t, srv)
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			t.Fatalf("status %d", res.StatusCode)
		}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("error mid-stream is a stream_error event", func(t *testing.T) {
		t.Parallel()
		srv, errs := sseServer(t, func(yield func(agents.Event, error) bool) {
			if yield(&agents.RunStarted{EventHeader: hdr(1)}, nil) {
				yield(nil, errors.New("store down: postgres://u:pw@h/db"))
			}
		}, bichat.SSEOptions{})
		_, st := getStream(t, srv)
		evs := st.all(t)
		if got := names(evs); !slices.Equal(got, []string{"message_start", "stream_error"}) {
			t.Fatalf("events %v", got)
		}
		e := payload[bichat.EventError](t, evs[1])
		if evs[1].id != "" || e.Code != "stream_error" || strings.Contains(string(evs[1].data), "postgres") {
			t.Fatalf("stream_error %q %s", evs[1].id, evs[1].data)
		}
		if err := <-errs; err == nil {
			t.Fatal("WriteSSE returned nil")
		}
	})
	t.Run("interrupt kinds", func(t *testing.T) {
		t.Parallel()
		q := &agents.Interrupted{EventHeader: hdr(1), Kind: domain.CheckpointQuestion, Questions: []agents.Question{{ID: "q1", Question: "?"}}}
		c := &agents.Interrupted{EventHeader: hdr(1), Kind: domain.CheckpointConfirmation, Confirmation: &agents.ConfirmationRequest{Token: "tok"}}
		if name, _, term, ok := bichat.SSEEvent(q, bichat.SSEOptions{}); name != bichat.SSEInterrupt || !term || !ok {
			t.Errorf("question: %s %v %v", name, term, ok)
		}
		if name, data, term, ok := bichat.SSEEvent(c, bichat.SSEOptions{}); name != bichat.SSEConfirmationRequired || !term || !ok ||
			data.(bichat.EventConfirmation).Confirmation.Token != "tok" {
			t.Errorf("confirmation: %s %v %v", name, term, ok)
		}
		f := &agents.RunFailed{EventHeader: hdr(2), Code: "timeout", Message: "too slow"}
		if name, data, term, _ := bichat.SSEEvent(f, bichat.SSEOptions{}); name != bichat.SSEMessageError || !term || data.(bichat.EventError).Code != "timeout" {
			t.Errorf("failed: %s %v", name, term)
		}
	})
}

func TestHTTPStatusMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{nil, 200, ""},
		{domain.Invalid("title", "must not be empty"), 400, "invalid"},
		{bichat.ErrUnauthenticated, 401, "unauthenticated"},
		{domain.ErrForbidden, 403, "forbidden"},
		{agents.ErrTokenExpired, 403, "token_refused"},
		{errors.Join(errors.New("x"), domain.ErrNotFound), 404, "not_found"},
		{domain.ErrConflict, 409, "conflict"},
		{bichat.ErrExpired, 409, "expired"},
		{bichat.ErrClosed, 503, "unavailable"},
		{domain.ErrTooLarge, 413, "too_large"},
		{&http.MaxBytesError{Limit: 10}, 413, "too_large"},
		{bichat.ErrUnsupportedMediaType, 415, "unsupported_media_type"},
		{&bichat.RateLimitError{RetryAfter: time.Second}, 429, "rate_limited"},
		{errors.ErrUnsupported, 501, "unsupported"},
		{errors.New("boom"), 500, "internal"},
	}
	for _, c := range cases {
		if got := bichat.HTTPStatus(c.err); got != c.status {
			t.Errorf("HTTPStatus(%v) = %d, want %d", c.err, got, c.status)
		}
		if got := bichat.ErrorCode(c.err); got != c.code {
			t.Errorf("ErrorCode(%v) = %q, want %q", c.err, got, c.code)
		}
	}
	_, body := bichat.ErrorResponse(agents.ErrTokenReplayed)
	if body.Error.Message != "the confirmation token was already used" {
		t.Errorf("token message %q", body.Error.Message)
	}
	_, body = bichat.ErrorResponse(errors.New("dial postgres://u:pw@h/db"))
	if body.Error.Message != "internal error" {
		t.Errorf("500 message %q", body.Error.Message)
	}
	rec := httptest.NewRecorder()
	bichat.WriteError(rec, nil, nil, &bichat.RateLimitError{RetryAfter: 2100 * time.Millisecond})
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "3" {
		t.Errorf("WriteError 429: %d %v", rec.Code, rec.Header())
	}
}

// TestSSEWriterProviderItems: provider items go out as provider_item, with
// their bulky data left out (and flagged) past the size limit.
func TestSSEWriterProviderItems(t *testing.T) {
	t.Parallel()
	small := agents.ProviderItem{Provider: "anthropic", Kind: agents.ItemCitation, Text: "grew 12%",
		Citation: &domain.Citation{Source: "document", Title: "Q3"}}
	big := agents.ProviderItem{Provider: "gemini", Kind: agents.ItemMedia, MediaType: "image/png", Data: make([]byte, 4096)}
	events := func(yield func(agents.Event, error) bool) {
		for _, ev := range []agents.Event{
			&agents.ProviderItemReported{EventHeader: hdr(1), Item: small},
			&agents.ProviderItemReported{EventHeader: hdr(2), Item: big},
			&agents.RunFinished{EventHeader: hdr(3), Text: "done", Reason: agents.FinishEndTurn},
		} {
			if !yield(ev, nil) {
				return
			}
		}
	}
	srv, errs := sseServer(t, events, bichat.SSEOptions{MaxToolResultBytes: 1024})
	_, st := getStream(t, srv)
	evs := st.all(t)
	if err := <-errs; err != nil {
		t.Fatalf("WriteSSE: %v", err)
	}
	if got := names(evs); !slices.Equal(got, []string{"provider_item", "provider_item", "message_complete"}) {
		t.Fatalf("names %v", got)
	}
	if p := payload[bichat.EventProviderItem](t, evs[0]); p.Truncated || p.Item.Citation == nil || p.Item.Citation.Title != "Q3" || p.Item.Text != "grew 12%" {
		t.Errorf("citation item = %+v", p)
	}
	if p := payload[bichat.EventProviderItem](t, evs[1]); !p.Truncated || len(p.Item.Data) != 0 || p.Item.MediaType != "image/png" {
		t.Errorf("media item over the limit = %+v", p)
	}
}

// flushCounter is a ResponseWriter that counts flushes; the first flush
// waits (at most httpGuard) until hold is closed.
type flushCounter struct {
	header  http.Header
	mu      sync.Mutex
	body    bytes.Buffer
	flushes int
	hold    chan struct{}
}

func (f *flushCounter) Header() http.Header { return f.header }
func (f *flushCounter) WriteHeader(int)     {}
func (f *flushCounter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.body.Write(p)
}
func (f *flushCounter) Flush() {
	f.mu.Lock()
	f.flushes++
	first := f.flushes == 1
	f.mu.Unlock()
	if first {
		select {
		case <-f.hold:
		case <-time.After(httpGuard):
		}
	}
}

// TestSSEWriterBatchesReadyEvents: events that are ready while the
// writer is busy go out in one write and one flush, not one each; the
// stream still ends at the terminal event with every event in order.
func TestSSEWriterBatchesReadyEvents(t *testing.T) {
	t.Parallel()
	const texts = 20
	w := &flushCounter{header: http.Header{}, hold: make(chan struct{})}
	var after atomic.Bool
	events := func(yield func(agents.Event, error) bool) {
		if !yield(&agents.RunStarted{EventHeader: hdr(1), Model: "m"}, nil) {
			return
		}
		for i := range texts {
			if !yield(&agents.TextDelta{EventHeader: hdr(int64(2 + i)), Text: "x"}, nil) {
				return
			}
		}
		more := yield(&agents.RunFinished{EventHeader: hdr(texts + 2), Text: strings.Repeat("x", texts)}, nil)
		// Everything up to the terminal event is ready: the writer's
		// first flush may return.
		close(w.hold)
		if more {
			after.Store(true)
			yield(&agents.TextDelta{EventHeader: hdr(texts + 3), Text: "never"}, nil)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/events", nil)
	if err := bichat.WriteSSE(w, r, events, bichat.SSEOptions{}); err != nil {
		t.Fatalf("WriteSSE: %v", err)
	}
	st := &sseStream{res: &http.Response{Body: io.NopCloser(&w.body)}, r: bufio.NewReader(&w.body), cancel: func() {}}
	evs := st.all(t)
	if len(evs) != texts+2 || evs[0].name != bichat.SSEMessageStart || evs[len(evs)-1].name != bichat.SSEMessageComplete {
		t.Fatalf("%d events: %v", len(evs), names(evs))
	}
	for i, e := range evs {
		if e.id != strconv.Itoa(i+1) {
			t.Fatalf("event %d has id %q", i, e.id)
		}
	}
	// The first flush (whatever it held), then one for the rest.
	if w.flushes > 2 {
		t.Errorf("%d flushes for %d events that were ready together, want at most 2", w.flushes, len(evs))
	}
	if after.Load() {
		t.Error("WriteSSE read past the terminal event")
	}
}

// TestSSEWriterFlushesBeforeUnsentEvent: an event is flushed even when
// the last event ready after it is one that is not sent (a sub-agent's
// start), so it does not wait for the next sent event.
func TestSSEWriterFlushesBeforeUnsentEvent(t *testing.T) {
	t.Parallel()
	received := make(chan struct{})
	var waited atomic.Bool
	events := func(yield func(agents.Event, error) bool) {
		if !yield(&agents.TextDelta{EventHeader: hdr(1), Text: "first"}, nil) ||
			!yield(&agents.RunStarted{EventHeader: agents.EventHeader{RunID: "sub", ParentRunID: "run-1", Agent: "helper", Seq: 2}}, nil) {
			return
		}
		// The run holds here until the client has the text.
		select {
		case <-received:
		case <-time.After(httpGuard):
			waited.Store(true)
		}
		yield(&agents.RunFinished{EventHeader: hdr(3), Text: "first"}, nil)
	}
	srv, errs := sseServer(t, events, bichat.SSEOptions{})
	_, st := getStream(t, srv)
	ev, err := st.next()
	if err != nil || ev.name != bichat.SSEText {
		t.Fatalf("first event %+v %v", ev, err)
	}
	close(received)
	if rest := st.all(t); !slices.Equal(names(rest), []string{bichat.SSEMessageComplete}) {
		t.Fatalf("rest %v", names(rest))
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if waited.Load() {
		t.Fatal("the text was held back until the next event")
	}
}
