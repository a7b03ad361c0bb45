// Package llmhttp is the HTTP behaviour every LLM provider shares: sending
// a request with a per-attempt timeout and a stall detector, retrying
// transient failures with capped exponential backoff and jitter (honouring
// Retry-After, retry-after-ms and x-should-retry), typed errors that
// agents.Retryable understands, secret redaction, and closing the response
// body as soon as the caller's context ends.
//
// Retries happen only before anything was handed to the caller: Client.Do
// retries until it returns a 2xx response, and Stream additionally retries
// when the decoder failed before yielding its first value. Once a value was
// yielded, a failure is returned as it is, so no partial answer is ever
// repeated or presented as complete.
//
// Providers supply a ParseError function that reads their error body
// ({"error":{...}} for OpenAI, {"type":"error",...} for Anthropic, ...)
// into an *APIError prefilled with the status, request id, Retry-After and
// a default retry decision.
//
// TailReader sits between a response body and the shared SSE reader: it
// makes an unterminated last event dispatchable (CutTail tells a last
// event cut in the middle apart) and can keep JSON written outside data:
// lines (Stray), so a provider decides about both instead of losing them.
package llmhttp
