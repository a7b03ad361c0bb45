package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The Store is the PostgreSQL domain.CostLedger: every replica whose
// Store shares the schema shares the totals.
var _ domain.CostLedger = (*Store)(nil)

// addCostSQL upserts the session total (when there is a session) and then
// the tenant-day total, in one statement and so one transaction: a
// reader sees both or neither. Reading s in the main query makes the
// session row lock come first in every AddCost, so concurrent calls
// always lock in the same order and cannot deadlock.
const addCostSQL = `WITH s AS (
	INSERT INTO {S}.cost_sessions AS c (tenant_id, session_id, usd_nanos, calls, updated_at)
	SELECT $1::text, $2::text, $3::bigint, 1, now() WHERE $2::text <> ''
	ON CONFLICT (tenant_id, session_id) DO UPDATE
	SET usd_nanos = c.usd_nanos + EXCLUDED.usd_nanos, calls = c.calls + 1, updated_at = EXCLUDED.updated_at
	RETURNING 1
)
INSERT INTO {S}.cost_days AS d (tenant_id, day, usd_nanos, calls,
	prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens, reasoning_tokens, total_tokens)
SELECT $1::text, $4::date, $3::bigint, 1, $5::bigint, $6::bigint, $7::bigint, $8::bigint, $9::bigint, $10::bigint
FROM (SELECT count(*) FROM s) AS session_done
ON CONFLICT (tenant_id, day) DO UPDATE SET
	usd_nanos = d.usd_nanos + EXCLUDED.usd_nanos,
	calls = d.calls + 1,
	prompt_tokens = d.prompt_tokens + EXCLUDED.prompt_tokens,
	completion_tokens = d.completion_tokens + EXCLUDED.completion_tokens,
	cached_tokens = d.cached_tokens + EXCLUDED.cached_tokens,
	cache_write_tokens = d.cache_write_tokens + EXCLUDED.cache_write_tokens,
	reasoning_tokens = d.reasoning_tokens + EXCLUDED.reasoning_tokens,
	total_tokens = d.total_tokens + EXCLUDED.total_tokens`

// AddCost implements domain.CostLedger in one statement (one round
// trip): an atomic upsert of the session's row in cost_sessions (when
// e.SessionID is set) and of the tenant-day row in cost_days, adding
// e.USD rounded to the nearest domain.NanoUSD. Concurrent calls from any
// number of Stores sharing the schema sum exactly. Input is checked by
// domain.CheckCostEntry. A total that would pass about 9.2 billion
// dollars is an error and changes nothing.
func (s *Store) AddCost(ctx context.Context, e domain.CostEntry) error {
	const op = "add cost"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckCostEntry(e); err != nil {
		return wrap(op, err)
	}
	u := e.Usage
	_, err := s.pool.Exec(ctx, s.sql(addCostSQL),
		e.TenantID, e.SessionID, domain.ToNanoUSD(e.USD), domain.CostDay(e.Time),
		int64(u.PromptTokens), int64(u.CompletionTokens), int64(u.CachedTokens),
		int64(u.CacheWriteTokens), int64(u.ReasoningTokens), int64(u.TotalTokens))
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "22003" { // numeric_value_out_of_range
			return fmt.Errorf("postgres: %s: total out of range: %w", op, err)
		}
		return wrap(op, err)
	}
	return nil
}

// SessionCost implements domain.CostLedger with one primary-key lookup.
// A session never added to costs 0.
func (s *Store) SessionCost(ctx context.Context, tenantID, sessionID string) (float64, error) {
	const op = "session cost"
	if err := checkCtx(ctx, op); err != nil {
		return 0, err
	}
	if err := domain.CheckSessionCost(tenantID, sessionID); err != nil {
		return 0, wrap(op, err)
	}
	return s.costNanos(ctx, op, s.sql(`SELECT usd_nanos FROM {S}.cost_sessions
		WHERE tenant_id = $1 AND session_id = $2`), tenantID, sessionID)
}

