package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultMaxKeys is MemoryOptions.MaxKeys when it is zero.
const DefaultMaxKeys = 100_000

// ErrTooManyKeys is returned by Memory.Admit when MaxKeys scopes all hold
// run slots, so no scope can be forgotten to make room for a new one.
var ErrTooManyKeys = errors.New("quota: too many scopes hold run slots")

// MemoryOptions configures NewMemory; the zero value is ready to use.
type MemoryOptions struct {
	// Now is the clock (default time.Now); tests pass a fake one.
	Now func() time.Time
	// MaxKeys caps the scopes (tenants, and users of tenants) kept in
	// memory; default DefaultMaxKeys, otherwise at least 2. Scopes whose
	// buckets have refilled are forgotten at least once a minute (a
	// forgotten scope is the same as a new one). When a new scope finds
	// MaxKeys scopes, the least recently used one that holds no run slot
	// is forgotten even if it has used part of its limits, which forgives
	// that part: size MaxKeys above the scopes active within a minute.
	MaxKeys int
}

// Memory is a Limiter that keeps its buckets in process memory: the
// limits hold within one process. It is safe for concurrent use. Several
// replicas share limits with package quota/postgres instead.
//
// A run whose release is never called (its goroutine died without a
// defer) holds its slot until the process ends.
type Memory struct {
	policy  Policy
	now     func() time.Time
	maxKeys int

	mu        sync.Mutex
	scopes    map[scopeKey]*entry
	lru       entry // sentinel of the list of entries with no run slot, most recent first
	runs      map[runKey]*runSlot
	gen       uint64
	lastSweep time.Time
}

var _ Limiter = (*Memory)(nil)

type scopeKey struct{ tenant, user string } // user "" is the tenant scope

type runKey struct{ tenant, run string }

type entry struct {
	key    scopeKey
	state  State
	limits Limits    // the limits of the last refill
	at     time.Time // the instant of the last refill
	// prev and next link the entry into Memory.lru while it holds no run
	// slot (state.Runs == 0); both are nil while it does.
	prev, next *entry
}

type runSlot struct {
	gen          uint64
	tenant, user *entry // nil for a scope without limits
}

// NewMemory returns a Memory enforcing p. It reports limits that are not
// valid and a MaxKeys below 2.
func NewMemory(p Policy, opts MemoryOptions) (*Memory, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("quota: new memory limiter: %w", err)
	}
	switch {
	case opts.MaxKeys == 0:
		opts.MaxKeys = DefaultMaxKeys
	case opts.MaxKeys < 2:
		return nil, fmt.Errorf("quota: new memory limiter: MaxKeys %d: want 0 (default %d) or at least 2", opts.MaxKeys, DefaultMaxKeys)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Memory{
		policy:  p,
		now:     opts.Now,
		maxKeys: opts.MaxKeys,
		scopes:  make(map[scopeKey]*entry),
		runs:    make(map[runKey]*runSlot),
	}
	m.lru.prev, m.lru.next = &m.lru, &m.lru
	return m, nil
}

// Keys returns the number of scopes Memory keeps (at most MaxKeys).
func (m *Memory) Keys() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.scopes)
}

