package eval

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// Transcript is what a Target reports of one run.
type Transcript struct {
	// Events are the run's events, in order (as Service.Send yields
	// them).
	Events []agents.Event
	// Discovered are the names of the datasets the discovery step found
	// for the question, best first.
	Discovered []string
}

// Target runs one question through an agent and returns its transcript.
// An error means the run could not be made (the question then fails with
// the error as its reason); a run that failed is a transcript ending in
// agents.RunFailed. bichat's Service.EvalTarget is the Target of a
// service; tests can script one.
type Target func(ctx context.Context, q Question) (Transcript, error)

// Querier runs one read-only statement; sqldb.DB (tools/sqldb/postgres,
// tools/sqldb/sqlite) implements it, with its statement checks.
type Querier interface {
	Query(ctx context.Context, sql string, lim sqldb.Limits) (*sqldb.Result, error)
}

// Config configures Run.
type Config struct {
	// Target runs the questions. Required.
	Target Target
	// DB executes the gold SQL and the agent's final SQL, read-only.
	// Required.
	DB Querier
	// Limits bound each statement (default: 10,000 rows; a truncated
	// result fails the question, since it cannot be compared).
	Limits sqldb.Limits
	// Compare tunes the comparison (Ordered is set per question from the
	// gold SQL, OrdersRows).
	Compare CompareOptions
	// SQLTool names the tool whose "sql" argument is the agent's answer
	// (default sqldb.ToolQuery).
	SQLTool string
	// Concurrency caps how many questions run at once (default 1).
	Concurrency int
	// Results is the results file (JSONL): every result is appended as
	// it finishes, and questions already in it (same id, question, SQL and
	// hints) are not run again, so an interrupted evaluation resumes
	// where it stopped. Empty: results are kept in memory only.
	Results string
	// Progress receives a progress line per finished question: one line
	// updated in place ("\r[12/40] 9 ok 3 failed") on a terminal, plain
	// lines otherwise. Nil: no progress.
	Progress io.Writer
	// OnResult, when set, is called with each new result after it is
	// recorded (from one goroutine at a time).
	OnResult func(Result)
	// Now is the clock (default time.Now); latency is measured with it.
	Now func() time.Time
}

// Result is the outcome of one question, as Run records it (one JSON line
// of the results file).
type Result struct {
	// ID and Tags are the question's.
	ID   string   `json:"id"`
	Tags []string `json:"tags,omitempty"`
	// Key identifies the question's content (Question.Key); a result
	// whose key differs from the set's question is run again.
	Key string `json:"key"`
	// OK is true when the agent's final SQL returned the gold result.
	OK bool `json:"ok"`
	// Reason says why the question failed: "no SQL answer", "run error:
	// ...", "run failed: ...", "gold SQL failed: ...", "answer SQL failed
	// on re-execution: ..." or Compare's reason.
	Reason string `json:"reason,omitempty"`
	// Recall is the share of GoldTables among Discovered (the discovery
	// step's datasets); nil when the gold tables are unknown.
	Recall     *float64 `json:"recall,omitempty"`
	GoldTables []string `json:"gold_tables,omitempty"`
	Discovered []string `json:"discovered,omitempty"`
	// ToolCalls counts finished tool calls (sub-agents' included); Turns
	// the model calls of the top-level run; TokensIn and TokensOut their
	// prompt and completion tokens, CostUSD their cost.
	ToolCalls int     `json:"tool_calls"`
	Turns     int     `json:"turns"`
	TokensIn  int     `json:"tokens_in"`
	TokensOut int     `json:"tokens_out"`
	CostUSD   float64 `json:"cost_usd"`
	// LatencyMS is the Target call's wall time in milliseconds.
	LatencyMS int64 `json:"latency_ms"`
	// Repairs counts the failed SQL tool calls before FinalSQL.
	Repairs int `json:"repairs"`
	// FinalSQL is the SQL of the last successful SQL tool call.
	FinalSQL string `json:"final_sql,omitempty"`
	// Model is the model of the run (agents.RunStarted).
	Model string `json:"model,omitempty"`
	// FinishedAt is when the run ended (RFC 3339, UTC).
	FinishedAt string `json:"finished_at,omitempty"`
	// FinishReason is the run's agents.FinishReason; empty when it did
	// not finish.
	FinishReason string `json:"finish_reason,omitempty"`
}

// Latency is the run's wall time.
func (r Result) Latency() time.Duration { return time.Duration(r.LatencyMS) * time.Millisecond }

