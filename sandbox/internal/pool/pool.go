package pool

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/bichat-go/bichat/sandbox"
)

// Worker is something a pool keeps ready.
type Worker interface {
	// Alive reports whether the worker can still take a job.
	Alive() bool
	// Close releases the worker; it is called exactly once.
	Close()
}

// Config configures a Pool.
type Config[W Worker] struct {
	// Size is how many ready workers the pool keeps; 0 disables pooling:
	// every Get starts a fresh worker.
	Size int
	// IdleTimeout closes ready workers unused this long (0: never). The pool
	// fills up again on the next Get.
	IdleTimeout time.Duration
	// Reusable workers go back to the pool after a job (Put) and count
	// towards Size while busy; single-use workers are replaced as soon as
	// they are taken, so Size workers stay ready.
	Reusable bool
	// Start starts a worker; ctx ends when the pool closes.
	Start func(ctx context.Context) (W, error)
}

// Stats counts what the pool did.
type Stats = sandbox.PoolStats

// Pool hands out ready workers and starts new ones in the background.
type Pool[W Worker] struct {
	cfg    Config[W]
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	ready    []entry[W]
	starting int
	busy     int
	closed   bool
	stats    Stats
	wake     chan struct{} // signalled when a worker becomes ready
	lastErr  error
}

type entry[W Worker] struct {
	w     W
	since time.Time
}

// ErrClosed is returned by Get after Close.
var ErrClosed = errors.New("pool closed")

// New creates a pool and starts filling it.
func New[W Worker](cfg Config[W]) *Pool[W] {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool[W]{cfg: cfg, ctx: ctx, cancel: cancel, wake: make(chan struct{})}
	p.mu.Lock()
	p.fillLocked()
	p.mu.Unlock()
	if cfg.Size > 0 && cfg.IdleTimeout > 0 {
		p.wg.Add(1)
		go p.reap()
	}
	return p
}

// Stats returns a snapshot of the counters.
func (p *Pool[W]) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Ready = len(p.ready)
	return s
}

// Get returns a ready worker, waiting for one being started, or starts a
// new one when none is ready or on the way. The caller owns the worker
// until it hands it back with Put or closes it.
func (p *Pool[W]) Get(ctx context.Context) (W, error) {
	var zero W
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return zero, ErrClosed
		}
		var dead []W
		for len(p.ready) > 0 {
			e := p.ready[len(p.ready)-1]
			p.ready = p.ready[:len(p.ready)-1]
			if e.w.Alive() {
				p.busy++
				p.fillLocked()
				p.mu.Unlock()
				closeAll(dead)
				return e.w, nil
			}
			p.stats.Replaced++
			dead = append(dead, e.w)
		}
		if len(dead) > 0 {
			p.mu.Unlock()
			closeAll(dead)
			continue
		}
		if p.cfg.Size == 0 || p.starting == 0 {
			// Nothing on the way: start one for this caller.
			p.stats.Started++
			p.busy++
			p.fillLocked()
			p.mu.Unlock()
			w, err := p.cfg.Start(ctx)
			if err != nil {
				p.mu.Lock()
				p.busy--
				p.mu.Unlock()
			}
			return w, err
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
}

// Put hands a worker back: it becomes ready again when it is alive and
// the pool has room, otherwise it is closed.
func (p *Pool[W]) Put(w W) {
	p.mu.Lock()
	p.busy--
	if !p.closed && w.Alive() && p.cfg.Reusable && p.countLocked() < p.cfg.Size {
		p.ready = append(p.ready, entry[W]{w, time.Now()})
		p.signalLocked()
		p.mu.Unlock()
		return
	}
	p.fillLocked()
	p.mu.Unlock()
	w.Close()
}

// Discard closes a worker that must not be reused (it crashed or was
// killed) and starts a replacement.
func (p *Pool[W]) Discard(w W) {
	w.Close()
	p.mu.Lock()
	p.busy--
	p.fillLocked()
	p.mu.Unlock()
}

// countLocked is how many workers count towards Size.
func (p *Pool[W]) countLocked() int {
	n := len(p.ready) + p.starting
	if p.cfg.Reusable {
		n += p.busy
	}
	return n
}

// Err returns the last error of a background start, if any.
func (p *Pool[W]) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

func (p *Pool[W]) signalLocked() {
	close(p.wake)
	p.wake = make(chan struct{})
}

func (p *Pool[W]) fillLocked() {
	if p.closed {
		return
	}
	for p.countLocked() < p.cfg.Size {
		p.starting++
		p.stats.Started++
		p.wg.Add(1)
		go p.startOne()
	}
}

func (p *Pool[W]) startOne() {
	defer p.wg.Done()
	w, err := p.cfg.Start(p.ctx)
	p.mu.Lock()
	p.starting--
	if err != nil {
		// Do not spin on a broken setup: Get starts workers itself and
		// returns the error to its caller.
		p.lastErr = err
		p.signalLocked()
		p.mu.Unlock()
		return
	}
	p.lastErr = nil
	if p.closed || p.countLocked() >= p.cfg.Size {
		p.mu.Unlock()
		w.Close()
		return
	}
	p.ready = append(p.ready, entry[W]{w, time.Now()})
	p.signalLocked()
	p.mu.Unlock()
}

func closeAll[W Worker](ws []W) {
	for _, w := range ws {
		w.Close()
	}
}

func (p *Pool[W]) reap() {
	defer p.wg.Done()
	tick := p.cfg.IdleTimeout / 4
	if tick < 10*time.Millisecond {
		tick = 10 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		var old []W
		p.mu.Lock()
		keep := p.ready[:0]
		for _, e := range p.ready {
			if time.Since(e.since) >= p.cfg.IdleTimeout {
				old = append(old, e.w)
				p.stats.Expired++
			} else {
				keep = append(keep, e)
			}
		}
		p.ready = keep
		p.mu.Unlock()
		for _, w := range old {
			w.Close()
		}
	}
}

// Close closes every ready worker and waits for background starts.
// Workers handed out are the caller's to close (Put closes them after
// Close).
func (p *Pool[W]) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	ready := p.ready
	p.ready = nil
	p.signalLocked()
	p.mu.Unlock()
	p.cancel()
	for _, e := range ready {
		e.w.Close()
	}
	p.wg.Wait()
}
