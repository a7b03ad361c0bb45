package llmfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is a request the Server received.
type Request struct {
	Method string
	// Path is the URL path, e.g. "/v1/chat/completions".
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic value, failing t when it is not a
// JSON object.
func (r Request) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("llmfake: request body to %s is not a JSON object: %v\n%s", r.Path, err, r.Body)
	}
	return m
}

// Decode decodes the body into v.
func (r Request) Decode(v any) error {
	return json.Unmarshal(r.Body, v)
}

// Reply is one scripted answer. The zero value is an empty 200.
type Reply struct {
	// Status defaults to 200.
	Status int
	// Header is added to the response. Content-Type defaults to
	// text/event-stream when Events is set, else application/json.
	Header http.Header
	// Body is written as is after the headers (JSON answers, error
	// bodies), before any Events.
	Body []byte
	// Events are SSE frames (see Frame, Data), each written and flushed
	// on its own.
	Events [][]byte
	// FirstByteDelay is waited before the status line (slow first byte).
	FirstByteDelay time.Duration
	// EventDelay is waited before each event (slow drip).
	EventDelay time.Duration
	// SplitWrites writes each event in pieces of odd sizes (1, 3, 7, ...
	// bytes), flushing after each, to cut UTF-8 sequences and JSON tokens.
	SplitWrites bool
	// ResetAfter, when positive, resets the connection (TCP RST, no chunked
	// terminator) after ResetAfter-1 events were written; 1 resets it
	// right after the headers. 0 disables it.
	ResetAfter int
	// DropConnection closes the connection (RST) before anything is
	// written: the client sees a reset or EOF before any response.
	DropConnection bool
	// Hang keeps the response open after the events until the client goes
	// away (the server then counts a disconnect).
	Hang bool
}

// Server is an httptest server that plays Replies and records Requests.
type Server struct {
	// URL is the base URL, e.g. "http://127.0.0.1:41234".
	URL string
	// HTTP is the underlying test server.
	HTTP *http.Server

	srv *httptest.Server
	t   testing.TB

	mu           sync.Mutex
	replies      []Reply
	respond      func(Request) Reply
	requests     []Request
	unexpected   []string
	disconnected int
	wake         chan struct{}
}

// NewServer starts a server that answers with replies in order. It is
// closed when the test ends; requests beyond the script (without Respond)
// get a 500 and fail the test at cleanup. t may be nil outside tests
// (examples): then call Close.
func NewServer(t testing.TB, replies ...Reply) *Server {
	s := &Server{t: t, replies: slices.Clone(replies), wake: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	s.HTTP = s.srv.Config
	if t != nil {
		t.Cleanup(func() {
			s.Close()
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, u := range s.unexpected {
				t.Errorf("llmfake: unscripted request %s", u)
			}
		})
	}
	return s
}

// Close shuts the server down, cutting open connections. NewServer
// registers it with the test's cleanup.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Enqueue appends replies to the script.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Respond sets the function answering requests once the script is used
// up. It runs on the server's goroutines.
func (s *Server) Respond(fn func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = fn
}

// Requests returns copies of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Request returns request i, failing the test when there is none.
func (s *Server) Request(i int) Request {
	if s.t != nil {
		s.t.Helper()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.requests) {
		msg := fmt.Sprintf("llmfake: request %d not received (got %d)", i, len(s.requests))
		if s.t == nil {
			panic(msg)
		}
		s.t.Fatal(msg)
	}
	return s.requests[i]
}

// Count returns how many requests were received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Disconnected returns how many hanging replies (Reply.Hang) ended
// because the client went away.
func (s *Server) Disconnected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disconnected
}