// Key returns the content key of q (Result.Key).
func (q Question) Key() string {
	h := sha256.New()
	for _, s := range append([]string{q.Question, q.SQL}, q.Hints...) {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Run evaluates every question of set not already in the results file,
// with at most cfg.Concurrency at a time, and returns the report of all
// the set's results (earlier ones included), in the set's order.
//
// When ctx is cancelled, Run stops starting questions, discards the runs
// it interrupted (they are run again on resumption) and returns the
// report of what finished with ctx's error.
func Run(ctx context.Context, set *Set, cfg Config) (*Report, error) {
	if set == nil {
		return nil, errors.New("eval: no question set")
	}
	if err := set.Validate(); err != nil {
		return nil, err
	}
	if cfg.Target == nil {
		return nil, errors.New("eval: Config.Target is required")
	}
	if cfg.DB == nil {
		return nil, errors.New("eval: Config.DB is required (it runs the gold and the agent's SQL)")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.SQLTool == "" {
		cfg.SQLTool = sqldb.ToolQuery
	}
	if cfg.Limits.MaxRows <= 0 {
		cfg.Limits.MaxRows = 10_000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	started := cfg.Now()

	done := map[string]Result{}
	var out *os.File
	if cfg.Results != "" {
		prev, err := ReadResults(cfg.Results)
		if err != nil {
			return nil, err
		}
		keys := map[string]string{}
		for _, q := range set.Questions {
			keys[q.ID] = q.Key()
		}
		for _, r := range prev {
			if k, ok := keys[r.ID]; ok && k == r.Key {
				done[r.ID] = r
			}
		}
		if out, err = openResults(cfg.Results); err != nil {
			return nil, err
		}
		defer out.Close()
	}

	var todo []Question
	for _, q := range set.Questions {
		if _, ok := done[q.ID]; !ok {
			todo = append(todo, q)
		}
	}
	p := newProgress(cfg.Progress, len(set.Questions))
	for _, r := range done {
		p.count(r.OK)
	}

	var (
		mu       sync.Mutex
		writeErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, cfg.Concurrency)
	)
	record := func(r Result) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return // interrupted: the run is done again on resumption
		}
		if out != nil && writeErr == nil {
			b, err := json.Marshal(r)
			if err == nil {
				_, err = out.Write(append(b, '\n'))
			}
			if err != nil {
				writeErr = fmt.Errorf("eval: append to results file: %w", err)
			}
		}
		done[r.ID] = r
		p.count(r.OK)
		p.print()
		if cfg.OnResult != nil {
			cfg.OnResult(r)
		}
	}
	p.print()
	for _, q := range todo {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			record(evaluate(ctx, q, cfg))
		}()
	}
	wg.Wait()
	p.end()

	rep := &Report{Set: set.Name, Started: started, Finished: cfg.Now()}
	for _, q := range set.Questions {
		if r, ok := done[q.ID]; ok {
			rep.Results = append(rep.Results, r)
		} else {
			rep.Pending = append(rep.Pending, q.ID)
		}
	}
	rep.total()
	if writeErr != nil {
		return rep, writeErr
	}
	return rep, ctx.Err()
}

// ReadResults reads a results file written by Run. A missing file holds no
// results; a last line cut short by an interruption is ignored, any other
// malformed line is an error naming it.
func ReadResults(path string) ([]Result, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("eval: open results file: %w", err)
	}
	defer f.Close()
	var rs []Result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	line := 0
	var bad error
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" {
			continue
		}
		if bad != nil {
			return nil, bad // a malformed line that was not the last one
		}
		var r Result
		if err := json.Unmarshal([]byte(t), &r); err != nil || r.ID == "" {
			if err == nil {
				err = errors.New(`no "id"`)
			}
			bad = fmt.Errorf("eval: results file %s, line %d: %w", path, line, err)
			continue
		}
		rs = append(rs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("eval: read results file: %w", err)
	}
	return rs, nil
}

// openResults opens the results file for appending, first cutting off a
// last line an interruption left unterminated (ReadResults ignored it).
func openResults(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("eval: open results file: %w", err)
	}
	if err := cutPartialLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("eval: prepare results file: %w", err)
	}
	return f, nil
}

func cutPartialLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	size := st.Size()
	buf := make([]byte, 4096)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			if keep := start + int64(i) + 1; keep != size {
				return f.Truncate(keep)
			}
			return nil
		}
		end = start
	}
	return f.Truncate(0)
}

