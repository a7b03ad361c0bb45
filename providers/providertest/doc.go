// Package providertest is the conformance suite every LLM provider of
// bichat passes: one set of scenarios, run against the provider's llmfake
// server in its exact wire format.
//
// # Plugging a provider in
//
// A provider's test file builds a Harness and calls Run:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Harness{
//			Name: "openai",
//			NewModel: func(t *testing.T, baseURL string, cfg providertest.Config) agents.Model {
//				return openai.New(openai.Options{BaseURL: baseURL + "/v1", APIKey: cfg.APIKey,
//					Model: "gpt-test", MaxAttempts: cfg.MaxAttempts, ...})
//			},
//			Stream:      llmfake.OpenAIStream,          // neutral Turn -> streamed reply
//			HTTPError:   func(status int, msg string) llmfake.Reply { ... },
//			StreamError: func(transient bool) []byte { ... },
//			Malformed:   llmfake.OpenAIMalformed,
//			Inspect:     func(t *testing.T, r llmfake.Request) providertest.Seen { ... },
//			Features:    providertest.Features{...},
//		})
//	}
//
// NewModel must apply every Config field (attempts, backoff, idle timeout,
// retry-delay cap, key) so the fault scenarios run fast and
// deterministically. Stream renders an llmfake.Turn including the
// protocol's terminator; Inspect decodes a request the model sent into the
// neutral Seen view (tool calls and results echoed, reasoning sent back,
// system prompt, user text), which lets the suite check round trips
// without knowing the wire format. Features switch off scenarios a
// protocol cannot express (e.g. reasoning signatures in Chat Completions).
//
// # What the suite checks
//
// Text streaming (events split at odd byte offsets), one tool call, two
// interleaved parallel calls, a zero-argument call ({} arguments), text
// before calls, a tool-result round trip, a reasoning round trip (signature
// and opaque data unchanged), usage with cached tokens, and the faults:
// 429 with Retry-After / retry-after-ms, 500, 503, 529, a Retry-After too
// long to wait, 400 and 401 (not retried, no key in the error), retries
// exhausted, connection dropped before the response, reset before the
// first chunk (retried) and mid-stream (error, not retried), a malformed
// chunk, a stream truncated between events and inside an event, an error
// event in the stream (first or later), slow first byte and slow drip, a
// stalled stream (idle timeout), cancellation and a consumer that stops
// ranging (the server sees the connection close). Every scenario runs
// under a deadline, so a hang fails instead of blocking the test binary,
// and a stream cut short must end with an error: a partial answer is never
// presented as complete. Finally the agents Executor runs a multi-turn
// tool conversation through the fake.
//
// Cut streams must fail with an error wrapping llmhttp.ErrIncomplete
// (llmhttp.ReadError maps io.EOF and io.ErrUnexpectedEOF to it). A
// protocol without an end marker (Gemini) must treat a stream that ends
// before its finish reason as incomplete. Errors must be *llmhttp.APIError
// (HTTP status, or 0 for an error event inside the stream) or
// *llmhttp.ConnError, so agents.Retryable answers for every provider.
//
// # Vendor fixtures
//
// FixtureDir locates the responses the vendors themselves recorded or
// published (shared/reference/provider-fixtures beside the repository;
// never copied into it): absent, the test is skipped, or fails under
// CI=true. Each provider's TestVendorFixtures serves every file byte for
// byte with ServeFixture, collects the answer with Collect and compares it
// with an independent reading of the file (SplitSSE and generic JSON);
// Coverage fails the test for any file not replayed or declared not
// applicable with a reason, so a new vendor file forces a review.
package providertest
