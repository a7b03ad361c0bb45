package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/bichat-go/bichat/domain"
)

// subscription is one SubscribeRunEvents caller. ch holds at most one
// pending signal.
type subscription struct {
	ch chan struct{}
}

// SubscribeRunEvents returns a channel that receives a value after events
// of run runID in tenantID are appended with AppendRunEvents, and after
// DeleteSession removes the run's events (read the log again: it is
// gone). Signals are coalesced: the channel has a buffer of one, and an
// append while a signal is pending adds nothing. The Store only signals
// within its own process.
//
// The subscription ends when ctx is done or stop is called, whichever
// comes first; stop may be called any number of times, from any
// goroutine. After the end the channel receives no further values and is
// not closed, so select on ctx.Done() as well. A subscription starts no
// goroutine, and an ended one leaves nothing behind in the Store.
//
// An empty tenantID or runID yields domain.ErrInvalid; a done ctx yields
// its error.
func (s *Store) SubscribeRunEvents(ctx context.Context, tenantID, runID string) (<-chan struct{}, func(), error) {
	const op = "subscribe run events"
	if err := checkCtx(ctx, op); err != nil {
		return nil, nil, err
	}
	if err := domain.CheckSubscribeRunEvents(tenantID, runID); err != nil {
		return nil, nil, fmt.Errorf("memory: %s: %w", op, err)
	}
	k := runKey{tenantID, runID}
	sub := &subscription{ch: make(chan struct{}, 1)}
	s.subMu.Lock()
	set := s.subs[k]
	if set == nil {
		set = make(map[*subscription]struct{})
		s.subs[k] = set
	}
	set[sub] = struct{}{}
	s.subMu.Unlock()

	var once sync.Once
	end := func() {
		once.Do(func() {
			s.subMu.Lock()
			if set := s.subs[k]; set != nil {
				delete(set, sub)
				if len(set) == 0 {
					delete(s.subs, k)
				}
			}
			s.subMu.Unlock()
		})
	}
	// AfterFunc starts a goroutine only when ctx is done; stopping it
	// releases ctx's reference to end.
	stopAfter := context.AfterFunc(ctx, end)
	stop := func() {
		stopAfter()
		end()
	}
	return sub.ch, stop, nil
}

// signal wakes every subscriber of k without blocking. A subscriber that
// already has a signal pending gets nothing more.
func (s *Store) signal(k runKey) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	for sub := range s.subs[k] {
		select {
		case sub.ch <- struct{}{}:
		default:
		}
	}
}

// subscriberCount returns the number of live subscriptions, for tests.
func (s *Store) subscriberCount() int {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	n := 0
	for _, set := range s.subs {
		n += len(set)
	}
	return n
}
