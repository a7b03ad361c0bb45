package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bichat-go/bichat/domain"
	"github.com/jackc/pgx/v5"
)

type artifactRepo Store

func (r *artifactRepo) st() *Store { return (*Store)(r) }

const artifactCols = `id, tenant_id, session_id, message_id, kind, name, media_type, sha256, size, uri, metadata, created_at`

func scanArtifact(row pgx.Row) (domain.Artifact, error) {
	var a domain.Artifact
	var md []byte
	err := row.Scan(&a.ID, &a.TenantID, &a.SessionID, &a.MessageID, &a.Kind, &a.Name, &a.MediaType, &a.SHA256,
		&a.Size, &a.URI, &md, &a.CreatedAt)
	if err == nil && len(md) > 0 {
		if err := json.Unmarshal(md, &a.Metadata); err != nil {
			return a, fmt.Errorf("decode artifact %s metadata: %w", a.ID, err)
		}
	}
	return a, err
}

// SaveArtifact implements domain.ArtifactRepository. ID, TenantID and
// MessageID are required; the message need not exist. An id used in the
// tenant yields domain.ErrConflict. A zero CreatedAt becomes the current
// time (written back).
func (r *artifactRepo) SaveArtifact(ctx context.Context, a *domain.Artifact) error {
	const op = "save artifact"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckSaveArtifact(a); err != nil {
		return wrap(op, err)
	}
	var md []byte
	if a.Metadata != nil {
		var err error
		if md, err = json.Marshal(a.Metadata); err != nil {
			return fmt.Errorf("postgres: %s %s: encode metadata: %w", op, a.ID, err)
		}
	}
	created := a.CreatedAt
	if created.IsZero() {
		created = now()
	}
	s := r.st()
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {S}.artifacts (`+artifactCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`),
		a.ID, a.TenantID, a.SessionID, a.MessageID, string(a.Kind), a.Name, a.MediaType, a.SHA256, a.Size, a.URI,
		jsonArg(md), created)
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, a.ID, classify(err))
	}
	a.CreatedAt = created
	return nil
}

// GetArtifact implements domain.ArtifactRepository.
func (r *artifactRepo) GetArtifact(ctx context.Context, tenantID, id string) (*domain.Artifact, error) {
	const op = "get artifact"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	s := r.st()
	a, err := scanArtifact(s.pool.QueryRow(ctx, s.sql(`SELECT `+artifactCols+` FROM {S}.artifacts
		WHERE tenant_id = $1 AND id = $2`), tenantID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: %s %s: %w", op, id, domain.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: %s %s: %w", op, id, err)
	}
	return &a, nil
}

// ListArtifacts implements domain.ArtifactRepository: by CreatedAt, then
// insertion order; never nil.
func (r *artifactRepo) ListArtifacts(ctx context.Context, tenantID, messageID string) ([]domain.Artifact, error) {
	const op = "list artifacts"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	s := r.st()
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+artifactCols+` FROM {S}.artifacts
		WHERE tenant_id = $1 AND message_id = $2 ORDER BY created_at, seq`), tenantID, messageID)
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := collect(rows, scanArtifact)
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// DeleteArtifact implements domain.ArtifactRepository. In the same
// transaction it frees the artifact's content in the ArtifactStore when
// no other artifact of the tenant refers to it.
func (r *artifactRepo) DeleteArtifact(ctx context.Context, tenantID, id string) error {
	const op = "delete artifact"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	s := r.st()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var sum string
		err := tx.QueryRow(ctx, s.sql(`DELETE FROM {S}.artifacts WHERE tenant_id = $1 AND id = $2 RETURNING sha256`),
			tenantID, id).Scan(&sum)
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.ErrNotFound
		}
		if err != nil {
			return err
		}
		if sum == "" {
			return nil
		}
		return freeContent(ctx, s, tx, tenantID, []string{sum})
	})
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, id, err)
	}
	return nil
}
