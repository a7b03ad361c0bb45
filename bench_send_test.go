//go:build unix

package bichat_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/bench"
	"github.com/bichat-go/bichat/providers/scripted"
)

// The benchmarks of this file measure the cost of one answered message
// (issue 12, "Cost per run"): a question answered with three tool calls in
// one turn and a final answer of 200 text deltas, on the in-memory store.
// A run yields 215 events: run.started, 5 text deltas, usage, 3
// tool.started, 3 tool.finished, 200 text deltas, usage and run.finished.
//
//	go test -run='^$' -bench='SendRun' -benchmem -cpu=1 .
//
// cpu-ns/run is the process's user+system CPU time per run (GC and every
// goroutine included), which other load on the machine barely moves.
// BenchmarkSendRunExecutor and BenchmarkSendRunModel are baselines of the
// same shape, measured in the same process, so figures can be compared as
// ratios across machines.

const (
	benchChunk      = 16
	benchFirstText  = 5 * benchChunk   // 5 deltas before the tool calls
	benchAnswerText = 200 * benchChunk // 200 deltas of the answer
	benchEvents     = 215
)

// benchText returns n ASCII bytes of prose.
func benchText(n int) string {
	const filler = "EMEA sales in 2025 were 1.34 M$ over 321 orders, up 4.2% on 2024; subscription renewals " +
		"carried the growth while hardware was flat, and the euro's rise added about two points. "
	return strings.Repeat(filler, n/len(filler)+1)[:n]
}

// benchTools returns three cheap tools, two of them parallel-safe.
func benchTools(tb testing.TB) []agents.Tool {
	tb.Helper()
	sales, fx, note, err := bench.Tools()
	if err != nil {
		tb.Fatal(err)
	}
	return []agents.Tool{sales, fx, note}
}

var (
	benchFirst  = benchText(benchFirstText)
	benchAnswer = benchText(benchAnswerText)
	benchCalls  = bench.Calls()
)

// benchModel answers every question with the tool-call turn, and every
// request that ends with tool results with the final answer, so any number
// of runs can share it concurrently.
func benchModel() *scripted.Model {
	return &scripted.Model{ChunkSize: benchChunk, Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == domain.RoleTool {
			return scripted.Turn{Text: benchAnswer}, nil
		}
		return scripted.Turn{Text: benchFirst, ToolCalls: benchCalls}, nil
	}}
}

var benchUser = domain.Principal{TenantID: "bench-tenant", UserID: "bench-user", Roles: []domain.AccessRole{domain.AccessContributor}}

func benchService(tb testing.TB, m *scripted.Model) *bichat.Service {
	tb.Helper()
	svc, err := bichat.New(bichat.Config{Agent: agents.Config{Model: m, System: "You are a data analyst.", Tools: benchTools(tb)}})
	if err != nil {
		tb.Fatal(err)
	}
	return svc
}

// processCPU returns the user+system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// checkRun fails unless events are one complete answered run of the
// benchmark's shape.
func checkRun(tb testing.TB, events int, tools int, last agents.Event) {
	tb.Helper()
	rf, ok := last.(*agents.RunFinished)
	if !ok || events != benchEvents || tools != 3 || rf.Text != benchAnswer {
		tb.Fatalf("unexpected run: %d events (want %d), %d tools, last %T", events, benchEvents, tools, last)
	}
}

// sendOnce asks one question in a new session, drains the run and deletes
// the session again (so the in-memory store does not grow with b.N).
func sendOnce(tb testing.TB, ctx context.Context, svc *bichat.Service) {
	sess, err := svc.CreateSession(ctx, benchUser, bichat.SessionOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	var last agents.Event
	events, tools := 0, 0
	for ev, err := range svc.Send(ctx, benchUser, sess.ID, "What were EMEA sales in 2025, in dollars?") {
		if err != nil {
			tb.Fatal(err)
		}
		events++
		if f, ok := ev.(*agents.ToolCallFinished); ok {
			if f.Error != "" {
				tb.Fatalf("tool %s failed: %s", f.Name, f.Error)
			}
			tools++
		}
		last = ev
	}
	checkRun(tb, events, tools, last)
	if err := svc.DeleteSession(ctx, benchAdmin, sess.ID); err != nil {
		tb.Fatal(err)
	}
}

// benchAdmin is benchUser with the delete permission.
var benchAdmin = domain.Principal{TenantID: benchUser.TenantID, UserID: benchUser.UserID, Roles: []domain.AccessRole{domain.AccessAdmin}}

// cpuLoop runs fn b.N times and reports cpu-ns/run.
func cpuLoop(b *testing.B, fn func()) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		fn()
	}
	cpu := processCPU() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/run")
}