// evaluate runs one question and judges its answer.
func evaluate(ctx context.Context, q Question, cfg Config) Result {
	r := Result{ID: q.ID, Tags: q.Tags, Key: q.Key()}
	start := cfg.Now()
	tr, err := cfg.Target(ctx, q)
	end := cfg.Now()
	r.LatencyMS = end.Sub(start).Milliseconds()
	r.FinishedAt = end.UTC().Format(time.RFC3339)
	r.Discovered = tr.Discovered
	st := summarize(tr.Events, cfg.SQLTool)
	r.ToolCalls, r.Turns, r.TokensIn, r.TokensOut, r.CostUSD = st.toolCalls, st.turns, st.tokensIn, st.tokensOut, st.cost
	r.Repairs, r.FinalSQL, r.Model, r.FinishReason = st.repairs, st.finalSQL, st.model, st.finish

	gold, gerr := cfg.DB.Query(ctx, q.SQL, cfg.Limits)
	r.GoldTables = q.Datasets
	if len(r.GoldTables) == 0 && gerr == nil {
		r.GoldTables = gold.Datasets
	}
	if len(r.GoldTables) > 0 {
		rc := recall(r.GoldTables, r.Discovered)
		r.Recall = &rc
	}
	switch {
	case err != nil:
		r.Reason = "run error: " + err.Error()
	case gerr != nil:
		r.Reason = "gold SQL failed: " + gerr.Error()
	case gold.Truncated:
		r.Reason = fmt.Sprintf("gold result truncated at %d rows: raise Limits.MaxRows", len(gold.Rows))
	case st.failed != "" && r.FinalSQL == "":
		r.Reason = "run failed: " + st.failed
	case r.FinalSQL == "":
		r.Reason = "no SQL answer"
	default:
		got, aerr := cfg.DB.Query(ctx, r.FinalSQL, cfg.Limits)
		switch {
		case aerr != nil:
			r.Reason = "answer SQL failed on re-execution: " + aerr.Error()
		case got.Truncated:
			r.Reason = fmt.Sprintf("answer result truncated at %d rows", len(got.Rows))
		default:
			opts := cfg.Compare
			opts.Ordered = OrdersRows(q.SQL)
			r.OK, r.Reason = Compare(TableOf(gold), TableOf(got), opts)
		}
	}
	return r
}

type stats struct {
	toolCalls, turns, tokensIn, tokensOut, repairs int
	cost                                           float64
	finalSQL, model, finish, failed                string
}

// summarize reads a run's events: usage, tool calls, and the SQL of the
// last successful call of sqlTool, with the failed calls before it as
// repairs.
func summarize(evs []agents.Event, sqlTool string) stats {
	var st stats
	args := map[string]json.RawMessage{}
	failedSince := 0
	for _, ev := range evs {
		switch e := ev.(type) {
		case *agents.RunStarted:
			if e.ParentRunID == "" && st.model == "" {
				st.model = e.Model
			}
		case *agents.ToolCallStarted:
			args[e.CallID] = e.Arguments
		case *agents.ToolCallFinished:
			st.toolCalls++
			if e.Name != sqlTool {
				continue
			}
			if e.Error != "" {
				failedSince++
				continue
			}
			var a struct {
				SQL string `json:"sql"`
			}
			if json.Unmarshal(args[e.CallID], &a) == nil && strings.TrimSpace(a.SQL) != "" {
				st.finalSQL = a.SQL
				st.repairs += failedSince
				failedSince = 0
			}
		case *agents.UsageReported:
			if e.ParentRunID != "" {
				continue
			}
			st.turns++
			st.tokensIn += e.Usage.PromptTokens
			st.tokensOut += e.Usage.CompletionTokens
			st.cost += e.CostUSD
		case *agents.RunFinished:
			if e.ParentRunID == "" {
				st.finish = string(e.Reason)
			}
		case *agents.RunFailed:
			if e.ParentRunID == "" {
				st.failed = e.Code + ": " + e.Message
			}
		}
	}
	return st
}

// recall is the share of gold tables found among discovered, matching
// names case-insensitively with or without a schema.
func recall(gold, discovered []string) float64 {
	if len(gold) == 0 {
		return 0
	}
	found := 0
	for _, g := range gold {
		if slices.ContainsFunc(discovered, func(d string) bool { return sameTable(g, d) }) {
			found++
		}
	}
	return float64(found) / float64(len(gold))
}

func sameTable(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	if a == b {
		return true
	}
	_, ua, qa := strings.Cut(a, ".")
	_, ub, qb := strings.Cut(b, ".")
	switch {
	case qa && !qb:
		return ua == b
	case qb && !qa:
		return ub == a
	}
	return false
}

// progress prints the progress line.
type progress struct {
	w              io.Writer
	term           bool
	total, ok, bad int
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, term: isTerminal(w), total: total}
}

func (p *progress) count(ok bool) {
	if ok {
		p.ok++
	} else {
		p.bad++
	}
}

func (p *progress) print() {
	if p.w == nil {
		return
	}
	line := fmt.Sprintf("[%d/%d] %d ok %d failed", p.ok+p.bad, p.total, p.ok, p.bad)
	if p.term {
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *progress) end() {
	if p.w != nil && p.term {
		fmt.Fprintln(p.w)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
