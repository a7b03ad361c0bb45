package bichat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// DefaultMaxBodyBytes is the default HandlerOptions.MaxBodyBytes.
const DefaultMaxBodyBytes = 1 << 20

// HandlerOptions configure NewHandler. Authenticate is required; every
// other zero value means a documented default.
type HandlerOptions struct {
	// Prefix is the path the routes live under (default "/api"): e.g.
	// GET /api/sessions. It starts with "/" and has no trailing "/".
	Prefix string
	// Authenticate returns the caller of a request: the host's own
	// authentication (session cookie, bearer token, mTLS). An error
	// answers 401 (the error's text is not sent; it is logged at debug
	// level). The principal's permissions decide what it may do: a viewer
	// (domain.AccessViewer) can read but not write or delete (403). A
	// principal that fails domain.Principal.Validate is a bug of the host:
	// 500, logged.
	Authenticate func(r *http.Request) (domain.Principal, error)
	// Allow, when set, is called after authentication for every request
	// except the OpenAPI document: return nil to serve it or an error to
	// refuse it, typically ErrTooManyRequests or a *RateLimitError (429
	// with Retry-After) from the host's rate limiter.
	Allow func(r *http.Request, p domain.Principal) error
	// MaxBodyBytes caps request bodies (default 1 MiB); a larger body is
	// answered 413.
	MaxBodyBytes int64
	// MaxToolResultBytes caps the payload of each tool_result event
	// (default 64 KiB; see SSEOptions.MaxToolResultBytes).
	MaxToolResultBytes int
	// Heartbeat is the interval of SSE heartbeat comments (default 15 s).
	Heartbeat time.Duration
	// Models are names or aliases the models route offers besides the
	// service's model, resolved through Config.Models when NewHandler
	// runs (a name that does not resolve is logged and left out). A
	// session is created on one of them with {"model": name}.
	Models []string
	// Logger reports server errors (a 500's cause) and failed streams;
	// nil means the service's Config.Logger. The service's redactor
	// scrubs its records.
	Logger *slog.Logger
}

// Handler serves the HTTP API of a Service: sessions, messages, runs
// streamed as server-sent events, answers and decisions, artifacts,
// models, recipes, and the API's OpenAPI document. Build it with
// NewHandler and mount it on a server or mux:
//
//	mux.Handle("/api/", bichat.NewHandler(svc, bichat.HandlerOptions{Authenticate: auth}))
//
// Routes (under HandlerOptions.Prefix, "/api" by default):
//
//	GET    /sessions                         list (page, page_size, search, sort, order)
//	POST   /sessions                         create {"title","model"}
//	GET    /sessions/{session_id}            get
//	PATCH  /sessions/{session_id}            rename {"title"}
//	DELETE /sessions/{session_id}            delete with everything in it
//	GET    /sessions/{session_id}/messages   list (limit, before)
//	POST   /sessions/{session_id}/messages   ask {"text"}: 202 with the question and the answer's placeholder
//	GET    /messages/{message_id}            get
//	GET    /messages/{message_id}/events     the run as server-sent events (Last-Event-ID or ?after= resumes)
//	POST   /messages/{message_id}/cancel     stop the run
//	GET    /messages/{message_id}/interrupt  what an awaiting message waits for
//	POST   /messages/{message_id}/answers    answer its questions {"answers":{id:{"selected":[],"text":""}}}
//	POST   /messages/{message_id}/approve    run the confirmed tool call {"token"}
//	POST   /messages/{message_id}/deny       refuse it {"token","reason"}
//	GET    /messages/{message_id}/artifacts  list the files the answer produced
//	POST   /messages/{message_id}/recipe     remember a good answer (Service.SaveRecipe)
//	GET    /artifacts/{artifact_id}/content  download a file (as an attachment)
//	GET    /models                           models a session can use
//	GET    /openapi.json                     the OpenAPI 3.1 document of these routes (no authentication)
//
// Runs belong to the service: posting a question (or an answer, or a
// decision) starts the run and answers at once with the message ids; the
// run goes on whether or not anyone watches, and the events route follows
// it (replay, then live). The events route answers a message it cannot
// stream (unknown, another user's) with its JSON status: it sends the
// stream's headers with the first event, or after a heartbeat interval
// (HandlerOptions.Heartbeat) when none is due by then. Every error is
// JSON (see ErrorBody and HTTPStatus). A Handler is safe for concurrent
// use.
type Handler struct {
	svc     *Service
	opts    HandlerOptions
	prefix  string
	logger  *slog.Logger
	mux     *http.ServeMux
	routes  []string
	models  []ModelView
	openapi []byte
	sse     SSEOptions
}

