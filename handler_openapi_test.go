package bichat_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/domain"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// exerciseAll drives every route of the handler through its success path
// and the usual errors, recording each exchange in f.
func exerciseAll(t *testing.T, f *httpFixture) {
	t.Helper()
	f.want(t, http.StatusOK, req{method: "GET", path: "/openapi.json"})
	f.want(t, http.StatusOK, req{method: "GET", path: "/models", user: "alice"})
	s := f.session(t, "alice")
	f.want(t, http.StatusCreated, req{method: "POST", path: "/sessions", user: "alice", body: bichat.CreateSessionRequest{Title: "Titled"}})
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions?page=1&page_size=5&search=t&sort=created&order=asc", user: "alice"})
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: "alice"})
	f.want(t, http.StatusOK, req{method: "PATCH", path: "/sessions/" + s.ID, user: "alice", body: bichat.RenameSessionRequest{Title: "Renamed"}})

	chart := f.ask(t, "alice", s.ID, "Chart [chart]")
	f.watch(t, "alice", chart.AssistantMessage.ID)
	f.waitStatus(t, "alice", chart.AssistantMessage.ID, domain.StatusComplete)
	f.want(t, http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/messages?limit=10", user: "alice"})
	f.want(t, http.StatusOK, req{method: "GET", path: "/messages/" + chart.AssistantMessage.ID, user: "alice"})
	var arts bichat.ArtifactList
	f.want(t, http.StatusOK, req{method: "GET", path: "/messages/" + chart.AssistantMessage.ID + "/artifacts", user: "alice"}).decode(t, &arts)
	f.want(t, http.StatusOK, req{method: "GET", path: "/artifacts/" + arts.Items[0].ID + "/content", user: "alice"})
	f.want(t, http.StatusNoContent, req{method: "GET", path: "/messages/" + chart.AssistantMessage.ID + "/events?after=1000", user: "alice"})

	sqlAns := f.ask(t, "alice", s.ID, "Revenue [sql]")
	f.watch(t, "alice", sqlAns.AssistantMessage.ID)
	f.waitStatus(t, "alice", sqlAns.AssistantMessage.ID, domain.StatusComplete)
	f.want(t, http.StatusCreated, req{method: "POST", path: "/messages/" + sqlAns.AssistantMessage.ID + "/recipe", user: "alice"})

	ask := f.ask(t, "alice", f.session(t, "alice").ID, "Which? [ask]")
	f.watch(t, "alice", ask.AssistantMessage.ID)
	f.waitStatus(t, "alice", ask.AssistantMessage.ID, domain.StatusAwaitingInput)
	f.want(t, http.StatusOK, req{method: "GET", path: "/messages/" + ask.AssistantMessage.ID + "/interrupt", user: "alice"})
	f.want(t, http.StatusBadRequest, req{method: "POST", path: "/messages/" + ask.AssistantMessage.ID + "/answers", user: "alice",
		body: `{"answers":{"nope":{"text":"x"}}}`})
	f.want(t, http.StatusAccepted, req{method: "POST", path: "/messages/" + ask.AssistantMessage.ID + "/answers", user: "alice",
		body: `{"answers":{"period":{"selected":["Q4"]}}}`})
	f.watch(t, "alice", ask.AssistantMessage.ID)

	for _, decision := range []string{"approve", "deny"} {
		w := f.ask(t, "alice", f.session(t, "alice").ID, "Discount [write]")
		evs := f.watch(t, "alice", w.AssistantMessage.ID)
		token := payload[bichat.EventConfirmation](t, last(evs)).Confirmation.Token
		f.waitStatus(t, "alice", w.AssistantMessage.ID, domain.StatusAwaitingInput)
		f.want(t, http.StatusForbidden, req{method: "POST", path: "/messages/" + w.AssistantMessage.ID + "/" + decision, user: "alice",
			body: bichat.DecisionRequest{Token: "forged" + token}})
		f.want(t, http.StatusAccepted, req{method: "POST", path: "/messages/" + w.AssistantMessage.ID + "/" + decision, user: "alice",
			body: bichat.DecisionRequest{Token: token}})
		f.watch(t, "alice", w.AssistantMessage.ID)
	}

	big := f.ask(t, "alice", f.session(t, "alice").ID, "All [big]")
	f.watch(t, "alice", big.AssistantMessage.ID)

	slow := f.session(t, "alice")
	run := f.ask(t, "alice", slow.ID, "Slow [slow]")
	f.want(t, http.StatusConflict, req{method: "POST", path: "/sessions/" + slow.ID + "/messages", user: "alice", body: `{"text":"again"}`})
	f.want(t, http.StatusNoContent, req{method: "POST", path: "/messages/" + run.AssistantMessage.ID + "/cancel", user: "alice"})
	f.watch(t, "alice", run.AssistantMessage.ID)
	f.want(t, http.StatusConflict, req{method: "POST", path: "/messages/" + run.AssistantMessage.ID + "/cancel", user: "alice"})

	// Errors.
	f.want(t, http.StatusUnauthorized, req{method: "GET", path: "/sessions"})
	f.want(t, http.StatusForbidden, req{method: "POST", path: "/sessions", user: "viewer"})
	f.want(t, http.StatusNotFound, req{method: "GET", path: "/sessions/" + domain.NewID(), user: "alice"})
	f.want(t, http.StatusBadRequest, req{method: "GET", path: "/sessions?page_size=1000", user: "alice"})
	f.want(t, http.StatusUnsupportedMediaType, req{method: "POST", path: "/sessions", user: "alice", body: "title=x", contentType: "application/x-www-form-urlencoded"})
	f.want(t, http.StatusRequestEntityTooLarge, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice",
		body: `{"text":"` + strings.Repeat("a", 2<<20) + `"}`})
	f.want(t, http.StatusNotFound, req{method: "GET", path: "/messages/" + domain.NewID() + "/events", user: "alice"})
	f.want(t, http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + s.ID, user: "alice"})
}

