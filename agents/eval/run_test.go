package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

var sampleDB *sqlite.DB

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bichat-eval-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "retail.db")
		if err := sampledata.CreateSQLite(context.Background(), path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		db, err := sqlite.Open(path, sqlite.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer db.Close()
		sampleDB = db
		return m.Run()
	}()
	os.Exit(code)
}

// step is one query_database call of a fake run: the SQL, and the error
// the tool reported ("" for success).
type step struct {
	sql, err string
}

// fakeRun builds the events of a run that makes the calls of steps, one
// model turn per call plus the answer turn, 100 tokens in and 10 out per
// turn at $0.001.
func fakeRun(steps ...step) []agents.Event {
	h := func(seq int) agents.EventHeader { return agents.EventHeader{RunID: "run", Seq: int64(seq)} }
	evs := []agents.Event{&agents.RunStarted{EventHeader: h(1), Model: "fake"}}
	turn := 0
	usage := func() {
		turn++
		evs = append(evs, &agents.UsageReported{EventHeader: h(len(evs) + 1), Turn: turn,
			Usage: domain.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}, CostUSD: 0.001})
	}
	for i, s := range steps {
		usage()
		id := fmt.Sprintf("call_%d", i)
		args, _ := json.Marshal(sqldb.QueryArgs{SQL: s.sql})
		evs = append(evs, &agents.ToolCallStarted{EventHeader: h(len(evs) + 1), CallID: id, Name: sqldb.ToolQuery, Arguments: args},
			&agents.ToolCallFinished{EventHeader: h(len(evs) + 2), CallID: id, Name: sqldb.ToolQuery, Error: s.err, Summary: "..."})
	}
	usage()
	return append(evs, &agents.RunFinished{EventHeader: h(len(evs) + 1), Text: "done", Reason: agents.FinishEndTurn,
		Turns: turn, ToolCalls: len(steps)})
}

// script is a Target answering each question id with fixed steps.
type script struct {
	runs       map[string][]step
	discovered map[string][]string
	errs       map[string]error
	calls      atomic.Int64
	mu         sync.Mutex
	ran        []string
}

func (s *script) target(ctx context.Context, q Question) (Transcript, error) {
	s.calls.Add(1)
	s.mu.Lock()
	s.ran = append(s.ran, q.ID)
	s.mu.Unlock()
	if err := s.errs[q.ID]; err != nil {
		return Transcript{}, err
	}
	return Transcript{Events: fakeRun(s.runs[q.ID]...), Discovered: s.discovered[q.ID]}, nil
}

// retailSet is a small set over the sample data.
func retailSet() *Set {
	return &Set{Name: "retail", Questions: []Question{
		{ID: "regions", Question: "How many regions are there?", SQL: "SELECT count(*) AS n FROM regions", Tags: []string{"easy"}},
		{ID: "categories", Question: "How many products per category, by category?",
			SQL: "SELECT category, count(*) AS products FROM products GROUP BY category ORDER BY category", Tags: []string{"easy", "ordered"}},
		{ID: "per-region", Question: "How many customers does each region have?",
			SQL:  "SELECT r.name, count(*) AS customers FROM customers c JOIN regions r ON r.id = c.region_id GROUP BY r.name",
			Tags: []string{"join"}},
		{ID: "completed", Question: "How many completed orders are there?",
			SQL: "SELECT count(*) FROM orders WHERE status = 'completed'", Tags: []string{"filter"}},
		{ID: "silent", Question: "What is the answer?", SQL: "SELECT 42 AS answer", Datasets: []string{"regions"}},
	}}
}

func retailScript() *script {
	return &script{
		runs: map[string][]step{
			"regions": {{sql: "SELECT COUNT(id) FROM regions"}},
			// Categories in the wrong order: the gold query orders.
			"categories": {{sql: "SELECT count(*) AS n, category FROM products GROUP BY category ORDER BY category DESC"}},
			// Two failed attempts, then the right one with permuted and
			// renamed columns.
			"per-region": {{sql: "SELECT nme FROM regions", err: "no such column: nme"},
				{sql: "SELECT r.name, count(*) FROM customer c", err: "no such table: customer"},
				{sql: "SELECT count(*) AS n, r.name AS region FROM regions r JOIN customers c ON c.region_id = r.id GROUP BY r.name"}},
			// Forgets the filter.
			"completed": {{sql: "SELECT count(*) FROM orders"}},
			// Never queries.
			"silent": nil,
		},
		discovered: map[string][]string{
			"regions":    {"regions", "customers"},
			"categories": {"orders"},
			"per-region": {"main.customers", "regions"},
			"completed":  {"orders", "order_items"},
		},
	}
}

