// Command server serves bichat's HTTP API (bichat.Handler) and a web page
// to chat with on one machine, with no other server:
//
//	go run ./examples/server
//	open http://127.0.0.1:8080/
//
// It runs on the embedded defaults: an SQLite file of generated retail
// data (orders, order lines, products, customers, regions) opened
// read-only, a dataset catalog built from its schema, the read-only SQL,
// chart, Excel and list_datasets tools, run_python in a bubblewrap sandbox
// when bubblewrap works here (sandbox/bwrap), and the in-memory store
// (everything is lost when the server stops) or, with -dsn, PostgreSQL
// (domain/postgres, migrated at start: sessions, messages, run logs,
// leases, named results, artifacts and recipes survive a restart, and
// several replicas can serve one database; see "Replicas" below).
//
// # The model
//
// With no provider configured (or with -offline) a scripted analyst
// answers, so everything works offline and always the same way. It knows
// three questions, which the page offers as suggestions:
//
//   - "Which region had the highest revenue in 2025? Chart it." — a SQL
//     query with its result table, a bar chart and an Excel workbook;
//   - "Summarise 2025 month by month." — a query and a long answer, to
//     watch streaming (and reload in the middle of);
//   - "Pin the chart to a dashboard." — a question form (ask_user_question)
//     and then pin_chart, a harmless demo write tool that only runs when
//     the user approves it in the confirmation dialog.
//
// Set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY (or
// GOOGLE_API_KEY), OLLAMA_HOST or OPENAI_BASE_URL, and optionally
// BICHAT_MODEL, to let a real model answer (providers.FromEnv); the model
// picker then also offers the scripted analyst and the catalog's other
// models of the configured providers.
//
// # The page
//
// The page is plain HTML, CSS and one script, embedded in the binary with
// embed (no npm, no CDN) and served under a strict Content-Security-Policy
// (no inline script, nothing from another origin). It has a sidebar of
// chats grouped by date with search, rename and delete; the chat, with
// the answer streamed as it is written; tool calls as accordions showing
// the SQL and the result table; chart images and download links for every
// file; the question form and the confirmation dialog; a stop button; a
// model picker for new chats; Enter sends and Shift+Enter adds a line.
//
// The answer streams from the API's events route (server-sent events). If
// the connection drops the browser's EventSource reconnects with
// Last-Event-ID and the server resumes after the last event it got; a
// reload in the middle of an answer replays the run from its first event
// and goes on live, so the page picks the stream up again.
//
// When an answer is complete the page replaces the streamed text with the
// message rendered on the server: the example's /ui routes render its
// Markdown with github.com/yuin/goldmark (GitHub tables, no raw HTML) and
// sanitise the HTML with github.com/microcosm-cc/bluemonday, so nothing a
// model writes can run script in the page. These dependencies belong to
// the example, not to the SDK.
//
// # Routes
//
//	/api/...                             bichat.Handler (see its documentation and /api/openapi.json)
//	GET /                                the page; /static/ its script and style
//	GET /ui/config                       the suggestions and which model and sandbox are in use
//	GET /ui/messages/{message_id}        a message with its text and tool summaries as sanitised HTML
//	GET /ui/sessions/{session_id}/messages  every message of a chat, rendered the same way
//	GET /metrics                         Prometheus metrics of the runs (hooks/prometheus)
//
// Every request is the demo user (tenant "acme", user "demo"): a real host
// plugs its own authentication into bichat.HandlerOptions.Authenticate and
// the /ui routes. Keep the default loopback address unless you add one.
//
// # Flags
//
//	-addr          address to listen on (default 127.0.0.1:8080)
//	-offline       use the scripted analyst even when a provider is configured
//	-pace          delay before each fragment the scripted analyst streams (default 15ms)
//	-no-sandbox    leave run_python out even when bubblewrap works here
//	-sandbox-pool  warm bubblewrap workers kept ready for run_python (default 1)
//	-models        comma-separated extra models for the picker (e.g. openai/gpt-4.1-mini)
//	-dsn           PostgreSQL storage (default $BICHAT_STORE_URL; empty: in memory)
//	-schema        PostgreSQL schema of the storage (default bichat)
//	-lease         run lease (default 15s): how soon a dead replica's runs are failed
//
// # Replicas
//
// Several servers started with the same -dsn (and the same
// BICHAT_CONFIRMATION_KEY, at least 16 bytes, so a confirmation asked on
// one can be approved on another) form one service: PostgreSQL is the only
// coordination. Any replica can take any request; no sticky sessions are
// needed. A run belongs to the replica that started it, which renews its
// lease; a browser that reconnects to another replica watches it there
// through the run log (woken by LISTEN/NOTIFY). Questions and
// confirmations are kept in the database too, so they can be answered on
// any replica. When a replica dies, the reaper of any other (every
// replica runs one, sweeping every third of the lease) fails its runs
// within about one lease with message_error "lease_expired", and the chat
// takes a new question. A replica stopped with SIGTERM or Ctrl-C ends its
// own runs as "shutdown" instead of leaving them to the reaper.
//
// TestReplicas checks this with Docker: it builds the server as a static
// binary (CGO_ENABLED=0), imports it as an image with docker import and
// runs three containers on one PostgreSQL schema with -lease 2s. It
// answers a question and a confirmation on another replica than the one
// that asked, kills a replica in the middle of an answer watched through
// another and measures the time to message_error there (about two
// seconds; the test allows eight), and stops one with SIGTERM (its
// watcher elsewhere gets "shutdown" at once).
//
// The browser test (TestBrowser) drives the page in headless Chromium with
// github.com/chromedp/chromedp; .ci/setup.d/40-chromium.sh installs
// Debian's chromium and sets BICHAT_TEST_CHROMIUM. Set
// BICHAT_SCREENSHOT_DIR to keep a screenshot of each step.
package main
