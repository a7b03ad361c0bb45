package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/bichat-go/bichat/internal/llmhttp"
)

// Embedding batch defaults.
const (
	DefaultEmbeddingModel = "text-embedding-3-small"
	DefaultMaxBatch       = 256
	DefaultMaxBatchBytes  = 512 << 10
)

// knownDimensions lists the output size of common embedding models.
var knownDimensions = map[string]int{
	"text-embedding-3-small": 1536,
	"text-embedding-3-large": 3072,
	"text-embedding-ada-002": 1536,
	"nomic-embed-text":       768,
	"mxbai-embed-large":      1024,
	"all-minilm":             384,
	"bge-m3":                 1024,
}

// EmbedderOptions configure an Embedder.
type EmbedderOptions struct {
	Connection
	// Model defaults to DefaultEmbeddingModel.
	Model string
	// Dimensions is the vector size. For text-embedding-3 models it is
	// also sent as "dimensions" to shorten the vectors; for other models
	// it only declares their size. 0 means the model's known size; New
	// fails for an unknown model without it.
	Dimensions int
	// MaxBatch caps the inputs per request (default 256; OpenAI accepts up
	// to 2048).
	MaxBatch int
	// MaxBatchBytes caps the total input bytes per request (default 512
	// KiB, well under OpenAI's 300k tokens per request). An input larger
	// than this goes alone.
	MaxBatchBytes int
}

// Embedder embeds texts with an OpenAI-compatible /embeddings endpoint.
// It satisfies kb.Embedder and is safe for concurrent use.
type Embedder struct {
	opts EmbedderOptions
	conn *resolved
	dims int
	send bool
}

// NewEmbedder returns an Embedder.
func NewEmbedder(opts EmbedderOptions) (*Embedder, error) {
	conn, err := opts.Connection.resolve()
	if err != nil {
		return nil, err
	}
	opts.Model = cmp.Or(opts.Model, DefaultEmbeddingModel)
	dims := opts.Dimensions
	base := opts.Model
	if i := strings.IndexByte(base, ':'); i >= 0 { // Ollama tags: nomic-embed-text:latest
		base = base[:i]
	}
	if dims == 0 {
		dims = knownDimensions[base]
	}
	if dims <= 0 {
		return nil, fmt.Errorf("%s: unknown dimensions of embedding model %q: set EmbedderOptions.Dimensions", conn.provider, opts.Model)
	}
	return &Embedder{opts: opts, conn: conn, dims: dims,
		send: opts.Dimensions > 0 && strings.HasPrefix(base, "text-embedding-3")}, nil
}

// Dimensions returns the length of every vector Embed returns.
func (e *Embedder) Dimensions() int { return e.dims }

type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// Embed returns one vector per text, in the order of texts. Texts are sent
// in batches bounded by MaxBatch and MaxBatchBytes; results are placed by
// the "index" the server returns, not by position. An empty text is an
// error (the API rejects it).
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	maxN := cmp.Or(e.opts.MaxBatch, DefaultMaxBatch)
	maxB := cmp.Or(e.opts.MaxBatchBytes, DefaultMaxBatchBytes)
	for start := 0; start < len(texts); {
		end, size := start, 0
		for end < len(texts) && end-start < maxN && (end == start || size+len(texts[end]) <= maxB) {
			if texts[end] == "" {
				return nil, fmt.Errorf("%s: embed: text %d is empty", e.conn.provider, end)
			}
			size += len(texts[end])
			end++
		}
		if err := e.batch(ctx, texts[start:end], out[start:end]); err != nil {
			return nil, err
		}
		start = end
	}
	return out, nil
}

func (e *Embedder) batch(ctx context.Context, texts []string, out [][]float32) error {
	req := embedRequest{Model: e.opts.Model, Input: texts, EncodingFormat: "float"}
	if e.send {
		req.Dimensions = e.dims
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: embed: %w", e.conn.provider, err)
	}
	resp, err := e.conn.client.Do(ctx, &llmhttp.Request{URL: e.conn.url("/embeddings"), Header: e.conn.header, Body: body})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return llmhttp.ReadError(e.conn.provider, err)
	}
	var r embedResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("%s: embed: malformed response: %w", e.conn.provider, err)
	}
	if len(r.Data) != len(texts) {
		return fmt.Errorf("%s: embed: got %d vectors for %d texts", e.conn.provider, len(r.Data), len(texts))
	}
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return fmt.Errorf("%s: embed: invalid or repeated index %d in the response", e.conn.provider, d.Index)
		}
		if len(d.Embedding) != e.dims {
			return fmt.Errorf("%s: embed: vector %d has %d dimensions, want %d (set EmbedderOptions.Dimensions to the model's size)",
				e.conn.provider, d.Index, len(d.Embedding), e.dims)
		}
		out[d.Index] = d.Embedding
	}
	return nil
}
