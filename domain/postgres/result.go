package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/bichat-go/bichat/domain"
	"github.com/jackc/pgx/v5"
)

type resultRepo Store

func (r *resultRepo) st() *Store { return (*Store)(r) }

// PutResult implements domain.ResultRepository with the semantics of
// domain/memory, in one transaction that locks the session row (so puts
// to one session are serialised and result_N numbers never repeat): a
// set r.Name (domain.ValidName) replaces the result of that name, which
// becomes the newest; an empty one takes the next "result_N" of the
// session, skipping names a caller chose. Then the oldest results beyond
// Options.ResultsPerSession, and beyond Options.MaxSessionResultBytes when
// set, are deleted. Data over Options.MaxResultBytes yields
// domain.ErrTooLarge. On error nothing is stored and no name is used up.
func (r *resultRepo) PutResult(ctx context.Context, res *domain.StoredResult) (string, error) {
	const op = "put result"
	if err := checkCtx(ctx, op); err != nil {
		return "", err
	}
	if err := domain.CheckPutResult(res); err != nil {
		return "", wrap(op, err)
	}
	s := r.st()
	if int64(len(res.Data)) > s.opts.MaxResultBytes {
		return "", fmt.Errorf("postgres: %s: %d bytes of data, over the limit of %d bytes per result: %w",
			op, len(res.Data), s.opts.MaxResultBytes, domain.ErrTooLarge)
	}
	created := res.CreatedAt
	if created.IsZero() {
		created = now()
	}
	data := res.Data
	if data == nil {
		data = []byte{}
	}
	name := res.Name
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var last int64
		err := tx.QueryRow(ctx, s.sql(`SELECT last_result FROM {S}.sessions WHERE tenant_id = $1 AND id = $2 FOR UPDATE`),
			res.TenantID, res.SessionID).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("session %s: %w", res.SessionID, domain.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if name == "" {
			// The next result_N whose name no result of the session holds.
			err := tx.QueryRow(ctx, s.sql(`SELECT n FROM generate_series($3::bigint + 1, $3::bigint + 1 + $4::bigint) AS n
				WHERE NOT EXISTS (SELECT 1 FROM {S}.results
					WHERE tenant_id = $1 AND session_id = $2 AND name = 'result_' || n)
				ORDER BY n LIMIT 1`), res.TenantID, res.SessionID, last, s.opts.ResultsPerSession+1).Scan(&last)
			if err != nil {
				return err
			}
			name = "result_" + strconv.FormatInt(last, 10)
			if _, err := tx.Exec(ctx, s.sql(`UPDATE {S}.sessions SET last_result = $3 WHERE tenant_id = $1 AND id = $2`),
				res.TenantID, res.SessionID, last); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, s.sql(`INSERT INTO {S}.results (tenant_id, session_id, name, size, data, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (tenant_id, session_id, name) DO UPDATE SET
				size = excluded.size, data = excluded.data, created_at = excluded.created_at,
				put_seq = nextval('{S}.results_put_seq')`),
			res.TenantID, res.SessionID, name, len(data), data, created); err != nil {
			return err
		}
		var byteCap *int64
		if s.opts.MaxSessionResultBytes > 0 {
			byteCap = &s.opts.MaxSessionResultBytes
		}
		_, err = tx.Exec(ctx, s.sql(`DELETE FROM {S}.results r USING (
				SELECT name, row_number() OVER w AS rn, sum(size) OVER w AS total
				FROM {S}.results WHERE tenant_id = $1 AND session_id = $2
				WINDOW w AS (ORDER BY put_seq DESC)) old
			WHERE r.tenant_id = $1 AND r.session_id = $2 AND r.name = old.name
			  AND old.rn > 1 AND (old.rn > $3 OR ($4::bigint IS NOT NULL AND old.total > $4))`),
			res.TenantID, res.SessionID, s.opts.ResultsPerSession, byteCap)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("postgres: %s: %w", op, err)
	}
	return name, nil
}

// GetResult implements domain.ResultRepository. An unknown session (or
// another tenant's) or name yields domain.ErrNotFound.
func (r *resultRepo) GetResult(ctx context.Context, tenantID, sessionID, name string) (*domain.StoredResult, error) {
	const op = "get result"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	s := r.st()
	res := domain.StoredResult{TenantID: tenantID, SessionID: sessionID, Name: name}
	err := s.pool.QueryRow(ctx, s.sql(`SELECT data, created_at FROM {S}.results
		WHERE tenant_id = $1 AND session_id = $2 AND name = $3`), tenantID, sessionID, name).Scan(&res.Data, &res.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: %s %q of session %s: %w", op, name, sessionID, domain.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: %s %q of session %s: %w", op, name, sessionID, err)
	}
	return &res, nil
}

// ListResults implements domain.ResultRepository: names oldest first (a
// replaced result counts from its replacement), never nil. A session that
// does not exist in the tenant yields domain.ErrNotFound.
func (r *resultRepo) ListResults(ctx context.Context, tenantID, sessionID string) ([]string, error) {
	const op = "list results"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	s := r.st()
	var exists bool
	var names []string
	err := s.pool.QueryRow(ctx, s.sql(`SELECT
		EXISTS (SELECT 1 FROM {S}.sessions WHERE tenant_id = $1 AND id = $2),
		coalesce((SELECT array_agg(name ORDER BY put_seq) FROM {S}.results WHERE tenant_id = $1 AND session_id = $2), '{}')`),
		tenantID, sessionID).Scan(&exists, &names)
	if err != nil {
		return nil, wrap(op, err)
	}
	if !exists {
		return nil, fmt.Errorf("postgres: %s: session %s: %w", op, sessionID, domain.ErrNotFound)
	}
	if names == nil {
		names = []string{}
	}
	return names, nil
}
