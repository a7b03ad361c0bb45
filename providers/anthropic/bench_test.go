package anthropic_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/internal/llmtest"
	"github.com/bichat-go/bichat/providers/anthropic"
)

// recordedStream is one Messages stream of about 1 MB, as llmfake renders
// it: a thinking block, short text deltas, then pairs of interleaved tool
// calls with argument fragments.
func recordedStream() []byte {
	turn := llmfake.Turn{Interleave: true}
	turn.Reasoning = []llmfake.Reasoning{{Text: []string{"Need the monthly ", "sums first."}, Signature: "EqQBCkYIARgCKkD"}}
	for i := range 5000 {
		turn.Text = append(turn.Text, fmt.Sprintf("word%d ", i))
	}
	for c := range 160 {
		call := llmfake.Call{ID: fmt.Sprintf("toolu_%d", c), Name: "run_sql"}
		call.Args = append(call.Args, `{"sql": "`)
		for range 12 {
			call.Args = append(call.Args, "SELECT month, sum(revenue) ")
		}
		call.Args = append(call.Args, `"}`)
		turn.Calls = append(turn.Calls, call)
	}
	return llmfake.AnthropicStream(turn).Bytes()
}

func benchModel(tb testing.TB, hc *http.Client) *anthropic.Model {
	m, err := anthropic.New(anthropic.Config{Model: "claude-bench", APIKey: "k", BaseURL: "http://mem", HTTPClient: hc})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestRecordedStream(t *testing.T) {
	t.Parallel()
	data := recordedStream()
	resp := llmtest.GenerateRecorded(t, benchModel(t, llmtest.Client(data)), data)
	if calls := resp.Message.ToolCalls(); len(calls) != 160 || !strings.HasPrefix(string(calls[159].Arguments), `{"sql": "SELECT`) {
		t.Fatalf("%d calls", len(calls))
	}
}

// BenchmarkStreamDecode decodes the recorded ~1 MB stream through
// Model.Stream against a bufio line-scanning baseline; see
// llmtest.StreamBench for the metrics.
func BenchmarkStreamDecode(b *testing.B) {
	data := recordedStream()
	llmtest.StreamBench{Data: data, Model: benchModel(b, llmtest.Client(data))}.Run(b)
}
