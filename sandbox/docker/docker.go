package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/sandbox/internal/pool"
	"github.com/bichat-go/bichat/sandbox/internal/runner"
)

// Config configures a Sandbox.
type Config struct {
	// Image is the sandbox image (required), e.g. "bichat-sandbox:bookworm-1"
	// as built by `make sandbox-image`: Debian with /usr/bin/python3,
	// pandas, numpy, matplotlib, scipy, openpyxl and seaborn.
	Image string
	// Socket is the engine's unix socket (default /var/run/docker.sock).
	Socket string
	// User runs the code in the container (default "10001:10001", the
	// image's "sandbox" user). Never root.
	User string
	// PoolSize is the number of started containers kept ready, each with
	// pandas and matplotlib loaded, each used for one job only. 0 creates
	// a container per job.
	PoolSize int
	// IdleTimeout removes ready containers unused this long (0: never).
	IdleTimeout time.Duration
	// Limits are the defaults for jobs' zero limit fields. Pooled
	// containers are created with these; a job asking for other memory,
	// CPU, pids or work-folder limits gets a fresh container.
	Limits sandbox.Limits
	// RunnerMemory is added to the job's memory limit for the resident
	// runner (the pre-loaded interpreter) that shares the container's
	// cgroup (default 160 MiB).
	RunnerMemory int64
	// StartTimeout bounds creating and starting one container until its
	// runner is ready (default 60 s).
	StartTimeout time.Duration
}

// Sandbox runs jobs in Docker containers. Create it with New.
type Sandbox struct {
	cfg  Config
	c    *client
	lim  sandbox.Limits // pool containers' limits
	pool *pool.Pool[*container]

	mu       sync.Mutex
	done     bool
	removing sync.WaitGroup
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

const (
	label      = "io.bichat.sandbox"
	readyLine  = "bichat-runner-ready\n"
	workFolder = "/work"
	uidGid     = 10001
)

// New connects to the engine, negotiates the API version, checks that the
// image exists and, with PoolSize > 0, starts warming containers.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	if cfg.Image == "" {
		return nil, errors.New("docker: Config.Image is required (build one with `make sandbox-image`)")
	}
	if cfg.Socket == "" {
		cfg.Socket = "/var/run/docker.sock"
	}
	if cfg.User == "" {
		cfg.User = fmt.Sprintf("%d:%d", uidGid, uidGid)
	}
	if u := strings.SplitN(cfg.User, ":", 2)[0]; u == "0" || u == "root" {
		return nil, errors.New("docker: the sandbox user must not be root")
	}
	if cfg.RunnerMemory == 0 {
		cfg.RunnerMemory = 160 << 20
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.PoolSize < 0 {
		return nil, errors.New("docker: negative pool size")
	}
	c, err := newClient(ctx, cfg.Socket)
	if err != nil {
		return nil, err
	}
	var img struct{ ID string }
	if err := c.call(ctx, "inspect image", http.MethodGet, "/images/"+cfg.Image+"/json", nil, nil, &img); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			return nil, fmt.Errorf("docker: image %s not found; build it with `make sandbox-image`", cfg.Image)
		}
		return nil, err
	}
	s := &Sandbox{cfg: cfg, c: c, lim: cfg.Limits.WithDefaults()}
	s.pool = pool.New(pool.Config[*container]{Size: cfg.PoolSize, IdleTimeout: cfg.IdleTimeout,
		Start: func(ctx context.Context) (*container, error) { return s.start(ctx, s.lim) }})
	return s, nil
}

// APIVersion is the negotiated Engine API version.
func (s *Sandbox) APIVersion() string { return s.c.version }

// Stats reports the pool's counters.
func (s *Sandbox) Stats() sandbox.PoolStats { return s.pool.Stats() }

// container is one started container whose runner waits for its job.
type container struct {
	s        *Sandbox
	id       string
	logs     io.ReadCloser
	dm       *demux
	stderr   []byte // after the ready line
	once     sync.Once
	dead     bool
	mu       sync.Mutex
	stopWait chan struct{} // closed by Close: ends the wait request
}

func (c *container) Alive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.dead
}

// Close removes the container (and its work volume) with a fresh
// context, whatever happened to the job's.
func (c *container) Close() {
	c.once.Do(func() {
		c.mu.Lock()
		c.dead = true
		c.mu.Unlock()
		if c.logs != nil {
			c.logs.Close()
		}
		if c.stopWait != nil {
			close(c.stopWait)
		}
		c.s.removeLater(c.id)
	})
}

