package anthropic_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/providers/anthropic"
	"github.com/bichat-go/bichat/providers/providertest"
)

// newFakeModel returns a model pointed at a fake server with the suite's
// configuration.
func newFakeModel(t *testing.T, baseURL string, cfg providertest.Config) *anthropic.Model {
	t.Helper()
	m, err := anthropic.New(anthropic.Config{
		Model: "claude-test", APIKey: cfg.APIKey, BaseURL: baseURL,
		Info:        agents.ModelInfo{ContextWindow: 200000, MaxOutputTokens: 8192},
		MaxAttempts: cfg.MaxAttempts, RetryBaseDelay: cfg.RetryBase, RetryMaxDelay: cfg.RetryMax,
		MaxRetryDelay: cfg.MaxRetryDelay, IdleTimeout: cfg.IdleTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func errorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	case 504:
		return "timeout_error"
	}
	return "api_error"
}

// inspect decodes a Messages request into the suite's neutral view.
func inspect(t *testing.T, r llmfake.Request) providertest.Seen {
	t.Helper()
	var req llmfake.AnthropicRequest
	if err := r.Decode(&req); err != nil {
		t.Fatalf("request body: %v", err)
	}
	var s providertest.Seen
	s.Stream = req.Stream
	var sys []string
	for _, b := range req.System {
		sys = append(sys, b.Text)
	}
	s.System = strings.Join(sys, "")
	for _, tl := range req.Tools {
		s.ToolNames = append(s.ToolNames, tl.Name)
	}
	for _, m := range req.Messages {
		var text []string
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				text = append(text, b.Text)
			case "tool_use":
				s.ToolCalls = append(s.ToolCalls, domain.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Input})
			case "tool_result":
				var content string
				if json.Unmarshal(b.Content, &content) != nil {
					var blocks []llmfake.AnthropicBlock
					json.Unmarshal(b.Content, &blocks)
					for _, x := range blocks {
						content += x.Text
					}
				}
				s.ToolResults = append(s.ToolResults, domain.ToolResult{CallID: b.ToolUseID, Content: content, IsError: b.IsError})
			case "thinking":
				s.Reasoning = append(s.Reasoning, domain.Reasoning{Text: b.Thinking, Signature: b.Signature, Provider: "anthropic"})
			case "redacted_thinking":
				opaque, err := base64.StdEncoding.DecodeString(b.Data)
				if err != nil {
					opaque = []byte(b.Data)
				}
				s.Reasoning = append(s.Reasoning, domain.Reasoning{Opaque: opaque, Provider: "anthropic"})
			}
		}
		if m.Role == "user" && len(text) > 0 {
			s.UserText = append(s.UserText, strings.Join(text, ""))
		}
	}
	return s
}

func harness() providertest.Harness {
	return providertest.Harness{
		Name: "anthropic",
		NewModel: func(t *testing.T, baseURL string, cfg providertest.Config) agents.Model {
			return newFakeModel(t, baseURL, cfg)
		},
		Stream: llmfake.AnthropicStream,
		HTTPError: func(status int, message string) llmfake.Reply {
			return llmfake.AnthropicError(status, errorType(status), message)
		},
		StreamError: func(transient bool) []byte {
			if transient {
				return llmfake.AnthropicStreamError("overloaded_error", "Overloaded")
			}
			return llmfake.AnthropicStreamError("invalid_request_error", "prompt is too long")
		},
		Malformed: llmfake.AnthropicMalformed,
		Inspect:   inspect,
		Features: providertest.Features{ReasoningText: true, ReasoningSignature: true, ReasoningOpaque: true,
			ReasoningEcho: true, CacheWriteTokens: true},
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	providertest.Run(t, harness())
}
