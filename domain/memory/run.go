package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// ClaimRun marks the message with messageID in tenantID as claimed by
// runID with a lease that ends at leaseUntil: it sets RunID, LeaseUntil
// and UpdatedAt (to the current time) and clears CancelRequested, so the
// new run does not inherit a cancel request made before it. It succeeds only when the message
// is generating and not yet claimed; otherwise it returns an error
// matching domain.ErrConflict and changes nothing. Of any number of
// concurrent callers exactly one succeeds. An empty runID or a zero
// leaseUntil yields domain.ErrInvalid and an unknown message (or another
// tenant's) domain.ErrNotFound.
func (s *Store) ClaimRun(ctx context.Context, tenantID, messageID, runID string, leaseUntil time.Time) error {
	const op = "claim run"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckClaimRun(runID, leaseUntil); err != nil {
		return fmt.Errorf("memory: %s on message %s: %w", op, messageID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, ok := s.message(tenantID, messageID)
	if !ok {
		return fmt.Errorf("memory: %s on message %s: %w", op, messageID, domain.ErrNotFound)
	}
	if sm.msg.Status != domain.StatusGenerating || sm.msg.RunID != "" {
		return fmt.Errorf("memory: %s on message %s: message is %s and claimed by %q: %w",
			op, messageID, sm.msg.Status, sm.msg.RunID, domain.ErrConflict)
	}
	sm.msg.RunID = runID
	sm.msg.LeaseUntil = leaseUntil
	sm.msg.CancelRequested = false
	sm.msg.UpdatedAt = now()
	return nil
}

// FinishRun records the outcome m of the run runID: it replaces the
// Parts, Status, Metadata, Citations and UpdatedAt of the message
// identified by m.TenantID and m.ID and clears its LeaseUntil and
// CancelRequested, only while the stored message is generating and
// claimed by runID; otherwise it returns an error matching
// domain.ErrConflict and changes nothing (a reaper failed the message, or
// its run was finished elsewhere). A zero UpdatedAt is set to the current
// time, in m as well, only when the message is written. A nil m, an empty
// runID, a generating or invalid m.Status or an m.RunID other than runID
// yield domain.ErrInvalid; an unknown message (or another tenant's)
// domain.ErrNotFound.
func (s *Store) FinishRun(ctx context.Context, m *domain.Message, runID string) error {
	const op = "finish run"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckFinishRun(m, runID); err != nil {
		return fmt.Errorf("memory: %s %s: %w", op, runID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, ok := s.message(m.TenantID, m.ID)
	if !ok {
		return fmt.Errorf("memory: %s %s on message %s: %w", op, runID, m.ID, domain.ErrNotFound)
	}
	if sm.msg.Status != domain.StatusGenerating || sm.msg.RunID != runID {
		return fmt.Errorf("memory: %s %s on message %s: the message is %s under run %q, no longer generating under this run: %w",
			op, runID, m.ID, sm.msg.Status, sm.msg.RunID, domain.ErrConflict)
	}
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = now()
	}
	s.replaceMessage(sm, m)
	return nil
}

// RenewLease sets the LeaseUntil of the message with messageID in
// tenantID to until and returns its CancelRequested flag. Nothing else of
// the message changes, UpdatedAt included. The message must be generating
// and claimed by runID, otherwise the error matches domain.ErrConflict (the
// run must stop: the message completed, failed, was reaped by
// FailExpired or FailStale, or belongs to another run). A lease that has
// already expired but was not reaped yet is renewed. An empty runID or a
// zero until yields domain.ErrInvalid and an unknown message (or another
// tenant's) domain.ErrNotFound.
func (s *Store) RenewLease(ctx context.Context, tenantID, messageID, runID string, until time.Time) (bool, error) {
	const op = "renew lease"
	if err := checkCtx(ctx, op); err != nil {
		return false, err
	}
	if err := domain.CheckRenewLease(runID, until); err != nil {
		return false, fmt.Errorf("memory: %s on message %s: %w", op, messageID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, ok := s.message(tenantID, messageID)
	if !ok {
		return false, fmt.Errorf("memory: %s on message %s: %w", op, messageID, domain.ErrNotFound)
	}
	if sm.msg.Status != domain.StatusGenerating || sm.msg.RunID != runID {
		return false, fmt.Errorf("memory: %s on message %s: message is %s and no longer generating under run %s: %w",
			op, messageID, sm.msg.Status, runID, domain.ErrConflict)
	}
	sm.msg.LeaseUntil = until
	return sm.msg.CancelRequested, nil
}

// RequestCancel sets CancelRequested on the message with messageID in
// tenantID; nothing else changes, UpdatedAt included. It works whether or
// not the message is claimed, and calling it again is not an error. A
// message that is not generating yields domain.ErrConflict and changes
// nothing; an unknown message (or another tenant's) domain.ErrNotFound.
func (s *Store) RequestCancel(ctx context.Context, tenantID, messageID string) error {
	const op = "request cancel"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, ok := s.message(tenantID, messageID)
	if !ok {
		return fmt.Errorf("memory: %s of message %s: %w", op, messageID, domain.ErrNotFound)
	}
	if sm.msg.Status != domain.StatusGenerating {
		return fmt.Errorf("memory: %s of message %s: message is %s, not generating: %w",
			op, messageID, sm.msg.Status, domain.ErrConflict)
	}
	sm.msg.CancelRequested = true
	return nil
}

// FailExpired marks as failed every message, in every tenant, whose Status
// is generating and whose LeaseUntil is set and before asOf: Status becomes
// domain.StatusFailed, Metadata.Error a copy of e and UpdatedAt the current
// time; the rest of the message (RunID and LeaseUntil included) is kept.
// Messages with a zero LeaseUntil are never touched (FailStale handles
// them), nor are messages awaiting input. It returns copies of the changed
// messages, oldest lease first (ties by message id), at most limit of them
// (0: no limit; the rest stay generating for the next call); a negative
// limit yields domain.ErrInvalid. The result is never nil. Of concurrent
// callers each message is returned to exactly one.
func (s *Store) FailExpired(ctx context.Context, asOf time.Time, e domain.MessageError, limit int) ([]domain.Message, error) {
	const op = "fail expired runs"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("memory: %s: %w", op, domain.Invalid("limit", "must be 0 or greater"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var expired []*storedMessage
	for _, sm := range s.messages {
		m := &sm.msg
		if m.Status == domain.StatusGenerating && !m.LeaseUntil.IsZero() && m.LeaseUntil.Before(asOf) {
			expired = append(expired, sm)
		}
	}
	slices.SortFunc(expired, func(a, b *storedMessage) int {
		return cmp.Or(a.msg.LeaseUntil.Compare(b.msg.LeaseUntil), strings.Compare(a.msg.ID, b.msg.ID))
	})
	if limit > 0 && len(expired) > limit {
		expired = expired[:limit]
	}
	t := now()
	out := make([]domain.Message, len(expired))
	for i, sm := range expired {
		errCopy := e
		sm.msg.Status = domain.StatusFailed
		sm.msg.Metadata.Error = &errCopy
		sm.msg.UpdatedAt = t
		out[i] = cloneMessage(&sm.msg)
	}
	return out, nil
}
