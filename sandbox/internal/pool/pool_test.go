package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fake struct {
	id     int
	dead   atomic.Bool
	closed atomic.Int32
}

func (f *fake) Alive() bool { return !f.dead.Load() && f.closed.Load() == 0 }
func (f *fake) Close()      { f.closed.Add(1) }

type starter struct {
	mu   sync.Mutex
	all  []*fake
	fail error
}

func (s *starter) start(ctx context.Context) (*fake, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	f := &fake{id: len(s.all) + 1}
	s.all = append(s.all, f)
	return f, nil
}

func waitReady(t *testing.T, p *Pool[*fake], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().Ready != n {
		if time.Now().After(deadline) {
			t.Fatalf("ready %d, want %d", p.Stats().Ready, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestReusable(t *testing.T) {
	st := &starter{}
	p := New(Config[*fake]{Size: 1, Reusable: true, Start: st.start})
	defer p.Close()
	waitReady(t, p, 1)
	for i := 0; i < 3; i++ {
		w, err := p.Get(context.Background())
		if err != nil || w.id != 1 {
			t.Fatalf("got %v %v", w, err)
		}
		p.Put(w)
	}
	if s := p.Stats(); s.Started != 1 || s.Ready != 1 {
		t.Fatalf("%+v", s)
	}
	// A dead ready worker is replaced.
	w, _ := p.Get(context.Background())
	p.Put(w)
	w.dead.Store(true)
	w2, err := p.Get(context.Background())
	if err != nil || w2 == w || w.closed.Load() != 1 {
		t.Fatalf("dead worker handed out: %v %v", w2, err)
	}
	p.Discard(w2)
	waitReady(t, p, 1)
	if s := p.Stats(); s.Replaced != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestSingleUseKeepsSizeReady(t *testing.T) {
	st := &starter{}
	p := New(Config[*fake]{Size: 2, Start: st.start})
	waitReady(t, p, 2)
	w, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, p, 2) // refilled while w is busy
	p.Put(w)           // single-use: closed, not kept
	if w.closed.Load() != 1 || p.Stats().Ready != 2 {
		t.Fatalf("%+v closed=%d", p.Stats(), w.closed.Load())
	}
	p.Close()
	for _, f := range st.all {
		if f != w && f.closed.Load() != 1 {
			t.Fatalf("worker %d closed %d times", f.id, f.closed.Load())
		}
	}
	if _, err := p.Get(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestIdleTimeoutAndErrors(t *testing.T) {
	st := &starter{}
	p := New(Config[*fake]{Size: 1, Reusable: true, IdleTimeout: 30 * time.Millisecond, Start: st.start})
	defer p.Close()
	waitReady(t, p, 1)
	waitReady(t, p, 0)
	if s := p.Stats(); s.Expired != 1 {
		t.Fatalf("%+v", s)
	}
	st.mu.Lock()
	st.fail = errors.New("boom")
	st.mu.Unlock()
	if _, err := p.Get(context.Background()); err == nil || err.Error() != "boom" {
		t.Fatalf("start error not returned: %v", err)
	}
}

func TestUnpooled(t *testing.T) {
	st := &starter{}
	p := New(Config[*fake]{Start: st.start})
	defer p.Close()
	w, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.Put(w)
	if w.closed.Load() != 1 || p.Stats().Ready != 0 {
		t.Fatal("unpooled worker kept")
	}
}
