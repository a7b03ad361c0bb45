package audit

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
)

// SealFunc builds a tenant's next entry from its current head: Seq
// head.Seq+1, Prev head.Hash, and the Hash over the result. The Recorder
// passes one to Sink.Append; it is pure computation (no I/O).
type SealFunc func(head Anchor) (Entry, error)

// Sink stores audit chains. The Recorder does not keep heads in memory: a
// Sink's Append reads the tenant's head and stores the sealed entry in one
// step, so several Recorders (in one process or in several replicas
// sharing the storage) appending to the same tenant never fork its chain.
type Sink interface {
	// Append appends the next entry of tenantID's chain: it reads the
	// tenant's head (Seq 0 and ZeroHash for a new chain), calls seal with
	// it, and stores the entry seal returns together with the new head
	// (the entry's Seq and Hash), atomically and serialised with every
	// other Append to the same tenant, by any process sharing the storage.
	// When seal fails nothing is stored and Append returns its error. It
	// returns the stored entry.
	Append(ctx context.Context, tenantID string, seal SealFunc) (Entry, error)
	// Head returns tenantID's head anchor; Seq 0 and ZeroHash when the
	// tenant has no entries.
	Head(ctx context.Context, tenantID string) (Anchor, error)
}

// Reader reads stored chains back, for Verify.
type Reader interface {
	// Head returns tenantID's head anchor, as Sink.Head.
	Head(ctx context.Context, tenantID string) (Anchor, error)
	// Entries yields tenantID's entries in stored order (the order Verify
	// expects to find Seq 1, 2, 3, ...). A stored record that cannot be
	// decoded is yielded as an error matching ErrCorrupt, and iteration
	// goes on; other errors (I/O) end it.
	Entries(ctx context.Context, tenantID string) iter.Seq2[Entry, error]
	// Tenants returns every tenant with a head or an entry, sorted.
	Tenants(ctx context.Context) ([]string, error)
}

// ErrCorrupt marks a stored record that cannot be decoded into an Entry:
// Verify reports it as a break of the chain, not as a failure to read.
var ErrCorrupt = errors.New("audit: corrupt record")

// Memory is a Sink and Reader that keeps chains in memory, for tests and
// for processes that export entries elsewhere. It is safe for concurrent
// use. The zero value is ready to use.
type Memory struct {
	mu      sync.Mutex
	entries map[string][]Entry
}

var (
	_ Sink   = (*Memory)(nil)
	_ Reader = (*Memory)(nil)
)

// NewMemory returns an empty Memory sink.
func NewMemory() *Memory { return &Memory{} }

// Append implements Sink.
func (m *Memory) Append(ctx context.Context, tenantID string, seal SealFunc) (Entry, error) {
	if err := ctx.Err(); err != nil {
		return Entry{}, fmt.Errorf("audit: memory append: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := seal(m.headLocked(tenantID))
	if err != nil {
		return Entry{}, err
	}
	if m.entries == nil {
		m.entries = map[string][]Entry{}
	}
	m.entries[tenantID] = append(m.entries[tenantID], e)
	return e, nil
}

func (m *Memory) headLocked(tenantID string) Anchor {
	es := m.entries[tenantID]
	if len(es) == 0 {
		return Anchor{TenantID: tenantID, Hash: ZeroHash}
	}
	last := es[len(es)-1]
	return Anchor{TenantID: tenantID, Seq: last.Seq, Hash: last.Hash}
}

// Head implements Sink and Reader.
func (m *Memory) Head(ctx context.Context, tenantID string) (Anchor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.headLocked(tenantID), nil
}

// Entries implements Reader: it yields a copy of tenantID's entries taken
// when iteration starts.
func (m *Memory) Entries(ctx context.Context, tenantID string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		m.mu.Lock()
		es := slices.Clone(m.entries[tenantID])
		m.mu.Unlock()
		for _, e := range es {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Tenants implements Reader.
func (m *Memory) Tenants(ctx context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.entries))
	for t := range m.entries {
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}
