package llmtest_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"iter"
	"runtime"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/llmtest"
)

func TestMain(m *testing.M) { llmtest.VerifyNoLeaks(m) }

// textModel yields its words as text chunks.
type textModel struct{ words []string }

func (m textModel) Info() agents.ModelInfo { return agents.ModelInfo{Name: "text"} }

func (m textModel) Stream(context.Context, *agents.Request) iter.Seq2[agents.Chunk, error] {
	return func(yield func(agents.Chunk, error) bool) {
		for _, w := range m.words {
			if !yield(agents.Chunk{Type: agents.ChunkText, Text: w}, nil) {
				return
			}
		}
		yield(agents.Chunk{Type: agents.ChunkStop, Stop: agents.StopEndTurn}, nil)
	}
}

func TestClient(t *testing.T) {
	t.Parallel()
	body := []byte("data: {}\n\n")
	resp, err := llmtest.Client(body).Get("http://mem/anything")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || !bytes.Equal(got, body) {
		t.Fatalf("%d %v %q", resp.StatusCode, resp.Header, got)
	}
}

func TestStreamBench(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a benchmark")
	}
	// A fixed iteration count keeps this test fast.
	old := flag.Lookup("test.benchtime").Value.String()
	if err := flag.Set("test.benchtime", "50x"); err != nil {
		t.Fatal(err)
	}
	defer flag.Set("test.benchtime", old)
	data := bytes.Repeat([]byte("data: {\"x\":1}\n\n"), 1000)
	naiveRuns := 0
	res := testing.Benchmark(func(b *testing.B) {
		llmtest.StreamBench{Data: data, Model: textModel{words: []string{"a", "b", "c"}},
			Naive: func(testing.TB) { naiveRuns++ }}.Run(b)
	})
	if res.N == 0 || naiveRuns < res.N {
		t.Fatalf("N %d, naive ran %d times", res.N, naiveRuns)
	}
	want := []string{"x_baseline_wall", "baseline_MB/s", "allocs/chunk"}
	if runtime.GOOS == "linux" {
		want = append(want, "x_baseline_cpu", "MB/s_cpu", "encoding_json_x_slower")
	}
	for _, k := range want {
		if _, ok := res.Extra[k]; !ok {
			t.Errorf("metric %s missing from %v", k, res.Extra)
		}
	}
	if res.Bytes != int64(len(data)) {
		t.Errorf("SetBytes %d, want %d", res.Bytes, len(data))
	}
}

func TestGenerateRecorded(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("x"), 1_000_000)
	resp := llmtest.GenerateRecorded(t, textModel{words: []string{"hello ", "world"}}, data)
	if got := resp.Message.Text(); got != "hello world" {
		t.Fatalf("text %q", got)
	}
}

func TestLiveModel(t *testing.T) {
	t.Setenv("LLMTEST_KEY_A", "")
	t.Setenv("LLMTEST_KEY_B", "")
	t.Setenv("LLMTEST_MODEL", "")
	var skipped bool
	var msg string
	t.Run("unset", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		llmtest.LiveModel(t, "the Test API", "LLMTEST_MODEL", "m0", "LLMTEST_KEY_A", "LLMTEST_KEY_B")
		msg = "not skipped"
	})
	if !skipped || msg != "" {
		t.Fatal("LiveModel did not skip without a key")
	}
	t.Setenv("LLMTEST_KEY_B", "k")
	if got := llmtest.LiveModel(t, "the Test API", "LLMTEST_MODEL", "m0", "LLMTEST_KEY_A", "LLMTEST_KEY_B"); got != "m0" {
		t.Fatalf("default model %q", got)
	}
	t.Setenv("LLMTEST_MODEL", "m1")
	if got := llmtest.LiveModel(t, "the Test API", "LLMTEST_MODEL", "m0", "LLMTEST_KEY_A", "LLMTEST_KEY_B"); got != "m1" {
		t.Fatalf("model from env %q", got)
	}
}

func TestMustJSON(t *testing.T) {
	t.Parallel()
	if got := llmtest.MustJSON(t, map[string]int{"a": 1}); got != `{"a":1}` {
		t.Fatal(got)
	}
}
