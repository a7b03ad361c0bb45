package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/sandbox"
)

// Factory returns a sandbox with a warm pool of poolSize workers (0: none);
// the suite closes it.
type Factory func(t *testing.T, poolSize int) sandbox.Sandbox

// Unavailable skips t with reason, or fails it when
// BICHAT_REQUIRE_INTEGRATION=1 (CI), where a missing sandbox is a bug.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
		t.Fatalf("sandbox required (BICHAT_REQUIRE_INTEGRATION=1) but unavailable: %s", reason)
	}
	t.Skipf("sandbox unavailable: %s", reason)
}

func run(t *testing.T, s sandbox.Sandbox, job sandbox.Job) *sandbox.Output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := s.Run(ctx, job)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

// Run runs the whole suite: conformance, then the security cases of the
// issue in parallel, the limit cases (CPU share, inodes, /tmp) in
// parallel, the pool check, then a check that the sandbox still works.
func Run(t *testing.T, newSandbox Factory) {
	s := newSandbox(t, 2)
	t.Cleanup(func() { _ = s.Close() })
	t.Run("conformance", func(t *testing.T) { Conformance(t, s) })
	t.Run("security", func(t *testing.T) { Security(t, s) })
	t.Run("limits", func(t *testing.T) { Limits(t, s) })
	t.Run("pool-reuse-no-leak", func(t *testing.T) { PoolNoLeak(t, newSandbox) })
	t.Run("healthy-afterwards", func(t *testing.T) {
		out := run(t, s, sandbox.Job{Code: "print(6*7)"})
		if !out.OK() || strings.TrimSpace(out.Stdout) != "42" {
			t.Fatalf("sandbox unhealthy after the security cases: %+v", out)
		}
	})
}

