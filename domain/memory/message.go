package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// CreateMessages stores copies of msgs, all or none. Every message must
// have a well-formed id (domain.ValidID), a valid Role and Status, and the
// same non-empty TenantID and SessionID as the others, otherwise the error
// matches domain.ErrInvalid. The session must exist in that tenant
// (domain.ErrNotFound otherwise). An id already stored, in any tenant, or
// repeated within msgs yields domain.ErrConflict. On any error nothing is
// stored. A zero CreatedAt is set to the current time and a zero UpdatedAt
// to CreatedAt, in msgs as well as in the stored copies. Calling it with
// no messages does nothing.
func (s *Store) CreateMessages(ctx context.Context, msgs ...*domain.Message) error {
	const op = "create messages"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return nil
	}
	if err := domain.CheckCreateMessages(msgs); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	tenantID, sessionID := msgs[0].TenantID, msgs[0].SessionID

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.session(tenantID, sessionID); !ok {
		return fmt.Errorf("memory: %s: session %s: %w", op, sessionID, domain.ErrNotFound)
	}
	seen := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if _, ok := s.messages[m.ID]; ok || seen[m.ID] {
			return fmt.Errorf("memory: %s: message %s: %w", op, m.ID, domain.ErrConflict)
		}
		seen[m.ID] = true
	}

	t := now()
	for _, m := range msgs {
		if m.CreatedAt.IsZero() {
			m.CreatedAt = t
		}
		if m.UpdatedAt.IsZero() {
			m.UpdatedAt = m.CreatedAt
		}
		s.messages[m.ID] = &storedMessage{msg: cloneMessage(m), seq: s.nextSeq()}
		s.sessionMessages[sessionID] = append(s.sessionMessages[sessionID], m.ID)
	}
	return nil
}

// GetMessage returns a copy of the message with id in tenantID, or an
// error matching domain.ErrNotFound.
func (s *Store) GetMessage(ctx context.Context, tenantID, id string) (*domain.Message, error) {
	if err := checkCtx(ctx, "get message"); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sm, ok := s.message(tenantID, id)
	if !ok {
		return nil, fmt.Errorf("memory: get message %s: %w", id, domain.ErrNotFound)
	}
	m := cloneMessage(&sm.msg)
	return &m, nil
}

// message returns the stored message with id in tenantID. The caller holds
// s.mu.
func (s *Store) message(tenantID, id string) (*storedMessage, bool) {
	sm, ok := s.messages[id]
	if !ok || sm.msg.TenantID != tenantID {
		return nil, false
	}
	return sm, true
}

// ListMessages returns copies of the messages of session sessionID in
// tenantID, oldest first: ordered by CreatedAt, and by insertion order
// among equal CreatedAt. A session that does not exist in tenantID yields
// domain.ErrNotFound.
//
// opts.Before, when set, keeps only the messages listed before the message
// with that id; an id that is not a message of the session yields
// domain.ErrNotFound. opts.Limit, when positive, then keeps only the last
// Limit of those (the most recent), still oldest first; a negative Limit
// yields domain.ErrInvalid. The result is never nil.
func (s *Store) ListMessages(ctx context.Context, tenantID, sessionID string, opts domain.MessageListOptions) ([]domain.Message, error) {
	const op = "list messages"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	if opts.Limit < 0 {
		return nil, fmt.Errorf("memory: %s: %w", op, domain.Invalid("limit", "must be 0 or greater"))
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.session(tenantID, sessionID); !ok {
		return nil, fmt.Errorf("memory: %s: session %s: %w", op, sessionID, domain.ErrNotFound)
	}
	ordered := make([]*storedMessage, 0, len(s.sessionMessages[sessionID]))
	for _, id := range s.sessionMessages[sessionID] {
		ordered = append(ordered, s.messages[id])
	}
	slices.SortStableFunc(ordered, func(a, b *storedMessage) int {
		return a.msg.CreatedAt.Compare(b.msg.CreatedAt)
	})
	if opts.Before != "" {
		i := slices.IndexFunc(ordered, func(sm *storedMessage) bool { return sm.msg.ID == opts.Before })
		if i < 0 {
			return nil, fmt.Errorf("memory: %s: before message %s: %w", op, opts.Before, domain.ErrNotFound)
		}
		ordered = ordered[:i]
	}
	if opts.Limit > 0 && len(ordered) > opts.Limit {
		ordered = ordered[len(ordered)-opts.Limit:]
	}
	out := make([]domain.Message, len(ordered))
	for i, sm := range ordered {
		out[i] = cloneMessage(&sm.msg)
	}
	return out, nil
}

// UpdateMessage replaces the Parts, Status, RunID, Metadata, Citations and
// UpdatedAt of the message identified by m.TenantID and m.ID; its Role,
// SessionID, Attachments and CreatedAt are kept. When m is not generating
// or has an empty RunID, LeaseUntil and CancelRequested are cleared (no
// run holds the message any more); otherwise they are kept as stored. A
// zero UpdatedAt is set to the current time, in m as well. An invalid
// Status yields domain.ErrInvalid and an unknown message
// domain.ErrNotFound.
func (s *Store) UpdateMessage(ctx context.Context, m *domain.Message) error {
	const op = "update message"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckUpdateMessage(m); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, ok := s.message(m.TenantID, m.ID)
	if !ok {
		return fmt.Errorf("memory: %s %s: %w", op, m.ID, domain.ErrNotFound)
	}
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = now()
	}
	s.replaceMessage(sm, m)
	return nil
}

