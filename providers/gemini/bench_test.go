package gemini_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/internal/llmtest"
	"github.com/bichat-go/bichat/providers/gemini"
)

// recordedStream is about 1 MB of streamGenerateContent chunks as llmfake
// renders them: rounds of short text chunks followed by a chunk with two
// whole function calls (Gemini sends calls whole), all in one stream.
func recordedStream() []byte {
	var b bytes.Buffer
	for round := 0; b.Len() < 1_000_000; round++ {
		turn := llmfake.Turn{ID: fmt.Sprintf("resp-%d", round), Model: "gemini-3.5-flash",
			Usage: domain.Usage{PromptTokens: 1200, CompletionTokens: 300, CachedTokens: 1000}}
		for i := range 40 {
			turn.Text = append(turn.Text, fmt.Sprintf("word%d ", i))
		}
		for c := range 2 {
			turn.Calls = append(turn.Calls, llmfake.Call{Name: "run_sql",
				Args: []string{fmt.Sprintf(`{"sql":"SELECT month, sum(revenue) FROM sales GROUP BY %d"}`, c)}, Opaque: []byte("CiQBthought")})
		}
		b.Write(llmfake.GeminiStream(turn).Bytes())
	}
	return b.Bytes()
}

func benchModel(tb testing.TB, hc *http.Client) *gemini.Model {
	m, err := gemini.New(gemini.Config{Model: "gemini-bench", APIKey: "k", BaseURL: "http://mem", HTTPClient: hc})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestRecordedStream(t *testing.T) {
	t.Parallel()
	data := recordedStream()
	resp := llmtest.GenerateRecorded(t, benchModel(t, llmtest.Client(data)), data)
	if n := len(resp.Message.ToolCalls()); n < 100 || resp.Usage.CachedTokens != 1000 {
		t.Fatalf("%d calls, usage %+v", n, resp.Usage)
	}
}

// BenchmarkStreamDecode decodes the recorded ~1 MB stream through
// Model.Stream against a bufio line-scanning baseline; see
// llmtest.StreamBench for the metrics.
func BenchmarkStreamDecode(b *testing.B) {
	data := recordedStream()
	llmtest.StreamBench{Data: data, Model: benchModel(b, llmtest.Client(data))}.Run(b)
}