// Conformance checks the contract of Run: output, exit codes, inputs,
// produced files and the output policy.
func Conformance(t *testing.T, s sandbox.Sandbox) {
	t.Run("hello", func(t *testing.T) {
		t.Parallel()
		out := run(t, s, sandbox.Job{Code: "import sys\nprint('hello')\nprint('warn', file=sys.stderr)"})
		if !out.OK() || out.Stdout != "hello\n" || out.Stderr != "warn\n" || out.Reason() != "" {
			t.Fatalf("got %+v", out)
		}
		if out.Duration <= 0 || out.Duration > 30*time.Second {
			t.Fatalf("duration %v", out.Duration)
		}
	})
	t.Run("exit-codes", func(t *testing.T) {
		t.Parallel()
		out := run(t, s, sandbox.Job{Code: "import sys\nsys.exit(3)"})
		if out.ExitCode != 3 || out.OK() || out.Reason() != "exited with status 3" {
			t.Fatalf("sys.exit(3): %+v", out)
		}
		out = run(t, s, sandbox.Job{Code: "x = 1\ny = x / 0\n"})
		if out.ExitCode != 1 || !strings.Contains(out.Stderr, "ZeroDivisionError") || !strings.Contains(out.Stderr, `"main.py", line 2`) {
			t.Fatalf("exception: %+v", out)
		}
		if !strings.Contains(out.Stderr, "y = x / 0") {
			t.Fatalf("traceback without the source line: %q", out.Stderr)
		}
	})
	t.Run("inputs-pandas-chart", func(t *testing.T) {
		t.Parallel()
		csv := "region,amount\nnorth,10\nsouth,5\nnorth,7\n"
		code := `
import pandas as pd, matplotlib.pyplot as plt, json
df = pd.read_csv("inputs/sales.csv")
g = df.groupby("region")["amount"].sum()
print(g.to_dict())
g.plot(kind="bar"); plt.savefig("chart.png")
plt.savefig("chart.svg")
g.to_csv("totals.csv")
json.dump(g.to_dict(), open("totals.json", "w"))
open("notes.txt", "w").write("not returned")
import os; os.makedirs("sub", exist_ok=True); open("sub/deep.csv", "w").write("a\n1\n")
`
		out := run(t, s, sandbox.Job{Code: code, Files: []sandbox.File{{Name: "sales.csv", Data: []byte(csv)}}})
		if !out.OK() {
			t.Fatalf("job failed: %s\n%s", out.Reason(), out.Stderr)
		}
		if out.Stdout != "{'north': 17, 'south': 5}\n" {
			t.Fatalf("stdout %q", out.Stdout)
		}
		names := map[string]sandbox.OutputFile{}
		for _, f := range out.Files {
			names[f.Name] = f
			if f.Size != int64(len(f.Data)) || f.Size == 0 {
				t.Errorf("%s: size %d for %d bytes", f.Name, f.Size, len(f.Data))
			}
		}
		want := map[string]string{"chart.png": "image/png", "chart.svg": "image/svg+xml", "totals.csv": "text/csv", "totals.json": "application/json", "sub/deep.csv": "text/csv"}
		for n, mt := range want {
			if names[n].MediaType != mt {
				t.Errorf("file %s: media type %q, want %q (files %v)", n, names[n].MediaType, mt, fileNames(out))
			}
		}
		if _, ok := names["inputs/sales.csv"]; ok || len(out.Files) != len(want) {
			t.Errorf("unexpected files: %v", fileNames(out))
		}
		img, err := png.Decode(bytes.NewReader(names["chart.png"].Data))
		if err != nil || img.Bounds().Dx() < 100 {
			t.Errorf("chart.png does not decode: %v", err)
		}
		if len(out.Skipped) != 1 || out.Skipped[0].Name != "notes.txt" || !strings.Contains(out.Skipped[0].Reason, "extension") {
			t.Errorf("skipped: %+v", out.Skipped)
		}
	})
	t.Run("file-limits", func(t *testing.T) {
		t.Parallel()
		code := "for i in range(3): open(f'f{i}.csv','w').write('x')\n"
		out := run(t, s, sandbox.Job{Code: code, Limits: sandbox.Limits{Files: 2}})
		if !out.OK() {
			t.Fatalf("job: %s %s", out.Reason(), out.Stderr)
		}
		if len(out.Files) != 2 || out.Files[0].Name != "f0.csv" || out.Files[1].Name != "f1.csv" {
			t.Fatalf("files: %v", fileNames(out))
		}
		reasons := map[string]string{}
		for _, sk := range out.Skipped {
			reasons[sk.Name] = sk.Reason
		}
		if !strings.Contains(reasons["f2.csv"], "more than 2 files") || len(reasons) != 1 {
			t.Fatalf("skipped: %+v", out.Skipped)
		}
	})
	t.Run("file-size-limit-inside", func(t *testing.T) {
		t.Parallel()
		code := "try:\n    open('huge.csv','wb').write(b'x'*(2<<20))\n    print('wrote')\nexcept OSError as e:\n    print('refused', e.errno)\n"
		out := run(t, s, sandbox.Job{Code: code, Limits: sandbox.Limits{FileBytes: 1 << 20}})
		if strings.Contains(out.Stdout, "wrote") && out.Signal == "" {
			t.Fatalf("a 2 MiB file was written under a 1 MiB limit: %+v", out)
		}
		for _, f := range out.Files {
			if f.Size > 1<<20 {
				t.Fatalf("returned %d bytes", f.Size)
			}
		}
		t.Logf("contained: %s", strings.TrimSpace(out.Stdout))
	})
	t.Run("invalid-job", func(t *testing.T) {
		t.Parallel()
		for _, j := range []sandbox.Job{
			{Code: " "},
			{Code: "print(1)", Files: []sandbox.File{{Name: "../x.csv"}}},
			{Code: "print(1)", Files: []sandbox.File{{Name: "/etc/x"}}},
			{Code: "print(1)", Limits: sandbox.Limits{Memory: -1}},
		} {
			if _, err := s.Run(context.Background(), j); err == nil {
				t.Errorf("job %+v accepted", j)
			}
		}
	})
}

