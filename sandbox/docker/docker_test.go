package docker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/sandbox/docker"
	"github.com/bichat-go/bichat/sandbox/sandboxtest"
)

// testImage is the image `make sandbox-image` built (BICHAT_TEST_SANDBOX_IMAGE).
func testImage(t testing.TB) string {
	t.Helper()
	img := os.Getenv("BICHAT_TEST_SANDBOX_IMAGE")
	if img == "" {
		sandboxtest.Unavailable(t, "BICHAT_TEST_SANDBOX_IMAGE is not set (run `make sandbox-image` / .ci/setup)")
	}
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		sandboxtest.Unavailable(t, "no Docker engine socket at /var/run/docker.sock")
	}
	return img
}

func newSandbox(t testing.TB, cfg docker.Config) *docker.Sandbox {
	t.Helper()
	cfg.Image = testImage(t)
	s, err := docker.New(context.Background(), cfg)
	if err != nil {
		sandboxtest.Unavailable(t, err.Error())
	}
	return s
}

// instances records the sandboxes a test created, so that it checks
// (after they are closed) that nothing of theirs is left on the engine,
// whatever other test runs on the same machine have running.
type instances struct {
	mu  sync.Mutex
	ids []string
}

func (in *instances) add(s *docker.Sandbox) *docker.Sandbox {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.ids = append(in.ids, s.Instance())
	return s
}

// assertGone checks that no container or volume of the recorded
// sandboxes is left.
func (in *instances) assertGone(t *testing.T) {
	t.Helper()
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, id := range in.ids {
		assertNoContainers(t, id)
	}
}

func TestSuite(t *testing.T) {
	testImage(t)
	var in instances
	t.Cleanup(func() { in.assertGone(t) }) // runs after the sandboxes closed
	sandboxtest.Run(t, func(t *testing.T, poolSize int) sandbox.Sandbox {
		return in.add(newSandbox(t, docker.Config{PoolSize: poolSize}))
	})
}

func TestNoLeakAcrossJobs(t *testing.T) {
	testImage(t)
	var in instances
	t.Cleanup(func() { in.assertGone(t) })
	sandboxtest.NoLeakAcrossJobs(t, func(t *testing.T, poolSize int) sandbox.Sandbox {
		return in.add(newSandbox(t, docker.Config{PoolSize: poolSize}))
	})
}

func engine() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", "/var/run/docker.sock")
	}}}
}

// instanceFilter is the engine's filters parameter selecting what the
// sandbox with this instance id created.
func instanceFilter(instance string) string {
	return url.QueryEscape(fmt.Sprintf(`{"label":[%q]}`, docker.LabelInstance+"="+instance))
}

// sandboxContainers lists the ids of the containers of one sandbox
// (Sandbox.Instance), not those of other sandboxes on the same engine.
func sandboxContainers(t *testing.T, instance string) []string {
	t.Helper()
	resp, err := engine().Get("http://docker/containers/json?all=1&filters=" + instanceFilter(instance))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids
}

// sandboxVolumes lists the names of the work volumes of one sandbox.
func sandboxVolumes(t *testing.T, instance string) []string {
	t.Helper()
	resp, err := engine().Get("http://docker/volumes?filters=" + instanceFilter(instance))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Volumes []struct{ Name string } }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range list.Volumes {
		names = append(names, v.Name)
	}
	return names
}

// assertNoContainers checks that every container and work volume of one
// sandbox is gone once it is closed.
func assertNoContainers(t *testing.T, instance string) {
	t.Helper()
	if ids := sandboxContainers(t, instance); len(ids) != 0 {
		t.Errorf("%d containers of sandbox %s left behind", len(ids), instance)
	}
	if names := sandboxVolumes(t, instance); len(names) != 0 {
		t.Errorf("%d work volumes of sandbox %s left behind", len(names), instance)
	}
}

