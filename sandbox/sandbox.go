package sandbox

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// Sandbox runs untrusted Python code in isolation. Implementations are safe
// for concurrent use; each Run is independent of every other.
type Sandbox interface {
	// Run executes job and reports what happened. A job that fails, times
	// out or exceeds a limit is not an error: Output says so (see
	// Output.Reason). Run returns an error only when the sandbox itself
	// cannot run the job (not installed, engine down, ctx cancelled before
	// the job started, invalid Job).
	Run(ctx context.Context, job Job) (*Output, error)
	// Close stops pooled workers and releases everything the sandbox holds.
	// Run after Close returns ErrClosed.
	Close() error
}

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("sandbox: closed")

// InputDir is the folder, relative to the job's working directory, where
// the job's input files are placed: Job.Files{Name: "sales.csv"} is
// readable by the code as "inputs/sales.csv". The working directory is the
// only writable place in the sandbox.
const InputDir = "inputs"

// Job is one piece of code to run.
type Job struct {
	// Code is Python 3 source, run as the __main__ module with the working
	// directory as the current directory. matplotlib uses the Agg backend.
	Code string
	// Files are copied to InputDir before the code starts.
	Files []File
	// Limits bound the run; zero fields take the sandbox's defaults.
	Limits Limits
}

// File is an input file.
type File struct {
	// Name is a relative slash-separated path inside InputDir ("sales.csv").
	Name string
	Data []byte
}

// Validate reports whether the job can be sent to a sandbox.
func (j Job) Validate() error {
	if strings.TrimSpace(j.Code) == "" {
		return fmt.Errorf("sandbox: job has no code")
	}
	seen := map[string]bool{}
	for _, f := range j.Files {
		if err := validName(f.Name); err != nil {
			return fmt.Errorf("sandbox: input file %q: %w", f.Name, err)
		}
		if seen[f.Name] {
			return fmt.Errorf("sandbox: input file %q given twice", f.Name)
		}
		seen[f.Name] = true
	}
	return j.Limits.validate()
}

func validName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.ContainsRune(name, 0) {
		return errors.New("must be a relative slash-separated path")
	}
	if path.Clean(name) != name || name == "." || name == ".." || strings.HasPrefix(name, "../") {
		return errors.New("must be a clean path inside the input folder")
	}
	return nil
}

// Limits bound a job. The zero value of each field means "the default".
type Limits struct {
	// WallTime is the longest the code may run (default 30 s). When it
	// passes, every process of the job is killed and Output.TimedOut is set.
	WallTime time.Duration
	// Memory caps the memory of the job (default 512 MiB). Docker enforces
	// it with a cgroup (Memory = MemorySwap); bwrap with RLIMIT_AS on top
	// of the pre-loaded interpreter's address space and, where the host
	// allows cgroups, a memory cgroup per worker (see package bwrap).
	// Output.Unenforced says when the cgroup part could not be applied.
	Memory int64
	// CPUs caps the processor share (default 1). Docker: NanoCPUs. bwrap:
	// a CPU quota (cgroup cpu controller) where the host allows cgroups,
	// as many BLAS threads, RLIMIT_CPU of WallTime×CPUs, and CPU affinity
	// to ceil(CPUs) cores when bwrap.Config.PinCPUs is set.
	CPUs float64
	// Pids caps the number of processes and threads of the job (default 64).
	Pids int
	// Inodes caps how many files, folders and links the job can create in
	// its working directory, /tmp and /dev/shm together (default 10000):
	// creating more fails inside the job with ENOSPC ("No space left on
	// device"). It bounds the kernel memory a job can pin with empty files,
	// which neither Memory nor WorkBytes counts.
	Inodes int
	// OutputBytes caps stdout and stderr, each (default 64 KiB). The rest
	// is discarded and the kept text ends with a truncation note.
	OutputBytes int
	// Files caps the number of produced files returned (default 20).
	Files int
	// FileBytes caps the size of one file the job writes (default 16 MiB):
	// writing more fails inside the job (RLIMIT_FSIZE) and larger files
	// are not returned.
	FileBytes int64
	// WorkBytes caps the working directory's total size (default 64 MiB
	// plus the inputs): it is a tmpfs of this size.
	WorkBytes int64
}

// Default limits.
const (
	DefaultWallTime    = 30 * time.Second
	DefaultMemory      = 512 << 20
	DefaultCPUs        = 1
	DefaultPids        = 64
	DefaultOutputBytes = 64 << 10
	DefaultFiles       = 20
	DefaultFileBytes   = 16 << 20
	DefaultWorkBytes   = 64 << 20
	DefaultInodes      = 10000
)

