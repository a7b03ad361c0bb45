package bichat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// Group commit of the run log: a run's events are appended in batches of
// at most runLogBatch events, at most runLogWindow after the first event
// of the batch, and always before an Interrupted or terminal event is
// published and before the message is finalised. A crash loses at most
// the events of one unwritten batch (text deltas, tool events), never a
// terminal event: a terminal event is written before any watcher sees it.
const (
	runLogBatch  = 64
	runLogWindow = 50 * time.Millisecond
	// persistTimeout bounds one write of a run's outcome or log batch.
	persistTimeout = 30 * time.Second
)

// runLog is the group-committing writer of one run's log.
type runLog struct {
	s                                 *Service
	ctx                               context.Context // never cancelled
	tenantID, runID, sessionID, msgID string

	mu      sync.Mutex
	cur     *logBatch // the batch being filled; nil when none
	timer   *time.Timer
	armed   bool
	lastSeq int64 // seq of the last event added

	// writeMu orders appends: a batch is written only after the one
	// before it.
	writeMu sync.Mutex
	// taken is set when an append conflicts: another writer (a reaper
	// that found the lease expired) ended the log, so this run is over.
	taken atomic.Bool
}

// logBatch is one batch of a run log: its rows, and their encoded events
// one after the other in one buffer. Batches are reused across runs (a
// RunEventRepository keeps no reference to what it is given), so writing
// a run's log allocates nothing per event.
type logBatch struct {
	rows []domain.RunEvent // Data is set when the batch is written
	ends []int             // rows[i]'s data is buf[ends[i-1]:ends[i]]
	buf  []byte
}

// Sizes of pooled batches: a batch starts with room for runLogBatch
// typical events, and one that grew past maxPooledBatch (an event with a
// large payload) is left to the garbage collector.
const (
	batchBufSize   = 16 << 10
	maxPooledBatch = 1 << 20
)

var batchPool = sync.Pool{New: func() any {
	return &logBatch{rows: make([]domain.RunEvent, 0, runLogBatch), ends: make([]int, 0, runLogBatch),
		buf: make([]byte, 0, batchBufSize)}
}}

func getBatch() *logBatch { return batchPool.Get().(*logBatch) }

// putBatch empties b and returns it to the pool.
func putBatch(b *logBatch) {
	if cap(b.buf) > maxPooledBatch {
		return
	}
	clear(b.rows)
	b.rows, b.ends, b.buf = b.rows[:0], b.ends[:0], b.buf[:0]
	batchPool.Put(b)
}

// seal points each row's Data at its encoded event.
func (b *logBatch) seal() {
	start := 0
	for i, end := range b.ends {
		b.rows[i].Data = b.buf[start:end:end]
		start = end
	}
}

func (s *Service) newRunLog(ctx context.Context, asst *domain.Message) *runLog {
	return &runLog{s: s, ctx: context.WithoutCancel(ctx), tenantID: asst.TenantID, runID: asst.RunID,
		sessionID: asst.SessionID, msgID: asst.ID}
}

// appendEvent appends the run-log encoding of ev to dst (dst unchanged on
// error). A tool result whose payload cannot be encoded is logged with an
// error payload instead.
func appendEvent(dst []byte, ev agents.Event) ([]byte, error) {
	out, err := agents.AppendEvent(dst, ev)
	if err != nil {
		if f, ok := ev.(*agents.ToolCallFinished); ok {
			c := *f
			c.Payload = map[string]string{"error": "payload could not be encoded as JSON"}
			out, err = agents.AppendEvent(dst, &c)
		}
	}
	return out, err
}

// encodeEvent is the run-log row of ev.
func (s *Service) encodeEvent(tenantID, runID, sessionID, msgID string, ev agents.Event) (domain.RunEvent, error) {
	data, err := appendEvent(nil, ev)
	if err != nil {
		return domain.RunEvent{}, err
	}
	h := ev.Header()
	return domain.RunEvent{TenantID: tenantID, RunID: runID, SessionID: sessionID, MessageID: msgID,
		Seq: h.Seq, Type: string(ev.Type()), Time: h.Time, Data: data}, nil
}

// add queues ev; it writes the batch when it is full.
func (l *runLog) add(ev agents.Event) {
	l.mu.Lock()
	b := l.cur
	if b == nil {
		b = getBatch()
		l.cur = b
	}
	if free := cap(b.buf) - len(b.buf); free < 1024 {
		// Double the buffer (AppendEvent grows it only by what one event
		// needs, which would copy it for every event).
		b.buf = slices.Grow(b.buf, max(cap(b.buf), 1024))
	}
	var err error
	if b.buf, err = appendEvent(b.buf, ev); err != nil {
		l.mu.Unlock()
		l.s.cfg.Logger.ErrorContext(l.ctx, "bichat: run log: encode event", "run_id", l.runID, "type", ev.Type(), "error", err)
		return
	}
	h := ev.Header()
	b.rows = append(b.rows, domain.RunEvent{TenantID: l.tenantID, RunID: l.runID, SessionID: l.sessionID, MessageID: l.msgID,
		Seq: h.Seq, Type: string(ev.Type()), Time: h.Time})
	b.ends = append(b.ends, len(b.buf))
	l.lastSeq = h.Seq
	full := len(b.rows) >= runLogBatch
	if !full && !l.armed {
		l.armed = true
		if l.timer == nil {
			l.timer = time.AfterFunc(runLogWindow, func() { _ = l.flush() })
		} else {
			l.timer.Reset(runLogWindow)
		}
	}
	l.mu.Unlock()
	if full {
		_ = l.flush()
	}
}