// WaitDisconnected waits up to d for Disconnected to reach n.
func (s *Server) WaitDisconnected(n int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		s.mu.Lock()
		ok, wake := s.disconnected >= n, s.wake
		s.mu.Unlock()
		if ok {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		select {
		case <-wake:
		case <-time.After(left):
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	var (
		rep Reply
		ok  bool
	)
	if len(s.replies) > 0 {
		rep, s.replies, ok = s.replies[0], s.replies[1:], true
	}
	respond := s.respond
	s.mu.Unlock()
	if !ok {
		if respond == nil {
			s.mu.Lock()
			s.unexpected = append(s.unexpected, r.Method+" "+r.URL.Path)
			s.mu.Unlock()
			http.Error(w, `{"error":{"message":"llmfake: no scripted reply","type":"llmfake"}}`, http.StatusInternalServerError)
			return
		}
		rep = respond(rec)
	}
	s.play(w, r, rep)
}

func (s *Server) play(w http.ResponseWriter, r *http.Request, rep Reply) {
	ctx := r.Context()
	if !sleep(r, rep.FirstByteDelay) {
		return
	}
	if rep.DropConnection {
		s.reset(http.NewResponseController(w))
		return
	}
	h := w.Header()
	for k, v := range rep.Header {
		h[k] = slices.Clone(v)
	}
	if h.Get("Content-Type") == "" {
		if rep.Events != nil {
			h.Set("Content-Type", "text/event-stream")
		} else {
			h.Set("Content-Type", "application/json")
		}
	}
	if rep.Events != nil {
		h.Set("Cache-Control", "no-cache")
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	if len(rep.Body) > 0 {
		w.Write(rep.Body)
	}
	rc.Flush()
	if rep.ResetAfter == 1 {
		s.reset(rc)
		return
	}
	for i, ev := range rep.Events {
		if rep.ResetAfter > 0 && i == rep.ResetAfter-1 {
			s.reset(rc)
			return
		}
		if !sleep(r, rep.EventDelay) {
			return
		}
		if rep.SplitWrites {
			for n, off := 1, 0; off < len(ev); n = n%11 + 2 {
				end := min(off+n, len(ev))
				if _, err := w.Write(ev[off:end]); err != nil {
					return
				}
				rc.Flush()
				off = end
			}
		} else if _, err := w.Write(ev); err != nil {
			return
		}
		rc.Flush()
	}
	if rep.ResetAfter > 0 && rep.ResetAfter-1 >= len(rep.Events) {
		s.reset(rc)
		return
	}
	if rep.Hang {
		<-ctx.Done()
		s.mu.Lock()
		s.disconnected++
		close(s.wake)
		s.wake = make(chan struct{})
		s.mu.Unlock()
	}
}

// reset hijacks the connection and closes it with an RST.
func (s *Server) reset(rc *http.ResponseController) {
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(fmt.Sprintf("llmfake: cannot hijack the connection to reset it: %v", err))
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// Data formats one SSE event with a single data line.
func Data(data string) []byte {
	return []byte("data: " + data + "\n\n")
}

// Frame formats one SSE event named name (none when empty) whose data may
// span several lines.
func Frame(name, data string) []byte {
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	for _, line := range strings.Split(data, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return b.Bytes()
}

// JSONData formats v as the JSON data of an SSE event named name (none
// when empty). It panics when v cannot be encoded, a bug in the test.
func JSONData(name string, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("llmfake: encode event: %v", err))
	}
	return Frame(name, string(b))
}

// JSONReply returns a 200 reply with v as its JSON body.
func JSONReply(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("llmfake: encode reply: %v", err))
	}
	return Reply{Body: b}
}

// Truncated returns r without its events from index keep on: the stream
// ends cleanly (HTTP-wise) but early, before the protocol's terminator.
func (r Reply) Truncated(keep int) Reply {
	r.Events = slices.Clone(r.Events[:min(keep, len(r.Events))])
	return r
}

// CutInside returns r keeping keep events and then half of the next one,
// so the stream ends inside an event.
func (r Reply) CutInside(keep int) Reply {
	ev := slices.Clone(r.Events[:min(keep, len(r.Events))])
	if keep < len(r.Events) {
		next := r.Events[keep]
		ev = append(ev, next[:len(next)/2])
	}
	r.Events = ev
	return r
}

// Inject returns r with frame inserted before event index at.
func (r Reply) Inject(at int, frame []byte) Reply {
	r.Events = slices.Insert(slices.Clone(r.Events), min(at, len(r.Events)), frame)
	return r
}

// WithHeader returns r with header k set to v.
func (r Reply) WithHeader(k, v string) Reply {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(k, v)
	r.Header = h
	return r
}

// Bytes returns the reply's body and events as one byte slice, as a client
// would read them (a recorded stream for benchmarks).
func (r Reply) Bytes() []byte {
	var b bytes.Buffer
	b.Write(r.Body)
	for _, ev := range r.Events {
		b.Write(ev)
	}
	return b.Bytes()
}