// WithDefaults returns l with every zero field set to its default, then
// every field still zero in l filled from base (when base is given). Use
// it as l.WithDefaults() or job.Limits.Or(sandboxDefaults).
func (l Limits) WithDefaults() Limits {
	return l.Or(Limits{
		WallTime: DefaultWallTime, Memory: DefaultMemory, CPUs: DefaultCPUs, Pids: DefaultPids,
		OutputBytes: DefaultOutputBytes, Files: DefaultFiles, FileBytes: DefaultFileBytes, WorkBytes: DefaultWorkBytes,
		Inodes: DefaultInodes,
	})
}

// Or returns l with each zero field taken from d.
func (l Limits) Or(d Limits) Limits {
	if l.WallTime == 0 {
		l.WallTime = d.WallTime
	}
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.CPUs == 0 {
		l.CPUs = d.CPUs
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	if l.OutputBytes == 0 {
		l.OutputBytes = d.OutputBytes
	}
	if l.Files == 0 {
		l.Files = d.Files
	}
	if l.FileBytes == 0 {
		l.FileBytes = d.FileBytes
	}
	if l.WorkBytes == 0 {
		l.WorkBytes = d.WorkBytes
	}
	if l.Inodes == 0 {
		l.Inodes = d.Inodes
	}
	return l
}

func (l Limits) validate() error {
	switch {
	case l.WallTime < 0, l.Memory < 0, l.CPUs < 0, l.Pids < 0, l.OutputBytes < 0, l.Files < 0, l.FileBytes < 0, l.WorkBytes < 0, l.Inodes < 0:
		return errors.New("sandbox: limits must not be negative")
	case l.Memory != 0 && l.Memory < 16<<20:
		return errors.New("sandbox: memory limit below 16 MiB")
	case l.Pids != 0 && l.Pids < 4:
		return errors.New("sandbox: pids limit below 4")
	}
	return nil
}

// Output is what a job did.
type Output struct {
	// Stdout and Stderr are the job's output, each at most
	// Limits.OutputBytes plus a truncation note when more was written.
	Stdout, Stderr string
	// StdoutBytes and StderrBytes are how many bytes the job wrote in all.
	StdoutBytes, StderrBytes int64
	// ExitCode is the exit status of the code: 0 on success, 1 after an
	// uncaught exception, the code given to sys.exit, or -1 when the
	// process was killed by a signal (see Signal).
	ExitCode int
	// Signal names the signal that killed the code ("SIGKILL"), if any.
	Signal string
	// TimedOut is set when Limits.WallTime passed and the job was killed.
	TimedOut bool
	// OOMKilled is set when the job ran out of its memory limit: killed by
	// the kernel's OOM killer (docker) or a MemoryError (bwrap).
	OOMKilled bool
	// Files are the produced files, in name order.
	Files []OutputFile
	// Skipped lists files the job wrote that are not returned, with why.
	Skipped []Skipped
	// Duration is the wall time of the code, from start to exit.
	Duration time.Duration
	// Unenforced lists the limits the sandbox could not enforce for this
	// job on this host, each as the limit's name, a colon and why:
	// "cpu: ...", "memory: ...", "pids: ..." (e.g. "cpu: no writable cgroup
	// v1 cpu controller: permission denied"). Empty when every limit was
	// in force. A host that must not run jobs with a missing limit checks
	// it, or asks the adapter at start (bwrap.Sandbox.Unenforced).
	Unenforced []string
}

// OK reports whether the code ran to completion with exit status 0.
func (o *Output) OK() bool {
	return o.ExitCode == 0 && !o.TimedOut && !o.OOMKilled && o.Signal == ""
}

// Reason explains in one line why the job did not succeed, for the model
// and for logs; "" when OK.
func (o *Output) Reason() string {
	switch {
	case o.TimedOut:
		return fmt.Sprintf("timed out after %s: the job was killed", o.Duration.Round(time.Millisecond))
	case o.OOMKilled:
		return "memory limit exceeded: the job was stopped"
	case o.Signal != "":
		return "killed by " + o.Signal
	case o.ExitCode != 0:
		return fmt.Sprintf("exited with status %d", o.ExitCode)
	}
	return ""
}

// OutputFile is a file the job produced in its working directory.
type OutputFile struct {
	// Name is the path relative to the working directory ("chart.png").
	Name string
	// MediaType is derived from the extension ("image/png").
	MediaType string
	Size      int64
	Data      []byte
}

// Skipped is a file the job wrote that is not returned.
type Skipped struct {
	Name   string
	Reason string
}

// PoolStats counts what an adapter's warm pool did (bwrap.Sandbox.Stats,
// docker.Sandbox.Stats).
type PoolStats struct {
	Started  int // workers started, including replacements
	Ready    int // workers ready now
	Replaced int // dead workers found and replaced
	Expired  int // workers closed after the idle timeout
}
