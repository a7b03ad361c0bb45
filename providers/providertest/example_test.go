package providertest_test

import (
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/providers/openai"
	"github.com/bichat-go/bichat/providers/providertest"
)

// A provider's conformance test: a Harness that builds the model against
// the fake server and speaks its wire format. (providers/openai's
// conformance_test.go is the complete version, Inspect included.)
func Example() {
	h := providertest.Harness{
		Name: "openai",
		NewModel: func(t *testing.T, baseURL string, cfg providertest.Config) agents.Model {
			m, err := openai.New(openai.Options{Model: "gpt-4.1", Connection: openai.Connection{
				BaseURL: baseURL + "/v1", APIKey: cfg.APIKey, MaxAttempts: cfg.MaxAttempts,
				RetryBaseDelay: cfg.RetryBase, RetryMaxDelay: cfg.RetryMax,
				MaxRetryDelay: cfg.MaxRetryDelay, IdleTimeout: cfg.IdleTimeout}})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		Stream: llmfake.OpenAIStream,
		HTTPError: func(status int, msg string) llmfake.Reply {
			return llmfake.OpenAIError(status, "server_error", "", msg)
		},
		StreamError: func(transient bool) []byte { return llmfake.OpenAIStreamError("server_error", "", "oops") },
		Malformed:   llmfake.OpenAIMalformed,
		Inspect: func(t *testing.T, r llmfake.Request) providertest.Seen {
			var cr llmfake.OpenAIChatRequest
			r.Decode(&cr)
			return providertest.Seen{Stream: cr.Stream /* ... */}
		},
	}
	_ = h // in TestConformance(t): providertest.Run(t, h)
}
