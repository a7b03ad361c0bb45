// Command customtool shows how a host adds a tool of its own to bichat: a
// typed forecast_revenue tool built with agents.NewTool over the embedded
// SQLite sample retail data.
//
//	go run ./examples/customtool
//
// The tool takes a Go struct (forecastInput); agents.NewTool turns its
// `json` and `jsonschema` tags into the JSON Schema the model sees and
// checks every call against it before the function runs (a months of 0,
// a from that is not YYYY-MM). The rules that need the data are checked by
// the function itself and returned as one *agents.ArgumentError listing
// every problem ("/to: 2026-03 is after the last month with data
// (2025-12); ..."): the executor sends it back to the model as a tool
// error with a request to fix the call, and the run goes on.
//
// The result is two-track. The tool returns a forecast struct that
// implements agents.ToolSummarizer: its ToolSummary (the fit and the
// forecast values, one line) is all the model reads, while the whole
// struct (every month of history, the fitted trend, the forecast) is the
// Payload the host receives in the ToolCallFinished event and draws; here
// as a text bar chart. Return an agents.Result instead when the tool also
// produces files (Artifacts) or should name the datasets it read.
//
// With no provider configured a scripted analyst plays the model: its
// first call puts the quarter to forecast inside the history, it repairs
// the call from the validation error, then answers from the summary. Set
// OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, OLLAMA_HOST or
// OPENAI_BASE_URL (and optionally BICHAT_MODEL) to let a real model call
// the tool instead; -offline keeps the scripted analyst. -db PATH uses an
// existing SQLite file with the sample tables (sampledata.CreateSQLite)
// instead of generating one.
//
// It prints each tool call with what the model reads back, the rendered
// payload, the answer and the message as it was persisted.
package main
