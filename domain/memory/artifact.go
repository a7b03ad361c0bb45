package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/bichat-go/bichat/domain"
)

// SaveArtifact stores a copy of a. ID, TenantID and MessageID must be
// non-empty, otherwise the error matches domain.ErrInvalid. An id already
// in use, in any tenant, yields domain.ErrConflict. The message itself need
// not exist. A zero CreatedAt is set to the current time, in a as well as
// in the stored copy.
func (s *Store) SaveArtifact(ctx context.Context, a *domain.Artifact) error {
	const op = "save artifact"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckSaveArtifact(a); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.artifacts[a.ID]; ok {
		return fmt.Errorf("memory: %s %s: %w", op, a.ID, domain.ErrConflict)
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = now()
	}
	s.artifacts[a.ID] = &storedArtifact{art: cloneArtifact(a), seq: s.nextSeq()}
	k := messageKey{a.TenantID, a.MessageID}
	s.messageArtifacts[k] = append(s.messageArtifacts[k], a.ID)
	return nil
}

// GetArtifact returns a copy of the artifact with id in tenantID, or an
// error matching domain.ErrNotFound.
func (s *Store) GetArtifact(ctx context.Context, tenantID, id string) (*domain.Artifact, error) {
	if err := checkCtx(ctx, "get artifact"); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sa, ok := s.artifacts[id]
	if !ok || sa.art.TenantID != tenantID {
		return nil, fmt.Errorf("memory: get artifact %s: %w", id, domain.ErrNotFound)
	}
	a := cloneArtifact(&sa.art)
	return &a, nil
}

// ListArtifacts returns copies of the artifacts of message messageID in
// tenantID in creation order: by CreatedAt, and by insertion order among
// equal CreatedAt. A message without artifacts, unknown or in another
// tenant, yields an empty, non-nil slice.
func (s *Store) ListArtifacts(ctx context.Context, tenantID, messageID string) ([]domain.Artifact, error) {
	if err := checkCtx(ctx, "list artifacts"); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := s.messageArtifacts[messageKey{tenantID, messageID}]
	stored := make([]*storedArtifact, len(ids))
	for i, id := range ids {
		stored[i] = s.artifacts[id]
	}
	slices.SortStableFunc(stored, func(a, b *storedArtifact) int {
		return a.art.CreatedAt.Compare(b.art.CreatedAt)
	})
	out := make([]domain.Artifact, len(stored))
	for i, sa := range stored {
		out[i] = cloneArtifact(&sa.art)
	}
	return out, nil
}

// DeleteArtifact removes the artifact with id in tenantID, or returns an
// error matching domain.ErrNotFound.
func (s *Store) DeleteArtifact(ctx context.Context, tenantID, id string) error {
	if err := checkCtx(ctx, "delete artifact"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sa, ok := s.artifacts[id]
	if !ok || sa.art.TenantID != tenantID {
		return fmt.Errorf("memory: delete artifact %s: %w", id, domain.ErrNotFound)
	}
	s.removeArtifact(id)
	return nil
}

// removeArtifact deletes the stored artifact id and its index entry. The
// caller holds s.mu for writing and has checked that id exists.
func (s *Store) removeArtifact(id string) {
	a := s.artifacts[id].art
	delete(s.artifacts, id)
	k := messageKey{a.TenantID, a.MessageID}
	ids := slices.DeleteFunc(s.messageArtifacts[k], func(x string) bool { return x == id })
	if len(ids) == 0 {
		delete(s.messageArtifacts, k)
	} else {
		s.messageArtifacts[k] = ids
	}
}
