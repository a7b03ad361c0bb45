package bwrap

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/sandbox/internal/pool"
	"github.com/bichat-go/bichat/sandbox/internal/runner"
)

// Config configures a Sandbox. The zero value is usable: bwrap from PATH,
// Debian's /usr/bin/python3, no pool (each job starts a fresh sandbox).
type Config struct {
	// Bwrap is the bubblewrap binary (default: "bwrap" from PATH).
	Bwrap string
	// Python is the interpreter inside the sandbox (default
	// /usr/bin/python3, the system one with Debian's python3-pandas etc.).
	Python string
	// PoolSize is the number of warm workers kept ready: sandboxes with
	// pandas and matplotlib loaded. 0 starts a fresh sandbox per job.
	PoolSize int
	// IdleTimeout closes warm workers unused this long (0: never).
	IdleTimeout time.Duration
	// Limits are the defaults for jobs' zero limit fields (then the package
	// defaults apply).
	Limits sandbox.Limits
	// UID and GID are the host user the sandbox runs as when the host
	// process is root (default 65534, nobody): bubblewrap then maps its
	// in-sandbox user to an unprivileged host user, so per-user limits
	// apply and nothing root-only is readable. Ignored when not root.
	UID, GID int
	// ReadOnlyPaths are extra host paths bound read-only at the same place
	// (e.g. a site-packages folder outside /usr).
	ReadOnlyPaths []string
	// PinCPUs restricts each job to ceil(Limits.CPUs) cores with CPU
	// affinity. Off by default: the CPU share is enforced by the worker's
	// cgroup where the host allows one (see the package doc), and pinning
	// to a core that other work keeps busy slows jobs down (a pinned warm
	// chart job measured 626 ms p50 against 354 ms unpinned on a loaded
	// 2-core host). RLIMIT_CPU and one BLAS thread per CPU apply either way.
	PinCPUs bool
	// StartTimeout bounds starting one worker (default 60 s).
	StartTimeout time.Duration
	// NoCgroups turns the per-worker cgroup off: Limits.CPUs, Memory and
	// Pids are then enforced only by rlimits (see the package doc), and
	// every Output.Unenforced says so.
	NoCgroups bool
	// CgroupParent is a cgroup v2 directory in which the per-worker cgroups
	// are made, e.g. a subtree delegated to the user this process runs as
	// (systemd Delegate=yes) that has no processes of its own. Default:
	// the cgroup of this process, in the cgroup v2 hierarchy when
	// /sys/fs/cgroup is one, else in the cgroup v1 cpu, memory and pids
	// controllers (root can make cgroups there).
	CgroupParent string
}

