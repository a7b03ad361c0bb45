package openai_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/providers/openai"
)

// Embedder satisfies kb.Embedder; the interface is spelled out here so
// this package's tests do not link kb and its search engine.
var _ interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dimensions() int
} = (*openai.Embedder)(nil)

func TestEmbedderBatchesAndOrder(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAIError(503, "server_error", "", "busy"))
	srv.Respond(llmfake.OpenAIEmbeddingResponder(8)) // lists items in reverse order
	e, err := openai.NewEmbedder(openai.EmbedderOptions{Connection: testConn(srv.URL), Model: "text-embedding-3-small",
		Dimensions: 8, MaxBatch: 4, MaxBatchBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for i := range 10 {
		texts = append(texts, fmt.Sprintf("text number %d", i))
	}
	texts = append(texts, strings.Repeat("L", 150)) // alone: over MaxBatchBytes
	texts = append(texts, "tail")
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if e.Dimensions() != 8 || len(vecs) != len(texts) {
		t.Fatalf("%d vectors of %d dims", len(vecs), e.Dimensions())
	}
	for i, v := range vecs {
		if want := llmfake.FakeVector(texts[i], 8); fmt.Sprint(v) != fmt.Sprint(want) {
			t.Errorf("vector %d belongs to another text: %v", i, v)
		}
	}
	// 503 retried, then batches: 4+4 (count), 2 (the long text would pass
	// 100 bytes), the long text alone, "tail".
	var sizes []int
	for _, r := range srv.Requests()[1:] {
		var in llmfake.OpenAIEmbeddingRequest
		r.Decode(&in)
		sizes = append(sizes, len(in.Input))
		if r.Path != "/v1/embeddings" || in.Dimensions != 8 || in.EncodingFormat != "float" || in.Model != "text-embedding-3-small" {
			t.Errorf("request %s %+v", r.Path, in)
		}
	}
	if fmt.Sprint(sizes) != "[4 4 2 1 1]" {
		t.Errorf("batch sizes %v, want [4 4 2 1 1]", sizes)
	}
}

func TestEmbedderErrors(t *testing.T) {
	t.Parallel()
	if _, err := openai.NewEmbedder(openai.EmbedderOptions{Connection: testConn("http://x"), Model: "mystery"}); err == nil || !strings.Contains(err.Error(), "Dimensions") {
		t.Errorf("unknown model: %v", err)
	}
	e, err := openai.NewEmbedder(openai.EmbedderOptions{Connection: testConn("http://x"), Model: "nomic-embed-text:latest"})
	if err != nil || e.Dimensions() != 768 {
		t.Fatalf("ollama model: %v %d", err, e.Dimensions())
	}
	if _, err := e.Embed(context.Background(), []string{"a", ""}); err == nil || !strings.Contains(err.Error(), "text 1 is empty") {
		t.Errorf("empty text: %v", err)
	}
	// Wrong dimensions and wrong counts from the server are errors, not
	// silently misplaced vectors.
	srv := llmfake.NewServer(t,
		llmfake.OpenAIEmbeddings("m", [][]float32{{1, 2}}, nil),
		llmfake.OpenAIEmbeddings("m", [][]float32{{1, 2, 3}}, nil),
		llmfake.OpenAIEmbeddings("m", [][]float32{{1, 2, 3}, {4, 5, 6}}, []int{0, 0}),
	)
	e, _ = openai.NewEmbedder(openai.EmbedderOptions{Connection: testConn(srv.URL), Model: "custom", Dimensions: 3})
	for _, want := range []string{"2 dimensions, want 3", "got 1 vectors for 2 texts", "repeated index 0"} {
		in := []string{"a"}
		if want != "2 dimensions, want 3" {
			in = []string{"a", "b"}
		}
		if _, err := e.Embed(context.Background(), in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	var in llmfake.OpenAIEmbeddingRequest
	srv.Request(0).Decode(&in)
	if in.Dimensions != 0 {
		t.Error("dimensions sent to a model that is not text-embedding-3")
	}
}
