package anthropic_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/llmfake"
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
	if n := len(data); n < 900_000 || n > 1_300_000 {
		t.Fatalf("recorded stream is %d bytes, want about 1 MB", n)
	}
	resp, err := agents.Generate(context.Background(), benchModel(t, &http.Client{Transport: memTransport{data}}),
		&agents.Request{Messages: []agents.Message{agents.UserMessage("go")}})
	if err != nil {
		t.Fatal(err)
	}
	if calls := resp.Message.ToolCalls(); len(calls) != 160 || !strings.HasPrefix(string(calls[159].Arguments), `{"sql": "SELECT`) {
		t.Fatalf("%d calls", len(calls))
	}
}

// memTransport answers every request with body, from memory.
type memTransport struct{ body []byte }

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(m.body)), Request: r}, nil
}

// BenchmarkStreamDecode decodes the recorded ~1 MB stream through
// Model.Stream (SSE framing, JSON events, chunks) from an in-memory body.
// Each iteration also scans the same bytes line by line with a plain
// bufio.Reader (the baseline), so both run under the same machine load;
// MB/s is the decoder's wall-clock speed, MB/s_cpu its speed in CPU time,
// and the ratios compare decoder and baseline in CPU time
// (x_baseline_cpu) and wall time (x_baseline_wall). allocs/chunk is
// allocations per yielded chunk.
func BenchmarkStreamDecode(b *testing.B) {
	data := recordedStream()
	m := benchModel(b, &http.Client{Transport: memTransport{data}})
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
	var decWall, scanWall, decCPU, scanCPU time.Duration
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
	}
	b.ReportMetric(float64(decWall)/float64(scanWall), "x_baseline_wall")
	if scanCPU > 0 && decCPU > 0 {
		b.ReportMetric(float64(decCPU)/float64(scanCPU), "x_baseline_cpu")
		b.ReportMetric(float64(len(data))*float64(b.N)/decCPU.Seconds()/1e6, "MB/s_cpu")
	}
	b.ReportMetric(float64(len(data))*float64(b.N)/scanWall.Seconds()/1e6, "baseline_MB/s")
	b.ReportMetric(testing.AllocsPerRun(2, decode)/float64(chunks), "allocs/chunk")
}
