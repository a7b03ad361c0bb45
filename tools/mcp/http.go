package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bichat-go/bichat/domain"
)

// sessionHeader is the streamable HTTP session header.
const sessionHeader = "Mcp-Session-Id"

// PrincipalFunc maps an HTTP request to the caller: the host's
// authentication (a bearer token, a session cookie, a header set by a
// trusted proxy). An error refuses the request: with status 403 when it
// matches domain.ErrForbidden, 401 otherwise.
type PrincipalFunc func(r *http.Request) (domain.Principal, error)

type principalKey struct{}

// sessionMap binds streamable HTTP session ids to the principal that
// opened them.
type sessionMap struct {
	mu sync.Mutex
	m  map[string]domain.Principal
}

func (s *sessionMap) bind(id string, p domain.Principal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]domain.Principal{}
	}
	s.m[id] = p
}

func (s *sessionMap) get(id string) (domain.Principal, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.m[id]
	return p, ok
}

func (s *sessionMap) unbind(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

func (s *sessionMap) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// HTTPHandler serves MCP over streamable HTTP. Every request is mapped to
// a principal by principal before the SDK sees it; a request that cannot
// be mapped is refused (401, or 403 for domain.ErrForbidden) and reaches no
// tool. A session belongs to the principal that opened it: a later request
// of that session that maps to another tenant or user is refused with 403.
//
// opts are the SDK's streamable HTTP options (nil for the defaults). In
// Stateless mode every request is a connection of its own, so results kept
// by name (result_1 of query_database) do not carry over to the next call.
func (s *Server) HTTPHandler(principal PrincipalFunc, opts *sdk.StreamableHTTPOptions) (http.Handler, error) {
	if principal == nil {
		return nil, errors.New("mcp: HTTPHandler needs a PrincipalFunc that maps each request to its caller")
	}
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		p, ok := r.Context().Value(principalKey{}).(domain.Principal)
		if !ok {
			return nil // unreachable: every request passes through the wrapper
		}
		return s.sdkServer(p, func(ss *sdk.ServerSession) {
			id := ss.ID()
			if id == "" {
				return
			}
			go func() {
				_ = ss.Wait()
				s.sessions.unbind(id)
			}()
		})
	}, opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := principal(r)
		if err == nil {
			err = p.Validate()
		}
		if err != nil {
			status := http.StatusUnauthorized
			if errors.Is(err, domain.ErrForbidden) {
				status = http.StatusForbidden
			}
			http.Error(w, fmt.Sprintf("%s: %v", http.StatusText(status), err), status)
			return
		}
		id := r.Header.Get(sessionHeader)
		if id != "" {
			if owner, ok := s.sessions.get(id); ok && (owner.TenantID != p.TenantID || owner.UserID != p.UserID) {
				http.Error(w, "Forbidden: this MCP session belongs to another user", http.StatusForbidden)
				return
			}
		}
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		if id != "" {
			if r.Method == http.MethodDelete {
				defer s.sessions.unbind(id)
			}
			h.ServeHTTP(w, r)
			return
		}
		// A request without a session may open one: bind the id the SDK
		// assigns before the client can learn it.
		h.ServeHTTP(&bindingWriter{ResponseWriter: w, bind: func(id string) { s.sessions.bind(id, p) }}, r)
	}), nil
}

// bindingWriter binds the session id of the response when its header is
// written.
type bindingWriter struct {
	http.ResponseWriter
	bind  func(id string)
	wrote bool
}

func (w *bindingWriter) capture() {
	if w.wrote {
		return
	}
	w.wrote = true
	if id := w.Header().Get(sessionHeader); id != "" {
		w.bind(id)
	}
}

func (w *bindingWriter) WriteHeader(code int) {
	w.capture()
	w.ResponseWriter.WriteHeader(code)
}

func (w *bindingWriter) Write(b []byte) (int, error) {
	w.capture()
	return w.ResponseWriter.Write(b)
}

// Flush keeps server-sent events streaming.
func (w *bindingWriter) Flush() {
	w.capture()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *bindingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
