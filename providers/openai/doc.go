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
