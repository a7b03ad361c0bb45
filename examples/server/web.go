package main

import (
	"bytes"
	"embed"
	"encoding/json"
	"html"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// web holds the page: index.html, app.css and app.js. No build step, no
// third-party script.
//
//go:embed web
var web embed.FS

// pageCSP lets the page load only its own script, style, images and API:
// no inline script, no other origin, no framing. The server-side
// sanitising of Markdown is the first line; this is the second.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// routes mounts the API under /api, the rendering routes under /ui and
// the page at /.
func (a *App) routes(logger *slog.Logger) http.Handler {
	static, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded folder exists: a build error otherwise
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", a.API)
	// The metrics (in production, behind your own authentication or on an
	// internal port).
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.Metrics, promhttp.HandlerOpts{}))
	files := http.FileServerFS(static)
	mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		page, err := fs.ReadFile(static, "index.html")
		if err != nil {
			bichat.WriteError(w, r, logger, err)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(page)
	})
	mux.HandleFunc("GET /ui/config", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, UIConfig{Suggestions: Suggestions, ModelNote: a.ModelNote, SandboxNote: a.SandboxNote, Tools: a.Tools})
	})
	mux.HandleFunc("GET /ui/messages/{message_id}", func(w http.ResponseWriter, r *http.Request) {
		p, err := authenticate(r)
		if err != nil {
			bichat.WriteError(w, r, logger, err)
			return
		}
		m, err := a.Service.Message(r.Context(), p, r.PathValue("message_id"))
		if err != nil {
			bichat.WriteError(w, r, logger, err)
			return
		}
		writeJSON(w, renderMessage(m))
	})
	mux.HandleFunc("GET /ui/sessions/{session_id}/messages", func(w http.ResponseWriter, r *http.Request) {
		p, err := authenticate(r)
		if err != nil {
			bichat.WriteError(w, r, logger, err)
			return
		}
		msgs, err := a.Service.Messages(r.Context(), p, r.PathValue("session_id"), domain.MessageListOptions{})
		if err != nil {
			bichat.WriteError(w, r, logger, err)
			return
		}
		out := RenderedList{Items: make([]RenderedMessage, len(msgs))}
		for i := range msgs {
			out.Items[i] = renderMessage(&msgs[i])
		}
		writeJSON(w, out)
	})
	return securityHeaders(mux)
}

// authenticate is the demo's authentication: every request is the demo
// user. A host replaces it with its own (and uses the same function for
// bichat.HandlerOptions.Authenticate).
func authenticate(*http.Request) (domain.Principal, error) { return demoPrincipal, nil }

// securityHeaders sets the page's CSP and the usual hardening headers on
// every response that has none of its own (the API sets its own on
// artifacts).
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if !strings.HasPrefix(r.URL.Path, "/api/artifacts/") {
			h.Set("Content-Security-Policy", pageCSP)
		}
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// UIConfig is what GET /ui/config tells the page.
type UIConfig struct {
	Suggestions []string `json:"suggestions"`
	ModelNote   string   `json:"model_note"`
	SandboxNote string   `json:"sandbox_note"`
	Tools       []string `json:"tools"`
}

// RenderedMessage is a message as GET /ui/messages/{id} returns it: the
// text as sanitised HTML (assistant messages only; the page shows a
// user's text as text) and each recorded tool call with its SQL and its
// summary as sanitised HTML.
type RenderedMessage struct {
	ID     string               `json:"id"`
	Role   domain.Role          `json:"role"`
	Status domain.MessageStatus `json:"status"`
	// Text is the raw text (for user messages and copying).
	Text string `json:"text"`
	// HTML is Text rendered from Markdown and sanitised.
	HTML  string         `json:"html"`
	Tools []RenderedTool `json:"tools,omitempty"`
	// Tokens is the total token usage of the answer's runs.
	Tokens int `json:"tokens,omitempty"`
	// Error is why a failed message failed, safe to show.
	Error *domain.MessageError `json:"error,omitempty"`
}

// RenderedTool is one recorded tool call of a message.
type RenderedTool struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// SQL is the statement of a query_database call.
	SQL string `json:"sql,omitempty"`
	// SummaryHTML is what the model was told (a Markdown preview of a
	// table, a chart's description), rendered and sanitised.
	SummaryHTML string   `json:"summary_html"`
	Error       string   `json:"error,omitempty"`
	DurationMS  int64    `json:"duration_ms"`
	ArtifactIDs []string `json:"artifact_ids,omitempty"`
}

// RenderedList is a session's messages, rendered.
type RenderedList struct {
	Items []RenderedMessage `json:"items"`
}

func renderMessage(m *domain.Message) RenderedMessage {
	out := RenderedMessage{ID: m.ID, Role: m.Role, Status: m.Status, Text: m.Text(), Error: m.Metadata.Error}
	if m.Role != domain.RoleAssistant {
		return out
	}
	out.HTML = RenderMarkdown(out.Text)
	out.Tokens = m.Metadata.Usage.TotalTokens
	for _, tc := range m.Metadata.ToolCalls {
		rt := RenderedTool{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments, Error: tc.Error,
			DurationMS: tc.DurationMS, ArtifactIDs: tc.ArtifactIDs, SummaryHTML: RenderMarkdown(tc.Result)}
		if tc.Name == sqldb.ToolQuery {
			var args sqldb.QueryArgs
			if json.Unmarshal([]byte(tc.Arguments), &args) == nil {
				rt.SQL = args.SQL
			}
		}
		out.Tools = append(out.Tools, rt)
	}
	return out
}

var (
	markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))
	// sanitizer keeps what user-generated content may hold (no script,
	// no event handlers, no javascript: URLs, no style) and opens
	// external links in a new tab without a referrer.
	sanitizer = func() *bluemonday.Policy {
		p := bluemonday.UGCPolicy()
		p.RequireNoReferrerOnLinks(true)
		p.AddTargetBlankToFullyQualifiedLinks(true)
		return p
	}()
)

// RenderMarkdown renders GitHub-flavoured Markdown (tables, strike-through,
// task lists, autolinks) to HTML with goldmark, which leaves raw HTML out,
// and then sanitises the HTML with bluemonday's user-generated-content
// policy. The result is safe to assign to innerHTML.
func RenderMarkdown(md string) string {
	if md == "" {
		return ""
	}
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(md), &buf); err != nil {
		// goldmark writes to a buffer: it cannot fail; show the text.
		buf.Reset()
		buf.WriteString("<p>" + html.EscapeString(md) + "</p>")
	}
	return sanitizer.Sanitize(buf.String())
}
