// Package openai speaks the OpenAI Chat Completions API, and every server
// that imitates it, over plain net/http: OpenAI itself, Azure OpenAI,
// Ollama, vLLM, LM Studio and DeepSeek (see the presets). Model implements
// agents.Model; Embedder implements kb.Embedder over /v1/embeddings.
//
// Streaming is the default (stream_options.include_usage on, so usage with
// cached tokens arrives at the end); Options.NoStream makes one
// non-streamed call and yields its parts as chunks, for servers or callers
// that prefer it. Tool calls stream as fragments keyed by index and id;
// agents.Accumulator assembles them (interleaved parallel calls, a missing
// index, a reused index with a new id, empty arguments read as {}).
// Tool schemas are sent in strict mode when they can be: every object
// gets additionalProperties:false, every property becomes required and the
// optional ones nullable.
//
// Options.ResponsesAPI switches to the Responses API (POST /responses,
// store:false) behind the same Model interface: flat function tools,
// input items for calls and results, and reasoning items (summary, id,
// encrypted content) carried in domain.Reasoning and sent back unchanged.
//
// Nothing the API sends is dropped silently: a refusal is the answer's
// text with stop reason refusal; url_citation (and file_citation)
// annotations, in stream deltas, messages, Responses output_text parts and
// response.output_text.annotation.added events, become agents.ProviderItem
// citations (ChunkItem chunks, agents.Response.Items); the Responses API's
// built-in tool items (web_search_call, file_search_call,
// code_interpreter_call, ...) become server tool call items with the item
// in Raw, and unknown output item types unsupported items. The Responses
// input_image part is sent with detail "auto", which the API reference
// marks required.
//
// A response cut in the middle of a tool call (finish_reason "length" or
// "content_filter"; a Responses status incomplete) does not run it: the
// call being written (Chat Completions: the latest call when the last
// fragment was a call fragment; Responses: every function_call item not
// completed) is reported with agents.ToolCallDelta.Incomplete, so the
// Accumulator drops it and the stop reason stays max_tokens (or
// content_filter) instead of tool_use.
//
// A last event without its closing blank line is flushed and decoded (the
// API reference's examples end that way); completeness still needs
// "data: [DONE]" (Chat Completions) or a terminal response.* event
// (Responses), and a last event cut inside its JSON makes the stream
// incomplete (llmhttp.ErrIncomplete).
//
// Reasoning models (o1, o3, o4, gpt-5 families, or Options.Reasoning) get
// max_completion_tokens, the developer role and no temperature. DeepSeek's
// and vLLM's reasoning_content and Ollama's reasoning deltas are yielded
// as reasoning chunks.
//
// Keys come from Options or the environment (OPENAI_API_KEY and the
// preset's variable); they are sent only in the auth header and never
// appear in errors, which are *llmhttp.APIError values (status, type,
// code, request id, Retryable) or connection errors. Transient failures
// are retried with backoff before the first chunk is yielded, never after.
package openai