// Security runs every case of the security list in parallel; each
// must be contained and reported with a reason.
func Security(t *testing.T, s sandbox.Sandbox) {
	short := sandbox.Limits{WallTime: 4 * time.Second}

	t.Run("network", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var mu sync.Mutex
		accepted := 0
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				accepted++
				mu.Unlock()
				c.Close()
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		code := fmt.Sprintf(`
import socket
for host, port in (("127.0.0.1", %d), ("1.1.1.1", 80), ("8.8.8.8", 53), ("deb.debian.org", 80)):
    try:
        s = socket.create_connection((host, port), timeout=2)
        print("CONNECTED", host)
    except OSError as e:
        print("blocked", host, type(e).__name__)
`, port)
		out := run(t, s, sandbox.Job{Code: code, Limits: short})
		if strings.Contains(out.Stdout, "CONNECTED") || strings.Count(out.Stdout, "blocked") != 4 {
			t.Fatalf("network reachable: %+v", out)
		}
		mu.Lock()
		defer mu.Unlock()
		if accepted != 0 {
			t.Fatalf("host listener accepted %d connections from the sandbox", accepted)
		}
		t.Logf("contained: %s", strings.ReplaceAll(strings.TrimSpace(out.Stdout), "\n", "; "))
	})

	t.Run("write-outside-work", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		host := filepath.Join(dir, "host.txt")
		if err := os.WriteFile(host, []byte("original"), 0o666); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(dir, 0o777)
		code := fmt.Sprintf(`
import os
ok = []
for p in ["/etc/bichat", "/usr/bichat", "/bichat", "/var/tmp/bichat", "/home/bichat", "/root/bichat",
          "/dev/bichat", "/proc/bichat", "/sys/bichat", %q, %q, "../escape.txt", "/work/../bichat"]:
    try:
        with open(p, "w") as f:
            f.write("owned")
        ok.append(p)
    except OSError as e:
        pass
print("WROTE", ok)
open("fine.csv", "w").write("a\n1\n")
`, host, filepath.Join(dir, "new.txt"))
		out := run(t, s, sandbox.Job{Code: code, Limits: short})
		if !out.OK() || !strings.Contains(out.Stdout, "WROTE []") {
			t.Fatalf("wrote outside the work folder: %+v", out)
		}
		if b, _ := os.ReadFile(host); string(b) != "original" {
			t.Fatalf("host file changed: %q", b)
		}
		if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
			t.Fatal("host file created")
		}
		if len(out.Files) != 1 || out.Files[0].Name != "fine.csv" {
			t.Fatalf("the work folder is not writable: %+v", out)
		}
		t.Log("contained: every path outside the work folder refused the write")
	})

	t.Run("read-other-jobs-files", func(t *testing.T) {
		t.Parallel()
		secret := fmt.Sprintf("secret-%d", time.Now().UnixNano())
		writer := fmt.Sprintf(`
import os, time, tempfile
for p in ("secret.csv", os.path.join(tempfile.gettempdir(), "secret.csv"), "/dev/shm/secret.csv"):
    open(p, "w").write(%q)
print(os.path.abspath("secret.csv"), flush=True)
time.sleep(2.5)
`, secret)
		reader := fmt.Sprintf(`
import os, time
time.sleep(0.7)
found = []
for root, dirs, files in os.walk("/"):
    if root.startswith(("/proc", "/sys", "/usr", "/lib", "/bin", "/sbin")) or (root.startswith("/dev") and not root.startswith("/dev/shm")):
        dirs[:] = []
        continue
    for f in files:
        p = os.path.join(root, f)
        try:
            if %q in open(p, errors="ignore").read(4096):
                found.append(p)
        except OSError:
            pass
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for sub in ("root/work/secret.csv", "cwd/secret.csv", "root/tmp/secret.csv"):
            try:
                if %q in open(f"/proc/{pid}/{sub}").read():
                    found.append(f"/proc/{pid}/{sub}")
            except OSError:
                pass
print("FOUND", found)
`, secret, secret)
		var wg sync.WaitGroup
		var wout *sandbox.Output
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			wout, _ = s.Run(ctx, sandbox.Job{Code: writer, Limits: short})
		}()
		long := sandbox.Limits{WallTime: 15 * time.Second}
		concurrent := run(t, s, sandbox.Job{Code: reader, Limits: long})
		wg.Wait()
		after := run(t, s, sandbox.Job{Code: strings.Replace(reader, "time.sleep(0.7)", "", 1), Limits: long})
		if wout == nil || !wout.OK() {
			t.Fatalf("writer failed: %+v", wout)
		}
		for _, o := range []*sandbox.Output{concurrent, after} {
			if !o.OK() || !strings.Contains(o.Stdout, "FOUND []") {
				t.Fatalf("another job's files are readable: %+v", o)
			}
		}
		t.Log("contained: the secret was found neither concurrently nor afterwards")
	})

	t.Run("allocate-2GiB", func(t *testing.T) {
		t.Parallel()
		code := "b = bytearray(2 << 30)\nprint('ALLOCATED', len(b))\n"
		out := run(t, s, sandbox.Job{Code: code, Limits: sandbox.Limits{WallTime: 20 * time.Second}})
		if strings.Contains(out.Stdout, "ALLOCATED") || !out.OOMKilled || out.OK() {
			t.Fatalf("2 GiB allocation not stopped: %+v", out)
		}
		t.Logf("contained: %s", out.Reason())
	})

	t.Run("fork-bomb", func(t *testing.T) {
		t.Parallel()
		code := `
import os
n = 0
while True:
    try:
        os.fork()
        n += 1
    except OSError:
        pass
`
		start := time.Now()
		out := run(t, s, sandbox.Job{Code: code, Limits: sandbox.Limits{WallTime: 3 * time.Second, Pids: 32}})
		if out.OK() || !out.TimedOut {
			t.Fatalf("fork bomb not stopped by the wall time: %+v", out)
		}
		if el := time.Since(start); el > 30*time.Second {
			t.Fatalf("fork bomb took %v to stop", el)
		}
		t.Logf("contained: %s", out.Reason())
	})

	t.Run("infinite-loop", func(t *testing.T) {
		t.Parallel()
		out := run(t, s, sandbox.Job{Code: "while True:\n    pass\n", Limits: sandbox.Limits{WallTime: 2 * time.Second}})
		if !out.TimedOut || out.Duration < 2*time.Second || out.Duration > 10*time.Second {
			t.Fatalf("infinite loop: %+v", out)
		}
		if !strings.Contains(out.Reason(), "timed out") {
			t.Fatalf("reason %q", out.Reason())
		}
		t.Logf("contained: %s", out.Reason())
	})

	t.Run("100MB-stdout", func(t *testing.T) {
		t.Parallel()
		code := "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)\nprint('end')\n"
		out := run(t, s, sandbox.Job{Code: code, Limits: sandbox.Limits{WallTime: 20 * time.Second, OutputBytes: 1000}})
		if out.StdoutBytes < 100<<20 || len(out.Stdout) > 1200 || !strings.Contains(out.Stdout, "[output truncated: 1000 of ") {
			t.Fatalf("stdout not capped: %d bytes kept of %d: %q", len(out.Stdout), out.StdoutBytes, tail(out.Stdout))
		}
		if !out.OK() {
			t.Fatalf("job failed: %s", out.Reason())
		}
		t.Logf("contained: kept %d of %d bytes", len(out.Stdout), out.StdoutBytes)
	})

	t.Run("symlink-to-shadow", func(t *testing.T) {
		t.Parallel()
		code := `
import os
os.symlink("/etc/shadow", "shadow.csv")
os.symlink("/etc/shadow", "shadow.png")
os.symlink("/etc", "etc")
try:
    os.link("/etc/shadow", "hard.csv")
except OSError as e:
    print("no hard link:", e.errno)
`
		out := run(t, s, sandbox.Job{Code: code, Limits: short})
		for _, f := range out.Files {
			if bytes.Contains(f.Data, []byte("root:")) || strings.Contains(f.Name, "shadow") || strings.HasPrefix(f.Name, "etc/") {
				t.Fatalf("returned %s (%d bytes)", f.Name, f.Size)
			}
		}
		got := map[string]string{}
		for _, sk := range out.Skipped {
			got[sk.Name] = sk.Reason
		}
		for _, n := range []string{"shadow.csv", "shadow.png", "etc"} {
			if !strings.Contains(got[n], "symlink") {
				t.Fatalf("%s not reported as a symlink: %+v", n, out.Skipped)
			}
		}
		t.Logf("contained: %v", out.Skipped)
	})

	t.Run("background-process", func(t *testing.T) {
		t.Parallel()
		token := fmt.Sprintf("bichat-bg-%d", time.Now().UnixNano())
		code := fmt.Sprintf(`
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", %q], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", %q])
    os._exit(0)
time.sleep(0.3)
print("spawned")
`, token, token)
		out := run(t, s, sandbox.Job{Code: code, Limits: short})
		if !out.OK() || !strings.Contains(out.Stdout, "spawned") {
			t.Fatalf("job: %+v", out)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			pids := hostProcesses(token)
			if len(pids) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("background processes survived the job: %v", pids)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Log("contained: no process of the job survived it")
	})
}

