package runner

import (
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/bichat-go/bichat/sandbox"
)

// Script is runner.py: run it as `python3 -I -c Script zygote` (bwrap) or
// `... docker` (one job per container).
//
//go:embed runner.py
var Script string

// Limits are the job limits as the runner reads them.
type Limits struct {
	WallMS      int64   `json:"wall_ms"`
	Memory      int64   `json:"memory"`
	CPUs        float64 `json:"cpus"`
	Pids        int     `json:"pids"`
	OutputBytes int     `json:"output_bytes"`
	Files       int     `json:"files"`
	FileBytes   int64   `json:"file_bytes"`
	WorkBytes   int64   `json:"work_bytes"`
	// Inodes caps the files of the job's tmpfs (nr_inodes).
	Inodes     int      `json:"inodes"`
	Extensions []string `json:"extensions"`
	// Pin restricts the job to ceil(CPUs) cores with CPU affinity.
	Pin bool `json:"pin,omitempty"`
}

// File is an input file as sent to the runner.
type File struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// Job is one job as sent to the runner.
type Job struct {
	Code   string `json:"code"`
	Files  []File `json:"files,omitempty"`
	Limits Limits `json:"limits"`
	// Marker ends the docker runner's stdout once the result is written.
	Marker string `json:"marker,omitempty"`
}

// NewJob converts a validated job whose limits have their defaults.
func NewJob(j sandbox.Job, l sandbox.Limits) Job {
	out := Job{Code: j.Code, Limits: Limits{
		WallMS: l.WallTime.Milliseconds(), Memory: l.Memory, CPUs: l.CPUs, Pids: l.Pids,
		OutputBytes: l.OutputBytes, Files: l.Files, FileBytes: l.FileBytes, WorkBytes: l.WorkBytes,
		Inodes: l.Inodes, Extensions: sandbox.Extensions(),
	}}
	var in int64
	for _, f := range j.Files {
		out.Files = append(out.Files, File{Name: f.Name, Data: f.Data})
		in += int64(len(f.Data)) + 4096
	}
	out.Limits.WorkBytes += in // the inputs do not eat the job's space
	return out
}

// Result is what the runner reports for one job.
type Result struct {
	Ready       bool    `json:"ready,omitempty"` // zygote start-up frame
	Error       string  `json:"error,omitempty"`
	DurationNS  int64   `json:"duration_ns"`
	TimedOut    bool    `json:"timed_out"`
	Stdout      []byte  `json:"stdout"`
	Stderr      []byte  `json:"stderr"`
	StdoutTotal int64   `json:"stdout_total"`
	StderrTotal int64   `json:"stderr_total"`
	Exit        int     `json:"exit"`
	Signal      int     `json:"signal"`
	OOM         bool    `json:"oom"`
	SetupFailed bool    `json:"setup_failed"`
	Files       []Found `json:"files"`
}

// Found is a file the runner found in the work folder.
type Found struct {
	Name    string `json:"name"`
	Size    int64  `json:"size"`
	Regular bool   `json:"regular"`
	Kind    string `json:"kind"`
	Data    []byte `json:"data"`
}

// Output converts a result (files given separately when the adapter
// copied them out itself).
func (r *Result) Output(l sandbox.Limits, cands []sandbox.Candidate) (*sandbox.Output, error) {
	if r.Error != "" {
		return nil, fmt.Errorf("sandbox runner: %s", r.Error)
	}
	if r.SetupFailed {
		return nil, fmt.Errorf("sandbox runner: job setup failed: %s", r.Stderr)
	}
	o := &sandbox.Output{
		Stdout: sandbox.CapText(r.Stdout, r.StdoutTotal, l.OutputBytes), StdoutBytes: r.StdoutTotal,
		Stderr: sandbox.CapText(r.Stderr, r.StderrTotal, l.OutputBytes), StderrBytes: r.StderrTotal,
		ExitCode: r.Exit, TimedOut: r.TimedOut, OOMKilled: r.OOM,
		Duration: durationNS(r.DurationNS),
	}
	if r.Signal != 0 && !r.TimedOut {
		o.Signal = SignalName(r.Signal)
	}
	if cands == nil {
		for _, f := range r.Files {
			cands = append(cands, sandbox.Candidate{Name: f.Name, Regular: f.Regular, Kind: f.Kind, Size: f.Size, Data: f.Data})
		}
	}
	o.Files, o.Skipped = sandbox.CollectFiles(cands, l)
	return o, nil
}

var signals = map[int]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
	7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
	14: "SIGALRM", 15: "SIGTERM", 24: "SIGXCPU", 25: "SIGXFSZ", 31: "SIGSYS"}

// SignalName names a Linux signal number ("SIGKILL").
func SignalName(n int) string {
	if s, ok := signals[n]; ok {
		return s
	}
	return "signal " + strconv.Itoa(n)
}

func durationNS(n int64) time.Duration { return time.Duration(n) }
