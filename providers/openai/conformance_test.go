package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/providers/openai"
	"github.com/bichat-go/bichat/providers/providertest"
)

// connFor returns a Connection for the fake server with the suite's
// settings.
func connFor(baseURL string, cfg providertest.Config) openai.Connection {
	return openai.Connection{
		BaseURL: baseURL + "/v1", APIKey: cfg.APIKey,
		MaxAttempts: cfg.MaxAttempts, RetryBaseDelay: cfg.RetryBase, RetryMaxDelay: cfg.RetryMax,
		MaxRetryDelay: cfg.MaxRetryDelay, IdleTimeout: cfg.IdleTimeout,
	}
}

// inspect decodes a Chat Completions request into the suite's view.
func inspect(t *testing.T, r llmfake.Request) providertest.Seen {
	t.Helper()
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path = %q, want /v1/chat/completions", r.Path)
	}
	var cr llmfake.OpenAIChatRequest
	if err := r.Decode(&cr); err != nil {
		t.Fatalf("request body: %v", err)
	}
	seen := providertest.Seen{Stream: cr.Stream && cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage}
	for _, tool := range cr.Tools {
		seen.ToolNames = append(seen.ToolNames, tool.Function.Name)
	}
	var sys []string
	for _, m := range cr.Messages {
		switch m.Role {
		case "system", "developer":
			sys = append(sys, m.Text())
		case "user":
			seen.UserText = append(seen.UserText, m.Text())
		case "assistant":
			for _, c := range m.ToolCalls {
				seen.ToolCalls = append(seen.ToolCalls, domain.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
			}
			if m.ReasoningContent != nil {
				seen.Reasoning = append(seen.Reasoning, domain.Reasoning{Text: *m.ReasoningContent})
			}
		case "tool":
			seen.ToolResults = append(seen.ToolResults, domain.ToolResult{CallID: m.ToolCallID, Content: m.Text()})
		}
	}
	seen.System = strings.Join(sys, "\n")
	return seen
}

func harness(name string, opts func(baseURL string, cfg providertest.Config) openai.Options) providertest.Harness {
	return providertest.Harness{
		Name: name,
		NewModel: func(t *testing.T, baseURL string, cfg providertest.Config) agents.Model {
			m, err := openai.New(opts(baseURL, cfg))
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		Stream: llmfake.OpenAIStream,
		HTTPError: func(status int, msg string) llmfake.Reply {
			typ, code := "invalid_request_error", ""
			switch {
			case status == 401:
				code = "invalid_api_key"
			case status == 429:
				typ, code = "requests", "rate_limit_exceeded"
			case status >= 500:
				typ = "server_error"
			}
			return llmfake.OpenAIError(status, typ, code, msg)
		},
		StreamError: func(transient bool) []byte {
			if transient {
				return llmfake.OpenAIStreamError("server_error", "", "The server had an error while processing your request.")
			}
			return llmfake.OpenAIStreamError("invalid_request_error", "context_length_exceeded", "This model's maximum context length was exceeded.")
		},
		Malformed: llmfake.OpenAIMalformed,
		Inspect:   inspect,
		Features:  providertest.Features{ReasoningText: true, ReasoningTokens: true},
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	providertest.Run(t, harness("openai", func(baseURL string, cfg providertest.Config) openai.Options {
		return openai.Options{Connection: connFor(baseURL, cfg), Model: "gpt-4.1"}
	}))
}

// TestConformanceDeepSeek runs the suite with DeepSeek's preset, which
// also sends reasoning_content back.
func TestConformanceDeepSeek(t *testing.T) {
	t.Parallel()
	h := harness("deepseek", func(baseURL string, cfg providertest.Config) openai.Options {
		o := openai.DeepSeek("deepseek-reasoner")
		c := connFor(baseURL, cfg)
		c.Provider, c.KeyEnv = o.Provider, o.KeyEnv
		o.Connection = c
		o.SendReasoning = true
		return o
	})
	h.Features.ReasoningEcho = true
	providertest.Run(t, h)
}