// NewHandler returns the HTTP API of svc. It panics when svc or
// opts.Authenticate is nil or opts.Prefix is malformed, which are
// programming errors found at start-up.
func NewHandler(svc *Service, opts HandlerOptions) *Handler {
	if svc == nil {
		panic("bichat: NewHandler: nil *Service")
	}
	if opts.Authenticate == nil {
		panic("bichat: NewHandler: HandlerOptions.Authenticate is required (the host authenticates requests)")
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = "/api"
	}
	if prefix != "/" {
		prefix = strings.TrimSuffix(prefix, "/")
	} else {
		prefix = ""
	}
	if prefix != "" && (!strings.HasPrefix(prefix, "/") || strings.ContainsAny(prefix, "{}? #") || strings.Contains(prefix, "//")) {
		panic(fmt.Sprintf("bichat: NewHandler: HandlerOptions.Prefix %q must be a path such as /api", opts.Prefix))
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.MaxToolResultBytes == 0 {
		opts.MaxToolResultBytes = DefaultMaxToolResultBytes
	}
	logger := opts.Logger
	if logger == nil {
		logger = svc.cfg.Logger // already scrubbed by the service's redactor
	} else if svc.redact != nil {
		logger = slog.New(svc.redact.Handler(logger.Handler()))
	}
	h := &Handler{svc: svc, opts: opts, prefix: prefix, logger: logger, mux: http.NewServeMux()}
	h.sse = SSEOptions{Heartbeat: opts.Heartbeat, MaxToolResultBytes: opts.MaxToolResultBytes, Logger: logger,
		ArtifactURL: func(a domain.Artifact) string { return h.artifactURL(a.ID) }}
	h.models = h.resolveModels()
	h.openapi = openAPIDocument(prefix)

	h.handle("GET /sessions", domain.PermRead, h.listSessions)
	h.handle("POST /sessions", domain.PermWrite, h.createSession)
	h.handle("GET /sessions/{session_id}", domain.PermRead, h.getSession)
	h.handle("PATCH /sessions/{session_id}", domain.PermWrite, h.renameSession)
	h.handle("DELETE /sessions/{session_id}", domain.PermDelete, h.deleteSession)
	h.handle("GET /sessions/{session_id}/messages", domain.PermRead, h.listMessages)
	h.handle("POST /sessions/{session_id}/messages", domain.PermWrite, h.postMessage)
	h.handle("GET /messages/{message_id}", domain.PermRead, h.getMessage)
	h.handle("GET /messages/{message_id}/events", domain.PermRead, h.streamEvents)
	h.handle("POST /messages/{message_id}/cancel", domain.PermWrite, h.cancelRun)
	h.handle("GET /messages/{message_id}/interrupt", domain.PermRead, h.getInterrupt)
	h.handle("POST /messages/{message_id}/answers", domain.PermWrite, h.answer)
	h.handle("POST /messages/{message_id}/approve", domain.PermWrite, h.approve)
	h.handle("POST /messages/{message_id}/deny", domain.PermWrite, h.deny)
	h.handle("GET /messages/{message_id}/artifacts", domain.PermRead, h.listArtifacts)
	h.handle("POST /messages/{message_id}/recipe", domain.PermWrite, h.saveRecipe)
	h.handle("GET /artifacts/{artifact_id}/content", domain.PermRead, h.downloadArtifact)
	h.handle("GET /models", domain.PermRead, h.listModels)
	h.routes = append(h.routes, "GET "+prefix+"/openapi.json")
	h.mux.HandleFunc("GET "+prefix+"/openapi.json", h.serveOpenAPI)
	h.mux.HandleFunc("/", h.noRoute)
	return h
}

// ServeHTTP routes r.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Routes returns the handler's routes as "METHOD /path" patterns with the
// prefix, e.g. "GET /api/sessions/{session_id}", in registration order.
func (h *Handler) Routes() []string { return slices.Clone(h.routes) }

// OpenAPI returns the handler's OpenAPI 3.1 document (JSON), as served at
// {prefix}/openapi.json, with its server URL set to the prefix.
func (h *Handler) OpenAPI() []byte { return slices.Clone(h.openapi) }

type handlerFunc func(w http.ResponseWriter, r *http.Request, p domain.Principal) error

// handle registers pattern (method and path relative to the prefix). The
// route authenticates, checks perm (the permission the Service demands,
// so a viewer's write gets 403 whatever its body), applies Allow and
// answers fn's error as JSON.
func (h *Handler) handle(pattern string, perm domain.Permission, fn handlerFunc) {
	method, path, _ := strings.Cut(pattern, " ")
	full := method + " " + h.prefix + path
	h.routes = append(h.routes, full)
	h.mux.HandleFunc(full, func(w http.ResponseWriter, r *http.Request) {
		p, err := h.opts.Authenticate(r)
		if err != nil {
			h.logger.DebugContext(r.Context(), "bichat: authentication failed", "path", r.URL.Path, "error", err)
			WriteError(w, r, h.logger, ErrUnauthenticated)
			return
		}
		if err := p.Validate(); err != nil {
			// The host's Authenticate returned a broken principal: a
			// server bug, not the client's.
			WriteError(w, r, h.logger, fmt.Errorf("bichat: HandlerOptions.Authenticate returned an unusable principal: %v", err))
			return
		}
		if !p.Can(perm) {
			WriteError(w, r, h.logger, fmt.Errorf("bichat: %s permission required: %w", perm, domain.ErrForbidden))
			return
		}
		if h.opts.Allow != nil {
			if err := h.opts.Allow(r, p); err != nil {
				WriteError(w, r, h.logger, err)
				return
			}
		}
		if err := fn(w, r, p); err != nil {
			WriteError(w, r, h.logger, err)
		}
	})
}

// noRoute answers paths and methods no route serves: 405 with Allow when
// the path exists for other methods, 404 otherwise, both as JSON.
func (h *Handler) noRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodPut} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pat := h.mux.Handler(probe); pat != "" && pat != "/" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		if slices.Contains(allowed, http.MethodGet) {
			allowed = append(allowed, http.MethodHead)
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, ErrorBody{Error: ErrorDetail{Code: "method_not_allowed",
			Message: r.Method + " is not allowed here; use " + strings.Join(allowed, ", ")}})
		return
	}
	writeJSON(w, http.StatusNotFound, ErrorBody{Error: ErrorDetail{Code: "not_found", Message: "no such route"}})
}

