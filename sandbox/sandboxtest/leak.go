package sandboxtest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/sandbox"
)

// LeakReport is what the program of LeakSearchCode prints (one JSON line).
type LeakReport struct {
	// Hits are the places the marker was found ("frame main.py:f_locals",
	// "gc list", "memory 7f..-7f.. rw-p [heap]", "file /tmp/x"), at most 50.
	Hits []string `json:"hits"`
	// Counters of what was searched, so that a search that reached nothing
	// does not pass as clean.
	Frames   int   `json:"frames"`
	Objects  int   `json:"objects"`
	Modules  int   `json:"modules"`
	Files    int   `json:"files"`
	Procs    int   `json:"procs"`
	Regions  int   `json:"regions"`
	MemBytes int64 `json:"mem_bytes"`
}

// NewMarker returns a random marker: 32 lower-case letters and digits
// starting with "mk", unlikely to occur anywhere by chance.
func NewMarker() string {
	var b [15]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "mk" + hex.EncodeToString(b[:])
}

// needles are the byte strings whose presence means the marker is
// reachable: the marker itself and the part of its base64 encoding that
// does not depend on the bytes around it, for each of the 3 alignments
// (job inputs travel base64-encoded in JSON).
func needles(marker string) [][]byte {
	out := [][]byte{[]byte(marker)}
	for k := 0; k < 3; k++ {
		enc := base64.StdEncoding.EncodeToString(append(make([]byte, k), marker...))
		from := (k + 2) / 3 * 4
		to := (k + len(marker)) / 3 * 4
		out = append(out, []byte(enc[from:to]))
	}
	return out
}

// LeakSearchCode returns a Python job that searches everything it can
// reach for marker and prints a LeakReport as JSON: every frame up the
// stack (f_locals, f_globals, constants), every object gc tracks and what
// it holds directly, sys.modules, os.environ, file names under / and the
// contents of files outside /usr (plus /proc/<pid>/ cmdline, environ and
// readable memory of every visible process), and its own whole address
// space through /proc/self/mem.
//
// The marker never appears in the program nor in any object it builds:
// each needle travels as two hex-encoded halves, and a hit is an
// occurrence of the first half directly followed by the second, compared
// in place, so the search creates no hit of its own.
func LeakSearchCode(marker string) string {
	var pairs []string
	for _, n := range needles(marker) {
		h := len(n) / 2
		pairs = append(pairs, fmt.Sprintf("(%q, %q)", hex.EncodeToString(n[:h]), hex.EncodeToString(n[h:])))
	}
	return "NEEDLES = [" + strings.Join(pairs, ", ") + "]\n" + leakSearchPy
}

