package main

import (
	"io"
	"os"
	"regexp"
	"testing"
	"time"
)

// TestRun runs the quickstart with its standard output captured and checks
// the lines a reader of the README is promised.
func TestRun(t *testing.T) {
	// Not parallel: it swaps the process's os.Stdout.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	orig := os.Stdout
	os.Stdout = w
	t.Cleanup(func() { os.Stdout = orig })
	out := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()

	runErr := run(t.Context())
	os.Stdout = orig
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got string
	select {
	case got = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("reading the captured output did not finish")
	}
	if runErr != nil {
		t.Fatalf("run: %v\noutput:\n%s", runErr, got)
	}

	for _, want := range []string{
		`(?m)^tool call revenue_by_region \{"year":2025\}$`,
		`(?m)^tool done revenue_by_region: 4 rows for the host, \d+ bytes for the model$`,
		`(?m)^finished  end_turn, [1-9]\d* tokens$`,
		`(?m)^user +complete +Which region had the highest revenue in 2025\?$`,
		`(?m)^assistant +complete +Let me pull revenue by region for 2025\. \*\*LATAM\*\* led 2025 with €[\d.]+ of revenue from \d+ orders\.$`,
		`(?m)^ +tool revenue_by_region\(\{"year":2025\}\) in \d+ ms$`,
		`(?m)^session "Which region had the highest revenue in 2025\?"$`,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("output lacks a line matching %s\noutput:\n%s", want, got)
		}
	}
}