// TenantDayCost implements domain.CostLedger with one primary-key
// lookup. A day without calls costs 0.
func (s *Store) TenantDayCost(ctx context.Context, tenantID string, day time.Time) (float64, error) {
	const op = "tenant day cost"
	if err := checkCtx(ctx, op); err != nil {
		return 0, err
	}
	if err := domain.CheckTenantDayCost(tenantID, day); err != nil {
		return 0, wrap(op, err)
	}
	return s.costNanos(ctx, op, s.sql(`SELECT usd_nanos FROM {S}.cost_days
		WHERE tenant_id = $1 AND day = $2::date`), tenantID, domain.CostDay(day))
}

// costNanos runs a query of one usd_nanos and converts it; no row is 0.
func (s *Store) costNanos(ctx context.Context, op, query string, args ...any) (float64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, query, args...).Scan(&n)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, wrap(op, err)
	}
	return domain.FromNanoUSD(n), nil
}

// TenantDays implements domain.CostLedger: the tenant's rows of
// cost_days from..to, oldest first, days without calls omitted.
func (s *Store) TenantDays(ctx context.Context, tenantID string, from, to time.Time) ([]domain.DayCost, error) {
	const op = "tenant days"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	if err := domain.CheckTenantDays(tenantID, from, to); err != nil {
		return nil, wrap(op, err)
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT day, usd_nanos, calls, prompt_tokens, completion_tokens,
		cached_tokens, cache_write_tokens, reasoning_tokens, total_tokens
		FROM {S}.cost_days WHERE tenant_id = $1 AND day BETWEEN $2::date AND $3::date ORDER BY day`),
		tenantID, domain.CostDay(from), domain.CostDay(to))
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := collect(rows, func(row pgx.Row) (domain.DayCost, error) {
		var (
			d        domain.DayCost
			day      time.Time
			n, calls int64
			tok      [6]int64
		)
		if err := row.Scan(&day, &n, &calls, &tok[0], &tok[1], &tok[2], &tok[3], &tok[4], &tok[5]); err != nil {
			return d, err
		}
		d.Day = domain.CostDay(day)
		d.USD = domain.FromNanoUSD(n)
		d.Calls = int(calls)
		d.Usage = domain.Usage{PromptTokens: int(tok[0]), CompletionTokens: int(tok[1]), CachedTokens: int(tok[2]),
			CacheWriteTokens: int(tok[3]), ReasoningTokens: int(tok[4]), TotalTokens: int(tok[5])}
		return d, nil
	})
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// PruneCosts deletes, in every tenant, the cost_days rows of UTC days
// before the day containing before, and the cost_sessions rows last
// updated before that day's midnight, and reports how many rows of each
// it deleted. The PostgreSQL ledger keeps everything until pruned: call
// it from a periodic job (e.g. daily, with before a retention period
// ago), from one replica or several (deleting twice is harmless). A
// session pruned while still in use restarts its total from 0.
func (s *Store) PruneCosts(ctx context.Context, before time.Time) (sessions, days int64, err error) {
	const op = "prune costs"
	if err := checkCtx(ctx, op); err != nil {
		return 0, 0, err
	}
	if before.IsZero() {
		return 0, 0, wrap(op, domain.Invalid("before", "is required"))
	}
	if y := before.UTC().Year(); y < 1 || y > 9999 {
		return 0, 0, wrap(op, domain.Invalid("before", "must be in the years 1 to 9999 (UTC)"))
	}
	day := domain.CostDay(before)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, s.sql(`DELETE FROM {S}.cost_days WHERE day < $1::date`), day)
		if err != nil {
			return err
		}
		days = tag.RowsAffected()
		tag, err = tx.Exec(ctx, s.sql(`DELETE FROM {S}.cost_sessions WHERE updated_at < $1`), day)
		if err != nil {
			return err
		}
		sessions = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, 0, wrap(op, err)
	}
	return sessions, days, nil
}