func (h *Handler) artifactURL(id string) string {
	return h.prefix + "/artifacts/" + url.PathEscape(id) + "/content"
}

func (h *Handler) serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(h.openapi)
}

func (h *Handler) resolveModels() []ModelView {
	def := h.svc.model
	out := []ModelView{{Name: def.Name, Provider: def.Provider, ContextWindow: def.ContextWindow,
		Capabilities: def.Capabilities, Default: true}}
	for _, name := range h.opts.Models {
		if name == "" || name == def.Name || slices.ContainsFunc(out, func(m ModelView) bool { return m.Name == name }) {
			continue
		}
		if h.svc.cfg.Models == nil {
			h.logger.Warn("bichat: NewHandler: HandlerOptions.Models lists a model but Config.Models is nil", "model", name)
			continue
		}
		m, err := h.svc.cfg.Models.Model(name)
		if err != nil {
			h.logger.Warn("bichat: NewHandler: model not offered", "model", name, "error", err)
			continue
		}
		info := m.Info()
		// Name is what a session asks for: the name or alias configured.
		out = append(out, ModelView{Name: name, Provider: info.Provider, ContextWindow: info.ContextWindow,
			Capabilities: info.Capabilities})
	}
	return out
}

// ---------------------------------------------------------------------------
// Request decoding
// ---------------------------------------------------------------------------

