package docker

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
)

func frame(stream byte, s string) []byte {
	h := make([]byte, 8, 8+len(s))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(s)))
	return append(h, s...)
}

func TestDemux(t *testing.T) {
	var in []byte
	in = append(in, frame(1, "out1")...)
	in = append(in, frame(2, "err")...)
	in = append(in, frame(1, "")...)
	in = append(in, frame(1, "out2")...)
	d := &demux{r: bytes.NewReader(in)}
	var out, errb []byte
	for {
		st, p, err := d.next(100)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if st == 1 {
			out = append(out, p...)
		} else {
			errb = append(errb, p...)
		}
	}
	if string(out) != "out1out2" || string(errb) != "err" {
		t.Fatalf("%q %q", out, errb)
	}
	if _, _, err := (&demux{r: bytes.NewReader(frame(1, "toolong"))}).next(3); err == nil {
		t.Fatal("oversized frame accepted")
	}
	if _, _, err := (&demux{r: bytes.NewReader(frame(1, "cut")[:9])}).next(100); err == nil {
		t.Fatal("truncated frame accepted")
	}
}

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{{"1.41", "1.43", true}, {"1.43", "1.41", false}, {"1.9", "1.25", true}, {"2.0", "1.43", false}, {"1.43", "1.43", false}} {
		if versionLess(c.a, c.b) != c.less {
			t.Errorf("versionLess(%s, %s) != %v", c.a, c.b, c.less)
		}
	}
}

func TestUnenforcedFromWarnings(t *testing.T) {
	// The warnings Docker 20.10+ returns from /containers/create when the
	// kernel or cgroup lacks a controller (daemon/daemon_unix.go).
	got := unenforced([]string{
		"Your kernel does not support pids limit capabilities or the cgroup is not mounted. PIDs limit discarded.",
		"Your kernel does not support swap limit capabilities or the cgroup is not mounted. Memory limited without swap.",
		"Your kernel does not support CPU cfs quota or the cgroup is not mounted. Quota discarded.",
		"Published ports are discarded when using host network mode",
	})
	want := []string{"pids:", "memory:", "cpu:"}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i, w := range want {
		if len(got[i]) <= len(w) || got[i][:len(w)] != w {
			t.Errorf("entry %d: %q, want prefix %q", i, got[i], w)
		}
	}
	if unenforced(nil) != nil {
		t.Error("no warnings must report nothing")
	}
}