// Admit implements Limiter. It returns an error naming the problem for an
// empty tenant, user or run ID or a bad limit from Policy.For, an error
// matching ErrExceeded when a limit refuses, and ErrTooManyKeys when
// memory is full of scopes holding run slots.
func (m *Memory) Admit(ctx context.Context, tenantID, userID, runID string) (func(), error) {
	if err := checkIDs("admit", tenantID, userID, runID, true); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("quota: admit: %w", err)
	}
	tl, ul, err := m.policy.Resolve(tenantID)
	if err != nil {
		return nil, fmt.Errorf("quota: admit: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.maybeSweep(now)
	te, err := m.scope(scopeKey{tenantID, ""}, tl, now, nil)
	if err != nil {
		return nil, fmt.Errorf("quota: admit: %w", err)
	}
	ue, err := m.scope(scopeKey{tenantID, userID}, ul, now, te)
	if err != nil {
		return nil, fmt.Errorf("quota: admit: %w", err)
	}
	rk := runKey{tenantID, runID}
	old := m.runs[rk]
	// Check both scopes before taking anything.
	var worst *ExceededError
	for _, s := range []struct {
		name string
		e    *entry
		l    Limits
	}{{ScopeTenant, te, tl}, {ScopeUser, ue, ul}} {
		if s.e == nil {
			continue
		}
		st := s.e.state
		if old != nil && (old.tenant == s.e || old.user == s.e) {
			st.Runs-- // the run's own slot moves to this admission
		}
		if e := st.Check(s.name, s.l); e != nil && (worst == nil || e.RetryAfter > worst.RetryAfter) {
			worst = e
		}
	}
	if worst != nil {
		return nil, worst
	}
	if old != nil {
		delete(m.runs, rk)
		m.freeSlot(old)
	}
	if te == nil && ue == nil {
		return func() {}, nil // nothing limits the run
	}
	m.gen++
	slot := &runSlot{gen: m.gen, tenant: te, user: ue}
	for _, s := range []struct {
		e *entry
		l Limits
	}{{te, tl}, {ue, ul}} {
		if s.e == nil {
			continue
		}
		s.e.state = s.e.state.TakeRequest(s.l)
		if s.e.state.Runs == 0 {
			s.e.unlink() // pinned while it holds slots
		}
		s.e.state.Runs++
	}
	m.runs[rk] = slot
	gen := slot.gen
	return func() { m.release(rk, gen) }, nil
}

// release frees the slot of run rk if it is still admission gen's.
func (m *Memory) release(rk runKey, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.runs[rk]; s != nil && s.gen == gen {
		delete(m.runs, rk)
		m.freeSlot(s)
	}
}

// freeSlot gives back the run slot s holds in its scopes.
func (m *Memory) freeSlot(s *runSlot) {
	for _, e := range []*entry{s.tenant, s.user} {
		if e == nil {
			continue
		}
		e.state.Runs--
		if e.state.Runs == 0 {
			m.pushFront(e)
		}
	}
}

// Charge implements Limiter. It returns an error naming the problem for
// an empty tenant or user ID, negative tokens or a bad limit from
// Policy.For.
func (m *Memory) Charge(ctx context.Context, tenantID, userID string, tokens int) error {
	if err := checkIDs("charge", tenantID, userID, "", false); err != nil {
		return err
	}
	if tokens < 0 {
		return fmt.Errorf("quota: charge: tokens %d is negative", tokens)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("quota: charge: %w", err)
	}
	tl, ul, err := m.policy.Resolve(tenantID)
	if err != nil {
		return fmt.Errorf("quota: charge: %w", err)
	}
	if tokens == 0 || (tl.TokensPerMinute == 0 && ul.TokensPerMinute == 0) {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.maybeSweep(now)
	te, err := m.scope(scopeKey{tenantID, ""}, tl, now, nil)
	if err != nil {
		return fmt.Errorf("quota: charge: %w", err)
	}
	ue, err := m.scope(scopeKey{tenantID, userID}, ul, now, te)
	if err != nil {
		return fmt.Errorf("quota: charge: %w", err)
	}
	if te != nil {
		te.state = te.state.Charge(tl, tokens)
	}
	if ue != nil {
		ue.state = ue.state.Charge(ul, tokens)
	}
	return nil
}

// scope returns the entry of k refilled to now under l, created when
// missing, and marks it most recently used; nil when l limits nothing and
// k has no entry. A new entry may forget the least recently used one,
// never keep.
func (m *Memory) scope(k scopeKey, l Limits, now time.Time, keep *entry) (*entry, error) {
	e := m.scopes[k]
	if e == nil {
		if l.IsZero() {
			return nil, nil
		}
		if len(m.scopes) >= m.maxKeys {
			m.sweep(now)
		}
		if len(m.scopes) >= m.maxKeys {
			victim := m.lru.prev
			if victim == keep {
				victim = victim.prev
			}
			if victim == &m.lru {
				return nil, ErrTooManyKeys
			}
			m.forget(victim)
		}
		e = &entry{key: k, state: FullState(), at: now}
		m.scopes[k] = e
		if e.state.Runs == 0 {
			m.pushFront(e)
		}
	}
	e.state = e.state.Refill(l, now.Sub(e.at))
	if now.After(e.at) {
		e.at = now
	}
	e.limits = l
	if e.next != nil { // most recently used
		e.unlink()
		m.pushFront(e)
	}
	return e, nil
}

// sweepEvery is how often Memory forgets scopes whose buckets are full.
const sweepEvery = time.Minute

func (m *Memory) maybeSweep(now time.Time) {
	if now.Sub(m.lastSweep) >= sweepEvery {
		m.sweep(now)
	}
}

// sweep forgets the scopes, from the least recently used, whose buckets
// have refilled, up to the first one used within the last minute (any
// bucket refills in a minute unless it is in debt).
func (m *Memory) sweep(now time.Time) {
	m.lastSweep = now
	for e := m.lru.prev; e != &m.lru; {
		prev := e.prev
		if e.state.Refill(e.limits, now.Sub(e.at)).Full(e.limits) {
			m.forget(e)
		} else if now.Sub(e.at) < time.Minute {
			break
		}
		e = prev
	}
}

func (m *Memory) forget(e *entry) {
	e.unlink()
	delete(m.scopes, e.key)
}

func (m *Memory) pushFront(e *entry) {
	e.prev, e.next = &m.lru, m.lru.next
	e.prev.next, e.next.prev = e, e
}

func (e *entry) unlink() {
	if e.next == nil {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}
