//go:build unix

package bichat_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The benchmarks of this file measure durable runs (issue 12,
// "Benchmarks"), with the shape of bench_send_test.go (scripted model,
// three tools, a final answer of 200 text deltas, 215 events):
//
//   - BenchmarkSendRunPostgres: one answered message on PostgreSQL, with
//     the in-memory store measured in the same loop as the baseline:
//     round trips per message and added Send-to-terminal latency.
//   - BenchmarkSendRunMemory: the same on the in-memory store alone.
//   - BenchmarkWatchAcrossPools: delivery latency of a run's events to a
//     watcher on another Service and pool (run log + LISTEN/NOTIFY),
//     against a watcher in the run's own process.
//   - BenchmarkWatchers1000: memory and goroutines per watcher for 1,000
//     watchers of 100 live runs on the in-memory store.
//
// The PostgreSQL benchmarks skip without BICHAT_TEST_POSTGRES_DSN (see
// .ci/test.env); every benchmark finishes within seconds at
// -benchtime=1x:
//
//	set -a; . ./.ci/test.env; set +a
//	go test -run='^$' -bench='SendRunPostgres|SendRunMemory|WatchAcrossPools|Watchers1000' -benchtime=20x .

// benchQuestion is the question of every benchmark run.
const benchQuestion = "What were EMEA sales in 2025, in dollars?"

// pgCounter is a pgx tracer (queries, batches, prepares, copies and pool
// acquires) plus a count of the writes to each connection's
// socket. Every query, batch, prepare and copy is one round trip; writes
// also see what the tracers do not (the statement descriptions pgx makes
// before a statement's first use on a connection, and the ping pgxpool
// sends when it acquires a connection idle for over a second), since a
// round trip starts with one write of the client.
type pgCounter struct {
	queries, batches, prepares, copies, acquires, writes atomic.Int64

	// appends, when set before the pool is used, receives the timing of
	// each run-log append (AppendRunEvents' statement).
	appends func(appendSpan)
	// timing, while set, makes the counter time every query and batch:
	// dbTime is their total, byStmt per statement.
	timing atomic.Bool
	dbTime atomic.Int64
	mu     sync.Mutex
	byStmt map[string]*stmtTime
}

// stmtTime is what one statement cost.
type stmtTime struct {
	n     int
	total time.Duration
}

// appendSpan is one run-log append statement: the seqs it wrote and when
// it ran.
type appendSpan struct {
	run         string
	first, last int64
	start, end  time.Time
}

type traceStartKey struct{}

// traceStart is what TraceQueryStart hands to TraceQueryEnd.
type traceStart struct {
	stmt   string
	start  time.Time
	span   appendSpan
	append bool
}

// rtCounts is a snapshot of a pgCounter.
type rtCounts struct {
	roundTrips, acquires, writes int64
}

func (c *pgCounter) snapshot() rtCounts {
	return rtCounts{roundTrips: c.queries.Load() + c.batches.Load() + c.prepares.Load() + c.copies.Load(),
		acquires: c.acquires.Load(), writes: c.writes.Load()}
}

func (a rtCounts) sub(b rtCounts) rtCounts {
	return rtCounts{a.roundTrips - b.roundTrips, a.acquires - b.acquires, a.writes - b.writes}
}

func (c *pgCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	st := &traceStart{start: time.Now()}
	if c.appends != nil && strings.Contains(data.SQL, "INSERT INTO") && strings.Contains(data.SQL, ".run_events") && len(data.Args) > 2 {
		run, _ := data.Args[1].(string)
		if seqs, ok := data.Args[2].([]int64); ok && len(seqs) > 0 {
			st.span, st.append = appendSpan{run: run, first: seqs[0], last: seqs[len(seqs)-1], start: st.start}, true
		}
	}
	if !st.append && !c.timing.Load() {
		return ctx
	}
	if c.timing.Load() {
		st.stmt = stmtLabel(data.SQL)
	}
	return context.WithValue(ctx, traceStartKey{}, st)
}

func (c *pgCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	st, ok := ctx.Value(traceStartKey{}).(*traceStart)
	if !ok {
		return
	}
	end := time.Now()
	if st.append && data.Err == nil {
		st.span.end = end
		c.appends(st.span)
	}
	if st.stmt != "" {
		c.record(st.stmt, end.Sub(st.start))
	}
}

func (c *pgCounter) record(stmt string, d time.Duration) {
	c.dbTime.Add(int64(d))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byStmt == nil {
		c.byStmt = map[string]*stmtTime{}
	}
	t := c.byStmt[stmt]
	if t == nil {
		t = &stmtTime{}
		c.byStmt[stmt] = t
	}
	t.n++
	t.total += d
}

// report is c's top statements, costliest first: count and time per
// message (per divides the totals), average time, statement.
func (c *pgCounter) report(per, top int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	type row struct {
		stmt string
		t    stmtTime
	}
	var rows []row
	for k, v := range c.byStmt {
		rows = append(rows, row{k, *v})
	}
	slices.SortFunc(rows, func(a, b row) int { return int(b.t.total - a.t.total) })
	var sb strings.Builder
	for _, r := range rows[:min(top, len(rows))] {
		fmt.Fprintf(&sb, "\n  %5.2f/msg %7.3f ms/msg (avg %6.3f ms)  %s", float64(r.t.n)/float64(per),
			float64(r.t.total.Microseconds())/1000/float64(per), float64(r.t.total.Microseconds())/1000/float64(r.t.n), r.stmt)
	}
	return sb.String()
}

// stmtLabel is a short name for a statement: its first 80 characters,
// whitespace collapsed and schema names dropped.
func stmtLabel(sql string) string {
	var words []string
	for _, w := range strings.Fields(sql) {
		if i := strings.Index(w, "\"."); i >= 0 && strings.HasPrefix(w, "\"") {
			w = w[i+2:]
		}
		words = append(words, w)
	}
	s := strings.Join(words, " ")
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

func (c *pgCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	c.batches.Add(1)
	if !c.timing.Load() {
		return ctx
	}
	label := "batch"
	if data.Batch != nil && len(data.Batch.QueuedQueries) > 0 {
		label = fmt.Sprintf("batch of %d: %s", len(data.Batch.QueuedQueries), stmtLabel(data.Batch.QueuedQueries[0].SQL))
	}
	return context.WithValue(ctx, traceStartKey{}, &traceStart{stmt: label, start: time.Now()})
}

func (c *pgCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *pgCounter) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	if st, ok := ctx.Value(traceStartKey{}).(*traceStart); ok && st.stmt != "" {
		c.record(st.stmt, time.Since(st.start))
	}
}

func (c *pgCounter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	c.prepares.Add(1)
	return ctx
}

func (c *pgCounter) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (c *pgCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.copies.Add(1)
	return ctx
}

func (c *pgCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

func (c *pgCounter) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	c.acquires.Add(1)
	return ctx
}

func (c *pgCounter) TraceAcquireEnd(context.Context, *pgxpool.Pool, pgxpool.TraceAcquireEndData) {}

// countingConn counts the writes to a connection's socket.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// pgTracedPool opens a pool of its own (a simulated process) whose
// round trips c counts; closed when the benchmark ends.
func pgTracedPool(tb testing.TB, dsn string, c *pgCounter) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = 6
	cfg.ConnConfig.Tracer = c
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: conn, writes: &c.writes}, nil
	}
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// benchPgService is a Service with the benchmark's tools over the store
// in schema on pool p, closed when the benchmark ends.
func benchPgService(tb testing.TB, p *pgxpool.Pool, schema string, m *scripted.Model) *bichat.Service {
	tb.Helper()
	store, err := postgres.New(p, postgres.Options{Schema: schema})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(store.Close)
	return benchServiceOn(tb, store.Repositories(), m)
}