// Limits runs the cases about resource limits beyond memory, pids and
// time, in parallel: the CPU share (CPUAccounting), the number of files
// (Inodes) and a writable, capped /tmp (WritableTmp).
func Limits(t *testing.T, s sandbox.Sandbox) {
	t.Run("cpu-limit", func(t *testing.T) { t.Parallel(); CPULimit(t, s) })
	t.Run("inodes", func(t *testing.T) { t.Parallel(); Inodes(t, s) })
	t.Run("writable-tmp", func(t *testing.T) { t.Parallel(); WritableTmp(t, s) })
}

// unenforcedLimit returns the entry of out.Unenforced about limit ("cpu",
// "memory", "pids"), or "".
func unenforcedLimit(out *sandbox.Output, limit string) string {
	for _, u := range out.Unenforced {
		if strings.HasPrefix(u, limit+":") {
			return u
		}
	}
	return ""
}

// CPULimit runs 8 forked processes spinning for 3 s under Limits.CPUs = 1
// and measures the CPU time of all of them (os.times of the job and its
// waited-for children) over the wall time: it must stay within the limit
// plus 10%. A sandbox that cannot enforce the limit on this host must say
// so in Output.Unenforced ("cpu: ..."); the case then skips, or fails when
// BICHAT_REQUIRE_INTEGRATION=1 (CI must enforce it).
func CPULimit(t *testing.T, s sandbox.Sandbox) {
	const cpus = 1.0
	code := `
import os, time
N, SPIN = 8, 3.0
t0, c0 = time.monotonic(), os.times()
pids = []
for _ in range(N):
    pid = os.fork()
    if pid == 0:
        x = 0
        while time.monotonic() < t0 + SPIN:
            x += 1
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
wall = time.monotonic() - t0
c1 = os.times()
cpu = sum(getattr(c1, k) - getattr(c0, k) for k in ("user", "system", "children_user", "children_system"))
print("CPU %.3f %.3f" % (cpu, wall))
`
	out := run(t, s, sandbox.Job{Code: code, Limits: sandbox.Limits{CPUs: cpus, WallTime: 30 * time.Second}})
	var cpu, wall float64
	if !out.OK() {
		t.Fatalf("spinning job failed: %s %s", out.Reason(), out.Stderr)
	}
	if _, err := fmt.Sscanf(out.Stdout, "CPU %f %f", &cpu, &wall); err != nil || wall < 2.9 {
		t.Fatalf("no measurement (%v): %q", err, out.Stdout)
	}
	ratio := cpu / wall
	t.Logf("8 spinning processes under CPUs=%g: %.2f CPU s in %.2f s wall = %.2f cores", cpus, cpu, wall, ratio)
	if u := unenforcedLimit(out, "cpu"); u != "" {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("CPU limit not enforced (BICHAT_REQUIRE_INTEGRATION=1 requires it): %s (used %.2f cores)", u, ratio)
		}
		t.Skipf("CPU limit not enforced on this host: %s (used %.2f cores)", u, ratio)
	}
	if ratio > cpus*1.1 {
		t.Fatalf("CPU limit %g not enforced: the job used %.2f cores (%.2f CPU s in %.2f s) and Output.Unenforced says nothing", cpus, ratio, cpu, wall)
	}
	// A sanity floor only (the spinners ran at all): on a loaded 2-core CI
	// machine a capped job can get far less than its share.
	if cpu < 0.03*wall {
		t.Fatalf("the job hardly ran (%.2f CPU s in %.2f s): the measurement means nothing", cpu, wall)
	}
}

