package sandbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/sandbox"
)

func TestLimitsDefaults(t *testing.T) {
	l := sandbox.Limits{WallTime: time.Second}.Or(sandbox.Limits{Memory: 1 << 30}).WithDefaults()
	want := sandbox.Limits{WallTime: time.Second, Memory: 1 << 30, CPUs: 1, Pids: 64, OutputBytes: 64 << 10,
		Files: 20, FileBytes: 16 << 20, WorkBytes: 64 << 20, Inodes: 10000}
	if l != want {
		t.Fatalf("got %+v", l)
	}
	if d := (sandbox.Limits{}).WithDefaults(); d.WallTime != 30*time.Second || d.Memory != 512<<20 {
		t.Fatalf("defaults %+v", d)
	}
}

func TestJobValidate(t *testing.T) {
	for _, tc := range []struct {
		job sandbox.Job
		err string
	}{
		{sandbox.Job{Code: "print(1)", Files: []sandbox.File{{Name: "a.csv"}, {Name: "dir/b.csv"}}}, ""},
		{sandbox.Job{}, "no code"},
		{sandbox.Job{Code: "x", Files: []sandbox.File{{Name: "../a"}}}, "clean path"},
		{sandbox.Job{Code: "x", Files: []sandbox.File{{Name: "a/../../b"}}}, "clean path"},
		{sandbox.Job{Code: "x", Files: []sandbox.File{{Name: "/abs"}}}, "relative"},
		{sandbox.Job{Code: "x", Files: []sandbox.File{{Name: "a"}, {Name: "a"}}}, "twice"},
		{sandbox.Job{Code: "x", Limits: sandbox.Limits{WallTime: -1}}, "negative"},
		{sandbox.Job{Code: "x", Limits: sandbox.Limits{Memory: 1 << 20}}, "16 MiB"},
		{sandbox.Job{Code: "x", Limits: sandbox.Limits{Pids: 2}}, "pids"},
	} {
		err := tc.job.Validate()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%+v: got %v, want %q", tc.job, err, tc.err)
		}
	}
}

func TestCapTextKeepsRunesWhole(t *testing.T) {
	s := sandbox.CapText([]byte("aé"), 10, 2) // "é" is 2 bytes; only its first fits
	if !strings.HasPrefix(s, "a\n[output truncated: 1 of 10") {
		t.Fatalf("%q", s)
	}
	if s := sandbox.CapText([]byte("abc"), 3, 10); s != "abc" {
		t.Fatalf("%q", s)
	}
}

func TestCollectFilesSizeAndChange(t *testing.T) {
	l := sandbox.Limits{FileBytes: 4}.WithDefaults()
	files, skipped := sandbox.CollectFiles([]sandbox.Candidate{
		{Name: "big.csv", Regular: true, Size: 5},
		{Name: "grew.csv", Regular: true, Size: 3, Data: []byte("ab")},
		{Name: ".hidden.csv", Regular: true, Size: 1, Data: []byte("a")},
		{Name: "ok.JSON", Regular: true, Size: 2, Data: []byte("{}")},
	}, l)
	if len(files) != 1 || files[0].Name != "ok.JSON" || files[0].MediaType != "application/json" {
		t.Fatalf("files %+v", files)
	}
	if len(skipped) != 2 || !strings.Contains(skipped[0].Reason, "4-byte file limit") || !strings.Contains(skipped[1].Reason, "changed") {
		t.Fatalf("skipped %+v", skipped)
	}
}