const leakSearchPy = `
import gc, json, os, stat, sys
PAIRS = [(bytes.fromhex(a), bytes.fromhex(b)) for a, b in NEEDLES]
SPAIRS = [(a.decode("latin-1"), b.decode("latin-1")) for a, b in PAIRS]
SPAN = max(len(a) + len(b) for a, b in PAIRS)
R = {"hits": [], "frames": 0, "objects": 0, "modules": 0, "files": 0, "procs": 0, "regions": 0, "mem_bytes": 0}


def found(buf, end=None):
    """Whether buf[:end] holds a needle: a first half directly followed
    by its second half, compared in place (the needle is never built)."""
    pairs = SPAIRS if isinstance(buf, str) else PAIRS
    if end is None:
        end = len(buf)
    for a, b in pairs:
        i = buf.find(a, 0, end)
        while i >= 0:
            j = i + len(a)
            if j + len(b) <= end and buf.startswith(b, j):
                return True
            i = buf.find(a, i + 1, end)
    return False


def hit(where):
    if len(R["hits"]) < 50:
        R["hits"].append(where)


def leaf(o, where):
    if isinstance(o, (str, bytes, bytearray)):
        if found(o):
            hit(where)
    elif isinstance(o, memoryview):
        try:
            if found(o.tobytes()):
                hit(where)
        except Exception:
            pass


def deep(o, where, depth, seen):
    if id(o) in seen or depth > 6:
        return
    seen.add(id(o))
    leaf(o, where)
    try:
        if isinstance(o, dict):
            for k, v in list(o.items()):
                leaf(k, where + " key")
                deep(v, where + "." + str(k)[:40], depth + 1, seen)
        elif isinstance(o, (list, tuple, set, frozenset)):
            for v in list(o):
                deep(v, where + "[]", depth + 1, seen)
        elif hasattr(o, "__dict__") and isinstance(getattr(o, "__dict__", None), dict):
            deep(o.__dict__, where + ".__dict__", depth + 1, seen)
    except Exception:
        pass


def members(o):
    if isinstance(o, dict):
        for k, v in list(o.items()):
            yield k
            yield v
    elif isinstance(o, (list, tuple, set, frozenset)):
        yield from list(o)
    else:
        d = getattr(o, "__dict__", None)
        if isinstance(d, dict):
            yield from list(d.values())
        for attr in ("co_consts", "co_names", "args"):
            v = getattr(o, attr, None)
            if isinstance(v, tuple):
                yield from v


# 1. Every frame up the stack, down to the runner's outermost one.
seen = set()
f = sys._getframe()
while f is not None:
    R["frames"] += 1
    name = f.f_code.co_filename + ":" + f.f_code.co_name
    deep(f.f_locals, "frame " + name + " f_locals", 0, seen)
    deep(f.f_globals, "frame " + name + " f_globals", 0, seen)
    for c in f.f_code.co_consts:
        leaf(c, "frame " + name + " const")
    f = f.f_back
del f

# 2. Every object the garbage collector tracks, and what each holds.
for o in gc.get_objects():
    R["objects"] += 1
    leaf(o, "gc " + type(o).__name__)
    try:
        for v in members(o):
            leaf(v, "gc in " + type(o).__name__)
    except Exception:
        pass

# 3. Modules and environment.
for name, m in list(sys.modules.items()):
    R["modules"] += 1
    leaf(name, "sys.modules key")
    deep(getattr(m, "__dict__", {}), "module " + name, 4, seen)
for k, v in os.environ.items():
    leaf(k, "environ key")
    leaf(v, "environ " + k)

# 4. Files: every name under /, the contents of every file outside /usr.
def read_file(p, where, limit=64 << 20):
    try:
        with open(p, "rb") as fh:
            data = fh.read(limit)
    except OSError:
        return
    R["files"] += 1
    if found(data):
        hit(where)

for top in ("/",):
    for dirpath, dirs, files in os.walk(top, onerror=lambda e: None):
        if dirpath in ("/proc", "/sys"):
            dirs[:] = []
            continue
        for n in dirs + files:
            leaf(n, "file name " + os.path.join(dirpath, n))
        if dirpath == "/usr" or dirpath.startswith("/usr/"):
            continue
        for n in files:
            p = os.path.join(dirpath, n)
            try:
                if not stat.S_ISREG(os.lstat(p).st_mode):
                    continue  # no links, devices, fifos or sockets
            except OSError:
                continue
            read_file(p, "file " + p)


def scan_mem(pid, label):
    try:
        maps = open("/proc/%s/maps" % pid).read().splitlines()
        fd = os.open("/proc/%s/mem" % pid, os.O_RDONLY)
    except OSError:
        return
    buf = bytearray(1 << 20)
    try:
        for line in maps:
            parts = line.split()
            if len(parts) < 2 or not parts[1].startswith("r"):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            R["regions"] += 1
            off = lo
            while off < hi:
                want = min(len(buf), hi - off)
                try:
                    n = os.preadv(fd, [memoryview(buf)[:want]], off)
                except OSError:
                    break
                if n <= 0:
                    break
                R["mem_bytes"] += n
                if found(buf, n):
                    hit("memory %s %s" % (label, line[:120]))
                if off + n >= hi:
                    break
                off += max(1, n - SPAN)
    finally:
        os.close(fd)


# 5. Other processes this job can see, then its own whole address space.
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == os.getpid():
        continue
    R["procs"] += 1
    for what in ("cmdline", "environ", "status"):
        read_file("/proc/%s/%s" % (p, what), "proc %s %s" % (p, what))
    scan_mem(p, "pid " + p)
scan_mem("self", "self")
print(json.dumps(R))
`