// Inodes creates empty files in a loop in the work folder, /tmp and
// /dev/shm under Limits.Inodes = 2000: each place must refuse with ENOSPC
// (or EDQUOT) after at most the cap (plus a small allowance for the
// sandbox's own entries), within seconds, and the next job must run. A job
// that leaves its work folder full of files and bytes must still get its
// result out.
func Inodes(t *testing.T, s sandbox.Sandbox) {
	const limit = 2000
	code := `
import errno, os, shutil, tempfile, time
t0 = time.monotonic()
for place in ("work", "tmp", "shm"):
    d = {"work": "many", "tmp": os.path.join(tempfile.gettempdir(), "many"), "shm": "/dev/shm/many"}[place]
    n, err = 0, "none"
    try:
        os.mkdir(d)
        while n < 1000000:
            open(os.path.join(d, str(n)), "w").close()
            n += 1
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
    print(place, n, err)
    shutil.rmtree(d, ignore_errors=True)
open("after.csv", "w").write("a\n1\n")
print("elapsed %.2f" % (time.monotonic() - t0))
`
	start := time.Now()
	out := run(t, s, sandbox.Job{Code: code, Limits: sandbox.Limits{Inodes: limit, WallTime: 60 * time.Second}})
	if !out.OK() {
		t.Fatalf("job: %s %q %s", out.Reason(), out.Stdout, out.Stderr)
	}
	got := map[string][2]string{}
	var elapsed float64
	for _, line := range strings.Split(strings.TrimSpace(out.Stdout), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3:
			got[f[0]] = [2]string{f[1], f[2]}
		case len(f) == 2 && f[0] == "elapsed":
			elapsed, _ = strconv.ParseFloat(f[1], 64)
		}
	}
	for _, place := range []string{"work", "tmp", "shm"} {
		r, ok := got[place]
		n, err := strconv.Atoi(r[0])
		if !ok || err != nil {
			t.Fatalf("%s: no count in %q", place, out.Stdout)
		}
		if r[1] != "ENOSPC" && r[1] != "EDQUOT" {
			t.Errorf("%s: %d files created, stopped by %s, want ENOSPC or EDQUOT at the cap of %d", place, n, r[1], limit)
		}
		if n > limit+100 {
			t.Errorf("%s: %d files created under a cap of %d", place, n, limit)
		}
		if place == "work" && n < limit/2 {
			t.Errorf("work folder: only %d files before %s, the cap is %d", n, r[1], limit)
		}
	}
	if elapsed <= 0 || elapsed > 10 {
		t.Errorf("creating files up to the cap took %.2f s (whole job %v)", elapsed, time.Since(start))
	}
	if len(out.Files) != 1 || out.Files[0].Name != "after.csv" {
		t.Errorf("the work folder is not usable after the cap was reached: %v", fileNames(out))
	}
	if next := run(t, s, sandbox.Job{Code: "open('x.csv', 'w').write('ok')\nprint('fine')"}); !next.OK() || next.Stdout != "fine\n" || len(next.Files) != 1 {
		t.Fatalf("the sandbox does not work after the inode cap was hit: %+v", next)
	}
	t.Logf("contained: %s", strings.ReplaceAll(strings.TrimSpace(out.Stdout), "\n", "; "))

	// A job that leaves its work folder full (no inode and no byte left)
	// still gets its result out, as an Output, not as an error.
	full := `
import errno, os
n = 0
try:
    while True:
        open("f%d" % n, "w").close()
        n += 1
except OSError as e:
    print("inodes", n, errno.errorcode.get(e.errno))
os.remove("f0")
try:
    with open("big.bin", "wb", buffering=0) as f:
        while True:
            f.write(b"x" * 65536)
except OSError as e:
    print("bytes", errno.errorcode.get(e.errno))
`
	out = run(t, s, sandbox.Job{Code: full, Limits: sandbox.Limits{Inodes: 300, WorkBytes: 1 << 20, WallTime: 30 * time.Second}})
	if !out.OK() || !strings.Contains(out.Stdout, "bytes ENOSPC") || !strings.Contains(out.Stdout, "inodes ") {
		t.Fatalf("job that filled its work folder: %+v", out)
	}
}