// TestCountsOnlyOwnContainers runs two sandboxes side by side, as two test
// runs on one machine do: each sees exactly its own warm container and
// work volume, and closing one leaves the other's alone.
func TestCountsOnlyOwnContainers(t *testing.T) {
	a := newSandbox(t, docker.Config{PoolSize: 1})
	defer a.Close()
	b := newSandbox(t, docker.Config{PoolSize: 1})
	defer b.Close()
	if a.Instance() == b.Instance() || len(a.Instance()) < 16 {
		t.Fatalf("instance ids %q and %q", a.Instance(), b.Instance())
	}
	for _, s := range []*docker.Sandbox{a, b} {
		waitReady(t, s)
		if c, v := sandboxContainers(t, s.Instance()), sandboxVolumes(t, s.Instance()); len(c) != 1 || len(v) != 1 {
			t.Fatalf("sandbox %s: %d containers, %d volumes; want its one warm container and its volume", s.Instance(), len(c), len(v))
		}
	}
	a.Close()
	assertNoContainers(t, a.Instance())
	if c := sandboxContainers(t, b.Instance()); len(c) != 1 {
		t.Fatalf("closing one sandbox touched the other's containers: %d left", len(c))
	}
	out, err := b.Run(context.Background(), sandbox.Job{Code: "print('fine')"})
	if err != nil || out.Stdout != "fine\n" {
		t.Fatalf("%v %+v", err, out)
	}
	b.Close()
	assertNoContainers(t, b.Instance())
}

func waitReady(t *testing.T, s *docker.Sandbox) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for s.Ready() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("pool never got ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMissingImage(t *testing.T) {
	testImage(t)
	_, err := docker.New(context.Background(), docker.Config{Image: "bichat-sandbox:does-not-exist"})
	if err == nil || !strings.Contains(err.Error(), "make sandbox-image") {
		t.Fatalf("got %v", err)
	}
}

func TestRootUserRefused(t *testing.T) {
	if _, err := docker.New(context.Background(), docker.Config{Image: "x", User: "0:0"}); err == nil {
		t.Fatal("root accepted")
	}
}

func TestCancelRemovesContainer(t *testing.T) {
	s := newSandbox(t, docker.Config{})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(3 * time.Second); cancel() }()
	_, err := s.Run(ctx, sandbox.Job{Code: "import time\ntime.sleep(60)"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	s.Close() // waits for the removals
	assertNoContainers(t, s.Instance())
}

func TestNegotiatedVersion(t *testing.T) {
	s := newSandbox(t, docker.Config{})
	defer s.Close()
	if v := s.APIVersion(); !strings.HasPrefix(v, "1.") {
		t.Fatalf("version %q", v)
	}
}

func TestCrashedContainerReplaced(t *testing.T) {
	s := newSandbox(t, docker.Config{PoolSize: 1})
	defer s.Close()
	waitReady(t, s)
	// Kill the ready container's runner behind the pool's back.
	ids := sandboxContainers(t, s.Instance())
	if len(ids) != 1 {
		t.Fatalf("%d containers", len(ids))
	}
	resp, err := engine().Post("http://docker/containers/"+ids[0]+"/kill", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	time.Sleep(500 * time.Millisecond)
	out, err := s.Run(context.Background(), sandbox.Job{Code: "print('fine')"})
	if err != nil || out.Stdout != "fine\n" {
		t.Fatalf("%v %+v", err, out)
	}
	if st := s.Stats(); st.Replaced != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestInputsDoNotEatInodes gives a job more input files (in folders) than
// its inode cap: the inputs get their own entries, and the job can still
// create its Limits.Inodes files, no more.
func TestInputsDoNotEatInodes(t *testing.T) {
	s := newSandbox(t, docker.Config{PoolSize: 1})
	defer s.Close()
	var files []sandbox.File
	for i := 0; i < 120; i++ {
		files = append(files, sandbox.File{Name: fmt.Sprintf("d%d/f%d.csv", i%10, i), Data: []byte("a\n1\n")})
	}
	code := `
import errno, os
n = sum(len(fs) for _, _, fs in os.walk("inputs"))
os.mkdir("many")
made, err = 0, "none"
try:
    while made < 100000:
        open("many/%d" % made, "w").close()
        made += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(n, made, err)
`
	out, err := s.Run(context.Background(), sandbox.Job{Code: code, Files: files, Limits: sandbox.Limits{Inodes: 50}})
	if err != nil || !out.OK() {
		t.Fatalf("%v %+v", err, out)
	}
	var n, made int
	var why string
	if _, err := fmt.Sscanf(out.Stdout, "%d %d %s", &n, &made, &why); err != nil || n != 120 || why != "ENOSPC" || made < 50 || made > 50+100 {
		t.Fatalf("inputs %d, files made %d, stopped by %s (%v); want 120 inputs and about 50 files, then ENOSPC", n, made, why, err)
	}
}
