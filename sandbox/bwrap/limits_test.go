package bwrap_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/sandbox/bwrap"
)

func runJob(t *testing.T, s *bwrap.Sandbox, job sandbox.Job) *sandbox.Output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := s.Run(ctx, job)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

// unenforced returns the entry of out.Unenforced for limit, if any.
func unenforced(out *sandbox.Output, limit string) string {
	for _, u := range out.Unenforced {
		if strings.HasPrefix(u, limit+": ") {
			return u
		}
	}
	return ""
}

// requireEnforced fails when limit is not enforced where it must be (CI:
// root on a host with cgroups), else skips with the reason the Output gave.
func requireEnforced(t *testing.T, out *sandbox.Output, limit string) {
	t.Helper()
	u := unenforced(out, limit)
	if u == "" {
		return
	}
	if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" && os.Geteuid() == 0 {
		t.Fatalf("%s limit not enforced as root under BICHAT_REQUIRE_INTEGRATION=1: %s", limit, u)
	}
	t.Skipf("the Output reports the %s limit as not enforced on this host: %s", limit, u)
}

// spinJob spins 8 threads (hashing releases the GIL) for 3 s and prints
// the job's CPU seconds per wall second.
const spinJob = `
import hashlib, os, threading, time
buf = b"x" * (1 << 20)
end = time.monotonic() + 3
def spin():
    h = hashlib.sha256()
    while time.monotonic() < end:
        h.update(buf)
t0, c0 = time.monotonic(), os.times()
ts = [threading.Thread(target=spin) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
t1, c1 = time.monotonic(), os.times()
print((c1.user + c1.system - c0.user - c0.system) / (t1 - t0))
`

// TestCPUQuota: 8 spinning threads under Limits.CPUs=1 use at most 1.1
// CPU seconds per wall second (a cgroup CPU quota); before, they used
// every core of the host.
func TestCPUQuota(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs to tell a quota from the host's size")
	}
	ratio := func(s *bwrap.Sandbox, cpus float64) (float64, *sandbox.Output) {
		out := runJob(t, s, sandbox.Job{Code: spinJob, Limits: sandbox.Limits{CPUs: cpus}})
		if !out.OK() {
			t.Fatalf("spin job: %s %s", out.Reason(), out.Stderr)
		}
		r, err := strconv.ParseFloat(strings.TrimSpace(out.Stdout), 64)
		if err != nil {
			t.Fatal(err)
		}
		return r, out
	}
	s := newSandbox(t, bwrap.Config{PoolSize: 1})
	defer s.Close()
	r, out := ratio(s, 1)
	requireEnforced(t, out, "cpu")
	t.Logf("CPUs=1: %.2f CPU s per wall s", r)
	if r > 1.1 {
		t.Fatalf("8 spinning threads used %.2f CPUs against a limit of 1", r)
	}
	// A second job on the same worker gets its own quota; a small one also
	// shows the quota on a host that other work keeps busy.
	r, _ = ratio(s, 0.25)
	t.Logf("CPUs=0.25: %.2f CPU s per wall s", r)
	if r > 0.25*1.1 {
		t.Fatalf("8 spinning threads used %.2f CPUs against a limit of 0.25", r)
	}
	// For the record: the same job without the cgroup.
	free := newSandbox(t, bwrap.Config{NoCgroups: true})
	defer free.Close()
	r, out = ratio(free, 1)
	t.Logf("without cgroups: %.2f CPU s per wall s (Unenforced %q)", r, out.Unenforced)
}

// TestMemoryCgroup: processes that each stay under Limits.Memory (the
// per-process address space limit) but together exceed it are stopped by
// the worker's memory cgroup, and the Output says OOMKilled.
func TestMemoryCgroup(t *testing.T) {
	s := newSandbox(t, bwrap.Config{PoolSize: 1})
	defer s.Close()
	code := `
import os, time
kids = []
for i in range(10):
    pid = os.fork()
    if pid == 0:
        b = b"x" * (100 << 20)
        time.sleep(3)
        os._exit(0)
    kids.append(pid)
killed = 0
for p in kids:
    _, st = os.waitpid(p, 0)
    if os.WIFSIGNALED(st):
        killed += 1
print("killed", killed)
`
	out := runJob(t, s, sandbox.Job{Code: code, Limits: sandbox.Limits{Memory: 128 << 20}})
	requireEnforced(t, out, "memory")
	if !out.OOMKilled || out.Stdout == "killed 0\n" || out.Reason() != "memory limit exceeded: the job was stopped" {
		t.Fatalf("1000 MiB in 10 processes under a 128 MiB limit: %+v", out)
	}
	t.Logf("%s", strings.TrimSpace(out.Stdout))
	// The worker survives and the next job is not limited by the last.
	if out := runJob(t, s, sandbox.Job{Code: "b = b'x' * (100 << 20)\nprint('ok')"}); !out.OK() || out.OOMKilled || out.Stdout != "ok\n" {
		t.Fatalf("next job: %+v", out)
	}
}