// removeLater removes a container in the background; Close waits.
func (s *Sandbox) removeLater(id string) {
	s.removing.Add(1)
	go func() {
		defer s.removing.Done()
		s.remove(id)
	}()
}

func (s *Sandbox) remove(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = s.c.call(ctx, "remove container", http.MethodDelete, "/containers/"+id, url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
}

func (s *Sandbox) createBody(l sandbox.Limits) map[string]any {
	mem := l.Memory + s.cfg.RunnerMemory
	return map[string]any{
		"Image":           s.cfg.Image,
		"Cmd":             []string{"/usr/bin/python3", "-I", "-c", runner.Script, "docker"},
		"User":            s.cfg.User,
		"WorkingDir":      workFolder,
		"Env":             []string{"PATH=/usr/bin:/bin", "HOME=" + workFolder, "LANG=C.UTF-8"},
		"NetworkDisabled": true,
		"Labels":          map[string]string{label: "1"},
		"HostConfig": map[string]any{
			"NetworkMode":    "none",
			"ReadonlyRootfs": true,
			"CapDrop":        []string{"ALL"},
			"SecurityOpt":    []string{"no-new-privileges"},
			"Memory":         mem,
			"MemorySwap":     mem,
			"NanoCpus":       int64(l.CPUs * 1e9),
			"PidsLimit":      l.Pids + 8, // the runner's own threads
			"IpcMode":        "private",
			"ShmSize":        16 << 20,
			"Ulimits": []map[string]any{
				{"Name": "nofile", "Soft": 256, "Hard": 256},
				{"Name": "core", "Soft": 0, "Hard": 0},
			},
			// The work folder: a tmpfs-backed anonymous volume with a size
			// cap. A plain Tmpfs mount would do, but the archive endpoint
			// cannot write into tmpfs mounts of a read-only rootfs; volumes
			// it can. Removed with the container (v=1).
			"Mounts": []map[string]any{{
				"Type": "volume", "Target": workFolder,
				"VolumeOptions": map[string]any{"DriverConfig": map[string]any{
					"Name": "local",
					"Options": map[string]string{"type": "tmpfs", "device": "tmpfs",
						"o": fmt.Sprintf("size=%d,uid=%d,gid=%d,mode=0700,nosuid,nodev", l.WorkBytes, uidGid, uidGid)},
				}},
			}},
		},
	}
}

func (s *Sandbox) start(ctx context.Context, l sandbox.Limits) (*container, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	var created struct{ ID string }
	// Not cancelled with ctx: a create that reached the engine must give
	// us the id, or the container would be left behind.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.StartTimeout)
	defer ccancel()
	if err := s.c.call(cctx, "create container", http.MethodPost, "/containers/create", nil, s.createBody(l), &created); err != nil {
		return nil, err
	}
	c := &container{s: s, id: created.ID, stopWait: make(chan struct{})}
	if err := s.c.call(ctx, "start container", http.MethodPost, "/containers/"+c.id+"/start", nil, nil, nil); err != nil {
		c.Close()
		return nil, err
	}
	// Watch for the container stopping (a crashed runner): Alive turns
	// false and the pool replaces it.
	wctx, wcancel := context.WithCancel(context.Background())
	go func() {
		<-c.stopWait
		wcancel()
	}()
	go func() {
		err := s.c.call(wctx, "wait container", http.MethodPost, "/containers/"+c.id+"/wait", url.Values{"condition": {"not-running"}}, nil, nil)
		if wctx.Err() == nil && err == nil {
			c.mu.Lock()
			c.dead = true
			c.mu.Unlock()
		}
	}()
	// One log stream for the container's life: the ready line, then the
	// job's output and the end marker.
	resp, err := s.c.do(context.Background(), "logs", http.MethodGet, "/containers/"+c.id+"/logs",
		url.Values{"follow": {"1"}, "stdout": {"1"}, "stderr": {"1"}}, nil, "")
	if err != nil {
		c.Close()
		return nil, err
	}
	c.logs = resp.Body
	c.dm = &demux{r: resp.Body}
	ready := make(chan error, 1)
	go func() {
		var errb []byte
		for {
			st, p, err := c.dm.next(1 << 20)
			if err != nil {
				ready <- fmt.Errorf("runner exited before it was ready: %s", bytes.TrimSpace(errb))
				return
			}
			if st == 2 {
				errb = append(errb, p...)
				if i := bytes.Index(errb, []byte(readyLine)); i >= 0 {
					c.stderr = errb[i+len(readyLine):]
					ready <- nil
					return
				}
				if len(errb) > 64<<10 {
					errb = errb[len(errb)-(32<<10):]
				}
			}
		}
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("docker: sandbox container did not start: %w", err)
	}
	return c, nil
}

// Run runs job in a fresh container (a ready one from the pool when the
// job's limits match the pool's) and removes the container afterwards,
// also on timeout and cancellation.
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
	var c *container
	var err error
	// Pooled containers were created with the sandbox's limits; their work
	// volume leaves a quarter of its size for inputs.
	if l.Memory == s.lim.Memory && l.CPUs == s.lim.CPUs && l.Pids == s.lim.Pids && l.WorkBytes == s.lim.WorkBytes && inputBytes(job) <= l.WorkBytes/4 {
		c, err = s.pool.Get(ctx)
		if errors.Is(err, pool.ErrClosed) {
			return nil, sandbox.ErrClosed
		}
		if err == nil {
			defer s.pool.Discard(c) // one job per container
		}
	} else {
		cl := l
		cl.WorkBytes += inputBytes(job) + int64(len(job.Files))*4096
		c, err = s.start(ctx, cl)
		if err == nil {
			defer c.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	return c.run(ctx, job, l)
}

func inputBytes(j sandbox.Job) int64 {
	var n int64
	for _, f := range j.Files {
		n += int64(len(f.Data))
	}
	return n
}

func (c *container) run(ctx context.Context, job sandbox.Job, l sandbox.Limits) (*sandbox.Output, error) {
	spec := runner.NewJob(job, l)
	var m [16]byte
	_, _ = rand.Read(m[:])
	spec.Marker = "bichat-done-" + hex.EncodeToString(m[:])
	tarball, err := jobArchive(spec)
	if err != nil {
		return nil, err
	}
	// The runner enforces the wall time; the backstop covers a container
	// that stopped answering.
	ctx, cancel := context.WithTimeoutCause(ctx, l.WallTime+15*time.Second, errBackstop)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { c.logs.Close() })
	defer stop()
	resp, err := c.s.c.do(ctx, "copy job", http.MethodPut, "/containers/"+c.id+"/archive",
		url.Values{"path": {workFolder}}, bytes.NewReader(tarball), "application/x-tar")
	if err != nil {
		return nil, c.jobErr(ctx, err)
	}
	resp.Body.Close()

	stdout, stderr, err := c.readOutput(spec.Marker, l)
	if err != nil {
		if ctx.Err() != nil {
			if context.Cause(ctx) == errBackstop {
				return &sandbox.Output{TimedOut: true, ExitCode: -1, Duration: l.WallTime + 15*time.Second}, nil
			}
			return nil, fmt.Errorf("docker: job cancelled: %w", ctx.Err())
		}
		// The runner died: the OOM killer picks the biggest process.
		st := c.state()
		if st.OOMKilled {
			return &sandbox.Output{OOMKilled: true, ExitCode: -1, Signal: "SIGKILL"}, nil
		}
		return nil, fmt.Errorf("docker: job failed: %w (container exit code %d)", err, st.ExitCode)
	}
	files, res, err := c.copyOut(ctx, l)
	if err != nil {
		return nil, c.jobErr(ctx, err)
	}
	res.Stdout, res.Stderr = stdout, stderr
	if !res.OOM && res.Signal == 9 && !res.TimedOut {
		res.OOM = c.state().OOMKilled
	}
	return res.Output(l, files)
}

var errBackstop = errors.New("sandbox container stopped answering")

func (c *container) jobErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("docker: job cancelled: %w", ctx.Err())
	}
	return err
}