// NoLeakAcrossJobs proves that nothing of one job reaches the next job of
// the same warm worker (pool size 1): a first job carries a random marker
// in its code, in an input file's name and contents, in its stdout and in
// a file it produces; the next job on the same pool searches for the
// marker with LeakSearchCode and must find it nowhere. A last job that
// holds the marker itself runs the same search and must find it, so a
// search that cannot see anything does not pass.
func NoLeakAcrossJobs(t *testing.T, newSandbox Factory) {
	s := newSandbox(t, 1)
	defer s.Close()
	marker := NewMarker()
	limits := sandbox.Limits{WallTime: 3 * time.Minute, Memory: 1 << 30}

	leaker := sandbox.Job{
		Code: "# " + marker + "\nSECRET = '" + marker + "'\n" +
			"data = open('inputs/in-" + marker + ".csv').read()\n" +
			"assert SECRET in data, data\n" +
			"print('out', SECRET)\n" +
			"open('out-" + marker + ".csv', 'w').write('x\\n' + SECRET + '\\n')\n",
		Files: []sandbox.File{{Name: "in-" + marker + ".csv", Data: []byte("x\n" + marker + "\n")}},
	}
	out := run(t, s, leaker)
	if !out.OK() || !strings.Contains(out.Stdout, marker) || len(out.Files) != 1 || !strings.Contains(string(out.Files[0].Data), marker) {
		t.Fatalf("marker job: %s %q %v %s", out.Reason(), out.Stdout, fileNames(out), out.Stderr)
	}

	search := func(job sandbox.Job, control bool) LeakReport {
		t.Helper()
		job.Code += LeakSearchCode(marker)
		job.Limits = limits
		out := run(t, s, job)
		var r LeakReport
		if !out.OK() || json.Unmarshal([]byte(leakLastLine(out.Stdout)), &r) != nil {
			t.Fatalf("search job: %s %q %s", out.Reason(), tail(out.Stdout), tail(out.Stderr))
		}
		if len(r.Hits) > 0 && !control {
			t.Fatalf("the next job on the same worker found the previous job's marker in %d places: %s", len(r.Hits), strings.Join(r.Hits, "; "))
		}
		// The search must have reached something of every kind.
		if r.Frames < 1 || r.Objects < 1000 || r.Modules < 10 || r.Files < 1 || r.Regions < 10 || r.MemBytes < 1<<20 {
			t.Fatalf("search reached too little to mean anything: %+v", r)
		}
		return r
	}
	if strings.Contains(LeakSearchCode(marker), marker) {
		t.Fatal("the search program holds the marker itself")
	}
	r := search(sandbox.Job{}, false)
	t.Logf("searched %d frames, %d objects, %d modules, %d files, %d other processes, %d regions (%d MiB of memory)",
		r.Frames, r.Objects, r.Modules, r.Files, r.Procs, r.Regions, r.MemBytes>>20)

	// Control: a job that holds the marker (an input file, read into a
	// variable) must find it with the same search.
	ctl := search(sandbox.Job{
		Code:  "HELD = open('inputs/held.csv', 'rb').read()\n",
		Files: []sandbox.File{{Name: "held.csv", Data: []byte("x\n" + marker + "\n")}},
	}, true)
	if len(ctl.Hits) == 0 {
		t.Fatalf("control: the search did not find a marker the job holds: %+v", ctl)
	}
}

func leakLastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
