// Package anthropic is an agents.Model for the Anthropic Messages API
// (POST /v1/messages, streaming), spoken with net/http and the shared SSE
// reader; no vendor SDK.
//
// # Requests
//
// An agents.Request becomes a Messages body: the system prompt as text
// blocks, tool results (role tool) as tool_result blocks inside user turns,
// consecutive same-role messages merged (the API wants alternating roles,
// tool results first in their turn), tools with their JSON Schema as
// input_schema, tool_choice (auto/none/any/tool, disable_parallel_tool_use
// from Options.ParallelToolCalls), max_tokens (always sent: the request's,
// else Config.MaxTokens, else the model's max output), and a thinking
// budget from Options.ReasoningBudget (or adaptive thinking for newer
// models, see Config.Thinking).
//
// Prompt caching follows agents.Request.Cache: System is split at
// CacheHints.SystemPrefix into two text blocks and the first gets
// cache_control; each message index in CacheHints.Messages puts
// cache_control on that message's last block. At most MaxCacheBreakpoints
// are sent (the system prefix, then the latest message indexes).
//
// # Responses
//
// The stream's events (message_start, content_block_start/delta/stop with
// text_delta, input_json_delta, thinking_delta and signature_delta,
// redacted_thinking, message_delta, message_stop, ping, error) become
// agents.Chunk values. Thinking blocks keep their signature in
// domain.Reasoning.Signature and redacted thinking its data in
// Reasoning.Opaque (the decoded bytes of the base64 data), so the next
// request sends them back unchanged. Usage maps input, cache-creation and
// cache-read tokens to domain.Usage (PromptTokens is their sum,
// CacheWriteTokens and CachedTokens the cache parts).
//
// Blocks that are not text, thinking or a client tool call are never
// taken for tool calls: server_tool_use (web search, code execution, web
// fetch, MCP), whose input streams as input_json_delta fragments, becomes
// an agents.ProviderItem of kind ItemServerToolCall (id, name, input) and
// its *_tool_result block an ItemServerToolResult (the block verbatim in
// Raw); compaction, fallback and newer block kinds become ItemUnsupported
// items with the block and its deltas in Raw. citations_delta fragments
// and the citations of a whole message's text blocks become ItemCitation
// items (URL, title, cited text); a refusal's stop_details an ItemNotice.
// Items reach the caller as agents.ChunkItem chunks and
// agents.Response.Items; none is sent back to the API.
//
// A response cut in the middle of a tool call (stop_reason max_tokens,
// model_context_window_exceeded or refusal) does not run it: the tool_use
// block that never stopped, or the last block when it is a tool call, is
// reported with agents.ToolCallDelta.Incomplete, the Accumulator drops it,
// and the stop reason stays max_tokens (or refusal) instead of tool_use.
//
// A JSON body instead of an event stream (a proxy that ignored "stream")
// is read as a whole message by the same rules.
//
// message_stop ends the stream; a stream that ends before it is an error
// wrapping llmhttp.ErrIncomplete, never a complete answer. A last event
// the server did not close with a blank line (the vendor's own recordings
// end that way) is flushed and decoded, not dropped as the SSE standard
// would; when it was cut inside its JSON, the stream is incomplete. Failures before
// the first chunk (429, 500, 529 overloaded, a reset connection, an
// overload error event as the first event) are retried with backoff and
// jitter, honouring retry-after; later ones end the stream. Errors are
// *llmhttp.APIError values with the HTTP status, the error type, the
// request-id and a Retryable answer; the API key never appears in them.
package anthropic
