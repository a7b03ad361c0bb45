package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// The run-event log has locks of its own, so that runs writing their logs
// neither wait for each other nor for the store's other writers (messages,
// sessions, claims):
//
//   - Store.runEvents, a sync.Map, holds the logs: a run's first append
//     adds its log without an exclusive lock. Store.evMu orders the logs
//     against DeleteSession: AppendRunEvents and ListRunEvents hold it
//     shared for the whole call; DeleteSession holds it exclusively
//     (after Store.mu) while it removes a session's events, so a reader
//     sees the events of every run of the session, or of none.
//   - runEventLog.mu guards one run's events: appends to the same run are
//     serialised, appends to different runs are not.
//
// Lock order: Store.mu, Store.evMu, runEventLog.mu, Store.subMu.

// storedEvent is one stored run event. The tenant and run are the log's
// key and the session, message and type strings are shared with the
// appended value, so an event costs its Data and a few words.
type storedEvent struct {
	seq                      int64
	sessionID, messageID, ty string
	time                     time.Time
	data                     []byte
}

// runEventLog is the log of one run. Each AppendRunEvents stores its
// events in a chunk (a chunk with room left takes the next small batch)
// and their data in one block, so an append allocates a few times
// however many events it carries, and the log never copies what it
// already holds to grow.
type runEventLog struct {
	mu     sync.RWMutex
	chunks [][]storedEvent // in Seq order; only the last one has room left
	n      int             // number of events
	last   int64           // Seq of the last event; 0 when empty
	// session is the SessionID of every event unless mixed (the events
	// name more than one session): DeleteSession skips the logs of other
	// sessions without reading them.
	session string
	mixed   bool
}

// minChunk is the capacity of a chunk made for a batch smaller than it,
// so that a run appended one event at a time does not make a chunk per
// event.
const minChunk = 16

// AppendRunEvents appends copies of events to the log of their run, all or
// none. Every event must have the same non-empty TenantID and RunID and a
// Seq of at least 1, otherwise the error matches domain.ErrInvalid. Seq
// must increase strictly within events and the first Seq must be greater
// than the last Seq stored for the run; otherwise the error matches
// domain.ErrConflict. On any error nothing is stored. A zero Time is set
// to the current time in the stored copy. Calling it with no events does
// nothing. The Store keeps no reference to events or their Data after it
// returns.
//
// Run logs are per tenant: the same run id in two tenants names two
// independent logs. Each run's log has its own lock: appends to
// different runs, and the store's other writers, do not wait for each
// other. After a successful append the run's subscribers
// (SubscribeRunEvents) are signalled.
func (s *Store) AppendRunEvents(ctx context.Context, events ...domain.RunEvent) error {
	const op = "append run events"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	if err := domain.CheckAppendRunEvents(events); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	first := &events[0]
	size := 0
	for i := range events {
		size += len(events[i].Data)
	}

	k := runKey{first.TenantID, first.RunID}
	s.evMu.RLock()
	log := s.runLog(k)
	if log == nil {
		v, _ := s.runEvents.LoadOrStore(k, &runEventLog{})
		log = v.(*runEventLog)
	}
	err := log.append(op, first.RunID, events, size)
	s.evMu.RUnlock()
	if err != nil {
		return err
	}
	s.signal(k)
	return nil
}

// append stores copies of events, all or none; size is the sum of their
// Data lengths.
func (l *runEventLog) append(op, runID string, events []domain.RunEvent, size int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.last
	for _, e := range events {
		if e.Seq <= last {
			return fmt.Errorf("memory: %s: run %s: seq %d not greater than %d: %w",
				op, runID, e.Seq, last, domain.ErrConflict)
		}
		last = e.Seq
	}
	var block []byte
	if size > 0 {
		block = make([]byte, 0, size)
	}
	var chunk []storedEvent
	if n := len(l.chunks); n > 0 && cap(l.chunks[n-1])-len(l.chunks[n-1]) >= len(events) {
		chunk = l.chunks[n-1]
	} else {
		chunk = make([]storedEvent, 0, max(len(events), minChunk))
		l.chunks = append(l.chunks, chunk)
	}
	t := now()
	for _, e := range events {
		c := storedEvent{seq: e.Seq, sessionID: e.SessionID, messageID: e.MessageID, ty: e.Type, time: e.Time}
		if c.time.IsZero() {
			c.time = t
		}
		if e.Data != nil {
			start := len(block)
			block = append(block, e.Data...)
			c.data = block[start:len(block):len(block)]
		}
		switch {
		case l.n == 0 && len(chunk) == 0:
			l.session = e.SessionID
		case e.SessionID != l.session:
			l.mixed = true
		}
		chunk = append(chunk, c)
	}
	l.chunks[len(l.chunks)-1] = chunk
	l.n += len(events)
	l.last = last
	return nil
}