// last returns the seq of the last event added.
func (l *runLog) last() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeq
}

// flush writes the queued events. It returns an error matching
// domain.ErrConflict when another writer ended the log.
func (l *runLog) flush() error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	b := l.cur
	l.cur = nil
	if l.armed {
		l.timer.Stop()
		l.armed = false
	}
	l.mu.Unlock()
	var err error
	if b != nil && len(b.rows) > 0 && !l.taken.Load() {
		b.seal()
		ctx, cancel := context.WithTimeout(l.ctx, persistTimeout)
		err = l.s.repos.RunEvents.AppendRunEvents(ctx, b.rows...)
		cancel()
		if errors.Is(err, domain.ErrConflict) {
			l.taken.Store(true)
		}
		if err != nil {
			l.s.cfg.Logger.ErrorContext(l.ctx, "bichat: run log: append events", "run_id", l.runID,
				"first_seq", b.rows[0].Seq, "events", len(b.rows), "error", err)
			err = fmt.Errorf("bichat: run log of run %s: %w", l.runID, err)
		}
	} else if l.taken.Load() {
		err = fmt.Errorf("bichat: run log of run %s was ended by another writer: %w", l.runID, domain.ErrConflict)
	}
	if b != nil {
		putBatch(b)
	}
	return err
}

// close writes what is queued and stops the timer.
func (l *runLog) close() {
	_ = l.flush()
	l.mu.Lock()
	if l.timer != nil {
		l.timer.Stop()
		l.armed = false
	}
	l.mu.Unlock()
}

// logEnd reads a run's log and returns its last event (zero when the log
// is empty) and whether that event ends the run.
func (s *Service) logEnd(ctx context.Context, tenantID, runID string) (lastRec domain.RunEvent, terminal bool, err error) {
	const page = 512
	for {
		recs, err := s.repos.RunEvents.ListRunEvents(ctx, tenantID, runID, lastRec.Seq, page)
		if err != nil {
			return domain.RunEvent{}, false, err
		}
		if len(recs) > 0 {
			lastRec = recs[len(recs)-1]
		}
		if len(recs) < page {
			break
		}
	}
	return lastRec, lastRec.Seq > 0 && terminalRecord(&lastRec), nil
}

// terminalRecord reports whether a run-log row is a terminal event of the
// top-level agent.
func terminalRecord(r *domain.RunEvent) bool {
	switch agents.EventType(r.Type) {
	case agents.EventRunFinished, agents.EventRunFailed, agents.EventInterrupted:
	default:
		return false
	}
	var h struct {
		ParentRunID string `json:"parent_run_id"`
	}
	return json.Unmarshal(r.Data, &h) == nil && h.ParentRunID == ""
}

// appendTerminal ends the log of a run that stopped without writing its
// terminal event (its process died or hung): unless the log already ends
// with one, it appends the event mk returns for the next seq. A
// conflicting append (the run's own writer was faster) is retried after
// reading the log again.
func (s *Service) appendTerminal(ctx context.Context, m *domain.Message, runID string, mk func(h agents.EventHeader) agents.Event) error {
	for range 8 {
		lastRec, terminal, err := s.logEnd(ctx, m.TenantID, runID)
		last := lastRec.Seq
		if err != nil {
			return fmt.Errorf("bichat: end run log of run %s: %w", runID, err)
		}
		if terminal {
			return nil
		}
		ev := mk(agents.EventHeader{RunID: runID, SessionID: m.SessionID, MessageID: m.ID, Seq: last + 1, Time: s.cfg.Now()})
		re, err := s.encodeEvent(m.TenantID, runID, m.SessionID, m.ID, ev)
		if err != nil {
			return fmt.Errorf("bichat: end run log of run %s: %w", runID, err)
		}
		err = s.repos.RunEvents.AppendRunEvents(ctx, re)
		if err == nil || !errors.Is(err, domain.ErrConflict) {
			if err != nil {
				return fmt.Errorf("bichat: end run log of run %s: %w", runID, err)
			}
			return nil
		}
	}
	return fmt.Errorf("bichat: end run log of run %s: the log kept growing: %w", runID, domain.ErrConflict)
}
