package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net"
	"os"
	"path/filepath"
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
// issue in parallel, then a check that the sandbox still works.
func Run(t *testing.T, newSandbox Factory) {
	s := newSandbox(t, 2)
	t.Cleanup(func() { _ = s.Close() })
	t.Run("conformance", func(t *testing.T) { Conformance(t, s) })
	t.Run("security", func(t *testing.T) { Security(t, s) })
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