// decodeJSON reads a JSON object body into dst: application/json only
// (415), at most MaxBodyBytes (413), no unknown fields, one value. An
// empty body is an error when required and leaves dst alone otherwise.
func (h *Handler) decodeJSON(w http.ResponseWriter, r *http.Request, dst any, required bool) error {
	if r.ContentLength == 0 && (r.Body == nil || r.Body == http.NoBody) {
		if required {
			return domain.Invalid("body", "is required (a JSON object)")
		}
		return nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return fmt.Errorf("bichat: request body must be JSON (Content-Type: application/json), got %q: %w",
			clipHeader(ct), ErrUnsupportedMediaType)
	}
	if r.ContentLength > h.opts.MaxBodyBytes {
		return &http.MaxBytesError{Limit: h.opts.MaxBodyBytes}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) {
			if required {
				return domain.Invalid("body", "is required (a JSON object)")
			}
			return nil
		}
		return bodyError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return domain.Invalid("body", "must hold exactly one JSON object")
	}
	return nil
}

// bodyError turns a JSON decoding error into a 400 naming the field, or
// passes a size error on (413).
func bodyError(err error) error {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		te  *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.As(err, &se):
		return domain.Invalid("body", fmt.Sprintf("is not valid JSON (at byte %d)", se.Offset))
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return domain.Invalid("body", "must be a JSON object")
		}
		return domain.Invalid(field, "must be "+jsonKind(te.Type.Kind().String()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Invalid("body", "is truncated JSON")
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name, _ := strconv.Unquote(f)
		if name == "" || !utf8.ValidString(name) || len(name) > 64 {
			name = "body"
		}
		return domain.Invalid(name, "is not a known field")
	}
	return domain.Invalid("body", "is not a valid JSON object for this route")
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "int", "int64", "int32":
		return "an integer"
	case "slice":
		return "an array"
	case "map", "struct":
		return "an object"
	case "bool":
		return "true or false"
	}
	return "of another type"
}

func clipHeader(s string) string {
	s, _ = clip(strings.ToValidUTF8(s, "?"), 64)
	return s
}

// queryInt parses an optional non-negative integer query parameter.
func queryInt(q url.Values, name string, ve *domain.ValidationError) int {
	v := q.Get(name)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		ve.Add(name, "must be a non-negative integer")
		return 0
	}
	return n
}

// ---------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------

