package openai_test

import (
	"context"
	"fmt"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/providers/openai"
)

// Streaming a chat answer. The fake server stands in for api.openai.com;
// with a real key, leave BaseURL empty and set OPENAI_API_KEY.
func Example() {
	srv := llmfake.NewServer(nil, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"Revenue ", "grew 5%."}}))
	defer srv.Close()

	m, err := openai.New(openai.Options{
		Connection: openai.Connection{BaseURL: srv.URL + "/v1", APIKey: "sk-example"},
		Model:      "gpt-4.1",
	})
	if err != nil {
		panic(err)
	}
	req := &agents.Request{System: "You are a BI analyst.", Messages: []agents.Message{agents.UserMessage("How did revenue do?")}}
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if c.Type == agents.ChunkText {
			fmt.Printf("%q\n", c.Text)
		}
	}
	// Output:
	// "Revenue "
	// "grew 5%."
}

// Presets cover OpenAI-compatible servers.
func ExampleAzure() {
	o := openai.Azure("https://contoso.openai.azure.com", "gpt-4o-prod", "")
	fmt.Println(o.Provider, o.BaseURL, o.Query.Get("api-version"), o.KeyHeader, o.KeyEnv)
	// Output:
	// azure https://contoso.openai.azure.com/openai/deployments/gpt-4o-prod 2024-10-21 api-key AZURE_OPENAI_API_KEY
}

// Embeddings for kb: vectors come back in input order.
func ExampleEmbedder() {
	srv := llmfake.NewServer(nil)
	defer srv.Close()
	srv.Respond(llmfake.OpenAIEmbeddingResponder(3))

	e, err := openai.NewEmbedder(openai.EmbedderOptions{
		Connection: openai.Connection{BaseURL: srv.URL + "/v1", APIKey: "sk-example"},
		Model:      "text-embedding-3-small", Dimensions: 3,
	})
	if err != nil {
		panic(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"revenue", "churn"})
	fmt.Println(len(vecs), e.Dimensions(), vecs[0][0], vecs[1][0], err)
	// Output:
	// 2 3 7 5 <nil>
}
