package memory

import (
	"context"
	"fmt"
	"sort"

	"github.com/bichat-go/bichat/domain"
)

// AppendRunEvents appends copies of events to the log of their run, all or
// none. Every event must have the same non-empty TenantID and RunID and a
// Seq of at least 1, otherwise the error matches domain.ErrInvalid. Seq
// must increase strictly within events and the first Seq must be greater
// than the last Seq stored for the run; otherwise the error matches
// domain.ErrConflict. On any error nothing is stored. A zero Time is set
// to the current time in the stored copy. Calling it with no events does
// nothing.
//
// Run logs are per tenant: the same run id in two tenants names two
// independent logs. After a successful append the run's subscribers
// (SubscribeRunEvents) are signalled.
func (s *Store) AppendRunEvents(ctx context.Context, events ...domain.RunEvent) error {
	const op = "append run events"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	first := events[0]
	var ve domain.ValidationError
	for i, e := range events {
		field := func(name string) string { return fmt.Sprintf("events[%d].%s", i, name) }
		if e.TenantID == "" {
			ve.Add(field("tenant_id"), "is required")
		} else if e.TenantID != first.TenantID {
			ve.Add(field("tenant_id"), "must be the same for every event")
		}
		if e.RunID == "" {
			ve.Add(field("run_id"), "is required")
		} else if e.RunID != first.RunID {
			ve.Add(field("run_id"), "must be the same for every event")
		}
		if e.Seq < 1 {
			ve.Add(field("seq"), "must be 1 or greater")
		}
	}
	if err := ve.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}

	k := runKey{first.TenantID, first.RunID}
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.runEvents[k]
	var last int64
	if len(log) > 0 {
		last = log[len(log)-1].Seq
	}
	for _, e := range events {
		if e.Seq <= last {
			return fmt.Errorf("memory: %s: run %s: seq %d not greater than %d: %w",
				op, first.RunID, e.Seq, last, domain.ErrConflict)
		}
		last = e.Seq
	}
	t := now()
	for _, e := range events {
		c := cloneRunEvent(e)
		if c.Time.IsZero() {
			c.Time = t
		}
		log = append(log, c)
	}
	s.runEvents[k] = log
	s.signal(k)
	return nil
}

// ListRunEvents returns copies of the events of run runID in tenantID with
// Seq greater than afterSeq, in Seq order, at most limit of them; limit 0
// means all and a negative limit yields domain.ErrInvalid. An unknown run,
// or a run of another tenant, yields an empty, non-nil slice and no error:
// the log may simply not have started yet.
func (s *Store) ListRunEvents(ctx context.Context, tenantID, runID string, afterSeq int64, limit int) ([]domain.RunEvent, error) {
	const op = "list run events"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("memory: %s: %w", op, domain.Invalid("limit", "must be 0 or greater"))
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	log := s.runEvents[runKey{tenantID, runID}]
	i := sort.Search(len(log), func(i int) bool { return log[i].Seq > afterSeq })
	log = log[i:]
	if limit > 0 && len(log) > limit {
		log = log[:limit]
	}
	out := make([]domain.RunEvent, len(log))
	for i, e := range log {
		out[i] = cloneRunEvent(e)
	}
	return out, nil
}