// The OpenAPI document is valid 3.1, lists exactly the routes the handler
// serves, and every response of a full exercise (bodies, statuses, SSE
// event data) validates against it, as do the requests that succeeded.
func TestOpenAPIDocumentMatchesHandler(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t)
	ctx := t.Context()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(f.h.OpenAPI())
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() || doc.OpenAPIMajorMinor() != "3.1" {
		t.Fatalf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	if err := doc.Validate(ctx); err != nil {
		t.Fatalf("openapi.json is not valid: %v", err)
	}

	// Routes <-> document, both ways.
	var served, documented []string
	for _, r := range f.h.Routes() {
		m, p, _ := strings.Cut(r, " ")
		served = append(served, m+" "+strings.TrimPrefix(p, "/api"))
	}
	for path, item := range doc.Paths.Map() {
		for m := range item.Operations() {
			documented = append(documented, m+" "+path)
		}
	}
	slices.Sort(served)
	slices.Sort(documented)
	if !slices.Equal(served, documented) {
		t.Fatalf("routes and document differ:\nserved     %v\ndocumented %v", served, documented)
	}

	exerciseAll(t, f)

	covered := map[string]bool{}
	schemaOpts := []openapi3.SchemaValidationOption{openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()}
	for _, x := range f.records {
		if x.method == "SSE" {
			// The data of every event validates against its schema.
			mt := doc.Paths.Find("/messages/{message_id}/events").Get.Responses.Status(200).Value.Content.Get("text/event-stream")
			events, _ := mt.Extensions["x-sse-events"].(map[string]any)
			ref, _ := events[x.path].(map[string]any)["$ref"].(string)
			name := strings.TrimPrefix(ref, "#/components/schemas/")
			sr := doc.Components.Schemas[name]
			if sr == nil {
				t.Errorf("event %s has no schema in x-sse-events", x.path)
				continue
			}
			var v any
			if err := json.Unmarshal(x.respBody, &v); err != nil {
				t.Fatalf("event %s: %v", x.path, err)
			}
			if err := sr.Value.VisitJSON(v, schemaOpts...); err != nil {
				t.Errorf("event %s data %s does not match %s: %v", x.path, x.respBody, name, err)
			}
			covered["SSE "+x.path] = true
			continue
		}
		tmpl, params, ok := matchPath(doc, x.path)
		if !ok {
			t.Errorf("%s %s is not in the document", x.method, x.path)
			continue
		}
		item := doc.Paths.Find(tmpl)
		op := item.GetOperation(x.method)
		if op == nil {
			t.Errorf("%s %s: method not documented", x.method, tmpl)
			continue
		}
		covered[x.method+" "+tmpl] = true
		u := &url.URL{Path: "/api" + x.path, RawQuery: x.query}
		hr, _ := http.NewRequestWithContext(ctx, x.method, u.String(), bytes.NewReader(x.reqBody))
		hr.Header = x.header.Clone()
		route := &routers.Route{Spec: doc, Path: tmpl, PathItem: item, Method: x.method, Operation: op}
		in := &openapi3filter.RequestValidationInput{Request: hr, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true,
				SchemaValidationOptions: schemaOpts}}
		if x.status < 300 {
			if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
				t.Errorf("request %s %s %s does not match the document: %v", x.method, x.path, x.reqBody, err)
			}
		}
		ct := x.respHeader.Get("Content-Type")
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: x.status, Header: x.respHeader,
			Body: io.NopCloser(bytes.NewReader(x.respBody)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, SchemaValidationOptions: schemaOpts,
				ExcludeResponseBody: !strings.HasPrefix(ct, "application/json")}}
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			t.Errorf("response %d of %s %s does not match the document: %v\n%s", x.status, x.method, x.path, err, clipBody(x.respBody))
		}
	}
	for _, r := range served {
		if !covered[r] {
			t.Errorf("route %s was not exercised", r)
		}
	}
	for _, name := range []string{bichat.SSEMessageStart, bichat.SSEText, bichat.SSEToolCall, bichat.SSEToolResult,
		bichat.SSETokenUpdate, bichat.SSEInterrupt, bichat.SSEConfirmationRequired, bichat.SSEMessageComplete, bichat.SSEMessageError} {
		if !covered["SSE "+name] {
			t.Errorf("event %s was not exercised", name)
		}
	}
}

func clipBody(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}

// matchPath finds the document path template that matches a concrete
// path, with its parameters.
func matchPath(doc *openapi3.T, path string) (string, map[string]string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for tmpl := range doc.Paths.Map() {
		ts := strings.Split(strings.Trim(tmpl, "/"), "/")
		if len(ts) != len(segs) {
			continue
		}
		params := map[string]string{}
		ok := true
		for i, s := range ts {
			if strings.HasPrefix(s, "{") {
				params[strings.Trim(s, "{}")] = segs[i]
			} else if s != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return tmpl, params, true
		}
	}
	return "", nil, false
}
