package openai_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
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

// memTransport answers every request with the same in-memory body.
type memTransport struct{ body []byte }

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(m.body)), Request: r}, nil
}

// BenchmarkStreamDecode decodes a recorded ~1 MB stream through
// Model.Stream (SSE framing, JSON chunks, tool-call fragments) from an
// in-memory body. Each iteration also scans the same bytes line by line
// with a plain bufio.Reader (the baseline), so both run under the same
// machine load; the reported MB/s is the decoder's wall-clock speed, and
// the ratios compare the two in CPU time (x_baseline_cpu) and wall time
// (x_baseline_wall). encoding_json_x_slower compares a naive decoder (the
// same SSE reader plus encoding/json per chunk) with this one, in CPU
// time. allocs/chunk is allocations per yielded chunk.
func BenchmarkStreamDecode(b *testing.B) {
	data := recordedStream()
	m, err := openai.New(openai.Options{Connection: openai.Connection{APIKey: "k", BaseURL: "http://mem/v1",
		HTTPClient: &http.Client{Transport: memTransport{data}}}, Model: "gpt-4.1"})
	if err != nil {
		b.Fatal(err)
	}
	req := &agents.Request{Messages: []agents.Message{agents.UserMessage("go")}}
	ctx := context.Background()
	chunks := 0
	decode := func() {
		chunks = 0
		for _, err := range m.Stream(ctx, req) {
			if err != nil {
				b.Fatal(err)
			}
			chunks++
		}
	}
	br := bufio.NewReaderSize(nil, 64<<10)
	scan := func() {
		br.Reset(bytes.NewReader(data))
		for {
			if _, err := br.ReadSlice('\n'); err == io.EOF {
				break
			}
		}
	}
	// The naive decoder: the same SSE reader and encoding/json per chunk.
	naive := func() {
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
				b.Fatal(err)
			}
		}
	}
	var decWall, scanWall, decCPU, scanCPU, naiveCPU time.Duration
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		w, c := time.Now(), cpuTime()
		scan()
		scanWall += time.Since(w)
		scanCPU += cpuTime() - c
		b.StartTimer()
		w, c = time.Now(), cpuTime()
		decode()
		decWall += time.Since(w)
		decCPU += cpuTime() - c
		b.StopTimer()
		c = cpuTime()
		naive()
		naiveCPU += cpuTime() - c
		b.StartTimer()
	}
	b.ReportMetric(float64(decWall)/float64(scanWall), "x_baseline_wall")
	if scanCPU > 0 {
		b.ReportMetric(float64(decCPU)/float64(scanCPU), "x_baseline_cpu")
	}
	b.ReportMetric(float64(len(data))*float64(b.N)/decCPU.Seconds()/1e6, "MB/s_cpu")
	if decCPU > 0 {
		b.ReportMetric(float64(naiveCPU)/float64(decCPU), "encoding_json_x_slower")
	}
	b.ReportMetric(float64(len(data))*float64(b.N)/scanWall.Seconds()/1e6, "baseline_MB/s")
	b.ReportMetric(testing.AllocsPerRun(2, decode)/float64(chunks), "allocs/chunk")
}

func TestRecordedStreamSize(t *testing.T) {
	n := len(recordedStream())
	if n < 900_000 || n > 1_300_000 {
		t.Fatalf("recorded stream is %d bytes, want about 1 MB", n)
	}
	if !strings.HasSuffix(string(recordedStream()), "data: [DONE]\n\n") {
		t.Fatal("recorded stream lacks its terminator")
	}
}