// benchServiceOn is a Service with the benchmark's tools over repos (the
// in-memory store when repos is zero), closed when the benchmark ends.
func benchServiceOn(tb testing.TB, repos domain.Repositories, m *scripted.Model) *bichat.Service {
	tb.Helper()
	svc, err := bichat.New(bichat.Config{
		Agent:  agents.Config{Model: m, System: "You are a data analyst.", Tools: benchTools(tb)},
		Store:  repos,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		tb.Fatal(err)
	}
	closeAtEnd(tb, svc)
	return svc
}

// timedSend asks the question in a new session and returns the wall time
// from the Send call to the terminal event; the session is created before
// the clock starts (and deleted after it stops when del is set).
func timedSend(b *testing.B, svc *bichat.Service, del bool, before func()) time.Duration {
	b.Helper()
	ctx := context.Background()
	sess, err := svc.CreateSession(ctx, benchUser, bichat.SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if before != nil {
		before()
	}
	var last agents.Event
	events, tools := 0, 0
	start := time.Now()
	var took time.Duration
	for ev, err := range svc.Send(ctx, benchUser, sess.ID, benchQuestion) {
		if err != nil {
			b.Fatal(err)
		}
		events++
		if _, ok := ev.(*agents.ToolCallFinished); ok {
			tools++
		}
		if isTerminalEvent(ev) {
			took = time.Since(start)
		}
		last = ev
	}
	checkRun(b, events, tools, last)
	if del {
		if err := svc.DeleteSession(ctx, benchAdmin, sess.ID); err != nil {
			b.Fatal(err)
		}
	}
	return took
}

// pctMS is the p-quantile (0 to 1) of sorted durations, in milliseconds.
func pctMS(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(len(sorted)-1, int(p*float64(len(sorted))))
	return float64(sorted[i].Microseconds()) / 1000
}

// BenchmarkSendRunPostgres measures one answered message (3 tools, 200
// text deltas) on PostgreSQL: each iteration sends one message on a
// PostgreSQL store and, as the baseline measured in the same loop (so
// machine noise hits both alike), one on the in-memory store. ns/op is the
// PostgreSQL message. Reported per message:
//
//   - roundtrips/msg: queries + batches + prepares + copies traced on
//     the pool (goal ≤ 15); acquires/msg: pool acquires; writes/msg:
//     client writes on the sockets (a round trip each, including what the
//     tracers do not see: first-use statement descriptions and pings).
//   - p50-ms: Send to terminal event on PostgreSQL; mem-p50-ms the same on
//     the in-memory store; p50-added-ms their difference (goal ≤ 20);
//     p50-ratio their ratio.
//   - db-ms/msg: the time the traced statements took (mean); the log
//     names the three costliest statements.
//
// The session is created outside the clock and the counts.
func BenchmarkSendRunPostgres(b *testing.B) {
	dsn := pgDSN(b)
	var c pgCounter
	p := pgTracedPool(b, dsn, &c)
	schema := pgSchema(b, p)
	pg := benchPgService(b, p, schema, benchModel())
	mem := benchServiceOn(b, domain.Repositories{}, benchModel())
	// Warm caches: tool schemas, token counts, and statements on the
	// pool's connections.
	for range 6 {
		timedSend(b, pg, false, nil)
		timedSend(b, mem, true, nil)
	}
	var pgLat, memLat []time.Duration
	var total rtCounts
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var c0 rtCounts
		took := timedSend(b, pg, false, func() {
			c0 = c.snapshot()
			c.timing.Store(true)
			b.StartTimer()
		})
		b.StopTimer()
		c.timing.Store(false)
		d := c.snapshot().sub(c0)
		total.roundTrips += d.roundTrips
		total.acquires += d.acquires
		total.writes += d.writes
		pgLat = append(pgLat, took)
		memLat = append(memLat, timedSend(b, mem, true, nil))
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(pgLat)
	slices.Sort(memLat)
	n := float64(b.N)
	b.ReportMetric(float64(total.roundTrips)/n, "roundtrips/msg")
	b.ReportMetric(float64(total.acquires)/n, "acquires/msg")
	b.ReportMetric(float64(total.writes)/n, "writes/msg")
	b.ReportMetric(float64(c.dbTime.Load())/1e6/n, "db-ms/msg")
	b.Logf("top statements per message, by time (%d messages):%s", b.N, c.report(b.N, 3))
	b.ReportMetric(pctMS(pgLat, 0.5), "p50-ms")
	b.ReportMetric(pctMS(memLat, 0.5), "mem-p50-ms")
	b.ReportMetric(pctMS(pgLat, 0.5)-pctMS(memLat, 0.5), "p50-added-ms")
	if m := pctMS(memLat, 0.5); m > 0 {
		b.ReportMetric(pctMS(pgLat, 0.5)/m, "p50-ratio")
	}
}

// BenchmarkSendRunMemory is BenchmarkSendRunPostgres on the in-memory
// store alone (no PostgreSQL needed): p50-ms is the Send-to-terminal time
// of one answered message; the session is created and deleted outside the
// clock.
func BenchmarkSendRunMemory(b *testing.B) {
	mem := benchServiceOn(b, domain.Repositories{}, benchModel())
	for range 6 {
		timedSend(b, mem, true, nil)
	}
	var lat []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		lat = append(lat, timedSend(b, mem, true, b.StartTimer))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(pctMS(lat, 0.5), "p50-ms")
}

// gate is what the first model turn of a run waits for.
type gate struct {
	ch atomic.Pointer[chan struct{}]
}

func (g *gate) arm() chan struct{} {
	ch := make(chan struct{})
	g.ch.Store(&ch)
	return ch
}

func (g *gate) wait(ctx context.Context) error {
	select {
	case <-*g.ch.Load():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pacedModel is benchModel with delay before every chunk (a model
// streaming at that pace); the first turn of a run starts only when g
// opens.
func pacedModel(delay time.Duration, g *gate) *scripted.Model {
	return &scripted.Model{ChunkSize: benchChunk, Respond: func(ctx context.Context, req *agents.Request) (scripted.Turn, error) {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == domain.RoleTool {
			return scripted.Turn{Text: benchAnswer, Delay: delay}, nil
		}
		if err := g.wait(ctx); err != nil {
			return scripted.Turn{}, err
		}
		return scripted.Turn{Text: benchFirst, ToolCalls: benchCalls, Delay: delay}, nil
	}}
}

// delivery is one event as a watcher got it.
type delivery struct {
	seq              int64
	created, arrived time.Time
}

// watchAll ranges over a Watch stream, recording when each event arrived;
// first is closed when seq 1 arrived.
func watchAll(seq func(func(agents.Event, error) bool), first chan<- struct{}) ([]delivery, agents.Event, error) {
	var out []delivery
	var last agents.Event
	for ev, err := range seq {
		now := time.Now()
		if err != nil {
			return out, last, err
		}
		h := ev.Header()
		out = append(out, delivery{seq: h.Seq, created: h.Time, arrived: now})
		if h.Seq == 1 {
			close(first)
		}
		last = ev
	}
	return out, last, nil
}

// BenchmarkWatchAcrossPools measures how long after its creation (the
// event's Time) an event of a run reaches a watcher: one Service runs the
// question on pool A, a second Service on pool B (another process, as far
// as the store can tell) watches it through the run log woken by
// LISTEN/NOTIFY, and a watcher in the run's own Service (through memory)
// is the baseline, measured on the same run. The model streams at a fixed
// pace per chunk (sub-benchmarks), the run starts once both watchers hold
// its first event, and each iteration is one run of 215 events.
//
// Reported (ms): xproc-p50/p99 (goal p99 < 100) and local-p50/p99, and
// where the cross-pool time goes, from pool A's trace of the run-log
// appends: wait-p50/p99 (event created to its batch's append starting:
// the group-commit window of 50 ms), append-p50/p99 (the append
// statement, with its NOTIFY) and notify-p50/p99 (append done to the watcher having
// the event: notification, log read, decoding).
func BenchmarkWatchAcrossPools(b *testing.B) {
	for _, pace := range []time.Duration{2 * time.Millisecond, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("delta=%s", pace), func(b *testing.B) { benchWatchAcrossPools(b, pace) })
	}
}

func benchWatchAcrossPools(b *testing.B, pace time.Duration) {
	dsn := pgDSN(b)
	var ca, cb pgCounter
	var mu sync.Mutex
	var spans []appendSpan
	ca.appends = func(s appendSpan) {
		mu.Lock()
		spans = append(spans, s)
		mu.Unlock()
	}
	poolA, poolB := pgTracedPool(b, dsn, &ca), pgTracedPool(b, dsn, &cb)
	schema := pgSchema(b, poolA)
	var g gate
	a := benchPgService(b, poolA, schema, pacedModel(pace, &g))
	w := benchPgService(b, poolB, schema, &scripted.Model{})
	ctx := context.Background()

	var xproc, local, wait, appendT, notify []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		sess, err := a.CreateSession(ctx, benchUser, bichat.SessionOptions{})
		if err != nil {
			b.Fatal(err)
		}
		open := g.arm()
		msgID := make(chan string, 1)
		starterDone := make(chan error, 1)
		b.StartTimer()
		go func() {
			var err error
			for ev, e := range a.Send(ctx, benchUser, sess.ID, benchQuestion) {
				if e != nil {
					err = e
					continue
				}
				if ev.Header().Seq == 1 {
					msgID <- ev.Header().MessageID
				}
			}
			starterDone <- err
		}()
		var id string
		select {
		case id = <-msgID:
		case <-time.After(guard):
			b.Fatal("the run did not start")
		}
		type result struct {
			got  []delivery
			last agents.Event
			err  error
		}
		watch := func(svc *bichat.Service, first chan struct{}) chan result {
			ch := make(chan result, 1)
			go func() {
				got, last, err := watchAll(svc.Watch(ctx, benchUser, id, 0), first)
				ch <- result{got, last, err}
			}()
			return ch
		}
		firstX, firstL := make(chan struct{}), make(chan struct{})
		resX, resL := watch(w, firstX), watch(a, firstL)
		for _, f := range []chan struct{}{firstX, firstL} {
			select {
			case <-f:
			case <-time.After(guard):
				b.Fatal("a watcher did not get the run's first event")
			}
		}
		close(open)
		var rx, rl result
		for _, r := range []struct {
			ch  chan result
			out *result
		}{{resX, &rx}, {resL, &rl}} {
			select {
			case *r.out = <-r.ch:
			case <-time.After(guard):
				b.Fatal("a watcher did not get the terminal event")
			}
		}
		if err := <-starterDone; err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, r := range []result{rx, rl} {
			if _, ok := r.last.(*agents.RunFinished); r.err != nil || !ok || len(r.got) != benchEvents {
				b.Fatalf("watcher got %d events ending with %T (%v), want %d ending with RunFinished", len(r.got), r.last, r.err, benchEvents)
			}
		}
		mu.Lock()
		runSpans := slices.Clone(spans)
		spans = spans[:0]
		mu.Unlock()
		for _, d := range rx.got[1:] {
			xproc = append(xproc, d.arrived.Sub(d.created))
			k := slices.IndexFunc(runSpans, func(s appendSpan) bool { return s.first <= d.seq && d.seq <= s.last })
			if k < 0 {
				b.Fatalf("no run-log append of seq %d was traced", d.seq)
			}
			s := runSpans[k]
			wait = append(wait, s.start.Sub(d.created))
			appendT = append(appendT, s.end.Sub(s.start))
			notify = append(notify, d.arrived.Sub(s.end))
		}
		for _, d := range rl.got[1:] {
			local = append(local, d.arrived.Sub(d.created))
		}
		b.StartTimer()
	}
	b.StopTimer()
	for _, s := range [][]time.Duration{xproc, local, wait, appendT, notify} {
		slices.Sort(s)
	}
	b.ReportMetric(pctMS(xproc, 0.5), "xproc-p50-ms")
	b.ReportMetric(pctMS(xproc, 0.99), "xproc-p99-ms")
	b.ReportMetric(pctMS(local, 0.5), "local-p50-ms")
	b.ReportMetric(pctMS(local, 0.99), "local-p99-ms")
	b.ReportMetric(pctMS(wait, 0.5), "wait-p50-ms")
	b.ReportMetric(pctMS(wait, 0.99), "wait-p99-ms")
	b.ReportMetric(pctMS(appendT, 0.5), "append-p50-ms")
	b.ReportMetric(pctMS(appendT, 0.99), "append-p99-ms")
	b.ReportMetric(pctMS(notify, 0.5), "notify-p50-ms")
	b.ReportMetric(pctMS(notify, 0.99), "notify-p99-ms")
}

// BenchmarkWatchers1000 attaches 1,000 watchers (10 each) to 100 live
// runs of one Service on the in-memory store, all blocked mid-run (the
// model holds its second turn), and reports the memory they add: the
// heap in use after GC with the watchers attached and caught up, minus the
// same for the same runs before any watcher attached, per watcher
// (heap-B/watcher, goal < 50 KB), the goroutine stacks likewise
// (stack-B/watcher: each watcher's own goroutine, the host's loop over
// Watch) and goroutines per watcher (1 is the host's loop; more would be
// goroutines of Watch). Then the runs go on and every watcher must get
// all 215 events.
func BenchmarkWatchers1000(b *testing.B) {
	const (
		runs     = 100
		perRun   = 10
		watchers = runs * perRun
	)
	release := make(chan struct{})
	var entered sync.WaitGroup
	model := &scripted.Model{ChunkSize: benchChunk, Respond: func(ctx context.Context, req *agents.Request) (scripted.Turn, error) {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == domain.RoleTool {
			entered.Done()
			select {
			case <-release:
			case <-ctx.Done():
				return scripted.Turn{}, ctx.Err()
			}
			return scripted.Turn{Text: benchAnswer}, nil
		}
		return scripted.Turn{Text: benchFirst, ToolCalls: benchCalls}, nil
	}}
	svc := benchServiceOn(b, domain.Repositories{}, model)
	ctx := context.Background()
	// countUntilBlocked ranges over a stream, signalling blocked after the
	// last event before the model's second turn (the third
	// ToolCallFinished), and returns the count and last event.
	countUntilBlocked := func(seq func(func(agents.Event, error) bool), blocked *sync.WaitGroup) (int, agents.Event, error) {
		n, tools := 0, 0
		var last agents.Event
		for ev, err := range seq {
			if err != nil {
				return n, last, err
			}
			n++
			if _, ok := ev.(*agents.ToolCallFinished); ok {
				if tools++; tools == len(benchCalls) {
					blocked.Done()
				}
			}
			last = ev
		}
		return n, last, nil
	}
	waitGroup := func(wg *sync.WaitGroup, what string) {
		done := make(chan struct{})
		go func() {
			wg.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(4 * guard):
			b.Fatalf("%s did not happen within %s", what, 4*guard)
		}
	}
	heapAfterGC := func() (heap, stack uint64, goroutines int) {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse, ms.StackInuse, runtime.NumGoroutine()
	}
	var heapPer, stackPer, gPer float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		release = make(chan struct{})
		sessions := make([]string, runs)
		for k := range sessions {
			sess, err := svc.CreateSession(ctx, benchUser, bichat.SessionOptions{})
			if err != nil {
				b.Fatal(err)
			}
			sessions[k] = sess.ID
		}
		entered.Add(runs)
		var startersBlocked, watchersBlocked, ended sync.WaitGroup
		startersBlocked.Add(runs)
		watchersBlocked.Add(watchers)
		ids := make([]string, runs)
		var idsReady sync.WaitGroup
		idsReady.Add(runs)
		errs := make(chan error, runs+watchers)
		for k := range runs {
			ended.Add(1)
			go func() {
				defer ended.Done()
				seq := svc.Send(ctx, benchUser, sessions[k], benchQuestion)
				first := true
				n, last, err := countUntilBlocked(func(yield func(agents.Event, error) bool) {
					for ev, err := range seq {
						if first && err == nil {
							ids[k] = ev.Header().MessageID
							idsReady.Done()
							first = false
						}
						if !yield(ev, err) {
							return
						}
					}
				}, &startersBlocked)
				if _, ok := last.(*agents.RunFinished); err != nil || !ok || n != benchEvents {
					errs <- fmt.Errorf("run %d: %d events ending with %T (%v), want %d ending with RunFinished", k, n, last, err, benchEvents)
				}
			}()
		}
		waitGroup(&idsReady, "every run starting")
		waitGroup(&entered, "every run reaching its second model turn")
		waitGroup(&startersBlocked, "every starter catching up")
		heap0, stack0, g0 := heapAfterGC()
		for k := range watchers {
			ended.Add(1)
			go func() {
				defer ended.Done()
				n, last, err := countUntilBlocked(svc.Watch(ctx, benchUser, ids[k%runs], 0), &watchersBlocked)
				if _, ok := last.(*agents.RunFinished); err != nil || !ok || n != benchEvents {
					errs <- fmt.Errorf("watcher %d: %d events ending with %T (%v), want %d ending with RunFinished", k, n, last, err, benchEvents)
				}
			}()
		}
		waitGroup(&watchersBlocked, "every watcher catching up")
		heap1, stack1, g1 := heapAfterGC()
		heapPer += (float64(heap1) - float64(heap0)) / watchers
		stackPer += (float64(stack1) - float64(stack0)) / watchers
		gPer += float64(g1-g0) / watchers
		close(release)
		waitGroup(&ended, "every run and watcher ending")
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, id := range sessions {
			if err := svc.DeleteSession(ctx, benchAdmin, id); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(heapPer/n, "heap-B/watcher")
	b.ReportMetric(stackPer/n, "stack-B/watcher")
	b.ReportMetric(gPer/n, "goroutines/watcher")
}
