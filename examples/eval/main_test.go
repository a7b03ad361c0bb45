package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/agents/eval"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

// sampleDB is a retail sample database the tests share (generating one
// takes seconds under the race detector).
var sampleDB string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "eval-main-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		sampleDB = filepath.Join(dir, "retail.db")
		if err := sampledata.CreateSQLite(context.Background(), sampleDB); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

// TestRunSampleSet evaluates the built-in sample offline and checks the
// report: 4 of 6 right, the two deliberate wrong answers failing for the
// right reasons, the repair counted, and the three report files written.
func TestRunSampleSet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out, progress bytes.Buffer
	if err := run(t.Context(), &out, &progress, options{out: dir, concurrency: 3, offline: true, seed: true, dbPath: sampleDB}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	rep, err := eval.ReadReport(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	tot := rep.Totals
	if tot.Questions != 6 || tot.Passed != 4 || tot.Failed != 2 || tot.Repairs != 1 || tot.ToolCalls != 8 || tot.Turns != 14 ||
		tot.TokensIn == 0 || tot.CostUSD <= 0 || tot.RecallQuestions != 6 || tot.MeanRecall != 1 {
		t.Errorf("totals %+v", tot)
	}
	ids := []string{"regions", "products-per-category", "customers-per-region", "revenue-by-region-2025",
		"completed-orders-2025", "regions-alphabetical"}
	reasons := map[string]string{
		"completed-orders-2025": "values differ: row 1 is (",
		"regions-alphabetical":  `order differs: row 1 is ("West"), want ("Central")`,
	}
	for i, r := range rep.Results {
		if r.ID != ids[i] {
			t.Errorf("result %d is %s, want %s", i, r.ID, ids[i])
		}
		want, bad := reasons[r.ID]
		if r.OK == bad || (bad && !strings.HasPrefix(r.Reason, want)) {
			t.Errorf("%s: ok=%v reason %q, want reason %q", r.ID, r.OK, r.Reason, want)
		}
		if r.ID == "customers-per-region" && (r.Repairs != 1 || !strings.Contains(r.FinalSQL, "JOIN customers")) {
			t.Errorf("customers-per-region: repairs %d, final SQL %q", r.Repairs, r.FinalSQL)
		}
	}
	for _, want := range []string{"seeded 6 verified recipes", "execution accuracy 66.7% (4/6), mean retrieval recall 100.0%",
		"FAIL completed-orders-2025: values differ", "FAIL regions-alphabetical: order differs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.HasSuffix(progress.String(), "[6/6] 4 ok 2 failed\n") {
		t.Errorf("progress %q", progress.String())
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !bytes.Contains(md, []byte("Execution accuracy **66.7%** (4/6)")) || !bytes.Contains(html, []byte("<svg")) {
		t.Errorf("report.md or report.html incomplete:\n%s", md)
	}
}

// TestRunResumesAfterInterruption cancels the first run after two
// results, then runs again: only the four others run, and the report has
// all six.
func TestRunResumesAfterInterruption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	var first []string
	err := run(ctx, &bytes.Buffer{}, &bytes.Buffer{}, options{out: dir, concurrency: 1, offline: true, dbPath: sampleDB,
		onResult: func(r eval.Result) {
			mu.Lock()
			defer mu.Unlock()
			if first = append(first, r.ID); len(first) == 2 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	lines := func() int {
		b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("\n"))
	}
	if n := lines(); n != 2 {
		t.Fatalf("results.jsonl has %d lines after the interruption, want 2", n)
	}
	part, err := eval.ReadReport(filepath.Join(dir, "report.json"))
	if err != nil || len(part.Results) != 2 || len(part.Pending) != 4 {
		t.Fatalf("partial report: %+v, %v", part, err)
	}

	var second []string
	var out bytes.Buffer
	if err := run(t.Context(), &out, &bytes.Buffer{}, options{out: dir, concurrency: 2, offline: true, dbPath: sampleDB,
		onResult: func(r eval.Result) {
			mu.Lock()
			defer mu.Unlock()
			second = append(second, r.ID)
		}}); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out.String())
	}
	if len(second) != 4 {
		t.Errorf("resumed run evaluated %v, want the 4 left", second)
	}
	for _, id := range second {
		for _, done := range first {
			if id == done {
				t.Errorf("%s ran twice", id)
			}
		}
	}
	if n := lines(); n != 6 {
		t.Errorf("results.jsonl has %d lines, want 6", n)
	}
	rep, err := eval.ReadReport(filepath.Join(dir, "report.json"))
	if err != nil || len(rep.Results) != 6 || rep.Totals.Passed != 4 || len(rep.Pending) != 0 {
		t.Errorf("resumed report: %+v, %v", rep, err)
	}
}

// TestCompareWithEarlierReport compares a run with an edited earlier
// report in which completed-orders-2025 passed and regions failed.
func TestCompareWithEarlierReport(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	first := filepath.Join(base, "run1")
	if err := run(t.Context(), &bytes.Buffer{}, &bytes.Buffer{}, options{out: first, concurrency: 4, offline: true, dbPath: sampleDB}); err != nil {
		t.Fatal(err)
	}
	old, err := eval.ReadReport(filepath.Join(first, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range old.Results {
		switch old.Results[i].ID {
		case "completed-orders-2025":
			old.Results[i].OK, old.Results[i].Reason = true, ""
		case "regions":
			old.Results[i].OK, old.Results[i].Reason = false, "row count 0, want 1"
		}
	}
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	oldPath := filepath.Join(base, "old.json")
	if err := os.WriteFile(oldPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(base, "run2")
	var out bytes.Buffer
	if err := run(t.Context(), &out, &bytes.Buffer{}, options{out: second, concurrency: 4, offline: true, compare: oldPath, dbPath: sampleDB}); err != nil {
		t.Fatal(err)
	}
	cmp, err := os.ReadFile(filepath.Join(second, "compare.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Improved (1)\n\n- regions\n", "## Regressed (1)\n\n- completed-orders-2025: values differ",
		"## Unchanged (4)"} {
		if !strings.Contains(string(cmp), want) || !strings.Contains(out.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, cmp)
		}
	}
}

func TestRunRejectsBadSet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set := filepath.Join(dir, "set.jsonl")
	if err := os.WriteFile(set, []byte(`{"id":"a","question":"Q"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(t.Context(), &bytes.Buffer{}, &bytes.Buffer{}, options{set: set, out: dir, offline: true, dbPath: sampleDB})
	if err == nil || !strings.Contains(err.Error(), `line 1: question a: "sql" (the verified query) is missing`) {
		t.Errorf("run error %v", err)
	}
}
