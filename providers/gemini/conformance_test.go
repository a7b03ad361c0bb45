package gemini_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/providers/gemini"
	"github.com/bichat-go/bichat/providers/providertest"
)

func newFakeModel(t *testing.T, baseURL string, cfg providertest.Config) *gemini.Model {
	t.Helper()
	m, err := gemini.New(gemini.Config{
		Model: "gemini-test", APIKey: cfg.APIKey, BaseURL: baseURL,
		Info:        agents.ModelInfo{ContextWindow: 1048576, MaxOutputTokens: 65536},
		MaxAttempts: cfg.MaxAttempts, RetryBaseDelay: cfg.RetryBase, RetryMaxDelay: cfg.RetryMax,
		MaxRetryDelay: cfg.MaxRetryDelay, IdleTimeout: cfg.IdleTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// opaque decodes a thoughtSignature (base64) as the model stores it.
func opaque(sig string) []byte {
	if sig == "" {
		return nil
	}
	if b, err := base64.StdEncoding.DecodeString(sig); err == nil {
		return b
	}
	return []byte(sig)
}

func statusName(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

// inspect decodes a GenerateContentRequest into the suite's neutral view.
func inspect(t *testing.T, r llmfake.Request) providertest.Seen {
	t.Helper()
	var req llmfake.GeminiRequest
	if err := r.Decode(&req); err != nil {
		t.Fatalf("request body: %v", err)
	}
	s := providertest.Seen{Stream: strings.HasSuffix(r.Path, ":streamGenerateContent") && r.Query.Get("alt") == "sse"}
	if req.SystemInstruction != nil {
		for _, p := range req.SystemInstruction.Parts {
			if p.Text != nil {
				s.System += *p.Text
			}
		}
	}
	for _, tl := range req.Tools {
		for _, d := range tl.FunctionDeclarations {
			s.ToolNames = append(s.ToolNames, d.Name)
		}
	}
	for _, c := range req.Contents {
		var text []string
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				s.ToolCalls = append(s.ToolCalls, domain.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name,
					Arguments: p.FunctionCall.Args, Provider: "gemini", Opaque: opaque(p.ThoughtSignature)})
			case p.FunctionResponse != nil:
				var env map[string]json.RawMessage
				json.Unmarshal(p.FunctionResponse.Response, &env)
				raw, isErr := env["result"], false
				if e, ok := env["error"]; ok {
					raw, isErr = e, true
				}
				var content string
				if json.Unmarshal(raw, &content) != nil {
					content = string(raw)
				}
				s.ToolResults = append(s.ToolResults, domain.ToolResult{CallID: p.FunctionResponse.ID,
					Name: p.FunctionResponse.Name, Content: content, IsError: isErr})
			case p.Thought && p.Text != nil:
				s.Reasoning = append(s.Reasoning, domain.Reasoning{Text: *p.Text, Provider: "gemini", Opaque: opaque(p.ThoughtSignature)})
			case p.Text != nil:
				text = append(text, *p.Text)
				if p.ThoughtSignature != "" {
					s.Reasoning = append(s.Reasoning, domain.Reasoning{Provider: "gemini", Opaque: opaque(p.ThoughtSignature)})
				}
			}
		}
		if c.Role == "user" && len(text) > 0 {
			s.UserText = append(s.UserText, strings.Join(text, ""))
		}
	}
	return s
}

func harness() providertest.Harness {
	return providertest.Harness{
		Name: "gemini",
		NewModel: func(t *testing.T, baseURL string, cfg providertest.Config) agents.Model {
			return newFakeModel(t, baseURL, cfg)
		},
		Stream: llmfake.GeminiStream,
		HTTPError: func(status int, message string) llmfake.Reply {
			return llmfake.GeminiError(status, statusName(status), message, "")
		},
		StreamError: func(transient bool) []byte {
			if transient {
				return llmfake.GeminiStreamError(503, "UNAVAILABLE", "The model is overloaded.")
			}
			return llmfake.GeminiStreamError(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
		},
		Malformed: llmfake.GeminiMalformed,
		Inspect:   inspect,
		Features: providertest.Features{ReasoningText: true, ReasoningOpaque: true, ReasoningEcho: true,
			CallOpaque: true, ReasoningTokens: true, NoCallIDs: true},
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	providertest.Run(t, harness())
}