// TestInodeCap: a job that creates empty files in a loop stops at
// Limits.Inodes with ENOSPC, in the work folder, /tmp and /dev/shm alike,
// and the worker is fine afterwards.
func TestInodeCap(t *testing.T) {
	s := newSandbox(t, bwrap.Config{PoolSize: 1})
	defer s.Close()
	code := `
import errno, os, sys
d = %q
os.makedirs(d, exist_ok=True)
n = 0
try:
    for n in range(%d):
        open(os.path.join(d, "f%%d" %% n), "w").close()
    print("no error after", n + 1)
except OSError as e:
    print(errno.errorcode[e.errno], n)
`
	for _, tc := range []struct {
		dir    string
		inodes int
	}{{"many", 500}, {"/tmp/many", 500}, {"/dev/shm/many", 500}, {"many", 0}} {
		want := tc.inodes
		if want == 0 {
			want = sandbox.DefaultInodes
		}
		out := runJob(t, s, sandbox.Job{Code: fmt.Sprintf(code, tc.dir, want*2), Limits: sandbox.Limits{Inodes: tc.inodes}})
		f := strings.Fields(out.Stdout)
		if !out.OK() || len(f) != 2 || f[0] != "ENOSPC" {
			t.Fatalf("%s, Inodes=%d: %q %s", tc.dir, tc.inodes, out.Stdout, out.Stderr)
		}
		n, _ := strconv.Atoi(f[1])
		if n < want-20 || n > want+20 {
			t.Fatalf("%s, Inodes=%d: stopped after %d files", tc.dir, tc.inodes, n)
		}
		t.Logf("%s, Inodes=%d: ENOSPC after %d files", tc.dir, want, n)
	}
	if out := runJob(t, s, sandbox.Job{Code: "open('a.csv', 'w').write('x')\nprint('ok')"}); !out.OK() || len(out.Files) != 1 {
		t.Fatalf("next job: %+v", out)
	}
}

// TestCgroupsAppliedAndRemoved: while a job runs, its worker's cgroup
// holds the job's limits; Close removes every cgroup the sandbox made.
func TestCgroupsAppliedAndRemoved(t *testing.T) {
	s := newSandbox(t, bwrap.Config{PoolSize: 1})
	if u := s.Unenforced(); len(u) > 0 {
		s.Close()
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" && os.Geteuid() == 0 {
			t.Fatalf("cgroups not in force as root: %q", u)
		}
		t.Skipf("no cgroups here: %q", u)
	}
	done := make(chan *sandbox.Output, 1)
	go func() {
		out, _ := s.Run(context.Background(), sandbox.Job{Code: "import time; time.sleep(3)",
			Limits: sandbox.Limits{CPUs: 0.5, Pids: 20, Memory: 100 << 20}})
		done <- out
	}()
	want := map[string]string{"cpu.cfs_quota_us": "50000", "cpu.max": "50000 100000", "pids.max": "23"}
	deadline := time.Now().Add(20 * time.Second)
	var seen map[string]string
	for time.Now().Before(deadline) {
		seen = map[string]string{}
		for _, d := range ourCgroups(t) {
			for f := range want {
				if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
					seen[f] = strings.TrimSpace(string(b))
				}
			}
		}
		if seen["pids.max"] == "23" && (seen["cpu.cfs_quota_us"] == "50000" || seen["cpu.max"] == "50000 100000") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if seen["pids.max"] != "23" || (seen["cpu.cfs_quota_us"] != "50000" && seen["cpu.max"] != "50000 100000") {
		t.Fatalf("job limits not in the worker's cgroup: %v", seen)
	}
	if out := <-done; out == nil || !out.OK() || len(out.Unenforced) > 0 {
		t.Fatalf("job: %+v", out)
	}
	s.Close()
	if left := ourCgroups(t); len(left) > 0 {
		t.Fatalf("cgroups left after Close: %v", left)
	}
}

// ourCgroups lists the worker cgroups this test process made.
func ourCgroups(t *testing.T) []string {
	t.Helper()
	prefix := fmt.Sprintf("bichat-%d-", os.Getpid())
	var out []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), prefix) {
			out = append(out, p)
			return filepath.SkipDir
		}
		if strings.Count(p, "/") > 6 {
			return filepath.SkipDir
		}
		return nil
	})
	return out
}

// TestUnenforcedReported: where cgroups are off or unusable, every Output
// says which limits were not enforced and why.
func TestUnenforcedReported(t *testing.T) {
	s := newSandbox(t, bwrap.Config{NoCgroups: true})
	defer s.Close()
	out := runJob(t, s, sandbox.Job{Code: "print(1)"})
	if !out.OK() {
		t.Fatal(out.Reason())
	}
	for _, l := range []string{"cpu", "memory", "pids"} {
		if !strings.Contains(unenforced(out, l), "NoCgroups") {
			t.Fatalf("%s not reported as unenforced: %q", l, out.Unenforced)
		}
	}
	if len(s.Unenforced()) != 3 {
		t.Fatalf("Sandbox.Unenforced: %q", s.Unenforced())
	}
	// A cgroup v2 hierarchy without the controllers (the hybrid layout's
	// /sys/fs/cgroup/unified): jobs run and the Output says why.
	const unified = "/sys/fs/cgroup/unified"
	b, err := os.ReadFile(unified + "/cgroup.controllers")
	if err != nil || strings.Contains(string(b), "cpu") {
		t.Logf("no controller-less cgroup v2 hierarchy at %s to try", unified)
		return
	}
	v2 := newSandbox(t, bwrap.Config{CgroupParent: unified, PoolSize: 1})
	defer v2.Close()
	out = runJob(t, v2, sandbox.Job{Code: "print(2)"})
	if !out.OK() || out.Stdout != "2\n" {
		t.Fatalf("job: %+v", out)
	}
	for _, l := range []string{"cpu", "memory", "pids"} {
		if !strings.Contains(unenforced(out, l), "not available") {
			t.Fatalf("%s not reported as unenforced: %q", l, out.Unenforced)
		}
	}
}
