package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// SaveCheckpoint stores a copy of cp as the checkpoint of message
// cp.MessageID in cp.TenantID, replacing any checkpoint that message
// already has. ID, TenantID and MessageID must be non-empty, otherwise the
// error matches domain.ErrInvalid. The message itself need not exist. A
// zero CreatedAt is set to the current time, in cp as well as in the
// stored copy.
func (s *Store) SaveCheckpoint(ctx context.Context, cp *domain.Checkpoint) error {
	const op = "save checkpoint"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckSaveCheckpoint(cp); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cp.CreatedAt.IsZero() {
		cp.CreatedAt = now()
	}
	c := cloneCheckpoint(cp)
	s.checkpoints[messageKey{cp.TenantID, cp.MessageID}] = &c
	return nil
}

// GetCheckpoint returns a copy of the checkpoint of message messageID in
// tenantID, or an error matching domain.ErrNotFound.
func (s *Store) GetCheckpoint(ctx context.Context, tenantID, messageID string) (*domain.Checkpoint, error) {
	if err := checkCtx(ctx, "get checkpoint"); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	cp, ok := s.checkpoints[messageKey{tenantID, messageID}]
	if !ok {
		return nil, fmt.Errorf("memory: get checkpoint of message %s: %w", messageID, domain.ErrNotFound)
	}
	c := cloneCheckpoint(cp)
	return &c, nil
}

// TakeCheckpoint removes the checkpoint of message messageID in tenantID
// and returns it, in one step: of concurrent callers exactly one gets the
// checkpoint and the others get an error matching domain.ErrNotFound, as
// does a caller when there is no checkpoint.
func (s *Store) TakeCheckpoint(ctx context.Context, tenantID, messageID string) (*domain.Checkpoint, error) {
	if err := checkCtx(ctx, "take checkpoint"); err != nil {
		return nil, err
	}
	k := messageKey{tenantID, messageID}
	s.mu.Lock()
	defer s.mu.Unlock()
	cp, ok := s.checkpoints[k]
	if !ok {
		return nil, fmt.Errorf("memory: take checkpoint of message %s: %w", messageID, domain.ErrNotFound)
	}
	delete(s.checkpoints, k)
	return cp, nil // cp is no longer reachable from the store
}

// DeleteCheckpoint removes the checkpoint of message messageID in
// tenantID. When the message has no checkpoint it returns an error
// matching domain.ErrNotFound; callers that only want the checkpoint gone
// may ignore that error.
func (s *Store) DeleteCheckpoint(ctx context.Context, tenantID, messageID string) error {
	if err := checkCtx(ctx, "delete checkpoint"); err != nil {
		return err
	}
	k := messageKey{tenantID, messageID}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.checkpoints[k]; !ok {
		return fmt.Errorf("memory: delete checkpoint of message %s: %w", messageID, domain.ErrNotFound)
	}
	delete(s.checkpoints, k)
	return nil
}

// TakeExpiredCheckpoints removes and returns the checkpoints, in every
// tenant, whose ExpiresAt is set and before now, oldest expiry first (ties
// by message id), at most limit of them (0: no limit). Of concurrent
// callers each checkpoint goes to exactly one.
func (s *Store) TakeExpiredCheckpoints(ctx context.Context, now time.Time, limit int) ([]domain.Checkpoint, error) {
	if err := checkCtx(ctx, "take expired checkpoints"); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("memory: take expired checkpoints: %w", domain.Invalid("limit", "must not be negative"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []domain.Checkpoint
	for _, cp := range s.checkpoints {
		if !cp.ExpiresAt.IsZero() && cp.ExpiresAt.Before(now) {
			out = append(out, *cp)
		}
	}
	slices.SortFunc(out, func(a, b domain.Checkpoint) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return strings.Compare(a.MessageID, b.MessageID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	for _, cp := range out {
		delete(s.checkpoints, messageKey{cp.TenantID, cp.MessageID})
	}
	return out, nil
}