// ListRunEvents returns copies of the events of run runID in tenantID with
// Seq greater than afterSeq, in Seq order, at most limit of them; limit 0
// means all and a negative limit yields domain.ErrInvalid. An unknown run,
// or a run of another tenant, yields an empty, non-nil slice and no error:
// the log may simply not have started yet. It waits for no append to
// another run.
func (s *Store) ListRunEvents(ctx context.Context, tenantID, runID string, afterSeq int64, limit int) ([]domain.RunEvent, error) {
	const op = "list run events"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("memory: %s: %w", op, domain.Invalid("limit", "must be 0 or greater"))
	}
	s.evMu.RLock()
	defer s.evMu.RUnlock()
	log := s.runLog(runKey{tenantID, runID})
	if log == nil {
		return []domain.RunEvent{}, nil
	}
	log.mu.RLock()
	defer log.mu.RUnlock()
	// The first chunk holding a Seq above afterSeq, and the first such
	// event in it.
	ci := sort.Search(len(log.chunks), func(i int) bool {
		c := log.chunks[i]
		return c[len(c)-1].seq > afterSeq
	})
	if ci == len(log.chunks) {
		return []domain.RunEvent{}, nil
	}
	ei := sort.Search(len(log.chunks[ci]), func(i int) bool { return log.chunks[ci][i].seq > afterSeq })
	// Count what is returned and its data, to copy it in one block.
	n, size := 0, 0
	for c, i := ci, ei; c < len(log.chunks) && (limit == 0 || n < limit); c, i = c+1, 0 {
		for _, e := range log.chunks[c][i:] {
			if limit > 0 && n == limit {
				break
			}
			n++
			size += len(e.data)
		}
	}
	out := make([]domain.RunEvent, 0, n)
	block := make([]byte, 0, size)
	for c, i := ci, ei; len(out) < n; c, i = c+1, 0 {
		for _, e := range log.chunks[c][i:] {
			if len(out) == n {
				break
			}
			re := domain.RunEvent{TenantID: tenantID, RunID: runID, SessionID: e.sessionID, MessageID: e.messageID,
				Seq: e.seq, Type: e.ty, Time: e.time}
			if e.data != nil {
				start := len(block)
				block = append(block, e.data...)
				re.Data = block[start:len(block):len(block)]
			}
			out = append(out, re)
		}
	}
	return out, nil
}

// deleteSessionEvents removes the events of session sessionID from every
// run log of tenantID and signals the subscribers of the runs it changed.
// The caller holds s.mu for writing; deleteSessionEvents holds s.evMu
// exclusively, so readers and appenders see the logs before or after.
func (s *Store) deleteSessionEvents(tenantID, sessionID string) {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	for key, v := range s.runEvents.Range {
		k, log := key.(runKey), v.(*runEventLog)
		if k.tenantID != tenantID {
			continue
		}
		// No append or read holds log.mu: they hold evMu shared.
		if removed := log.deleteSession(sessionID); removed {
			s.signal(k)
		}
		if log.n == 0 {
			s.runEvents.Delete(k)
		}
	}
}

// runLog returns the log of run k, or nil. The caller holds s.evMu.
func (s *Store) runLog(k runKey) *runEventLog {
	if v, ok := s.runEvents.Load(k); ok {
		return v.(*runEventLog)
	}
	return nil
}

// deleteSession removes the events of session sessionID and reports
// whether there were any.
func (l *runEventLog) deleteSession(sessionID string) bool {
	if l.n == 0 || !l.mixed && l.session != sessionID {
		return false
	}
	if !l.mixed {
		clear(l.chunks)
		l.chunks, l.n, l.last = nil, 0, 0
		return true
	}
	removed := 0
	chunks := l.chunks[:0]
	for _, c := range l.chunks {
		kept := c[:0]
		for _, e := range c {
			if e.sessionID == sessionID {
				removed++
				continue
			}
			kept = append(kept, e)
		}
		clear(c[len(kept):])
		if len(kept) > 0 {
			// A chunk that lost events is full: later appends go to a
			// new one, so Seq order holds.
			chunks = append(chunks, kept[:len(kept):len(kept)])
		}
	}
	clear(l.chunks[len(chunks):])
	l.chunks = chunks
	l.n -= removed
	if removed > 0 {
		l.last = 0
		if n := len(chunks); n > 0 {
			c := chunks[n-1]
			l.last = c[len(c)-1].seq
		}
	}
	return removed > 0
}
