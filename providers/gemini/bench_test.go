package gemini_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
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
	if n := len(data); n < 900_000 || n > 1_300_000 {
		t.Fatalf("recorded stream is %d bytes, want about 1 MB", n)
	}
	resp, err := agents.Generate(context.Background(), benchModel(t, &http.Client{Transport: memTransport{data}}),
		&agents.Request{Messages: []agents.Message{agents.UserMessage("go")}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.Message.ToolCalls()); n < 100 || resp.Usage.CachedTokens != 1000 {
		t.Fatalf("%d calls, usage %+v", n, resp.Usage)
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