// WritableTmp checks that ordinary code writing temporary files works:
// TMPDIR is /tmp, tempfile.NamedTemporaryFile and tempfile.mkdtemp work,
// so does a file written straight to /tmp; writing more than the cap
// (/tmp shares or mirrors Limits.WorkBytes, here 4 MiB) fails cleanly with
// ENOSPC and /tmp is usable again once the file is removed.
func WritableTmp(t *testing.T, s sandbox.Sandbox) {
	code := `
import errno, os, tempfile
print("tmpdir", tempfile.gettempdir())
with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
    f.write("a,b\n1,2\n")
    f.flush()
    print("named", os.path.dirname(f.name), os.path.getsize(f.name))
d = tempfile.mkdtemp()
open(os.path.join(d, "x.txt"), "w").write("x")
print("mkdtemp", os.path.dirname(d), os.listdir(d))
open("/tmp/plain.txt", "w").write("plain")
print("plain", open("/tmp/plain.txt").read())
big, n = os.path.join(d, "big.bin"), 0
try:
    with open(big, "wb", buffering=0) as f:
        chunk = b"x" * (1 << 20)
        while n < (64 << 20):
            n += f.write(chunk)
    print("big wrote", n)
except OSError as e:
    print("big refused", errno.errorcode.get(e.errno, e.errno), n)
os.remove(big)
open("/tmp/after.txt", "w").write("after")
print("after", open("/tmp/after.txt").read())
`
	out := run(t, s, sandbox.Job{Code: code, Limits: sandbox.Limits{WorkBytes: 4 << 20, FileBytes: 128 << 20, WallTime: 30 * time.Second}})
	if !out.OK() {
		t.Fatalf("temporary files failed: %s %q %s", out.Reason(), out.Stdout, tail(out.Stderr))
	}
	lines := strings.Split(strings.TrimSpace(out.Stdout), "\n")
	want := []string{"tmpdir /tmp", "named /tmp 8", "mkdtemp /tmp ['x.txt']", "plain plain", "big refused ENOSPC", "after after"}
	if len(lines) != len(want) {
		t.Fatalf("got %q", out.Stdout)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Fatalf("line %d: got %q, want %q (all: %q)", i+1, lines[i], w, out.Stdout)
		}
	}
	var n int64
	if _, err := fmt.Sscanf(lines[4], "big refused ENOSPC %d", &n); err != nil || n > 4<<20 || n == 0 {
		t.Fatalf("wrote %d bytes to /tmp under a 4 MiB cap (%v)", n, err)
	}
	t.Logf("contained: %d bytes written to /tmp before ENOSPC", n)
}