func TestRunJudgesByExecution(t *testing.T) {
	t.Parallel()
	sc := retailScript()
	var progress bytes.Buffer
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var clock atomic.Int64
	rep, err := Run(t.Context(), retailSet(), Config{Target: sc.target, DB: sampleDB, Progress: &progress,
		Now: func() time.Time { return now.Add(time.Duration(clock.Add(1)) * time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(rep.Results))
	for i, r := range rep.Results {
		ids[i] = r.ID
	}
	if !slices.Equal(ids, []string{"regions", "categories", "per-region", "completed", "silent"}) {
		t.Fatalf("results in order %v", ids)
	}
	want := map[string]struct {
		ok      bool
		reason  string
		recall  float64
		repairs int
	}{
		"regions":    {ok: true, recall: 1},
		"categories": {reason: "order differs: row 1 is", recall: 0},
		"per-region": {ok: true, recall: 1, repairs: 2},
		"completed":  {reason: "values differ", recall: 1},
		"silent":     {reason: "no SQL answer", recall: 0},
	}
	for _, r := range rep.Results {
		w := want[r.ID]
		if r.OK != w.ok || !strings.Contains(r.Reason, w.reason) || (w.ok && r.Reason != "") {
			t.Errorf("%s: ok=%v reason %q, want ok=%v reason ~%q", r.ID, r.OK, r.Reason, w.ok, w.reason)
		}
		if r.Recall == nil || *r.Recall != w.recall {
			t.Errorf("%s: recall %v, want %v (gold tables %v, discovered %v)", r.ID, r.Recall, w.recall, r.GoldTables, r.Discovered)
		}
		if r.Repairs != w.repairs {
			t.Errorf("%s: repairs %d, want %d", r.ID, r.Repairs, w.repairs)
		}
		steps := len(sc.runs[r.ID])
		if r.ToolCalls != steps || r.Turns != steps+1 || r.TokensIn != 100*(steps+1) || r.TokensOut != 10*(steps+1) {
			t.Errorf("%s: tool calls %d turns %d tokens %d/%d for %d steps", r.ID, r.ToolCalls, r.Turns, r.TokensIn, r.TokensOut, steps)
		}
		if r.LatencyMS != 1000 || r.Model != "fake" || r.FinishReason != "end_turn" {
			t.Errorf("%s: latency %d ms, model %q, finish %q", r.ID, r.LatencyMS, r.Model, r.FinishReason)
		}
	}
	if rep.Results[2].FinalSQL != sc.runs["per-region"][2].sql {
		t.Errorf("final SQL %q", rep.Results[2].FinalSQL)
	}
	// Gold tables come from the database when the question lists none.
	if g := rep.Results[2].GoldTables; !slices.Equal(g, []string{"customers", "regions"}) {
		t.Errorf("gold tables %v", g)
	}
	tot := rep.Totals
	if tot.Questions != 5 || tot.Passed != 2 || tot.Failed != 3 || tot.Accuracy != 0.4 || tot.Repairs != 2 ||
		tot.ToolCalls != 6 || tot.Turns != 11 || tot.TokensIn != 1100 || tot.RecallQuestions != 5 || tot.MeanRecall != 0.6 ||
		tot.LatencyMS != 5000 || tot.MeanLatencyMS != 1000 {
		t.Errorf("totals %+v", tot)
	}
	if d := tot.CostUSD - 0.011; d > 1e-12 || d < -1e-12 {
		t.Errorf("cost %v, want 0.011", tot.CostUSD)
	}
	tags := map[string]Totals{}
	for _, tg := range rep.Tags {
		tags[tg.Tag] = tg.Totals
	}
	if len(rep.Tags) != 4 || rep.Tags[0].Tag != "easy" || tags["easy"].Questions != 2 || tags["easy"].Passed != 1 ||
		tags["join"].Accuracy != 1 || tags["filter"].Accuracy != 0 {
		t.Errorf("tags %+v", rep.Tags)
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if len(lines) != 6 || lines[0] != "[0/5] 0 ok 0 failed" || lines[5] != "[5/5] 2 ok 3 failed" {
		t.Errorf("progress lines %q", lines)
	}
}

func TestRunFailureReasons(t *testing.T) {
	t.Parallel()
	set := &Set{Questions: []Question{
		{ID: "target-error", Question: "Q1", SQL: "SELECT 1"},
		{ID: "bad-gold", Question: "Q2", SQL: "SELECT nope FROM regions"},
		{ID: "write", Question: "Q3", SQL: "SELECT count(*) FROM regions"},
		{ID: "truncated", Question: "Q4", SQL: "SELECT id FROM orders"},
	}}
	sc := &script{
		errs: map[string]error{"target-error": errors.New("model unavailable")},
		runs: map[string][]step{
			"bad-gold":  {{sql: "SELECT 1"}},
			"write":     {{sql: "DELETE FROM regions"}}, // the tool said it worked; re-execution refuses it
			"truncated": {{sql: "SELECT id FROM orders"}},
		},
	}
	rep, err := Run(t.Context(), set, Config{Target: sc.target, DB: sampleDB, Limits: sqldb.Limits{MaxRows: 100}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run error: model unavailable", "gold SQL failed: ", "answer SQL failed on re-execution: ",
		"gold result truncated at 100 rows"}
	for i, r := range rep.Results {
		if r.OK || !strings.HasPrefix(r.Reason, want[i]) {
			t.Errorf("%s: ok=%v reason %q, want prefix %q", r.ID, r.OK, r.Reason, want[i])
		}
	}
	if n, _ := sampleDB.Query(t.Context(), "SELECT count(*) FROM regions", sqldb.Limits{}); n.Rows[0][0] != int64(5) {
		t.Errorf("regions after the eval: %v", n.Rows)
	}
}

func TestRunResumesFromResultsFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "results.jsonl")
	set := retailSet()
	// First run: interrupted after two results.
	ctx, cancel := context.WithCancel(t.Context())
	first := retailScript()
	got := 0
	rep, err := Run(ctx, set, Config{Target: first.target, DB: sampleDB, Results: path,
		OnResult: func(Result) {
			if got++; got == 2 {
				cancel()
			}
		}})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Run: %v", err)
	}
	if len(rep.Results) != 2 || len(rep.Pending) != 3 {
		t.Fatalf("interrupted report: %d results, pending %v", len(rep.Results), rep.Pending)
	}
	saved, err := ReadResults(path)
	if err != nil || len(saved) != 2 {
		t.Fatalf("results file: %d results, %v", len(saved), err)
	}
	// Simulate a crash in the middle of writing a line.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id":"completed","ok":tr`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	// Second run: only the rest runs; the report has everything.
	second := retailScript()
	rep, err = Run(t.Context(), set, Config{Target: second.target, DB: sampleDB, Results: path})
	if err != nil {
		t.Fatal(err)
	}
	if n := second.calls.Load(); n != 3 {
		t.Errorf("second run made %d target calls, want 3", n)
	}
	for _, id := range second.ran {
		if slices.Contains([]string{saved[0].ID, saved[1].ID}, id) {
			t.Errorf("question %s ran again", id)
		}
	}
	if len(rep.Results) != 5 || rep.Totals.Passed != 2 || len(rep.Pending) != 0 {
		t.Errorf("resumed report: %d results, %d passed, pending %v", len(rep.Results), rep.Totals.Passed, rep.Pending)
	}
	all, err := ReadResults(path)
	if err != nil || len(all) != 5 {
		t.Fatalf("results file after resume: %d results, %v", len(all), err)
	}
	// A third run does nothing; changing a question's SQL runs it again.
	set.Questions[0].SQL = "SELECT count(id) FROM regions"
	third := retailScript()
	if _, err := Run(t.Context(), set, Config{Target: third.target, DB: sampleDB, Results: path}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(third.ran, []string{"regions"}) {
		t.Errorf("third run ran %v, want only the changed question", third.ran)
	}
}

func TestReadResultsRejectsCorruptMiddleLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(path, []byte("{\"id\":\"a\",\"key\":\"k\"}\nnot json\n{\"id\":\"b\",\"key\":\"k\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResults(path); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("ReadResults error %v, want line 2", err)
	}
}

// TestRunConcurrencyCap counts the Target calls in flight.
func TestRunConcurrencyCap(t *testing.T) {
	t.Parallel()
	var set Set
	for i := range 12 {
		set.Questions = append(set.Questions, Question{ID: fmt.Sprintf("q%02d", i), Question: "Q", SQL: "SELECT 1 AS one"})
	}
	var inFlight, peak atomic.Int64
	release := make(chan struct{})
	var once sync.Once
	target := func(ctx context.Context, q Question) (Transcript, error) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 3 {
			once.Do(func() { close(release) }) // the cap is reached: let everyone go
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		inFlight.Add(-1)
		return Transcript{Events: fakeRun(step{sql: "SELECT 1"})}, nil
	}
	rep, err := Run(t.Context(), &set, Config{Target: target, DB: sampleDB, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p != 3 {
		t.Errorf("peak concurrency %d, want 3", p)
	}
	if rep.Totals.Passed != 12 {
		t.Errorf("passed %d of 12", rep.Totals.Passed)
	}
}

// TestRunOrderIsDeterministic finishes questions in reverse order and
// checks the report keeps the set's order.
func TestRunOrderIsDeterministic(t *testing.T) {
	t.Parallel()
	var set Set
	const n = 6
	gates := make([]chan struct{}, n)
	for i := range n {
		set.Questions = append(set.Questions, Question{ID: fmt.Sprintf("q%d", i), Question: "Q", SQL: "SELECT 1 AS one"})
		gates[i] = make(chan struct{})
	}
	close(gates[n-1])
	var finished []string
	target := func(ctx context.Context, q Question) (Transcript, error) {
		i := int(q.ID[1] - '0')
		<-gates[i]
		return Transcript{Events: fakeRun(step{sql: "SELECT 1"})}, nil
	}
	rep, err := Run(t.Context(), &set, Config{Target: target, DB: sampleDB, Concurrency: n,
		OnResult: func(r Result) {
			finished = append(finished, r.ID)
			if i := int(r.ID[1] - '0'); i > 0 {
				close(gates[i-1]) // the next one finishes only after this one
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(finished, []string{"q5", "q4", "q3", "q2", "q1", "q0"}) {
		t.Fatalf("finish order %v", finished)
	}
	for i, r := range rep.Results {
		if r.ID != set.Questions[i].ID {
			t.Errorf("report position %d is %s", i, r.ID)
		}
	}
}

func TestRunConfigErrors(t *testing.T) {
	t.Parallel()
	sc := retailScript()
	for _, c := range []struct {
		set  *Set
		cfg  Config
		want string
	}{
		{nil, Config{Target: sc.target, DB: sampleDB}, "no question set"},
		{&Set{}, Config{Target: sc.target, DB: sampleDB}, "empty"},
		{retailSet(), Config{DB: sampleDB}, "Target is required"},
		{retailSet(), Config{Target: sc.target}, "DB is required"},
	} {
		if _, err := Run(t.Context(), c.set, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run error %v, want %q", err, c.want)
		}
	}
}

func TestSummarizeRunFailedAndSubAgents(t *testing.T) {
	t.Parallel()
	evs := []agents.Event{
		&agents.RunStarted{Model: "m"},
		&agents.UsageReported{Usage: domain.Usage{PromptTokens: 5, CompletionTokens: 1}, CostUSD: 0.5},
		&agents.UsageReported{EventHeader: agents.EventHeader{ParentRunID: "p"}, Usage: domain.Usage{PromptTokens: 7}},
		&agents.RunFailed{Code: "timeout", Message: "the run timed out"},
	}
	st := summarize(evs, sqldb.ToolQuery)
	if st.turns != 1 || st.tokensIn != 5 || st.cost != 0.5 || st.failed != "timeout: the run timed out" || st.model != "m" {
		t.Errorf("summary %+v", st)
	}
	set := &Set{Questions: []Question{{ID: "a", Question: "Q", SQL: "SELECT 1"}}}
	rep, err := Run(t.Context(), set, Config{DB: sampleDB,
		Target: func(context.Context, Question) (Transcript, error) { return Transcript{Events: evs}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Reason != "run failed: timeout: the run timed out" || r.Recall != nil {
		t.Errorf("result %+v", r)
	}
}

// TestProgressOnATerminal checks the in-place line a terminal gets.
func TestProgressOnATerminal(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := &progress{w: &b, term: true, total: 3}
	p.print()
	p.count(true)
	p.print()
	p.count(false)
	p.print()
	p.end()
	want := "\r\x1b[K[0/3] 0 ok 0 failed\r\x1b[K[1/3] 1 ok 0 failed\r\x1b[K[2/3] 1 ok 1 failed\n"
	if b.String() != want {
		t.Errorf("terminal progress %q, want %q", b.String(), want)
	}
	if isTerminal(&b) {
		t.Error("a buffer is not a terminal")
	}
}
