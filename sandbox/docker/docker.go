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
	cfg      Config
	c        *client
	lim      sandbox.Limits // pool containers' limits
	pool     *pool.Pool[*container]
	instance string // LabelInstance of this sandbox's containers and volumes

	mu       sync.Mutex
	done     bool
	removing sync.WaitGroup
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// Labels set on every container and work volume the adapter creates, so
// that they can be found (and counted, or removed after a crash) with the
// engine's label filters: `docker ps -a --filter label=io.bichat.sandbox`
// lists every sandbox container on the engine;
// `--filter label=io.bichat.sandbox.instance=<Sandbox.Instance()>` only
// those of one Sandbox.
const (
	// LabelSandbox marks every container and volume of this adapter
	// (value "1").
	LabelSandbox = "io.bichat.sandbox"
	// LabelInstance holds the random id of the Sandbox that created the
	// container or volume (see Sandbox.Instance).
	LabelInstance = "io.bichat.sandbox.instance"
)

const (
	readyLine  = "bichat-runner-ready\n"
	workFolder = "/work"
	tmpFolder  = "/tmp"
	uidGid     = 10001
	shmBytes   = 16 << 20
	// inodeReserve is added to the job's inode cap of the work folder for
	// the runner's own entries (.bichat and its files) and the inputs
	// folder; pooled containers keep inputReserve of it for input files
	// and their folders.
	inodeReserve = 64
	inputReserve = 32
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
	var id [8]byte
	_, _ = rand.Read(id[:])
	s := &Sandbox{cfg: cfg, c: c, lim: cfg.Limits.WithDefaults(), instance: hex.EncodeToString(id[:])}
	s.pool = pool.New(pool.Config[*container]{Size: cfg.PoolSize, IdleTimeout: cfg.IdleTimeout,
		Start: func(ctx context.Context) (*container, error) { return s.start(ctx, s.lim, inputReserve) }})
	return s, nil
}

// APIVersion is the negotiated Engine API version.
func (s *Sandbox) APIVersion() string { return s.c.version }

// Instance is the random id of this Sandbox, set as the LabelInstance
// label on each of its containers and work volumes: filter on it to find
// what this Sandbox (and no other on the same engine) created.
func (s *Sandbox) Instance() string { return s.instance }

// Stats reports the pool's counters.
func (s *Sandbox) Stats() sandbox.PoolStats { return s.pool.Stats() }

// container is one started container whose runner waits for its job.
type container struct {
	s        *Sandbox
	id       string
	warnings []string // the engine's warnings at create (limits it discarded)
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

// createBody is the create-container request for a job with limits l
// whose inputs take inputInodes entries in the work folder.
func (s *Sandbox) createBody(l sandbox.Limits, inputInodes int) map[string]any {
	mem := l.Memory + s.cfg.RunnerMemory
	labels := map[string]string{LabelSandbox: "1", LabelInstance: s.instance}
	// tmpfs options of /tmp and /dev/shm: each holds at most l.Inodes
	// entries (plus a few for the runner's matplotlib cache), like the work
	// folder; noexec, like every writable place of the container.
	tmpfs := func(size int64) string {
		return fmt.Sprintf("rw,noexec,nosuid,nodev,mode=1777,size=%d,nr_inodes=%d", size, l.Inodes+16)
	}
	return map[string]any{
		"Image":           s.cfg.Image,
		"Cmd":             []string{"/usr/bin/python3", "-I", "-c", runner.Script, "docker"},
		"User":            s.cfg.User,
		"WorkingDir":      workFolder,
		"Env":             []string{"PATH=/usr/bin:/bin", "HOME=" + workFolder, "LANG=C.UTF-8", "TMPDIR=" + tmpFolder},
		"NetworkDisabled": true,
		"Labels":          labels,
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
			// /tmp: writable, the size of the work folder (without the
			// inputs). /dev/shm: mounted here instead of by the engine
			// (ShmSize) to cap its inodes too. Both count against Memory.
			"Tmpfs": map[string]string{tmpFolder: tmpfs(l.WorkBytes), "/dev/shm": tmpfs(shmBytes)},
			"Ulimits": []map[string]any{
				{"Name": "nofile", "Soft": 256, "Hard": 256},
				{"Name": "core", "Soft": 0, "Hard": 0},
			},
			// The work folder: a tmpfs-backed anonymous volume with a size
			// and an inode cap. A plain Tmpfs mount would do, but the
			// archive endpoint cannot write into tmpfs mounts of a
			// read-only rootfs; volumes it can. Removed with the container
			// (v=1).
			"Mounts": []map[string]any{{
				"Type": "volume", "Target": workFolder,
				"VolumeOptions": map[string]any{
					"Labels": labels,
					"DriverConfig": map[string]any{
						"Name": "local",
						"Options": map[string]string{"type": "tmpfs", "device": "tmpfs",
							"o": fmt.Sprintf("size=%d,nr_inodes=%d,uid=%d,gid=%d,mode=0700,nosuid,nodev",
								l.WorkBytes, l.Inodes+inodeReserve+inputInodes, uidGid, uidGid)},
					},
				},
			}},
		},
	}
}

// unenforced maps the engine's create warnings about limits it discarded
// (kernel or cgroup without the controller) to Output.Unenforced entries.
func unenforced(warnings []string) []string {
	var out []string
	for _, w := range warnings {
		lw := strings.ToLower(w)
		var name string
		switch {
		case strings.Contains(lw, "pids limit"):
			name = "pids"
		case strings.Contains(lw, "swap"), strings.Contains(lw, "memory limit"):
			name = "memory"
		case strings.Contains(lw, "cpu"):
			name = "cpu"
		default:
			continue
		}
		out = append(out, name+": the Docker engine discarded it: "+w)
	}
	return out
}

