package llmtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bichat-go/bichat/agents"
)

// MemTransport answers every request with Body as a 200 text/event-stream
// response, from memory.
type MemTransport struct{ Body []byte }

// RoundTrip implements http.RoundTripper.
func (m MemTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(m.Body)), Request: r}, nil
}

// Client returns an HTTP client whose every request gets body (see
// MemTransport).
func Client(body []byte) *http.Client {
	return &http.Client{Transport: MemTransport{Body: body}}
}

// StreamBench is the providers' BenchmarkStreamDecode: it decodes a
// recorded stream through Model.Stream (SSE framing, JSON events, chunks)
// from an in-memory body. Each iteration also scans the same bytes line
// by line with a plain bufio.Reader (the baseline), so both run under the
// same machine load. Reported: MB/s (the decoder's wall-clock speed),
// MB/s_cpu (its speed in CPU time), x_baseline_cpu and x_baseline_wall
// (decoder over baseline), baseline_MB/s, allocs/chunk (allocations per
// yielded chunk) and, with Naive, encoding_json_x_slower (Naive's CPU
// time over the decoder's).
type StreamBench struct {
	// Data is the recorded stream; Model must read it (see Client).
	Data  []byte
	Model agents.Model
	// Naive, when set, is a reference decoder of Data (typically the same
	// SSE reader and encoding/json), run untimed in each iteration.
	Naive func(tb testing.TB)
}

// Run runs the benchmark.
func (sb StreamBench) Run(b *testing.B) {
	data := sb.Data
	req := &agents.Request{Messages: []agents.Message{agents.UserMessage("go")}}
	ctx := context.Background()
	chunks := 0
	decode := func() {
		chunks = 0
		for _, err := range sb.Model.Stream(ctx, req) {
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
	var decWall, scanWall, decCPU, scanCPU, naiveCPU time.Duration
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		w, c := time.Now(), CPUTime()
		scan()
		scanWall += time.Since(w)
		scanCPU += CPUTime() - c
		b.StartTimer()
		w, c = time.Now(), CPUTime()
		decode()
		decWall += time.Since(w)
		decCPU += CPUTime() - c
		if sb.Naive != nil {
			b.StopTimer()
			c = CPUTime()
			sb.Naive(b)
			naiveCPU += CPUTime() - c
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(decWall)/float64(scanWall), "x_baseline_wall")
	if scanCPU > 0 && decCPU > 0 {
		b.ReportMetric(float64(decCPU)/float64(scanCPU), "x_baseline_cpu")
		b.ReportMetric(float64(len(data))*float64(b.N)/decCPU.Seconds()/1e6, "MB/s_cpu")
		if sb.Naive != nil {
			b.ReportMetric(float64(naiveCPU)/float64(decCPU), "encoding_json_x_slower")
		}
	}
	b.ReportMetric(float64(len(data))*float64(b.N)/scanWall.Seconds()/1e6, "baseline_MB/s")
	b.ReportMetric(testing.AllocsPerRun(2, decode)/float64(chunks), "allocs/chunk")
}

// CheckRecordedSize fails t unless data, a recorded stream for
// BenchmarkStreamDecode, is about 1 MB.
func CheckRecordedSize(t testing.TB, data []byte) {
	t.Helper()
	if n := len(data); n < 900_000 || n > 1_300_000 {
		t.Fatalf("recorded stream is %d bytes, want about 1 MB", n)
	}
}

// GenerateRecorded checks data's size (CheckRecordedSize) and returns what
// m, which must read data (see Client), answers to one user message.
func GenerateRecorded(t testing.TB, m agents.Model, data []byte) *agents.Response {
	t.Helper()
	CheckRecordedSize(t, data)
	resp, err := agents.Generate(context.Background(), m, &agents.Request{Messages: []agents.Message{agents.UserMessage("go")}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// MustJSON returns the JSON encoding of v, failing t when there is none.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// VerifyNoLeaks runs the tests of m and fails the package when a test
// leaves goroutines behind (an unclosed body, a stuck stream); idle
// keep-alive connections of the shared HTTP transport are not leaks. Call
// it from TestMain.
func VerifyNoLeaks(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// LiveModel gates a live test against api (e.g. "the Anthropic API"): it
// skips t unless one of keyEnvs is set, and returns the model named by
// modelEnv, else def.
func LiveModel(t *testing.T, api, modelEnv, def string, keyEnvs ...string) string {
	t.Helper()
	set := false
	for _, k := range keyEnvs {
		set = set || os.Getenv(k) != ""
	}
	if !set {
		names := keyEnvs[0]
		for i, k := range keyEnvs[1:] {
			if i == len(keyEnvs)-2 {
				names += " or " + k
			} else {
				names += ", " + k
			}
		}
		t.Skipf("set %s to run the live test against %s", names, api)
	}
	if m := os.Getenv(modelEnv); m != "" {
		return m
	}
	return def
}

// LiveToolRun runs an executor on m with a current_year tool, asks for
// the year and fails t unless the run finishes with an answer.
func LiveToolRun(t *testing.T, m agents.Model) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clock := agents.MustTool("current_year", "Returns the current year.",
		func(context.Context, struct{}) (int, error) { return 2026, nil })
	exec, err := agents.NewExecutor(agents.Config{Model: m, Tools: []agents.Tool{clock}})
	if err != nil {
		t.Fatal(err)
	}
	var answer string
	for ev, err := range exec.Run(ctx, agents.Input{Message: agents.UserMessage("Use the current_year tool, then answer with the year only.")}) {
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := ev.(*agents.RunFinished); ok {
			answer = f.Text
		}
	}
	t.Logf("answer: %q", answer)
	if answer == "" {
		t.Error("no answer")
	}
}
