package providertest

import (
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
)

// Config is the client configuration the suite asks NewModel to apply.
type Config struct {
	// APIKey is the key to send; the suite checks it never appears in
	// errors.
	APIKey string
	// MaxAttempts is the number of tries of one request (3).
	MaxAttempts int
	// RetryBase and RetryMax bound the backoff between tries (1 ms, 10
	// ms), so fault scenarios run fast.
	RetryBase, RetryMax time.Duration
	// MaxRetryDelay caps a server-requested Retry-After (2 s); longer
	// waits fail at once.
	MaxRetryDelay time.Duration
	// IdleTimeout is the stall detector: 3 s, so a loaded CI machine
	// does not see false stalls; the stall scenario lowers it to 300 ms.
	IdleTimeout time.Duration
}

// DefaultConfig returns the configuration the suite uses.
func DefaultConfig() Config {
	return Config{
		APIKey:        "sk-suite-SECRET-0123456789abcdef",
		MaxAttempts:   3,
		RetryBase:     time.Millisecond,
		RetryMax:      10 * time.Millisecond,
		MaxRetryDelay: 2 * time.Second,
		IdleTimeout:   3 * time.Second,
	}
}

// Features say which optional behaviours a protocol has; scenarios that
// need a missing feature are skipped.
type Features struct {
	// ReasoningText: the provider streams reasoning text, yielded as
	// agents.ChunkReasoning.
	ReasoningText bool
	// ReasoningSignature: reasoning blocks carry Reasoning.Signature, which
	// must come back unchanged.
	ReasoningSignature bool
	// ReasoningOpaque: Reasoning.Opaque is filled from the stream (e.g.
	// Anthropic redacted_thinking) and sent back unchanged.
	ReasoningOpaque bool
	// ReasoningEcho: reasoning is sent back on the next request (Seen.Reasoning
	// is checked).
	ReasoningEcho bool
	// CallOpaque: tool calls carry ToolCall.Opaque (a Gemini thought
	// signature), sent back unchanged.
	CallOpaque bool
	// ReasoningTokens and CacheWriteTokens: usage reports them.
	ReasoningTokens  bool
	CacheWriteTokens bool
	// NoCallIDs: the protocol may omit call ids (Gemini); the suite then
	// does not compare them.
	NoCallIDs bool
}

// Seen is the neutral view of a request a model sent, decoded by
// Harness.Inspect.
type Seen struct {
	// Stream says the request asked for a streamed answer.
	Stream bool
	// System is the system prompt (all system/developer text joined).
	System string
	// UserText lists the text of each user message, in order.
	UserText []string
	// ToolNames lists the declared tools, in order.
	ToolNames []string
	// ToolCalls lists the assistant tool calls sent back, in order, with
	// their JSON arguments and opaque data.
	ToolCalls []domain.ToolCall
	// ToolResults lists the tool results, in order; Content is the text
	// the model gets (unwrapped from any provider envelope).
	ToolResults []domain.ToolResult
	// Reasoning lists the reasoning blocks sent back, in order.
	Reasoning []domain.Reasoning
}

// Harness plugs a provider into the suite. All fields are required except
// StreamError's transient variant where a protocol has none (return nil to
// skip) and Features.
type Harness struct {
	// Name names the provider in test names.
	Name string
	// NewModel returns the model under test, sending to baseURL (the fake
	// server's root URL, e.g. "http://127.0.0.1:1234"), configured with
	// cfg.
	NewModel func(t *testing.T, baseURL string, cfg Config) agents.Model
	// Stream renders a turn as the provider's streamed reply, terminator
	// included.
	Stream func(turn llmfake.Turn) llmfake.Reply
	// HTTPError renders an HTTP error reply for status in the provider's
	// error body format, with message as its message.
	HTTPError func(status int, message string) llmfake.Reply
	// StreamError renders an error event sent inside a 200 stream;
	// transient selects an overload/server-side error (retryable) versus a
	// permanent one. Return nil when the protocol has no such event.
	StreamError func(transient bool) []byte
	// Malformed is an event whose JSON is malformed, in the protocol's
	// framing (event name included).
	Malformed []byte
	// Inspect decodes a request the model sent.
	Inspect func(t *testing.T, r llmfake.Request) Seen
	// Features of the protocol.
	Features Features
}