type state struct {
	OOMKilled bool
	ExitCode  int
	Running   bool
}

func (c *container) state() state {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var info struct{ State state }
	_ = c.s.c.call(ctx, "inspect container", http.MethodGet, "/containers/"+c.id+"/json", nil, nil, &info)
	return info.State
}

// readOutput reads the demultiplexed log stream until both stdout and
// stderr end with the marker.
func (c *container) readOutput(marker string, l sandbox.Limits) (stdout, stderr []byte, err error) {
	stderr = c.stderr
	tail := []byte("\n" + marker + "\n")
	max := l.OutputBytes + len(tail) + 1
	var doneOut, doneErr bool
	for !doneOut || !doneErr {
		st, p, err := c.dm.next(1 << 20)
		if err != nil {
			return nil, nil, err
		}
		switch st {
		case 1:
			stdout = append(stdout, p...)
			doneOut = bytes.HasSuffix(stdout, tail)
			if len(stdout) > max {
				return nil, nil, errors.New("runner wrote more than its output cap")
			}
		case 2:
			stderr = append(stderr, p...)
			doneErr = bytes.HasSuffix(stderr, tail)
			if len(stderr) > max {
				return nil, nil, errors.New("runner wrote more than its output cap")
			}
		}
	}
	return stdout[:len(stdout)-len(tail)], stderr[:len(stderr)-len(tail)], nil
}

