package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/jackc/pgx/v5"
)

type runRepo Store

func (r *runRepo) st() *Store { return (*Store)(r) }

// ClaimRun implements domain.RunRepository with one UPDATE ... RETURNING:
// it sets RunID, LeaseUntil and UpdatedAt (the server's time) of a
// generating, unclaimed message and clears CancelRequested. An empty
// runID or a zero leaseUntil yields domain.ErrInvalid.
func (r *runRepo) ClaimRun(ctx context.Context, tenantID, messageID, runID string, leaseUntil time.Time) error {
	const op = "claim run"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckClaimRun(runID, leaseUntil); err != nil {
		return fmt.Errorf("postgres: %s on message %s: %w", op, messageID, err)
	}
	s := r.st()
	return claim(ctx, s, op, s.sql(`UPDATE {S}.messages
		SET run_id = $3, lease_until = $4, cancel_requested = false, updated_at = clock_timestamp()
		WHERE tenant_id = $1 AND id = $2 AND status = 'generating' AND run_id = ''
		RETURNING 1`), tenantID, messageID, runID, leaseUntil)
}

// FinishRun implements domain.RunRepository with one statement: an
// UPDATE ... WHERE status = 'generating' AND run_id = runID ... RETURNING
// that writes what UpdateMessage writes (clearing LeaseUntil and
// CancelRequested), joined with an existence check of the message that
// tells a conflict from an unknown message in the same round trip. The
// row lock serialises it with FailExpired: whichever updates the row
// first wins and the other finds it no longer generating. Input is
// checked by domain.CheckFinishRun: a nil m, an empty runID, a generating or invalid
// m.Status or an m.RunID other than runID yield domain.ErrInvalid.
func (r *runRepo) FinishRun(ctx context.Context, m *domain.Message, runID string) error {
	const op = "finish run"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckFinishRun(m, runID); err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, runID, err)
	}
	enc, err := encodeMessage(m)
	if err != nil {
		return fmt.Errorf("postgres: %s %s on message %s: %w", op, runID, m.ID, err)
	}
	updated := m.UpdatedAt
	if updated.IsZero() {
		updated = now()
	}
	s := r.st()
	var done, exists bool
	err = s.pool.QueryRow(ctx, s.sql(`WITH u AS (
			UPDATE {S}.messages SET `+replaceCols+`
			WHERE tenant_id = $1 AND id = $2 AND status = 'generating' AND run_id = $5::text
			RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM u),
			EXISTS (SELECT 1 FROM {S}.messages WHERE tenant_id = $1 AND id = $2)`),
		m.TenantID, m.ID, jsonArg(enc.parts), string(m.Status), runID, jsonArg(enc.metadata), jsonArg(enc.err),
		jsonArg(enc.citations), updated).Scan(&done, &exists)
	switch {
	case err != nil:
		return fmt.Errorf("postgres: %s %s on message %s: %w", op, runID, m.ID, err)
	case !exists:
		return fmt.Errorf("postgres: %s %s on message %s: %w", op, runID, m.ID, domain.ErrNotFound)
	case !done:
		return fmt.Errorf("postgres: %s %s on message %s: the message is no longer generating under this run: %w",
			op, runID, m.ID, domain.ErrConflict)
	}
	m.UpdatedAt = updated
	return nil
}

// RenewLease implements domain.RunRepository with one UPDATE ...
// RETURNING: it moves LeaseUntil (nothing else, UpdatedAt included) and
// returns CancelRequested. An empty runID or a zero until yields
// domain.ErrInvalid.
func (r *runRepo) RenewLease(ctx context.Context, tenantID, messageID, runID string, until time.Time) (bool, error) {
	const op = "renew lease"
	if err := checkCtx(ctx, op); err != nil {
		return false, err
	}
	if err := domain.CheckRenewLease(runID, until); err != nil {
		return false, fmt.Errorf("postgres: %s on message %s: %w", op, messageID, err)
	}
	s := r.st()
	var cancel bool
	err := s.pool.QueryRow(ctx, s.sql(`UPDATE {S}.messages SET lease_until = $4
		WHERE tenant_id = $1 AND id = $2 AND status = 'generating' AND run_id = $3
		RETURNING cancel_requested`), tenantID, messageID, runID, until).Scan(&cancel)
	if errors.Is(err, pgx.ErrNoRows) {
		err = missingOrConflict(ctx, s, tenantID, messageID)
	}
	if err != nil {
		return false, fmt.Errorf("postgres: %s on message %s under run %s: %w", op, messageID, runID, err)
	}
	return cancel, nil
}

// RequestCancel implements domain.RunRepository: it sets
// CancelRequested (nothing else changes) and, when the message is
// claimed, notifies the run's subscribers (SubscribeRunEvents) in the
// same statement, so a runner or watcher in any process wakes up at once.
func (r *runRepo) RequestCancel(ctx context.Context, tenantID, messageID string) error {
	const op = "request cancel"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	s := r.st()
	var runID string
	err := s.pool.QueryRow(ctx, s.sql(`WITH u AS (
			UPDATE {S}.messages SET cancel_requested = true
			WHERE tenant_id = $1 AND id = $2 AND status = 'generating'
			RETURNING run_id)
		SELECT u.run_id FROM u LEFT JOIN LATERAL (
			SELECT pg_notify($3, json_build_object('t', $1::text, 'r', u.run_id, 's', 0)::text)
			WHERE u.run_id <> '') n ON true`), tenantID, messageID, s.channel).Scan(&runID)
	if errors.Is(err, pgx.ErrNoRows) {
		err = missingOrConflict(ctx, s, tenantID, messageID)
	}
	if err != nil {
		return fmt.Errorf("postgres: %s of message %s: %w", op, messageID, err)
	}
	return nil
}

// FailExpired implements domain.RunRepository with one UPDATE over the
// oldest expired leases of every tenant (a partial index covers them),
// skipping rows another caller holds, so concurrent reapers never return
// the same message. Status becomes failed, Metadata.Error e and UpdatedAt
// the server's time; RunID and LeaseUntil are kept. Results come oldest
// lease first, ties by message id; a negative limit yields
// domain.ErrInvalid.
func (r *runRepo) FailExpired(ctx context.Context, asOf time.Time, e domain.MessageError, limit int) ([]domain.Message, error) {
	const op = "fail expired runs"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, wrap(op, domain.Invalid("limit", "must be 0 or greater"))
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, wrap(op, err)
	}
	s := r.st()
	rows, err := s.pool.Query(ctx, s.sql(`WITH picked AS (
			SELECT tenant_id, id FROM {S}.messages
			WHERE status = 'generating' AND lease_until IS NOT NULL AND lease_until < $1
			ORDER BY lease_until, id COLLATE "C"
			LIMIT $3
			FOR UPDATE SKIP LOCKED)
		UPDATE {S}.messages m SET status = 'failed', error = $2, updated_at = clock_timestamp()
		FROM picked WHERE m.tenant_id = picked.tenant_id AND m.id = picked.id
		RETURNING `+prefixCols("m.", messageCols)), asOf, string(b), limitArg(limit))
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := collect(rows, scanMessage)
	if err != nil {
		return nil, wrap(op, err)
	}
	slices.SortFunc(out, func(a, b domain.Message) int {
		return cmp.Or(a.LeaseUntil.Compare(b.LeaseUntil), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}