// replaceMessage writes what UpdateMessage and FinishRun replace. The
// caller holds s.mu.
func (s *Store) replaceMessage(sm *storedMessage, m *domain.Message) {
	c := cloneMessage(m)
	sm.msg.Parts = c.Parts
	sm.msg.Status = c.Status
	sm.msg.RunID = c.RunID
	sm.msg.Metadata = c.Metadata
	sm.msg.Citations = c.Citations
	sm.msg.UpdatedAt = c.UpdatedAt
	if c.Status != domain.StatusGenerating || c.RunID == "" {
		sm.msg.LeaseUntil = time.Time{}
		sm.msg.CancelRequested = false
	}
}

// Claim marks the message with messageID in tenantID as claimed by runID:
// it sets RunID to runID and UpdatedAt to the current time. It succeeds
// only when the message is generating and not yet claimed; otherwise it
// returns an error matching domain.ErrConflict and changes nothing. Of any
// number of concurrent callers exactly one succeeds. An empty runID yields
// domain.ErrInvalid and an unknown message domain.ErrNotFound.
func (s *Store) Claim(ctx context.Context, tenantID, messageID, runID string) error {
	const op = "claim message"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if runID == "" {
		return fmt.Errorf("memory: %s %s: %w", op, messageID, domain.Invalid("run_id", "is required"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, ok := s.message(tenantID, messageID)
	if !ok {
		return fmt.Errorf("memory: %s %s: %w", op, messageID, domain.ErrNotFound)
	}
	if sm.msg.Status != domain.StatusGenerating || sm.msg.RunID != "" {
		return fmt.Errorf("memory: %s %s: %w", op, messageID, domain.ErrConflict)
	}
	sm.msg.RunID = runID
	sm.msg.UpdatedAt = now()
	return nil
}

// FailStale marks every message, in every tenant, whose Status is
// generating (claimed or not), that holds no run lease (zero LeaseUntil:
// leased runs are failed by lease expiry, see FailExpired) and whose
// UpdatedAt is before cutoff as failed: Status becomes domain.StatusFailed, Metadata.Error a copy of e
// and UpdatedAt the current time; the rest of the message is kept. It
// returns how many messages it changed.
func (s *Store) FailStale(ctx context.Context, cutoff time.Time, e domain.MessageError) (int, error) {
	if err := checkCtx(ctx, "fail stale messages"); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := now()
	n := 0
	for _, sm := range s.messages {
		if sm.msg.Status != domain.StatusGenerating || !sm.msg.LeaseUntil.IsZero() || !sm.msg.UpdatedAt.Before(cutoff) {
			continue
		}
		errCopy := e
		sm.msg.Status = domain.StatusFailed
		sm.msg.Metadata.Error = &errCopy
		sm.msg.UpdatedAt = t
		n++
	}
	return n, nil
}
