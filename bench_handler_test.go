//go:build unix

package bichat_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The benchmarks of this file measure the HTTP API (issue 13,
// "Benchmarks") with the run of bench_send_test.go (scripted model, three
// tools, a final answer of 200 text deltas: 215 events, each one SSE
// event), on a loopback httptest.Server whose client keeps up to 4,096
// idle connections (the default of 2 per host would redial every
// stream):
//
//   - BenchmarkHandlerFirstByte: from the stream request to the first
//     SSE byte (goal p50 < 5 ms), with the same wait through
//     Service.Watch as the baseline.
//   - BenchmarkHandlerConcurrent1000: 1,000 sessions at once, each
//     asking through the handler and streaming its answer to the end,
//     against 1,000 sessions calling Service.Send directly in the same
//     run (the baseline): added p99 latency (goal < 50 ms), memory per
//     live stream (goal < 200 KB), events/s; on PostgreSQL also the
//     round trips per message.
//
// Both run on the in-memory store and on PostgreSQL (skipped without
// BICHAT_TEST_POSTGRES_DSN, see .ci/test.env):
//
//	set -a; . ./.ci/test.env; set +a
//	go test -run='^$' -bench='Handler(FirstByte|Concurrent1000)' -count=3 .

// hbStreams is the number of concurrent sessions of
// BenchmarkHandlerConcurrent1000.
const hbStreams = 1000

// hbTimeout bounds each phase of a benchmark: the load generator stops by
// itself, and a phase that does not finish in time fails the benchmark.
const hbTimeout = 45 * time.Second

// hbServer is a Service behind its Handler on a loopback server, with a
// client sized for thousands of concurrent streams. Every request is
// benchUser's.
type hbServer struct {
	svc    *bichat.Service
	srv    *httptest.Server
	client *http.Client
	base   string
}

func newHBServer(tb testing.TB, svc *bichat.Service) *hbServer {
	tb.Helper()
	h := bichat.NewHandler(svc, bichat.HandlerOptions{
		Authenticate: func(*http.Request) (domain.Principal, error) { return benchUser, nil },
		Logger:       slog.New(slog.DiscardHandler),
	})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadHeaderTimeout = hbTimeout
	srv.Start()
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: hbTimeout}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	tb.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return &hbServer{svc: svc, srv: srv, client: &http.Client{Transport: tr}, base: srv.URL + "/api"}
}

// ask posts benchQuestion to a session and returns the answer's message
// id.
func (s *hbServer) ask(ctx context.Context, sessionID string) (string, error) {
	body, _ := json.Marshal(bichat.PostMessageRequest{Text: benchQuestion})
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/sessions/"+sessionID+"/messages", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := s.client.Do(r)
	if err != nil {
		return "", fmt.Errorf("post message: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return "", fmt.Errorf("post message: read: %w", err)
	}
	if res.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("post message: %d %s", res.StatusCode, b)
	}
	var out bichat.PostMessageResponse
	if err := json.Unmarshal(b, &out); err != nil || out.AssistantMessage.ID == "" {
		return "", fmt.Errorf("post message: response %s: %v", b, err)
	}
	return out.AssistantMessage.ID, nil
}

// hbRun is what a client saw of one run's stream.
type hbRun struct {
	events, tools int
	last          string        // the last event's name
	firstByte     time.Duration // from the request to the first byte of the body
	first, end    time.Duration // from start to the first and the terminal event
}

// stream reads a message's events from the start to the end of the
// stream. Durations are measured from start; onFirst, when set, is called
// once the first event is read.
func (s *hbServer) stream(ctx context.Context, messageID string, start time.Time, onFirst func()) (hbRun, error) {
	var run hbRun
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/messages/"+messageID+"/events", nil)
	if err != nil {
		return run, err
	}
	r.Header.Set("Accept", "text/event-stream")
	res, err := s.client.Do(r)
	if err != nil {
		return run, fmt.Errorf("stream: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return run, fmt.Errorf("stream: %d %s", res.StatusCode, b)
	}
	br := bufio.NewReader(res.Body)
	if _, err := br.Peek(1); err != nil {
		return run, fmt.Errorf("stream: first byte: %w", err)
	}
	run.firstByte = time.Since(start)
	var name []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return run, nil
		}
		if err != nil {
			return run, fmt.Errorf("stream: after %d events: %w", run.events, err)
		}
		switch {
		case len(line) == 1: // the blank line that ends an event
			if name == nil {
				continue
			}
			run.events++
			run.last = string(name)
			switch run.last {
			case bichat.SSEToolResult:
				run.tools++
			case bichat.SSEMessageComplete, bichat.SSEMessageError:
				run.end = time.Since(start)
			}
			if run.events == 1 {
				run.first = time.Since(start)
				if onFirst != nil {
					onFirst()
				}
			}
			name = nil
		case bytes.HasPrefix(line, []byte("event: ")):
			name = append(name[:0:0], bytes.TrimSpace(line[len("event: "):])...)
		}
	}
}