// PoolNoLeak runs a job that changes every kind of global state on a
// pooled worker, then a job on the same pool that must see none of it.
func PoolNoLeak(t *testing.T, newSandbox Factory) {
	s := newSandbox(t, 1)
	defer s.Close()
	dirty := `
import builtins, os, sys, json, tempfile
import pandas as pd, matplotlib, matplotlib.pyplot as plt, numpy as np
builtins.LEAK = "leak"
os.environ["LEAK"] = "leak"
sys.path.append("/leak")
sys.modules["leakmod"] = type(sys)("leakmod")
pd.set_option("display.max_rows", 3)
matplotlib.rcParams["lines.linewidth"] = 42.0
np.random.seed(1)
plt.figure(); plt.plot([1, 2])
for p in ("leak.csv", tempfile.gettempdir() + "/leak.csv", "/dev/shm/leak.csv"):
    open(p, "w").write("leak")
os.chdir(tempfile.gettempdir())
print("dirty")
`
	check := `
import builtins, os, sys, tempfile
import pandas as pd, matplotlib, matplotlib.pyplot as plt
leaks = []
if hasattr(builtins, "LEAK"): leaks.append("builtins")
if "LEAK" in os.environ: leaks.append("environ")
if "/leak" in sys.path: leaks.append("sys.path")
if "leakmod" in sys.modules: leaks.append("sys.modules")
if pd.get_option("display.max_rows") == 3: leaks.append("pandas option")
if matplotlib.rcParams["lines.linewidth"] == 42.0: leaks.append("rcParams")
if plt.get_fignums(): leaks.append("figures")
for p in ("leak.csv", tempfile.gettempdir() + "/leak.csv", "/dev/shm/leak.csv"):
    if os.path.exists(p): leaks.append(p)
if os.getcwd() != "/work": leaks.append("cwd " + os.getcwd())
print("LEAKS", leaks)
`
	for i := 0; i < 2; i++ {
		if out := run(t, s, sandbox.Job{Code: dirty}); !out.OK() {
			t.Fatalf("dirty job: %s %s", out.Reason(), out.Stderr)
		}
		out := run(t, s, sandbox.Job{Code: check})
		if !out.OK() || strings.TrimSpace(out.Stdout) != "LEAKS []" {
			t.Fatalf("state leaked into the next job: %q %s", out.Stdout, out.Stderr)
		}
	}
}

func fileNames(o *sandbox.Output) []string {
	var n []string
	for _, f := range o.Files {
		n = append(n, fmt.Sprintf("%s (%d bytes)", f.Name, f.Size))
	}
	return n
}

func tail(s string) string {
	if len(s) > 200 {
		return "..." + s[len(s)-200:]
	}
	return s
}

// hostProcesses lists host pids whose command line contains token.
func hostProcesses(token string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte(token)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