// BenchmarkSendRun measures one answered message through Service.Send on
// the in-memory store: session creation, the run with its context
// compilation, run log and persistence, and the session's deletion.
func BenchmarkSendRun(b *testing.B) {
	svc := benchService(b, benchModel())
	ctx := context.Background()
	sendOnce(b, ctx, svc) // warm caches (tool schemas, token counts)
	cpuLoop(b, func() { sendOnce(b, ctx, svc) })
}

// BenchmarkSendRunExecutor is the baseline of BenchmarkSendRun: the same
// run through agents.Executor alone (default request builder, no store,
// no run log, no context compiler).
func BenchmarkSendRunExecutor(b *testing.B) {
	e, err := agents.NewExecutor(agents.Config{Model: benchModel(), System: "You are a data analyst.", Tools: benchTools(b)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	in := agents.Input{RunID: "bench-run", TenantID: "t", UserID: "u", SessionID: "s",
		Message: agents.UserMessage("What were EMEA sales in 2025, in dollars?")}
	cpuLoop(b, func() {
		var last agents.Event
		events, tools := 0, 0
		for ev, err := range e.Run(ctx, in) {
			if err != nil {
				b.Fatal(err)
			}
			events++
			if _, ok := ev.(*agents.ToolCallFinished); ok {
				tools++
			}
			last = ev
		}
		checkRun(b, events, tools, last)
	})
}

// BenchmarkSendRunModel is the floor of BenchmarkSendRun and the
// reference for ratios: the scripted model's two turns drained chunk by
// chunk, with no code of the run in between (no accumulation, tools,
// events or storage).
func BenchmarkSendRunModel(b *testing.B) {
	m := benchModel()
	ctx := context.Background()
	q := agents.UserMessage("What were EMEA sales in 2025, in dollars?")
	first := &agents.Request{Messages: []agents.Message{q}}
	second := &agents.Request{Messages: []agents.Message{q, {Role: domain.RoleTool}}}
	cpuLoop(b, func() {
		m.Reset()
		texts := 0
		for _, req := range []*agents.Request{first, second} {
			for c, err := range m.Stream(ctx, req) {
				if err != nil {
					b.Fatal(err)
				}
				if c.Type == agents.ChunkText {
					texts++
				}
			}
		}
		if texts != 205 {
			b.Fatalf("%d text chunks, want 205", texts)
		}
	})
}

// BenchmarkSendRunConcurrent1000 starts 1,000 runs at once, each in its own
// session, and reports how long each waited for its first event (p50, p99
// and max, in ms) and the CPU time per run. Run it with -cpu=2 to match the
// issue's two-core figures.
func BenchmarkSendRunConcurrent1000(b *testing.B) {
	const runs = 1000
	svc := benchService(b, benchModel())
	ctx := context.Background()
	sendOnce(b, ctx, svc)
	var all []time.Duration
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		sessions := make([]string, runs)
		for k := range sessions {
			sess, err := svc.CreateSession(ctx, benchUser, bichat.SessionOptions{})
			if err != nil {
				b.Fatal(err)
			}
			sessions[k] = sess.ID
		}
		first := make([]time.Duration, runs)
		failed := make([]error, runs)
		var ready, done sync.WaitGroup
		gate := make(chan struct{})
		var start time.Time
		for k := range sessions {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				ready.Done()
				<-gate
				events := 0
				for _, err := range svc.Send(ctx, benchUser, sessions[k], "What were EMEA sales in 2025, in dollars?") {
					if err != nil {
						failed[k] = err
						return
					}
					if events == 0 {
						first[k] = time.Since(start)
					}
					events++
				}
				if events != benchEvents {
					failed[k] = fmt.Errorf("run ended after %d events, want %d", events, benchEvents)
				}
			}()
		}
		ready.Wait()
		b.StartTimer()
		cpu0 := processCPU()
		start = time.Now()
		close(gate)
		done.Wait()
		cpu += processCPU() - cpu0
		b.StopTimer()
		for k, err := range failed {
			if err != nil {
				b.Fatalf("run %d: %v", k, err)
			}
		}
		all = append(all, first...)
		for _, id := range sessions {
			if err := svc.DeleteSession(ctx, benchAdmin, id); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "first-event-p50-ms")
	b.ReportMetric(pct(0.99), "first-event-p99-ms")
	b.ReportMetric(float64(all[len(all)-1].Microseconds())/1000, "first-event-max-ms")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*runs), "cpu-ns/run")
}