// Sandbox runs jobs with bubblewrap. Create it with New.
type Sandbox struct {
	cfg  Config
	args []string
	pool *pool.Pool[*worker]
	cg   *cgroupSetup
	mu   sync.Mutex
	done bool
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// New checks that bubblewrap can start a sandbox here and returns a
// Sandbox; with PoolSize > 0 it starts warming workers in the background.
func New(cfg Config) (*Sandbox, error) {
	if cfg.Bwrap == "" {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			return nil, fmt.Errorf("bwrap: bubblewrap is not installed (apt-get install bubblewrap): %w", err)
		}
		cfg.Bwrap = p
	}
	if cfg.Python == "" {
		cfg.Python = "/usr/bin/python3"
	}
	if _, err := os.Stat(cfg.Python); err != nil {
		return nil, fmt.Errorf("bwrap: python interpreter: %w", err)
	}
	if cfg.UID == 0 && cfg.GID == 0 {
		cfg.UID, cfg.GID = 65534, 65534
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.PoolSize < 0 {
		return nil, errors.New("bwrap: negative pool size")
	}
	s := &Sandbox{cfg: cfg, args: bwrapArgs(cfg), cg: detectCgroups(cfg)}
	if err := s.probe(); err != nil {
		return nil, err
	}
	s.pool = pool.New(pool.Config[*worker]{Size: cfg.PoolSize, IdleTimeout: cfg.IdleTimeout, Reusable: true, Start: s.start})
	return s, nil
}

// Available reports whether bubblewrap can create sandboxes on this
// machine (installed, user namespaces allowed); the error says what is
// missing.
func Available() error {
	s, err := New(Config{})
	if err != nil {
		return err
	}
	return s.Close()
}

// Unenforced lists the limits this host does not let the sandbox enforce
// with a cgroup, each as "cpu: why", "memory: why" or "pids: why" (see
// sandbox.Output.Unenforced, which also lists failures of single jobs).
// Empty when cgroups are in force.
func (s *Sandbox) Unenforced() []string { return s.cg.unenforced() }

// Stats reports the pool's counters (workers started, ready, replaced,
// expired).
func (s *Sandbox) Stats() sandbox.PoolStats { return s.pool.Stats() }

func (s *Sandbox) probe() error {
	args := append([]string{}, s.args...)
	args = append(args, "--", s.cfg.Python, "-I", "-c", "import sys; sys.stdout.write('ok')")
	cmd := exec.Command(s.cfg.Bwrap, args...)
	s.prepare(cmd)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || out.String() != "ok" {
		return fmt.Errorf("bwrap: cannot start a sandbox here (needs unprivileged user namespaces): %v: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	return nil
}

func bwrapArgs(cfg Config) []string {
	a := []string{
		"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--uid", "1000", "--gid", "1000", "--hostname", "sandbox",
		"--ro-bind", "/usr", "/usr",
	}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", t, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	// Only what Python, the BLAS alternatives and fontconfig need from /etc.
	for _, p := range []string{"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
		"/etc/fonts", "/etc/matplotlibrc", "/etc/localtime", "/etc/mime.types", "/etc/python3", "/etc/python3.11",
		"/etc/python3.12", "/etc/python3.13"} {
		if _, err := os.Stat(p); err == nil {
			a = append(a, "--ro-bind", p, p)
		}
	}
	for _, p := range cfg.ReadOnlyPaths {
		a = append(a, "--ro-bind", p, p)
	}
	return append(a,
		"--proc", "/proc", "--dev", "/dev",
		"--tmpfs", "/tmp", "--dir", "/work", "--remount-ro", "/",
		"--chdir", "/",
		"--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/work", "--setenv", "LANG", "C.UTF-8",
		"--setenv", "MPLCONFIGDIR", "/tmp/mpl")
}

// prepare makes the bwrap process its own process group, unprivileged
// when we are root, and killed when we die.
func (s *Sandbox) prepare(cmd *exec.Cmd) {
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(s.cfg.UID), Gid: uint32(s.cfg.GID), NoSetGroups: false}
	}
	cmd.Dir = "/"
}

// worker is one sandbox running the zygote. The zygote talks over ctl
// (a unix socket): it never gets job data, only "g" with the two pipe fds
// of one job, and answers "d" when that job's processes are gone.
type worker struct {
	cmd    *exec.Cmd
	ctl    *net.UnixConn
	zpid   int // the zygote's host pid
	cg     *workerCgroup
	stderr *capBuffer
	exited chan struct{}
	once   sync.Once
}

func (s *Sandbox) start(ctx context.Context) (*worker, error) {
	args := append([]string{}, s.args...)
	args = append(args, "--", s.cfg.Python, "-I", "-c", runner.Script, "zygote")
	cmd := exec.Command(s.cfg.Bwrap, args...)
	s.prepare(cmd)
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("bwrap: control socket: %w", err)
	}
	// With SO_PASSCRED the zygote's messages carry its pid as we see it.
	if err := syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, fmt.Errorf("bwrap: control socket: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "bichat-zygote-ctl")
	ours := os.NewFile(uintptr(fds[0]), "bichat-ctl")
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		theirs.Close()
		return nil, fmt.Errorf("bwrap: control socket: %w", err)
	}
	cmd.ExtraFiles = []*os.File{theirs} // fd 3 in the sandbox
	w := &worker{cmd: cmd, ctl: fc.(*net.UnixConn), stderr: &capBuffer{max: 8 << 10}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		w.ctl.Close()
		return nil, fmt.Errorf("bwrap: start: %w", err)
	}
	go func() { _ = cmd.Wait(); close(w.exited) }()
	ready := make(chan error, 1)
	go func() { ready <- w.readReady() }()
	t := time.NewTimer(s.cfg.StartTimeout)
	defer t.Stop()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = fmt.Errorf("not ready after %s", s.cfg.StartTimeout)
	}
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("bwrap: worker did not start: %v: %s", err, w.stderr.String())
	}
	w.cg = s.cg.newWorkerCgroup(w.zpid)
	return w, nil
}

// readReady reads the zygote's ready frame and its pid.
func (w *worker) readReady() error {
	var buf []byte
	oob := make([]byte, syscall.CmsgSpace(12))
	for len(buf) < 4 || len(buf) < 4+int(binary.BigEndian.Uint32(buf[:4])) {
		b := make([]byte, 256)
		n, oobn, _, _, err := w.ctl.ReadMsgUnix(b, oob)
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		if w.zpid == 0 && oobn > 0 {
			if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					if c, err := syscall.ParseUnixCredentials(&m); err == nil {
						w.zpid = int(c.Pid)
					}
				}
			}
		}
		buf = append(buf, b[:n]...)
		if len(buf) > 1<<16 {
			return errors.New("ready frame too large")
		}
	}
	var r runner.Result
	if err := runner.ReadFrame(bytes.NewReader(buf), 1<<16, &r); err != nil {
		return err
	}
	if !r.Ready {
		return errors.New("unexpected first frame")
	}
	if w.zpid <= 0 {
		return errors.New("the zygote's pid did not come with its ready frame")
	}
	return nil
}

