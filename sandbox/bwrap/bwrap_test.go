package bwrap_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/sandbox/bwrap"
	"github.com/bichat-go/bichat/sandbox/sandboxtest"
)

var (
	availOnce sync.Once
	availErr  error
)

func newSandbox(t testing.TB, cfg bwrap.Config) *bwrap.Sandbox {
	t.Helper()
	availOnce.Do(func() { availErr = bwrap.Available() })
	if availErr != nil {
		sandboxtest.Unavailable(t, availErr.Error())
	}
	s, err := bwrap.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSuite(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T, poolSize int) sandbox.Sandbox {
		return newSandbox(t, bwrap.Config{PoolSize: poolSize})
	})
}

func TestPoolReusesAndReplacesWorkers(t *testing.T) {
	s := newSandbox(t, bwrap.Config{PoolSize: 1})
	defer s.Close()
	ctx := context.Background()
	pid := func() string {
		out, err := s.Run(ctx, sandbox.Job{Code: "import os; print(os.getppid())"})
		if err != nil || !out.OK() {
			t.Fatalf("%v %+v", err, out)
		}
		return strings.TrimSpace(out.Stdout)
	}
	for i := 0; i < 3; i++ {
		pid()
	}
	if st := s.Stats(); st.Started != 1 {
		t.Fatalf("warm worker not reused: %+v", st)
	}
	// A job that kills its own worker's processes cannot reach the zygote
	// (own pid namespace); crash the worker from the host instead.
	killWorkers(t)
	pid()
	if st := s.Stats(); st.Started != 2 || st.Replaced != 1 {
		t.Fatalf("crashed worker not replaced: %+v", st)
	}
}

// killWorkers kills the zygotes of this test process's workers.
func killWorkers(t *testing.T) {
	t.Helper()
	n := 0
	for _, p := range sandboxtestProcs("zygote") {
		if err := syscall.Kill(p, syscall.SIGKILL); err == nil {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no worker process found")
	}
	time.Sleep(200 * time.Millisecond)
}

func TestIdleTimeout(t *testing.T) {
	s := newSandbox(t, bwrap.Config{PoolSize: 1, IdleTimeout: 300 * time.Millisecond})
	defer s.Close()
	out, err := s.Run(context.Background(), sandbox.Job{Code: "print(1)"})
	if err != nil || !out.OK() {
		t.Fatal(err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Expired == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("idle worker not closed: %+v", s.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := s.Stats(); st.Ready != 0 {
		t.Fatalf("stats %+v", st)
	}
	out, err = s.Run(context.Background(), sandbox.Job{Code: "print(2)"})
	if err != nil || out.Stdout != "2\n" {
		t.Fatal(err, out)
	}
}

func TestCancel(t *testing.T) {
	s := newSandbox(t, bwrap.Config{PoolSize: 1})
	defer s.Close()
	if out, err := s.Run(context.Background(), sandbox.Job{Code: "print('warm')"}); err != nil || !out.OK() {
		t.Fatal(err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Run(ctx, sandbox.Job{Code: "import time\ntime.sleep(60)"})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "cancel") || time.Since(start) > 10*time.Second {
		t.Fatalf("cancel: %v after %v", err, time.Since(start))
	}
	out, err := s.Run(context.Background(), sandbox.Job{Code: "print('after')"})
	if err != nil || out.Stdout != "after\n" {
		t.Fatal(err, out)
	}
}

func TestClosed(t *testing.T) {
	s := newSandbox(t, bwrap.Config{})
	s.Close()
	if _, err := s.Run(context.Background(), sandbox.Job{Code: "print(1)"}); err != sandbox.ErrClosed {
		t.Fatalf("got %v", err)
	}
}

func TestPinCPUs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	for _, pin := range []bool{false, true} {
		s := newSandbox(t, bwrap.Config{PinCPUs: pin})
		out, err := s.Run(context.Background(), sandbox.Job{Code: "import os; print(len(os.sched_getaffinity(0)), os.environ['OPENBLAS_NUM_THREADS'])"})
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%d 1\n", runtime.NumCPU())
		if pin {
			want = "1 1\n"
		}
		if out.Stdout != want {
			t.Fatalf("pin=%v: %q, want %q", pin, out.Stdout, want)
		}
	}
}