func (h *Handler) listSessions(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	q := r.URL.Query()
	var ve domain.ValidationError
	opts := domain.ListOptions{
		Page:     queryInt(q, "page", &ve),
		PageSize: queryInt(q, "page_size", &ve),
		Search:   q.Get("search"),
		Sort:     domain.SortField(q.Get("sort")),
		Order:    domain.SortOrder(q.Get("order")),
	}
	if !utf8.ValidString(opts.Search) {
		ve.Add("search", "must be valid UTF-8")
	}
	if err := ve.Err(); err != nil {
		return err
	}
	page, err := h.svc.ListSessions(r.Context(), p, opts)
	if err != nil {
		return err
	}
	out := SessionPage{Items: make([]SessionView, len(page.Items)), Total: page.Total, Page: page.Page,
		PageSize: page.PageSize, TotalPages: page.TotalPages}
	for i := range page.Items {
		out.Items[i] = sessionView(&page.Items[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// CreateSessionRequest is the body of POST /sessions; both fields are
// optional and mean what they mean in SessionOptions.
type CreateSessionRequest struct {
	Title string `json:"title,omitempty"`
	Model string `json:"model,omitempty"`
}

func (h *Handler) createSession(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	var in CreateSessionRequest
	if err := h.decodeJSON(w, r, &in, false); err != nil {
		return err
	}
	s, err := h.svc.CreateSession(r.Context(), p, SessionOptions(in))
	if err != nil {
		return err
	}
	w.Header().Set("Location", h.prefix+"/sessions/"+s.ID)
	writeJSON(w, http.StatusCreated, sessionView(s))
	return nil
}

func (h *Handler) getSession(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	s, err := h.svc.GetSession(r.Context(), p, r.PathValue("session_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sessionView(s))
	return nil
}

// RenameSessionRequest is the body of PATCH /sessions/{session_id}.
type RenameSessionRequest struct {
	Title string `json:"title"`
}

func (h *Handler) renameSession(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	var in RenameSessionRequest
	if err := h.decodeJSON(w, r, &in, true); err != nil {
		return err
	}
	s, err := h.svc.RenameSession(r.Context(), p, r.PathValue("session_id"), in.Title)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sessionView(s))
	return nil
}

func (h *Handler) deleteSession(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	if err := h.svc.DeleteSession(r.Context(), p, r.PathValue("session_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ---------------------------------------------------------------------------
// Messages and runs
// ---------------------------------------------------------------------------

func (h *Handler) listMessages(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	q := r.URL.Query()
	var ve domain.ValidationError
	opts := domain.MessageListOptions{Limit: queryInt(q, "limit", &ve), Before: q.Get("before")}
	if err := ve.Err(); err != nil {
		return err
	}
	msgs, err := h.svc.Messages(r.Context(), p, r.PathValue("session_id"), opts)
	if err != nil {
		return err
	}
	out := MessageList{Items: make([]MessageView, len(msgs))}
	for i := range msgs {
		out.Items[i] = messageView(&msgs[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) getMessage(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	m, err := h.svc.Message(r.Context(), p, r.PathValue("message_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, messageView(m))
	return nil
}

// PostMessageRequest is the body of POST /sessions/{session_id}/messages.
type PostMessageRequest struct {
	// Text is the question, 1 to 10,000 characters.
	Text string `json:"text"`
}

func (h *Handler) postMessage(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	var in PostMessageRequest
	if err := h.decodeJSON(w, r, &in, true); err != nil {
		return err
	}
	sessionID := r.PathValue("session_id")
	ev, err := h.startRun(r, func(ctx context.Context) iter.Seq2[agents.Event, error] {
		return h.svc.Send(ctx, p, sessionID, in.Text)
	})
	if err != nil {
		return err
	}
	q, a, err := h.postedPair(r.Context(), p, sessionID, ev.Header().MessageID)
	if err != nil {
		return err
	}
	w.Header().Set("Location", h.prefix+"/messages/"+a.ID)
	writeJSON(w, http.StatusAccepted, PostMessageResponse{UserMessage: messageView(q), AssistantMessage: messageView(a)})
	return nil
}

// postedPair returns the question and the answer (message answerID) just
// posted to a session. The run is under way, so they are normally the
// session's last two messages: one listing finds both. When they are not
// (another message came after them), the answer is loaded by id and the
// question is the message before it.
func (h *Handler) postedPair(ctx context.Context, p domain.Principal, sessionID, answerID string) (q, a *domain.Message, err error) {
	last, err := h.svc.Messages(ctx, p, sessionID, domain.MessageListOptions{Limit: 2})
	if err != nil {
		return nil, nil, fmt.Errorf("bichat: load the new question and answer: %w", err)
	}
	if len(last) == 2 && last[1].ID == answerID && last[0].Role == domain.RoleUser {
		return &last[0], &last[1], nil
	}
	if a, err = h.svc.Message(ctx, p, answerID); err != nil {
		return nil, nil, fmt.Errorf("bichat: load the new answer: %w", err)
	}
	prior, err := h.svc.Messages(ctx, p, a.SessionID, domain.MessageListOptions{Before: a.ID, Limit: 1})
	if err != nil {
		return nil, nil, fmt.Errorf("bichat: load the new question: %w", err)
	}
	if len(prior) != 1 || prior[0].Role != domain.RoleUser {
		return nil, nil, fmt.Errorf("bichat: the message before answer %s is not its question", a.ID)
	}
	return &prior[0], a, nil
}

// startRun starts a run and returns its first event, whose header names
// the message. Errors before the run starts (invalid input, no
// permission, unknown message, a run already going) come back as they
// are.
func (h *Handler) startRun(r *http.Request, start func(context.Context) iter.Seq2[agents.Event, error]) (agents.Event, error) {
	// A client that goes away while the run is being set up must not
	// leave it half-made: the setup finishes regardless.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	next, stop := iter.Pull2(start(ctx))
	ev, err, ok := next()
	switch {
	case !ok:
		err = errors.New("bichat: the run ended before its first event")
	case err == nil && (ev == nil || ev.Header().MessageID == ""):
		err = errors.New("bichat: the run's first event names no message")
	}
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	// The first event named the message: stop reading. Runs belong to the
	// service (Send, Resume, Approve and Deny start them detached), so the
	// run goes on and the events route follows it.
	stop()
	cancel()
	return ev, nil
}

// lastEventID returns where a stream resumes: the Last-Event-ID header
// (an EventSource reconnecting) or else the after query parameter.
func lastEventID(r *http.Request) (int64, error) {
	field, v := "Last-Event-ID", strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if v == "" {
		field, v = "after", r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, domain.Invalid(field, "must be a non-negative integer (an event seq)")
	}
	return n, nil
}

func (h *Handler) streamEvents(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	after, err := lastEventID(r)
	if err != nil {
		return err
	}
	// Watch checks the message (unknown, another user's: 404) before its
	// first event, and writeSSE answers an error that comes first with its
	// JSON status. It waits up to a heartbeat interval for that first item
	// (the check is a store round trip, slower under load) before it opens
	// the stream, so the status does not depend on how fast the store is.
	_ = writeSSE(w, r, h.svc.Watch(r.Context(), p, r.PathValue("message_id"), after), h.sse,
		max(sseFirstWait, h.sse.heartbeat()))
	return nil
}

func (h *Handler) cancelRun(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	if err := h.svc.Cancel(r.Context(), p, r.PathValue("message_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) getInterrupt(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	in, err := h.svc.PendingInterrupt(r.Context(), p, r.PathValue("message_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, in)
	return nil
}

// AnswersRequest is the body of POST /messages/{message_id}/answers: an
// answer per question id.
type AnswersRequest struct {
	Answers agents.Answers `json:"answers"`
}

// DecisionRequest is the body of POST /messages/{message_id}/approve and
// /deny: the confirmation token of the confirmation_required event (or of
// the interrupt route) and, for a denial, an optional reason the model is
// told.
type DecisionRequest struct {
	Token  string `json:"token"`
	Reason string `json:"reason,omitempty"`
}

func (h *Handler) answer(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	var in AnswersRequest
	if err := h.decodeJSON(w, r, &in, true); err != nil {
		return err
	}
	if len(in.Answers) == 0 {
		return domain.Invalid("answers", "is required: an answer per question id")
	}
	id := r.PathValue("message_id")
	return h.continued(w, r, p, id, func(ctx context.Context) iter.Seq2[agents.Event, error] {
		return h.svc.Resume(ctx, p, id, in.Answers)
	})
}

func (h *Handler) approve(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	return h.decide(w, r, p, true)
}

func (h *Handler) deny(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	return h.decide(w, r, p, false)
}

func (h *Handler) decide(w http.ResponseWriter, r *http.Request, p domain.Principal, approve bool) error {
	var in DecisionRequest
	if err := h.decodeJSON(w, r, &in, true); err != nil {
		return err
	}
	if strings.TrimSpace(in.Token) == "" {
		return domain.Invalid("token", "is required: the token of the confirmation request")
	}
	if approve && in.Reason != "" {
		return domain.Invalid("reason", "is only for deny")
	}
	id := r.PathValue("message_id")
	return h.continued(w, r, p, id, func(ctx context.Context) iter.Seq2[agents.Event, error] {
		if approve {
			return h.svc.Approve(ctx, p, id, in.Token)
		}
		return h.svc.Deny(ctx, p, id, in.Token, in.Reason)
	})
}

// continued starts a run that continues message id and answers 202 with
// the message.
func (h *Handler) continued(w http.ResponseWriter, r *http.Request, p domain.Principal, id string,
	start func(context.Context) iter.Seq2[agents.Event, error]) error {
	if _, err := h.startRun(r, start); err != nil {
		return err
	}
	m, err := h.svc.Message(r.Context(), p, id)
	if err != nil {
		return fmt.Errorf("bichat: load the resumed answer: %w", err)
	}
	w.Header().Set("Location", h.prefix+"/messages/"+m.ID)
	writeJSON(w, http.StatusAccepted, RunResponse{Message: messageView(m)})
	return nil
}

// ---------------------------------------------------------------------------
// Artifacts, models, recipes
// ---------------------------------------------------------------------------

func (h *Handler) listArtifacts(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	arts, err := h.svc.Artifacts(r.Context(), p, r.PathValue("message_id"))
	if err != nil {
		return err
	}
	out := ArtifactList{Items: make([]ArtifactView, len(arts))}
	for i := range arts {
		out.Items[i] = artifactView(&arts[i], h.artifactURL(arts[i].ID))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// artifactCSP forbids everything an artifact could do if a browser
// rendered it (an SVG can carry script): no sources, sandboxed.
const artifactCSP = "default-src 'none'; sandbox"

func (h *Handler) downloadArtifact(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	rc, a, err := h.svc.ArtifactContent(r.Context(), p, r.PathValue("artifact_id"))
	if err != nil {
		return err
	}
	defer rc.Close()
	hd := w.Header()
	hd.Set("Content-Type", safeMediaType(a.MediaType))
	hd.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": safeFilename(a.Name)}))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", artifactCSP)
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Cache-Control", "private, max-age=3600")
	if a.SHA256 != "" {
		hd.Set("ETag", `"`+a.SHA256+`"`)
	}
	if a.Size > 0 {
		hd.Set("Content-Length", strconv.FormatInt(a.Size, 10))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := io.Copy(w, rc); err != nil {
		h.logger.WarnContext(r.Context(), "bichat: artifact download interrupted", "artifact_id", a.ID, "error", err)
	}
	return nil
}

// safeMediaType returns mt when it is a well-formed media type and
// application/octet-stream otherwise.
func safeMediaType(mt string) string {
	t, params, err := mime.ParseMediaType(mt)
	if err != nil || !strings.Contains(t, "/") {
		return domain.MediaTypeBinary
	}
	return mime.FormatMediaType(t, params)
}

// safeFilename keeps the base name of name without control characters,
// quotes, separators or leading dots, at most 128 characters; "artifact"
// when nothing is left.
func safeFilename(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(name, "") {
		switch {
		case unicode.IsControl(r), r == '"', r == ';', r == ':', r == '*', r == '?', r == '<', r == '>', r == '|',
			unicode.Is(unicode.Bidi_Control, r), r == '\u2028', r == '\u2029':
			b.WriteRune('_')
		default:
			b.WriteRune(r)
		}
	}
	s := strings.TrimLeft(strings.TrimSpace(b.String()), ".")
	s, _ = clip(s, 128)
	if s == "" {
		return "artifact"
	}
	return s
}

func (h *Handler) listModels(w http.ResponseWriter, _ *http.Request, _ domain.Principal) error {
	writeJSON(w, http.StatusOK, ModelList{Items: h.models})
	return nil
}

func (h *Handler) saveRecipe(w http.ResponseWriter, r *http.Request, p domain.Principal) error {
	rec, err := h.svc.SaveRecipe(r.Context(), p, r.PathValue("message_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, recipeView(rec))
	return nil
}
