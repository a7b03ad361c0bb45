package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/jackc/pgx/v5"
)

type checkpointRepo Store

func (r *checkpointRepo) st() *Store { return (*Store)(r) }

const checkpointCols = `id, tenant_id, session_id, message_id, owner_id, run_id, kind, data, created_at, expires_at`

func scanCheckpoint(row pgx.Row) (domain.Checkpoint, error) {
	var cp domain.Checkpoint
	var data []byte
	var expires *time.Time
	err := row.Scan(&cp.ID, &cp.TenantID, &cp.SessionID, &cp.MessageID, &cp.OwnerID, &cp.RunID, &cp.Kind, &data,
		&cp.CreatedAt, &expires)
	if data != nil {
		cp.Data = data
	}
	cp.ExpiresAt = fromNullTime(expires)
	return cp, err
}

// SaveCheckpoint implements domain.CheckpointRepository with one upsert.
// ID, TenantID and MessageID are required; the message need not exist. A
// zero CreatedAt becomes the current time (written back).
func (r *checkpointRepo) SaveCheckpoint(ctx context.Context, cp *domain.Checkpoint) error {
	const op = "save checkpoint"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckSaveCheckpoint(cp); err != nil {
		return wrap(op, err)
	}
	created := cp.CreatedAt
	if created.IsZero() {
		created = now()
	}
	s := r.st()
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {S}.checkpoints (`+checkpointCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (tenant_id, message_id) DO UPDATE SET
			id = excluded.id, session_id = excluded.session_id, owner_id = excluded.owner_id,
			run_id = excluded.run_id, kind = excluded.kind, data = excluded.data,
			created_at = excluded.created_at, expires_at = excluded.expires_at`),
		cp.ID, cp.TenantID, cp.SessionID, cp.MessageID, cp.OwnerID, cp.RunID, string(cp.Kind), []byte(cp.Data),
		created, nullTime(cp.ExpiresAt))
	if err != nil {
		return fmt.Errorf("postgres: %s of message %s: %w", op, cp.MessageID, err)
	}
	cp.CreatedAt = created
	return nil
}

// GetCheckpoint implements domain.CheckpointRepository.
func (r *checkpointRepo) GetCheckpoint(ctx context.Context, tenantID, messageID string) (*domain.Checkpoint, error) {
	const op = "get checkpoint"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	s := r.st()
	cp, err := scanCheckpoint(s.pool.QueryRow(ctx, s.sql(`SELECT `+checkpointCols+` FROM {S}.checkpoints
		WHERE tenant_id = $1 AND message_id = $2`), tenantID, messageID))
	return checkpointResult(op, messageID, cp, err)
}

func checkpointResult(op, messageID string, cp domain.Checkpoint, err error) (*domain.Checkpoint, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: %s of message %s: %w", op, messageID, domain.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: %s of message %s: %w", op, messageID, err)
	}
	return &cp, nil
}

// TakeCheckpoint implements domain.CheckpointRepository with one
// DELETE ... RETURNING: of concurrent callers exactly one gets the row.
func (r *checkpointRepo) TakeCheckpoint(ctx context.Context, tenantID, messageID string) (*domain.Checkpoint, error) {
	const op = "take checkpoint"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	s := r.st()
	cp, err := scanCheckpoint(s.pool.QueryRow(ctx, s.sql(`DELETE FROM {S}.checkpoints
		WHERE tenant_id = $1 AND message_id = $2 RETURNING `+checkpointCols), tenantID, messageID))
	return checkpointResult(op, messageID, cp, err)
}

// DeleteCheckpoint implements domain.CheckpointRepository; a message
// without a checkpoint yields domain.ErrNotFound.
func (r *checkpointRepo) DeleteCheckpoint(ctx context.Context, tenantID, messageID string) error {
	const op = "delete checkpoint"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	s := r.st()
	tag, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {S}.checkpoints WHERE tenant_id = $1 AND message_id = $2`),
		tenantID, messageID)
	if err != nil {
		return fmt.Errorf("postgres: %s of message %s: %w", op, messageID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s of message %s: %w", op, messageID, domain.ErrNotFound)
	}
	return nil
}

// TakeExpiredCheckpoints implements domain.CheckpointRepository: one
// DELETE over the oldest expired checkpoints of every tenant (a partial
// index covers expires_at), skipping rows another caller has locked, so
// of concurrent callers each checkpoint goes to exactly one. Results come
// oldest expiry first, ties by message id; a negative limit yields
// domain.ErrInvalid.
func (r *checkpointRepo) TakeExpiredCheckpoints(ctx context.Context, asOf time.Time, limit int) ([]domain.Checkpoint, error) {
	const op = "take expired checkpoints"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, wrap(op, domain.Invalid("limit", "must not be negative"))
	}
	s := r.st()
	rows, err := s.pool.Query(ctx, s.sql(`WITH picked AS (
			SELECT tenant_id, message_id FROM {S}.checkpoints
			WHERE expires_at IS NOT NULL AND expires_at < $1
			ORDER BY expires_at, message_id COLLATE "C"
			LIMIT $2
			FOR UPDATE SKIP LOCKED)
		DELETE FROM {S}.checkpoints c USING picked
		WHERE c.tenant_id = picked.tenant_id AND c.message_id = picked.message_id
		RETURNING `+prefixCols("c.", checkpointCols)), asOf, limitArg(limit))
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := collect(rows, scanCheckpoint)
	if err != nil {
		return nil, wrap(op, err)
	}
	slices.SortFunc(out, func(a, b domain.Checkpoint) int {
		return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), strings.Compare(a.MessageID, b.MessageID))
	})
	return out, nil
}

// prefixCols qualifies each column of a comma-separated list.
func prefixCols(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}
