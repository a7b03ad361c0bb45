package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// runKey identifies a run log: run ids are scoped by tenant.
type runKey struct{ tenant, run string }

type subscription struct{ ch chan struct{} }

// notifier fans the store's NOTIFY channel out to run subscribers. One
// listener goroutine, holding one pool connection, runs while there is
// at least one subscription.
type notifier struct {
	s *Store

	mu     sync.Mutex
	subs   map[runKey]map[*subscription]struct{}
	count  int
	cur    *listener // nil when no listener runs
	closed bool
	wg     sync.WaitGroup
}

// listener is one run of the LISTEN loop.
type listener struct {
	cancel context.CancelFunc
	// ready is closed after the first attempt to LISTEN; err is its
	// outcome (nil: listening).
	ready chan struct{}
	err   error
}

func newNotifier(s *Store) *notifier {
	return &notifier{s: s, subs: make(map[runKey]map[*subscription]struct{})}
}

var errClosed = errors.New("store is closed")

// subscribe registers a subscription to k and returns once the listener
// is listening.
func (n *notifier) subscribe(ctx context.Context, k runKey) (<-chan struct{}, func(), error) {
	sub := &subscription{ch: make(chan struct{}, 1)}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, nil, errClosed
	}
	set := n.subs[k]
	if set == nil {
		set = make(map[*subscription]struct{})
		n.subs[k] = set
	}
	set[sub] = struct{}{}
	n.count++
	if n.cur == nil {
		lctx, cancel := context.WithCancel(context.Background())
		n.cur = &listener{cancel: cancel, ready: make(chan struct{})}
		n.wg.Add(1)
		go n.run(lctx, n.cur)
	}
	l := n.cur
	n.mu.Unlock()

	var once sync.Once
	end := func() { once.Do(func() { n.remove(k, sub) }) }
	select {
	case <-l.ready:
		if l.err != nil {
			end()
			return nil, nil, l.err
		}
	case <-ctx.Done():
		end()
		return nil, nil, ctx.Err()
	}
	stopAfter := context.AfterFunc(ctx, end)
	return sub.ch, func() { stopAfter(); end() }, nil
}

// remove ends a subscription and stops the listener after the last one.
func (n *notifier) remove(k runKey, sub *subscription) {
	n.mu.Lock()
	defer n.mu.Unlock()
	set := n.subs[k]
	if _, ok := set[sub]; !ok {
		return
	}
	delete(set, sub)
	if len(set) == 0 {
		delete(n.subs, k)
	}
	n.count--
	if n.count == 0 && n.cur != nil {
		n.cur.cancel()
		n.cur = nil
	}
}

// signal wakes the subscribers of k, or every subscriber when all is set.
func (n *notifier) signal(k runKey, all bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	wake := func(set map[*subscription]struct{}) {
		for sub := range set {
			select {
			case sub.ch <- struct{}{}:
			default:
			}
		}
	}
	if all {
		for _, set := range n.subs {
			wake(set)
		}
		return
	}
	wake(n.subs[k])
}

// close stops the listener and refuses new subscriptions.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	if n.cur != nil {
		n.cur.cancel()
		n.cur = nil
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// run is the LISTEN loop: acquire a connection, LISTEN, dispatch
// notifications until ctx ends; on a broken connection signal everyone,
// wait with backoff and start again.
func (n *notifier) run(ctx context.Context, l *listener) {
	defer n.wg.Done()
	first := true
	backoff := 50 * time.Millisecond
	for {
		conn, err := n.listen(ctx)
		if first {
			first = false
			if err != nil {
				l.err = fmt.Errorf("listen on %s: %w", n.s.channel, err)
				n.mu.Lock()
				if n.cur == l {
					n.cur = nil
				}
				n.mu.Unlock()
				close(l.ready)
				return
			}
			close(l.ready)
		} else if err == nil {
			// Notifications sent while we were not listening are lost:
			// every watcher reads its log again.
			n.signal(runKey{}, true)
		}
		if err == nil {
			backoff = 50 * time.Millisecond
			// dispatch returns when the connection fails or ctx ends;
			// either way the loop below reconnects or stops.
			_ = n.dispatch(ctx, conn)
			release(conn)
		}
		if ctx.Err() != nil {
			return
		}
		n.signal(runKey{}, true)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, n.s.opts.ListenRetry)
	}
}

// listen acquires a connection and runs LISTEN on it.
func (n *notifier) listen(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := n.s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{n.s.channel}.Sanitize()); err != nil {
		release(conn)
		return nil, err
	}
	return conn, nil
}

// dispatch waits for notifications and signals their subscribers until
// ctx ends or the connection fails.
func (n *notifier) dispatch(ctx context.Context, conn *pgxpool.Conn) error {
	for {
		msg, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var p notice
		if err := json.Unmarshal([]byte(msg.Payload), &p); err != nil {
			continue // not ours
		}
		n.signal(runKey{p.Tenant, p.Run}, false)
	}
}

// release returns a listening connection to the pool: UNLISTEN first when
// it is healthy, so the pool's next user does not receive our
// notifications; a closed connection is dropped by the pool.
func release(conn *pgxpool.Conn) {
	if !conn.Conn().IsClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := conn.Exec(ctx, "UNLISTEN *"); err != nil {
			_ = conn.Conn().Close(ctx)
		}
		cancel()
	}
	conn.Release()
}
