// Package gemini is an agents.Model for the Google Gemini API:
// streamGenerateContent with alt=sse (Stream) and generateContent
// (Generate), spoken with net/http and the shared SSE reader; no vendor
// SDK. The key goes in the x-goog-api-key header, never in the URL.
//
// # Requests
//
// The system prompt becomes systemInstruction; assistant turns are role
// "model" and tool results (role tool) become functionResponse parts in a
// user turn, in the order of the calls they answer, each wrapped as the
// JSON object Gemini requires ({"result": ...} or {"error": ...}). Tools
// are functionDeclarations whose parametersJsonSchema is converted to the
// subset Gemini accepts (ConvertSchema: $ref inlined, unsupported keywords
// dropped); a tool without parameters is declared without a schema.
// ToolChoice maps to functionCallingConfig (AUTO, NONE, ANY, ANY with
// allowedFunctionNames), MaxTokens to maxOutputTokens and ReasoningBudget
// to thinkingConfig (thinkingBudget, includeThoughts).
//
// # Responses
//
// Each streamed chunk is a whole GenerateContentResponse with only new
// parts. Text parts become text chunks, thought parts reasoning chunks;
// functionCall parts arrive whole and become complete tool calls. Gemini
// usually sends no call ids: this package makes up stable ones
// (SyntheticIDPrefix + response id + ordinal) and never sends them back;
// results are matched to calls by name and order. A thoughtSignature is
// kept in ToolCall.Opaque or Reasoning.Opaque (the decoded bytes of the
// base64 signature) and sent back in place, as newer models require; the
// first call of a model turn that another provider made (a fallback chain,
// a session that switched models) gets the documented
// "skip_thought_signature_validator" signature instead.
//
// Usage maps usageMetadata (promptTokenCount including cached and tool-use
// prompt tokens, cachedContentTokenCount, candidates plus thoughts as the
// completion, thoughtsTokenCount as reasoning). finishReason maps to stop
// reasons: STOP to end_turn (tool_use when calls arrived), MAX_TOKENS to
// max_tokens, SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT and SPII to
// content_filter; MALFORMED_FUNCTION_CALL is a retryable error of type
// ErrTypeFinish. A blocked prompt (promptFeedback.blockReason) is a
// non-retryable error of type ErrTypeBlocked.
//
// Parts and metadata that are not text, thoughts or function calls become
// agents.ProviderItem values (agents.ChunkItem chunks, collected in
// agents.Response.Items), never dropped: executableCode (ItemCode) and
// codeExecutionResult (ItemCodeResult) parts, inlineData (ItemMedia with
// the decoded bytes) and fileData (ItemMedia with the URI);
// citationMetadata sources and groundingMetadata chunks (ItemCitation,
// with the grounding object itself and urlContextMetadata as
// ItemGrounding, each distinct object once per response); safety ratings
// with blocked set and prompt feedback with a block reason (ItemSafety);
// a finishMessage (ItemNotice); and part kinds this package does not know
// (ItemUnsupported, raw). A chunk without candidates is no answer: a
// promptFeedback.blockReason makes it an ErrTypeBlocked error.
//
// The stream has no end marker: it ends at EOF, and one that ends before
// any finishReason is an error wrapping llmhttp.ErrIncomplete (so is a
// whole response without one). The last chunk usually has no closing
// blank line: it is flushed and decoded, not dropped as the SSE standard
// would; when it was cut inside its JSON, the stream is incomplete. A JSON
// error body written after the events, outside data: lines (how the API
// reports a failure in the middle of a stream), is returned as that
// error. Failures
// before the first chunk (429 RESOURCE_EXHAUSTED, 500, 503 UNAVAILABLE, a
// reset connection, an error as the first chunk) are retried, honouring
// the RetryInfo delay; errors are *llmhttp.APIError values.
package gemini
