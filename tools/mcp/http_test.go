package mcp_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/mcp"
)

// tokens is the host's authentication in these tests: bearer token →
// principal.
var tokens = map[string]domain.Principal{"tok-ana": acme, "tok-gil": globex}

func bearerPrincipal(r *http.Request) (domain.Principal, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return domain.Principal{}, errors.New("missing bearer token")
	}
	if tok == "tok-banned" {
		return domain.Principal{}, fmt.Errorf("user is suspended: %w", domain.ErrForbidden)
	}
	p, ok := tokens[tok]
	if !ok {
		return domain.Principal{}, errors.New("unknown token")
	}
	return p, nil
}

// headerTransport sends the current token with every request.
type headerTransport struct{ token atomic.Pointer[string] }

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if tok := h.token.Load(); tok != nil {
		r.Header.Set("Authorization", "Bearer "+*tok)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func httpClient(t *testing.T, url, token string) (*sdk.ClientSession, *headerTransport, error) {
	t.Helper()
	ht := &headerTransport{}
	if token != "" {
		ht.token.Store(&token)
	}
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: ht}, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "http-test", Version: "v1"}, nil).Connect(t.Context(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, ht, err
}

func TestHTTPHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	h, err := f.server.HTTPHandler(bearerPrincipal, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	// No token, an unknown token, a suspended user: refused before the SDK.
	for _, tc := range []struct {
		token  string
		status int
	}{{"", http.StatusUnauthorized}, {"tok-nobody", http.StatusUnauthorized}, {"tok-banned", http.StatusForbidden}} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_datasets","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("token %q: status %d; want %d", tc.token, resp.StatusCode, tc.status)
		}
		if _, _, err := httpClient(t, srv.URL, tc.token); err == nil {
			t.Errorf("token %q: the SDK client connected", tc.token)
		}
	}

	// Each tenant sees its own datasets.
	a, at, err := httpClient(t, srv.URL, "tok-ana")
	if err != nil {
		t.Fatal(err)
	}
	res, text := call(t, a, "list_datasets", nil)
	if res.IsError || !strings.Contains(text, "- orders") || strings.Contains(text, "globex_payroll") {
		t.Errorf("acme over HTTP: %s", text)
	}
	res, text = call(t, a, "query_database", map[string]any{"sql": "SELECT count(*) AS n FROM regions"})
	if res.IsError || !strings.Contains(text, "| 5 |") {
		t.Errorf("query_database over HTTP: %s", text)
	}
	if _, err := a.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "bichat://datasets/globex_payroll"}); err == nil {
		t.Error("acme read globex's dataset resource over HTTP")
	}
	g, _, err := httpClient(t, srv.URL, "tok-gil")
	if err != nil {
		t.Fatal(err)
	}
	res, text = call(t, g, "list_datasets", nil)
	if res.IsError || !strings.Contains(text, "globex_payroll") || strings.Contains(text, "orders") {
		t.Errorf("globex over HTTP: %s", text)
	}

	// A session belongs to the user who opened it: ana's session with
	// gil's token is refused, and so is her session without a token.
	for _, tok := range []string{"tok-gil", ""} {
		at.token.Store(&tok)
		if _, err := a.CallTool(t.Context(), &sdk.CallToolParams{Name: "list_datasets", Arguments: map[string]any{}}); err == nil {
			t.Errorf("ana's session answered a request with token %q", tok)
		}
	}
	// The refusal is the server's (403 naming the reason), and the session
	// itself still answers its owner.
	for _, tc := range []struct {
		token  string
		status int
	}{{"tok-gil", http.StatusForbidden}, {"tok-ana", http.StatusOK}} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL,
			strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tc.token)
		req.Header.Set("Mcp-Session-Id", a.ID())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || tc.status == http.StatusForbidden && !strings.Contains(string(body), "another user") ||
			tc.status == http.StatusOK && !strings.Contains(string(body), "list_datasets") {
			t.Errorf("%s on ana's session: %d %s", tc.token, resp.StatusCode, body)
		}
	}
}

// A session's binding to its principal is dropped when the client ends it.
func TestHTTPSessionEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	h, err := f.server.HTTPHandler(bearerPrincipal, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cs, _, err := httpClient(t, srv.URL, "tok-ana")
	if err != nil {
		t.Fatal(err)
	}
	if res, text := call(t, cs, "whoami", nil); res.IsError || text != "acme/ana" {
		t.Fatalf("whoami: %s", text)
	}
	if n := mcp.BoundSessions(f.server); n != 1 {
		t.Fatalf("%d bound sessions; want 1", n)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); mcp.BoundSessions(f.server) != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still bound after the client closed", mcp.BoundSessions(f.server))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
