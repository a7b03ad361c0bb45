// Package llmfake provides httptest servers that speak LLM provider wire
// formats, for tests that cannot reach a real provider.
//
// A Server answers each request with the next scripted Reply (then with
// Server.Respond, when set), records every request for assertions (method,
// path, query, headers, JSON body) and injects faults: HTTP errors with
// Retry-After headers, a slow first byte, slow drip between events, events
// split at odd byte offsets, a connection reset after N events (the
// connection is hijacked and closed with RST), a stream that ends before
// its terminator, and a stream that hangs until the client goes away.
//
// Replies are wire-neutral bytes. The dialect files build them from a
// neutral Turn (text fragments, reasoning, tool calls, usage): openai.go
// for Chat Completions and embeddings, openai_responses.go for the
// Responses API, anthropic.go and gemini.go for the other providers. Each
// dialect also has error replies, in-stream error events, a malformed
// event, and request types that tests decode recorded bodies into.
//
//	srv := llmfake.NewServer(t, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"Hel", "lo"}}))
//	// point the model at srv.URL, run it, then:
//	req := srv.Request(0)
//	req.JSON(t)["stream"] // true
package llmfake