// check fails unless run is one whole answered run of the benchmark's
// shape.
func (run hbRun) check() error {
	if run.events != benchEvents || run.tools != 3 || run.last != bichat.SSEMessageComplete {
		return fmt.Errorf("unexpected stream: %d events (want %d), %d tool results, last %q", run.events, benchEvents, run.tools, run.last)
	}
	return nil
}

// directRun asks benchQuestion through Service.Send and drains the run,
// measuring from start.
func directRun(ctx context.Context, svc *bichat.Service, sessionID string, start time.Time) (hbRun, error) {
	var run hbRun
	var last agents.Event
	for ev, err := range svc.Send(ctx, benchUser, sessionID, benchQuestion) {
		if err != nil {
			return run, err
		}
		run.events++
		if run.events == 1 {
			run.first = time.Since(start)
		}
		if _, ok := ev.(*agents.ToolCallFinished); ok {
			run.tools++
		}
		last = ev
	}
	run.end = time.Since(start)
	if _, ok := last.(*agents.RunFinished); !ok || run.events != benchEvents || run.tools != 3 {
		return run, fmt.Errorf("unexpected run: %d events (want %d), %d tools, last %T", run.events, benchEvents, run.tools, last)
	}
	run.last = bichat.SSEMessageComplete
	return run, nil
}

// hbSessions creates n sessions of benchUser.
func hbSessions(tb testing.TB, svc *bichat.Service, n int) []string {
	tb.Helper()
	ids := make([]string, n)
	for i := range ids {
		s, err := svc.CreateSession(context.Background(), benchUser, bichat.SessionOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		ids[i] = s.ID
	}
	return ids
}

// hbDelete deletes sessions (so the in-memory store does not carry one
// phase's runs into the next one's heap).
func hbDelete(tb testing.TB, svc *bichat.Service, ids []string) {
	tb.Helper()
	for _, id := range ids {
		if err := svc.DeleteSession(context.Background(), benchAdmin, id); err != nil {
			tb.Fatal(err)
		}
	}
}

// hbHold holds every model call while armed, after the run has started
// (its message_start is out): runs then stay live for as long as needed.
type hbHold struct {
	mu sync.Mutex
	ch chan struct{}
}

func (h *hbHold) arm() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ch = make(chan struct{})
}

func (h *hbHold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ch != nil {
		close(h.ch)
		h.ch = nil
	}
}

// heldModel is benchModel whose calls wait while h is armed.
func heldModel(h *hbHold) *scripted.Model {
	m := benchModel()
	respond := m.Respond
	m.Respond = func(ctx context.Context, req *agents.Request) (scripted.Turn, error) {
		h.mu.Lock()
		ch := h.ch
		h.mu.Unlock()
		if ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				return scripted.Turn{}, ctx.Err()
			}
		}
		return respond(ctx, req)
	}
	return m
}

// hbFanOut runs fn for every session at once (all goroutines released
// together) and returns each result and the wall time, or an error naming
// how many failed; the phase is cancelled when it outlives hbTimeout.
func hbFanOut(sessions []string, fn func(ctx context.Context, k int) (hbRun, error)) ([]hbRun, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), hbTimeout)
	defer cancel()
	runs := make([]hbRun, len(sessions))
	errs := make([]error, len(sessions))
	var ready, done sync.WaitGroup
	gate := make(chan struct{})
	for k := range sessions {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-gate
			runs[k], errs[k] = fn(ctx, k)
		}()
	}
	ready.Wait()
	start := time.Now()
	close(gate)
	done.Wait()
	wall := time.Since(start)
	if n := countErrs(errs); n > 0 {
		return nil, wall, fmt.Errorf("%d of %d sessions failed (in %s), e.g.: %w", n, len(errs), wall,
			errors.Join(slices.DeleteFunc(errs, func(e error) bool { return e == nil })[:min(n, 3)]...))
	}
	return runs, wall, nil
}

