package openai_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/internal/llmtest"
	"github.com/bichat-go/bichat/internal/sse"
	"github.com/bichat-go/bichat/providers/openai"
)

// recordedStream renders about 1 MB of Chat Completions stream: text
// deltas, then parallel tool calls whose arguments arrive in fragments.
func recordedStream() []byte {
	turn := llmfake.Turn{Usage: domain.Usage{PromptTokens: 1000, CompletionTokens: 5000, TotalTokens: 6000}}
	for i := 0; i < 1800; i++ {
		turn.Text = append(turn.Text, fmt.Sprintf("word%d ", i))
	}
	for c := 0; c < 4; c++ {
		call := llmfake.Call{ID: fmt.Sprintf("call_%d", c), Name: "run_sql", Args: []string{`{"sql":"`}}
		for i := 0; i < 480; i++ {
			call.Args = append(call.Args, fmt.Sprintf("SELECT %d, ", i))
		}
		call.Args = append(call.Args, `1"}`)
		turn.Calls = append(turn.Calls, call)
	}
	turn.Interleave = true
	return llmfake.OpenAIStream(turn).Bytes()
}

// naiveChunk mirrors the fields the provider reads from a chunk.
type naiveChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

// BenchmarkStreamDecode decodes a recorded ~1 MB stream through
// Model.Stream (SSE framing, JSON chunks, tool-call fragments) against a
// bufio line-scanning baseline; see llmtest.StreamBench for the metrics.
// encoding_json_x_slower compares a naive decoder (the same SSE reader
// plus encoding/json per chunk) with this one, in CPU time.
func BenchmarkStreamDecode(b *testing.B) {
	data := recordedStream()
	m, err := openai.New(openai.Options{Connection: openai.Connection{APIKey: "k", BaseURL: "http://mem/v1",
		HTTPClient: llmtest.Client(data)}, Model: "gpt-4.1"})
	if err != nil {
		b.Fatal(err)
	}
	// The naive decoder: the same SSE reader and encoding/json per chunk.
	naive := func(tb testing.TB) {
		r := sse.NewReader(bytes.NewReader(data))
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if string(ev.Data) == "[DONE]" {
				continue
			}
			var ck naiveChunk
			if err := json.Unmarshal(ev.Data, &ck); err != nil {
				tb.Fatal(err)
			}
		}
	}
	llmtest.StreamBench{Data: data, Model: m, Naive: naive}.Run(b)
}

func TestRecordedStreamSize(t *testing.T) {
	llmtest.CheckRecordedSize(t, recordedStream())
	if !strings.HasSuffix(string(recordedStream()), "data: [DONE]\n\n") {
		t.Fatal("recorded stream lacks its terminator")
	}
}
