package openai_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/openai"
)

// TestLive talks to the real OpenAI API. It runs only when OPENAI_API_KEY
// is set (OPENAI_LIVE_MODEL picks the model, default gpt-4.1-mini), so a
// user can verify the provider against the service:
//
//	OPENAI_API_KEY=sk-... go test -run TestLive ./providers/openai/
func TestLive(t *testing.T) {
	if os.Getenv("OPENAI_API_KEY") == "" {
		t.Skip("OPENAI_API_KEY not set: live OpenAI test skipped")
	}
	model := os.Getenv("OPENAI_LIVE_MODEL")
	if model == "" {
		model = "gpt-4.1-mini"
	}
	m, err := openai.New(openai.Options{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	add := agents.ToolSpec{Name: "add", Description: "Add two integers.",
		Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)}
	req := &agents.Request{System: "Use the add tool for arithmetic.", Messages: []agents.Message{agents.UserMessage("What is 19+23?")},
		Tools: []agents.ToolSpec{add}, Options: agents.Options{ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceRequired}}}
	resp, err := agents.Generate(ctx, m, req)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) == 0 || calls[0].Name != "add" || resp.Usage.PromptTokens == 0 {
		t.Fatalf("response %+v", resp)
	}
	parts := []agents.Message{resp.Message}
	var results []agents.Message
	for _, c := range calls {
		results = append(results, agents.Message{Role: "tool", Parts: []domain.Part{{Type: domain.PartToolResult,
			ToolResult: &domain.ToolResult{CallID: c.ID, Name: c.Name, Content: "42"}}}})
	}
	req.Messages = append(append(req.Messages, parts...), results...)
	req.Options.ToolChoice = agents.ToolChoice{Mode: agents.ToolChoiceNone}
	resp, err = agents.Generate(ctx, m, req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Message.Text(), "42") {
		t.Fatalf("final answer %q lacks 42", resp.Message.Text())
	}
	e, err := openai.NewEmbedder(openai.EmbedderOptions{Dimensions: 256})
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := e.Embed(ctx, []string{"monthly revenue", "churn rate"})
	if err != nil || len(vecs) != 2 || len(vecs[0]) != 256 {
		t.Fatalf("embeddings: %v, %d vectors", err, len(vecs))
	}
}