func (s *Sandbox) start(ctx context.Context, l sandbox.Limits, inputInodes int) (*container, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	var created struct {
		ID       string
		Warnings []string
	}
	// Not cancelled with ctx: a create that reached the engine must give
	// us the id, or the container would be left behind.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.StartTimeout)
	defer ccancel()
	if err := s.c.call(cctx, "create container", http.MethodPost, "/containers/create", nil, s.createBody(l, inputInodes), &created); err != nil {
		return nil, err
	}
	c := &container{s: s, id: created.ID, warnings: created.Warnings, stopWait: make(chan struct{})}
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
	// volume leaves a quarter of its size and inputReserve inodes for
	// inputs.
	if l.Memory == s.lim.Memory && l.CPUs == s.lim.CPUs && l.Pids == s.lim.Pids && l.WorkBytes == s.lim.WorkBytes &&
		l.Inodes == s.lim.Inodes && inputBytes(job) <= l.WorkBytes/4 && inputInodes(job) <= inputReserve {
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
		c, err = s.start(ctx, cl, inputInodes(job))
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

// inputInodes counts the entries job's inputs take in the work folder:
// each file and each folder on the way to it.
func inputInodes(j sandbox.Job) int {
	dirs := map[string]bool{}
	for _, f := range j.Files {
		for d := path.Dir(f.Name); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	return len(j.Files) + len(dirs)
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

	stdout, stderr, res, err := c.readOutput(spec.Marker, l)
	if err != nil {
		if ctx.Err() != nil {
			if context.Cause(ctx) == errBackstop {
				return &sandbox.Output{TimedOut: true, ExitCode: -1, Duration: l.WallTime + 15*time.Second, Unenforced: unenforced(c.warnings)}, nil
			}
			return nil, fmt.Errorf("docker: job cancelled: %w", ctx.Err())
		}
		// The runner died: the OOM killer picks the biggest process.
		st := c.state()
		if st.OOMKilled {
			return &sandbox.Output{OOMKilled: true, ExitCode: -1, Signal: "SIGKILL", Unenforced: unenforced(c.warnings)}, nil
		}
		return nil, fmt.Errorf("docker: job failed: %w (container exit code %d)", err, st.ExitCode)
	}
	files, err := c.copyOut(ctx, l)
	if err != nil {
		return nil, c.jobErr(ctx, err)
	}
	res.Stdout, res.Stderr = stdout, stderr
	if !res.OOM && res.Signal == 9 && !res.TimedOut {
		res.OOM = c.state().OOMKilled
	}
	out, err := res.Output(l, files)
	if err != nil {
		return nil, err
	}
	out.Unenforced = append(out.Unenforced, unenforced(c.warnings)...)
	return out, nil
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

// maxResult bounds the runner's result line (a few hundred bytes of JSON).
const maxResult = 64 << 10

// readOutput reads the demultiplexed log stream until stderr ends with the
// marker line and stdout with the marker, the result's JSON line and the
// marker again (see runner.py docker). The result travels in the stream,
// not in the work folder, so a job that filled the folder still gets it.
func (c *container) readOutput(marker string, l sandbox.Limits) (stdout, stderr []byte, res *runner.Result, err error) {
	stderr = c.stderr
	tail := []byte("\n" + marker + "\n")
	max := l.OutputBytes + len(tail) + 1
	var doneOut, doneErr bool
	for !doneOut || !doneErr {
		st, p, err := c.dm.next(1 << 20)
		if err != nil {
			return nil, nil, nil, err
		}
		switch st {
		case 1:
			stdout = append(stdout, p...)
			doneOut = bytes.HasSuffix(stdout, tail) && bytes.Count(stdout, tail) >= 2
			if len(stdout) > max+len(tail)+maxResult {
				return nil, nil, nil, errors.New("runner wrote more than its output cap")
			}
		case 2:
			stderr = append(stderr, p...)
			doneErr = bytes.HasSuffix(stderr, tail)
			if len(stderr) > max {
				return nil, nil, nil, errors.New("runner wrote more than its output cap")
			}
		}
	}
	body := stdout[:len(stdout)-len(tail)]
	i := bytes.LastIndex(body, tail)
	var r runner.Result
	if err := json.Unmarshal(body[i+len(tail):], &r); err != nil {
		return nil, nil, nil, fmt.Errorf("docker: runner result: %w", err)
	}
	return body[:i], stderr[:len(stderr)-len(tail)], &r, nil
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

// copyOut fetches the produced files of the work folder through the
// archive endpoint. Symlinks and other non-regular entries are reported as
// such, never followed.
func (c *container) copyOut(ctx context.Context, l sandbox.Limits) ([]sandbox.Candidate, error) {
	resp, err := c.s.c.do(ctx, "copy files", http.MethodGet, "/containers/"+c.id+"/archive", url.Values{"path": {workFolder}}, nil, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	tr := tar.NewReader(resp.Body)
	var cands []sandbox.Candidate
	budget := l.Files*4 + 64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("docker: reading the work folder: %w", err)
		}
		name := strings.TrimPrefix(h.Name, path.Base(workFolder)+"/")
		if name == h.Name || name == "" {
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
					return nil, fmt.Errorf("docker: reading %s: %w", name, err)
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
	if cands == nil {
		cands = []sandbox.Candidate{}
	}
	return cands, nil
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