// mustFanOut is hbFanOut failing the benchmark on error.
func mustFanOut(b *testing.B, sessions []string, fn func(ctx context.Context, k int) (hbRun, error)) ([]hbRun, time.Duration) {
	b.Helper()
	runs, wall, err := hbFanOut(sessions, fn)
	if err != nil {
		b.Fatal(err)
	}
	return runs, wall
}

// hbSettle closes the client's idle connections and waits (at most a
// second) until the goroutines serving them have exited, so that a
// following measurement counts new connections.
func (s *hbServer) hbSettle() {
	s.client.CloseIdleConnections()
	prev := runtime.NumGoroutine()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == prev {
			return
		}
		prev = n
	}
}

func countErrs(errs []error) int {
	n := 0
	for _, e := range errs {
		if e != nil {
			n++
		}
	}
	return n
}

// hbLatency is the sorted end and first-event latencies of runs, and
// their events.
func hbLatency(runs []hbRun) (end, first []time.Duration, events int) {
	for _, r := range runs {
		end = append(end, r.end)
		first = append(first, r.first)
		events += r.events
	}
	slices.Sort(end)
	slices.Sort(first)
	return end, first, events
}

// hbMemStats is the memory of the process after a collection.
type hbMemStats struct {
	inuse, live, stack float64 // HeapInuse, HeapAlloc and StackInuse in KB
	goroutines         int
}

// hbMem waits for pending run-log batches to be written (and, when set,
// for quiet to return), collects garbage and reads the memory in use.
func hbMem(quiet func()) hbMemStats {
	time.Sleep(2 * bichat.RunLogWindow)
	if quiet != nil {
		quiet()
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return hbMemStats{inuse: float64(ms.HeapInuse) / 1024, live: float64(ms.HeapAlloc) / 1024,
		stack: float64(ms.StackInuse) / 1024, goroutines: runtime.NumGoroutine()}
}

// perItem is (b - a) / n, field by field.
func (b hbMemStats) perItem(a hbMemStats, n int) hbMemStats {
	f := float64(n)
	return hbMemStats{inuse: (b.inuse - a.inuse) / f, live: (b.live - a.live) / f, stack: (b.stack - a.stack) / f}
}

func (b hbMemStats) add(a hbMemStats) hbMemStats {
	return hbMemStats{inuse: b.inuse + a.inuse, live: b.live + a.live, stack: b.stack + a.stack, goroutines: b.goroutines + a.goroutines}
}

// BenchmarkHandlerFirstByte measures the time from a stream request
// (GET /messages/{id}/events, just after the question was posted) to
// the first byte of its body, p50 and p99 (goal p50 < 5 ms); the
// baseline is the time from Service.Watch to its first event for another
// message asked the same way in the same iteration (direct-*), and
// first-byte-p50-ratio their ratio. Each stream is read to its end and
// checked.
func BenchmarkHandlerFirstByte(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		benchFirstByte(b, newHBServer(b, benchServiceOn(b, domain.Repositories{}, benchModel())), true)
	})
	b.Run("postgres", func(b *testing.B) {
		p := pgPool(b, pgDSN(b))
		benchFirstByte(b, newHBServer(b, benchPgService(b, p, pgSchema(b, p), benchModel())), false)
	})
}