// jobArchive is the tar copied into the work folder: the job, its inputs,
// and last the ready marker the runner waits for.
func jobArchive(spec runner.Job) ([]byte, error) {
	files := spec.Files
	spec.Files = nil
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	dirs := map[string]bool{}
	mkdir := func(name string) error {
		if dirs[name] {
			return nil
		}
		dirs[name] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o700, Uid: uidGid, Gid: uidGid, ModTime: now})
	}
	file := func(name string, data []byte) error {
		parts := strings.Split(path.Dir(name), "/")
		for i := range parts {
			if d := strings.Join(parts[:i+1], "/"); d != "." {
				if err := mkdir(d); err != nil {
					return err
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: int64(len(data)), Uid: uidGid, Gid: uidGid, ModTime: now}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := mkdir(sandbox.InputDir); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := file(sandbox.InputDir+"/"+f.Name, f.Data); err != nil {
			return nil, err
		}
	}
	if err := file(".bichat/job.json", js); err != nil {
		return nil, err
	}
	if err := file(".bichat/ready", nil); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// copyOut fetches the work folder through the archive endpoint: the
// runner's result and the produced files. Symlinks and other non-regular
// entries are reported as such, never followed.
func (c *container) copyOut(ctx context.Context, l sandbox.Limits) ([]sandbox.Candidate, *runner.Result, error) {
	resp, err := c.s.c.do(ctx, "copy files", http.MethodGet, "/containers/"+c.id+"/archive", url.Values{"path": {workFolder}}, nil, "")
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	tr := tar.NewReader(resp.Body)
	var cands []sandbox.Candidate
	var res *runner.Result
	budget := l.Files*4 + 64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("docker: reading the work folder: %w", err)
		}
		name := strings.TrimPrefix(h.Name, path.Base(workFolder)+"/")
		if name == h.Name || name == "" {
			continue
		}
		if name == ".bichat/result.json" {
			var r runner.Result
			if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&r); err != nil {
				return nil, nil, fmt.Errorf("docker: runner result: %w", err)
			}
			res = &r
			continue
		}
		if h.Typeflag == tar.TypeDir || strings.HasPrefix(name, ".") || strings.Contains(name, "/.") ||
			strings.HasPrefix(name, sandbox.InputDir+"/") || len(cands) >= budget {
			continue
		}
		cand := sandbox.Candidate{Name: name, Size: h.Size, Regular: h.Typeflag == tar.TypeReg}
		switch h.Typeflag {
		case tar.TypeReg:
			if _, ok := sandbox.MediaType(name); ok && h.Size <= l.FileBytes {
				data, err := io.ReadAll(io.LimitReader(tr, l.FileBytes+1))
				if err != nil {
					return nil, nil, fmt.Errorf("docker: reading %s: %w", name, err)
				}
				cand.Data = data
			}
		case tar.TypeSymlink:
			cand.Kind = "symlink"
		case tar.TypeLink:
			cand.Kind = "hard link"
		default:
			cand.Kind = "special file"
		}
		cands = append(cands, cand)
	}
	if res == nil {
		return nil, nil, errors.New("docker: the runner left no result")
	}
	if cands == nil {
		cands = []sandbox.Candidate{}
	}
	return cands, res, nil
}

// Close removes the pooled containers.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	s.pool.Close()
	s.removing.Wait()
	s.c.http.CloseIdleConnections()
	return nil
}

// Ready reports how many warm workers are ready now.
func (s *Sandbox) Ready() int { return s.pool.Stats().Ready }
