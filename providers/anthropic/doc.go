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
// message_stop ends the stream; a stream that ends before it is an error
// wrapping llmhttp.ErrIncomplete, never a complete answer. Failures before
// the first chunk (429, 500, 529 overloaded, a reset connection, an
// overload error event as the first event) are retried with backoff and
// jitter, honouring retry-after; later ones end the stream. Errors are
// *llmhttp.APIError values with the HTTP status, the error type, the
// request-id and a Retryable answer; the API key never appears in them.
package anthropic