func benchFirstByte(b *testing.B, s *hbServer, del bool) {
	ctx := context.Background()
	var viaHTTP, direct []time.Duration
	var sessions []string
	for b.Loop() {
		ids := hbSessions(b, s.svc, 2)
		sessions = append(sessions, ids...)
		msg, err := s.ask(ctx, ids[0])
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		run, err := s.stream(ctx, msg, start, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := run.check(); err != nil {
			b.Fatal(err)
		}
		viaHTTP = append(viaHTTP, run.firstByte)

		if msg, err = s.ask(ctx, ids[1]); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		var first time.Duration
		var last agents.Event
		events := 0
		for ev, err := range s.svc.Watch(ctx, benchUser, msg, 0) {
			if err != nil {
				b.Fatal(err)
			}
			if events == 0 {
				first = time.Since(start)
			}
			events++
			last = ev
		}
		if _, ok := last.(*agents.RunFinished); !ok || events != benchEvents {
			b.Fatalf("watched %d events ending with %T", events, last)
		}
		direct = append(direct, first)
	}
	b.StopTimer()
	if del {
		hbDelete(b, s.svc, sessions)
	}
	slices.Sort(viaHTTP)
	slices.Sort(direct)
	b.ReportMetric(pctMS(viaHTTP, 0.5), "first-byte-p50-ms")
	b.ReportMetric(pctMS(viaHTTP, 0.99), "first-byte-p99-ms")
	b.ReportMetric(pctMS(direct, 0.5), "direct-p50-ms")
	b.ReportMetric(pctMS(direct, 0.99), "direct-p99-ms")
	if d := pctMS(direct, 0.5); d > 0 {
		b.ReportMetric(pctMS(viaHTTP, 0.5)/d, "first-byte-p50-ratio")
	}
}

// BenchmarkHandlerConcurrent1000 runs three phases per iteration, each
// over 1,000 new sessions at once, with a bounded load generator (one
// goroutine per session, one question each, hbTimeout at most):
//
//  1. Memory: every session asks through the handler while the model
//     holds each run after its start; 1,000 SSE streams (a connection
//     each) are opened and each receives its first event; memory is read
//     after a collection, then again once the clients closed the streams
//     (the runs still held). heap-KB/stream is the HeapInuse difference
//     per stream (server and client sides together: both live in this
//     process), live-KB/stream the same for HeapAlloc (live objects),
//     stack-KB/stream and goroutines/stream for stacks and goroutines;
//     heap-KB/run and live-KB/run are what a held run costs with no
//     stream. The runs are then released (on PostgreSQL: cancelled) and
//     every run is streamed again from its start to its end and checked.
//  2. Baseline: every session calls Service.Send directly and drains its
//     run: direct-p50-ms / direct-p99-ms from the call to the terminal
//     event, direct-events/s.
//  3. Handler: every session posts its question and streams the answer
//     to message_complete over loopback: http-p50-ms / http-p99-ms from
//     the POST to the terminal event, http-first-p99-ms to the first SSE
//     event, events/s; added-p99-ms = http-p99 - direct-p99 (goal
//     < 50 ms) and p99-ratio = http-p99 / direct-p99.
//
// direct-cpu-ms/msg and http-cpu-ms/msg are the process's CPU time per
// message in phases 2 and 3 (the clients' side included): with every
// session starting at once the cores are saturated, so the latencies
// follow the CPU each path needs, and these figures explain them.
//
// On PostgreSQL, rt/msg-direct and rt/msg-http are the round trips per
// message the pool's tracer counted in phases 2 and 3 (pgCounter of
// bench_durable_test.go).
func BenchmarkHandlerConcurrent1000(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		var hold hbHold
		s := newHBServer(b, benchServiceOn(b, domain.Repositories{}, heldModel(&hold)))
		benchConcurrent(b, s, &hold, nil, nil, true, false)
	})
	b.Run("postgres", func(b *testing.B) {
		var c pgCounter
		p := hbTracedPool(b, pgDSN(b), &c)
		var hold hbHold
		s := newHBServer(b, benchPgService(b, p, pgSchema(b, p), heldModel(&hold)))
		benchConcurrent(b, s, &hold, &c, func() { poolIdle(p) }, false, true)
	})
}

// hbPoolConns is the pool size of the PostgreSQL benchmark: 1,000 runs
// at once queue for connections, and a pool of a few dozen keeps the
// database, not the queue, the limit.
const hbPoolConns = 24