func (w *worker) Alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// Close kills the worker's whole process group and removes its cgroup.
func (w *worker) Close() {
	w.once.Do(func() {
		_ = w.ctl.Close()
		if w.cmd.Process != nil {
			_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
			_ = w.cmd.Process.Kill()
		}
		<-w.exited
		if w.cg != nil {
			// The zygote (own session) dies with its bwrap parent
			// (--die-with-parent); remove waits for that.
			w.cg.remove()
		}
	})
	<-w.exited
}

// Run runs job in a sandbox: a warm worker when the pool has one, else a
// fresh one. The job runs in its own namespaces forked from the worker
// before the job's data reaches it, so it never sees another job's
// files, processes or memory.
func (s *Sandbox) Run(ctx context.Context, job sandbox.Job) (*sandbox.Output, error) {
	if err := job.Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	closed := s.done
	s.mu.Unlock()
	if closed {
		return nil, sandbox.ErrClosed
	}
	l := job.Limits.Or(s.cfg.Limits).WithDefaults()
	w, err := s.pool.Get(ctx)
	if err != nil {
		if errors.Is(err, pool.ErrClosed) {
			return nil, sandbox.ErrClosed
		}
		return nil, err
	}
	spec := runner.NewJob(job, l)
	spec.Limits.Pin = s.cfg.PinCPUs
	unenforced, oomBefore := w.cg.apply(l, spec.Limits.WorkBytes, rssOf(w.zpid))
	res, err := w.run(ctx, spec, l)
	if err != nil {
		s.pool.Discard(w)
		return nil, err
	}
	oom := w.cg.oomKills() > oomBefore
	s.pool.Put(w) // closes it when the pool has no room (PoolSize 0)
	out, err := res.Output(l, nil)
	if err != nil {
		return nil, err
	}
	out.OOMKilled = out.OOMKilled || oom
	out.Unenforced = unenforced
	return out, nil
}

// run hands one job to the zygote: two fresh pipes go over the control
// socket; the job's own process reads the job from the first and writes
// its result to the second.
func (w *worker) run(ctx context.Context, spec runner.Job, l sandbox.Limits) (*runner.Result, error) {
	var jobP, resP [2]int
	if err := syscall.Pipe2(jobP[:], syscall.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("bwrap: job pipe: %w", err)
	}
	if err := syscall.Pipe2(resP[:], syscall.O_CLOEXEC); err != nil {
		syscall.Close(jobP[0])
		syscall.Close(jobP[1])
		return nil, fmt.Errorf("bwrap: result pipe: %w", err)
	}
	jobW := os.NewFile(uintptr(jobP[1]), "bichat-job")
	resR := os.NewFile(uintptr(resP[0]), "bichat-result")
	defer jobW.Close()
	defer resR.Close()
	_, _, err := w.ctl.WriteMsgUnix([]byte("g"), syscall.UnixRights(jobP[0], resP[1]), nil)
	syscall.Close(jobP[0])
	syscall.Close(resP[1])
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("bwrap: worker failed: send job: %v: %s", err, w.stderr.String())
	}
	go func() {
		_ = runner.WriteFrame(jobW, spec) // a job process that died reads no more: EPIPE
		_ = jobW.Close()
	}()
	type reply struct {
		r   runner.Result
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		var rep reply
		max := int(spec.Limits.WorkBytes)*4/3 + 4*l.OutputBytes + 8<<20
		if err := runner.ReadFrame(resR, max, &rep.r); err != nil {
			if errors.Is(err, io.EOF) {
				rep.r.Error = "the job process died without a result"
			} else {
				rep.err = err
			}
		}
		// The zygote says "d" once the job's processes are gone.
		var d [1]byte
		if _, err := io.ReadFull(w.ctl, d[:]); err != nil || d[0] != 'd' {
			rep.err = errors.Join(rep.err, fmt.Errorf("no end-of-job answer: %v", err))
		}
		ch <- rep
	}()
	// The runner enforces the wall time itself; this is the backstop for a
	// worker that stopped answering.
	backstop := time.NewTimer(l.WallTime + 10*time.Second)
	defer backstop.Stop()
	select {
	case rep := <-ch:
		if rep.err != nil {
			w.Close()
			return nil, fmt.Errorf("bwrap: worker failed: %v: %s", rep.err, w.stderr.String())
		}
		if rep.r.Error != "" {
			return nil, fmt.Errorf("bwrap: %s", rep.r.Error)
		}
		return &rep.r, nil
	case <-ctx.Done():
		w.Close()
		return nil, fmt.Errorf("bwrap: job cancelled: %w", ctx.Err())
	case <-backstop.C:
		w.Close()
		<-ch
		return &runner.Result{TimedOut: true, Exit: -1, DurationNS: int64(l.WallTime + 10*time.Second)}, nil
	}
}

// Close stops every pooled worker.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	s.pool.Close()
	return nil
}

// capBuffer keeps the first max bytes written to it.
type capBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(bytes.TrimSpace(c.b))
}

// Ready reports how many warm workers are ready now.
func (s *Sandbox) Ready() int { return s.pool.Stats().Ready }
