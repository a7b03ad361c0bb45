package docker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
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

func TestSuite(t *testing.T) {
	testImage(t)
	t.Cleanup(func() { assertNoContainers(t) }) // runs after the sandboxes closed
	sandboxtest.Run(t, func(t *testing.T, poolSize int) sandbox.Sandbox {
		return newSandbox(t, docker.Config{PoolSize: poolSize})
	})
}

func engine() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", "/var/run/docker.sock")
	}}}
}

// sandboxContainers lists the ids of this package's sandbox containers.
func sandboxContainers(t *testing.T) []string {
	t.Helper()
	resp, err := engine().Get("http://docker/containers/json?all=1&filters=" + url.QueryEscape(`{"label":["io.bichat.sandbox"]}`))
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

// assertNoContainers checks that every sandbox container is gone once
// the sandboxes are closed.
func assertNoContainers(t *testing.T) {
	t.Helper()
	if ids := sandboxContainers(t); len(ids) != 0 {
		t.Fatalf("%d sandbox containers left behind", len(ids))
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
	assertNoContainers(t)
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
	deadline := time.Now().Add(2 * time.Minute)
	for s.Ready() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("pool never got ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Kill the ready container's runner behind the pool's back.
	ids := sandboxContainers(t)
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