// hbTracedPool opens a pool of hbPoolConns connections whose round trips
// c counts, closed when the benchmark ends.
func hbTracedPool(tb testing.TB, dsn string, c *pgCounter) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = hbPoolConns
	cfg.ConnConfig.Tracer = c
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// poolIdle waits (at most 20 s) until no connection of p has been in use
// for 50 ms: the runs' writes queued behind the pool are done.
func poolIdle(p *pgxpool.Pool) {
	idle := 0
	for deadline := time.Now().Add(20 * time.Second); idle < 5 && time.Now().Before(deadline); {
		if p.Stat().AcquiredConns() == 0 {
			idle++
		} else {
			idle = 0
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// benchConcurrent runs BenchmarkHandlerConcurrent1000 on s. quiet, when
// set, waits until the store has written what the runs queued before
// memory is read. del deletes
// each phase's sessions after it; cancelHeld ends the held runs of the
// memory phase with Service.Cancel (each stream then ends with its
// message_error "cancelled") instead of letting them finish, which saves
// a phase's worth of database work on PostgreSQL.
func benchConcurrent(b *testing.B, s *hbServer, hold *hbHold, c *pgCounter, quiet func(), del, cancelHeld bool) {
	ctx := context.Background()
	// Warm up: statements, tool schemas, a few connections.
	for _, id := range hbSessions(b, s.svc, 2) {
		msg, err := s.ask(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if run, err := s.stream(ctx, msg, time.Now(), nil); err != nil || run.check() != nil {
			b.Fatalf("warm-up stream: %+v %v", run, err)
		}
	}
	var (
		perStream, perRun             hbMemStats
		gorStream                     float64
		directEnd, httpEnd, httpFirst []time.Duration
		directEvents, httpEvents      int
		directWall, httpWall          time.Duration
		rtDirect, rtHTTP              int64
		cpuDirect, cpuHTTP            time.Duration
	)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// 1. Memory per live stream.
		sessions := hbSessions(b, s.svc, hbStreams)
		memStart := time.Now()
		m0 := hbMem(quiet)
		hold.arm()
		msgs := make([]string, len(sessions))
		mustFanOut(b, sessions, func(ctx context.Context, k int) (hbRun, error) {
			var err error
			msgs[k], err = s.ask(ctx, sessions[k])
			return hbRun{}, err
		})
		// Each stream below dials its own connection, as a browser's
		// EventSource holds one: its cost is the stream's.
		s.hbSettle()
		m1 := hbMem(quiet)
		var firsts sync.WaitGroup
		firsts.Add(len(msgs))
		live := make(chan struct{})
		var streamErr error
		var closing atomic.Bool
		// Each stream has a context of its own, for its client to go away.
		cancels := make([]context.CancelFunc, len(msgs))
		ctxs := make([]context.Context, len(msgs))
		for k := range ctxs {
			ctxs[k], cancels[k] = context.WithCancel(context.Background())
		}
		defer func() {
			for _, c := range cancels {
				c()
			}
		}()
		go func() {
			defer close(live)
			_, _, streamErr = hbFanOut(msgs, func(ctx context.Context, k int) (hbRun, error) {
				var once sync.Once
				stop := context.AfterFunc(ctx, cancels[k])
				defer stop()
				run, err := s.stream(ctxs[k], msgs[k], time.Now(), func() { once.Do(firsts.Done) })
				once.Do(firsts.Done)
				if closing.Load() && run.events >= 1 {
					return run, nil // closed by the client below, as planned
				}
				if err == nil {
					err = fmt.Errorf("held stream ended early: %d events, last %q", run.events, run.last)
				}
				return run, err
			})
		}()
		firsts.Wait()
		m2 := hbMem(quiet)
		// The clients go away; the runs stay held. What the streams held
		// is then freed: m2 - m3 is their cost, in the same state of the
		// runs.
		closing.Store(true)
		for _, c := range cancels {
			c()
		}
		<-live
		if streamErr != nil {
			b.Fatalf("held streams: %v", streamErr)
		}
		s.hbSettle()
		m3 := hbMem(quiet)
		if cancelHeld {
			mustFanOut(b, msgs, func(ctx context.Context, k int) (hbRun, error) {
				return hbRun{}, s.svc.Cancel(ctx, benchUser, msgs[k])
			})
		}
		hold.release()
		// Every run, streamed again from its start, ends as it should.
		mustFanOut(b, msgs, func(ctx context.Context, k int) (hbRun, error) {
			run, err := s.stream(ctx, msgs[k], time.Now(), nil)
			switch {
			case err != nil:
			case !cancelHeld:
				err = run.check()
			case run.last != bichat.SSEMessageError || run.events < 2:
				err = fmt.Errorf("cancelled stream: %d events, last %q", run.events, run.last)
			}
			return run, err
		})
		b.Logf("memory phase: %d held runs and streams in %s (heap in use: %.0f KB before the runs, %.0f with them held, %.0f with a stream each, %.0f after the streams closed)",
			len(msgs), time.Since(memStart), m0.inuse, m1.inuse, m2.inuse, m3.inuse)
		perRun = perRun.add(m3.perItem(m0, len(msgs)))
		perStream = perStream.add(m2.perItem(m3, len(msgs)))
		gorStream += float64(m2.goroutines-m3.goroutines) / float64(len(msgs))
		if del {
			hbDelete(b, s.svc, sessions)
		}

		// 2. Baseline: Service.Send directly.
		sessions = hbSessions(b, s.svc, hbStreams)
		var rt0 rtCounts
		if c != nil {
			rt0 = c.snapshot()
		}
		cpu0 := processCPU()
		runs, wall := mustFanOut(b, sessions, func(ctx context.Context, k int) (hbRun, error) {
			return directRun(ctx, s.svc, sessions[k], time.Now())
		})
		cpuDirect += processCPU() - cpu0
		b.Logf("baseline phase: %d runs in %s", len(runs), wall)
		if c != nil {
			rtDirect += c.snapshot().sub(rt0).roundTrips
		}
		end, _, events := hbLatency(runs)
		directEnd, directEvents, directWall = append(directEnd, end...), directEvents+events, directWall+wall
		if del {
			hbDelete(b, s.svc, sessions)
		}

		// 3. Through the handler.
		sessions = hbSessions(b, s.svc, hbStreams)
		if c != nil {
			rt0 = c.snapshot()
		}
		cpu0 = processCPU()
		runs, wall = mustFanOut(b, sessions, func(ctx context.Context, k int) (hbRun, error) {
			start := time.Now()
			msg, err := s.ask(ctx, sessions[k])
			if err != nil {
				return hbRun{}, err
			}
			run, err := s.stream(ctx, msg, start, nil)
			if err == nil {
				err = run.check()
			}
			return run, err
		})
		cpuHTTP += processCPU() - cpu0
		b.Logf("handler phase: %d streams in %s", len(runs), wall)
		if c != nil {
			rtHTTP += c.snapshot().sub(rt0).roundTrips
		}
		end, first, events := hbLatency(runs)
		httpEnd, httpFirst, httpEvents, httpWall = append(httpEnd, end...), append(httpFirst, first...), httpEvents+events, httpWall+wall
		if del {
			hbDelete(b, s.svc, sessions)
		}
	}
	b.StopTimer()
	slices.Sort(directEnd)
	slices.Sort(httpEnd)
	slices.Sort(httpFirst)
	iters := float64(b.N)
	b.ReportMetric(perStream.inuse/iters, "heap-KB/stream")
	b.ReportMetric(perStream.live/iters, "live-KB/stream")
	b.ReportMetric(perStream.stack/iters, "stack-KB/stream")
	b.ReportMetric(gorStream/iters, "goroutines/stream")
	b.ReportMetric(perRun.inuse/iters, "heap-KB/run")
	b.ReportMetric(perRun.live/iters, "live-KB/run")
	b.ReportMetric(pctMS(directEnd, 0.5), "direct-p50-ms")
	b.ReportMetric(pctMS(directEnd, 0.99), "direct-p99-ms")
	b.ReportMetric(pctMS(httpEnd, 0.5), "http-p50-ms")
	b.ReportMetric(pctMS(httpEnd, 0.99), "http-p99-ms")
	b.ReportMetric(pctMS(httpFirst, 0.99), "http-first-p99-ms")
	b.ReportMetric(pctMS(httpEnd, 0.99)-pctMS(directEnd, 0.99), "added-p99-ms")
	if d := pctMS(directEnd, 0.99); d > 0 {
		b.ReportMetric(pctMS(httpEnd, 0.99)/d, "p99-ratio")
	}
	b.ReportMetric(float64(httpEvents)/httpWall.Seconds(), "events/s")
	b.ReportMetric(float64(directEvents)/directWall.Seconds(), "direct-events/s")
	msgs := iters * hbStreams
	b.ReportMetric(float64(cpuDirect.Microseconds())/1000/msgs, "direct-cpu-ms/msg")
	b.ReportMetric(float64(cpuHTTP.Microseconds())/1000/msgs, "http-cpu-ms/msg")
	if c != nil {
		b.ReportMetric(float64(rtDirect)/msgs, "rt/msg-direct")
		b.ReportMetric(float64(rtHTTP)/msgs, "rt/msg-http")
	}
}
