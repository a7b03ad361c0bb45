// Command quickstart runs bichat end to end on one machine with no servers:
// an embedded SQLite database of generated retail data, a dataset catalog
// built from its schema, the read-only SQL, chart and Excel tools, and an
// in-memory store.
//
//	go run ./examples/quickstart
//
// With no provider configured, a scripted model plays the analyst (it calls
// query_database, draw_chart and export_excel, then answers from the query
// result), so the program runs offline. Set OPENAI_API_KEY,
// ANTHROPIC_API_KEY, GEMINI_API_KEY, OLLAMA_HOST or OPENAI_BASE_URL (and
// optionally BICHAT_MODEL) to let a real model answer instead.
//
// It prints the datasets the catalog found for the question, the streamed
// events, the message as it was persisted and the files the tools made.
// With -metrics it also prints the Prometheus series the run produced
// (hooks/prometheus, on a registry of its own) and what the answer, the
// session and the tenant's day cost (the offline analyst is given demo
// prices); -out DIR saves the files.
package main
