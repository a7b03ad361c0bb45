package postgres

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/bichat-go/bichat/quota"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultSchema is Options.Schema when it is empty: the schema
// domain/postgres.Migrate creates by default.
const DefaultSchema = "bichat"

// DefaultSlotTTL is Options.SlotTTL when it is zero.
const DefaultSlotTTL = 15 * time.Minute

// releaseTimeout bounds the statement a release function runs.
const releaseTimeout = 5 * time.Second

// ErrNoSlot is returned by Renew for a run that holds no live slot (never
// admitted, released, or expired).
var ErrNoSlot = errors.New("quota/postgres: run holds no slot")

// Options configures New.
type Options struct {
	// Schema holds the tables quota_scopes and quota_slots (migration
	// 0007 of domain/postgres); default DefaultSchema.
	Schema string
	// SlotTTL is how long a concurrent-run slot lives without Renew:
	// a slot whose replica died before releasing it frees itself after
	// SlotTTL. Default DefaultSlotTTL; runs longer than SlotTTL must call
	// Renew more often than every SlotTTL.
	SlotTTL time.Duration
}

// Limiter is a quota.Limiter whose buckets and slots live in PostgreSQL,
// so that every replica sharing the database enforces the same limits.
// It is safe for concurrent use.
type Limiter struct {
	pool   *pgxpool.Pool
	policy quota.Policy
	ttl    time.Duration

	qScopes, qSlots string // qualified table names
}

var _ quota.Limiter = (*Limiter)(nil)

// New returns a Limiter enforcing p over pool. The schema must have been
// migrated (domain/postgres.Migrate). It reports a nil pool, a bad schema
// name, a negative SlotTTL and limits that are not valid.
func New(pool *pgxpool.Pool, p quota.Policy, opts Options) (*Limiter, error) {
	if pool == nil {
		return nil, errors.New("quota/postgres: new: pool is nil")
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("quota/postgres: new: %w", err)
	}
	if opts.Schema == "" {
		opts.Schema = DefaultSchema
	}
	if len(opts.Schema) > 63 {
		return nil, fmt.Errorf("quota/postgres: new: schema name %q is longer than 63 bytes", opts.Schema)
	}
	switch {
	case opts.SlotTTL == 0:
		opts.SlotTTL = DefaultSlotTTL
	case opts.SlotTTL < time.Millisecond:
		return nil, fmt.Errorf("quota/postgres: new: SlotTTL %v: want 0 (default %v) or at least 1ms", opts.SlotTTL, DefaultSlotTTL)
	}
	return &Limiter{
		pool:    pool,
		policy:  p,
		ttl:     opts.SlotTTL,
		qScopes: pgx.Identifier{opts.Schema, "quota_scopes"}.Sanitize(),
		qSlots:  pgx.Identifier{opts.Schema, "quota_slots"}.Sanitize(),
	}, nil
}

// scope is one scope an operation locks.
type scope struct {
	name   string // quota.ScopeTenant or quota.ScopeUser
	userID string // "" for the tenant
	limits quota.Limits
	state  quota.State
	found  bool
}

// lockScopes creates the rows of scopes when missing, locks them in
// user_id order (the tenant's first, so no two transactions deadlock),
// and returns the database clock read after the locks, with every state
// refilled to it.
func (l *Limiter) lockScopes(ctx context.Context, tx pgx.Tx, tenantID string, scopes []*scope) (time.Time, error) {
	b := &pgx.Batch{}
	ids := make([]string, len(scopes))
	for i, s := range scopes {
		ids[i] = s.userID
		b.Queue(`INSERT INTO `+l.qScopes+` (tenant_id, user_id, req_level, tok_level, updated_at)
			VALUES ($1, $2, $3, $3, clock_timestamp()) ON CONFLICT DO NOTHING`, tenantID, s.userID, quota.LevelFull)
	}
	type row struct {
		user     string
		req, tok int64
		at       time.Time
	}
	var rows []row
	b.Queue(`SELECT user_id, req_level, tok_level, updated_at FROM `+l.qScopes+`
		WHERE tenant_id = $1 AND user_id = ANY($2) ORDER BY user_id FOR UPDATE`, tenantID, ids).Query(func(rs pgx.Rows) error {
		var err error
		rows, err = pgx.CollectRows(rs, func(r pgx.CollectableRow) (row, error) {
			var x row
			err := r.Scan(&x.user, &x.req, &x.tok, &x.at)
			return x, err
		})
		return err
	})
	var now time.Time
	b.Queue(`SELECT clock_timestamp()`).QueryRow(func(r pgx.Row) error { return r.Scan(&now) })
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return time.Time{}, err
	}
	for _, r := range rows {
		for _, s := range scopes {
			if s.userID == r.user {
				s.state = quota.State{Req: r.req, Tok: r.tok}.Refill(s.limits, now.Sub(r.at))
				s.found = true
			}
		}
	}
	for _, s := range scopes {
		if !s.found {
			return time.Time{}, fmt.Errorf("scope row of %q not found after insert", s.userID)
		}
	}
	return now, nil
}

// queueSave queues the update of the scopes' rows to their states at now.
func (l *Limiter) queueSave(b *pgx.Batch, tenantID string, scopes []*scope, now time.Time) {
	for _, s := range scopes {
		b.Queue(`UPDATE `+l.qScopes+` SET req_level = $3, tok_level = $4, updated_at = $5
			WHERE tenant_id = $1 AND user_id = $2`, tenantID, s.userID, s.state.Req, s.state.Tok, now)
	}
}

// scopes returns the scopes of tenantID and userID that have limits among
// the resolved ones, the tenant first; use picks the limits that matter.
func scopesOf(userID string, tl, ul quota.Limits, use func(quota.Limits) bool) []*scope {
	var out []*scope
	if use(tl) {
		out = append(out, &scope{name: quota.ScopeTenant, userID: "", limits: tl})
	}
	if use(ul) {
		out = append(out, &scope{name: quota.ScopeUser, userID: userID, limits: ul})
	}
	return out
}

// Admit implements quota.Limiter in one transaction: it locks the rows of
// the tenant and the user (creating them when missing), refills their
// buckets to the database clock, counts the live slots, and either
// refuses (rolling back: nothing taken) or takes one request from each
// scope and inserts the run's slot with expiry SlotTTL after the database
// clock. The release function deletes the slot with its own 5-second
// deadline; if that fails the slot expires. It returns an error naming the
// problem for an empty tenant, user or run ID and for a bad limit from
// Policy.For, and an error matching quota.ErrExceeded when a limit
// refuses.
func (l *Limiter) Admit(ctx context.Context, tenantID, userID, runID string) (func(), error) {
	switch {
	case tenantID == "":
		return nil, errors.New("quota/postgres: admit: tenant ID is empty")
	case userID == "":
		return nil, errors.New("quota/postgres: admit: user ID is empty")
	case runID == "":
		return nil, errors.New("quota/postgres: admit: run ID is empty")
	}
	tl, ul, err := l.policy.Resolve(tenantID)
	if err != nil {
		return nil, fmt.Errorf("quota/postgres: admit: %w", err)
	}
	scopes := scopesOf(userID, tl, ul, func(x quota.Limits) bool { return !x.IsZero() })
	if len(scopes) == 0 {
		return func() {}, nil // nothing limits the run
	}
	admission, err := newAdmission()
	if err != nil {
		return nil, fmt.Errorf("quota/postgres: admit: %w", err)
	}
	var refused *quota.ExceededError
	err = pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		now, err := l.lockScopes(ctx, tx, tenantID, scopes)
		if err != nil {
			return err
		}
		// Live slots other than this run's own (a re-admission moves it).
		var tenantRuns, userRuns int
		if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE user_id = $2) FROM `+l.qSlots+`
			WHERE tenant_id = $1 AND expires_at > $3 AND run_id <> $4`, tenantID, userID, now, runID).Scan(&tenantRuns, &userRuns); err != nil {
			return err
		}
		for _, s := range scopes {
			s.state.Runs = tenantRuns
			if s.name == quota.ScopeUser {
				s.state.Runs = userRuns
			}
			if e := s.state.Check(s.name, s.limits); e != nil && (refused == nil || e.RetryAfter > refused.RetryAfter) {
				refused = e
			}
		}
		if refused != nil {
			return refused // rolls back
		}
		b := &pgx.Batch{}
		for _, s := range scopes {
			s.state = s.state.TakeRequest(s.limits)
		}
		l.queueSave(b, tenantID, scopes, now)
		b.Queue(`INSERT INTO `+l.qSlots+` (tenant_id, run_id, user_id, admission, expires_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (tenant_id, run_id) DO UPDATE SET user_id = excluded.user_id, admission = excluded.admission, expires_at = excluded.expires_at`,
			tenantID, runID, userID, admission, now.Add(l.ttl))
		b.Queue(`DELETE FROM `+l.qSlots+` WHERE tenant_id = $1 AND expires_at <= $2`, tenantID, now)
		return tx.SendBatch(ctx, b).Close()
	})
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, fmt.Errorf("quota/postgres: admit: %w", err)
	}
	return func() { l.release(tenantID, runID, admission) }, nil
}

// release deletes the slot of runID if it is still admission's.
func (l *Limiter) release(tenantID, runID string, admission int64) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_, _ = l.pool.Exec(ctx, `DELETE FROM `+l.qSlots+` WHERE tenant_id = $1 AND run_id = $2 AND admission = $3`,
		tenantID, runID, admission) // on failure the slot expires after SlotTTL
}

// Charge implements quota.Limiter: in one transaction it locks the rows
// of the scopes that limit tokens, refills them to the database clock and
// takes tokens, possibly into debt. It returns an error naming the
// problem for an empty tenant or user ID, negative tokens and a bad limit
// from Policy.For.
func (l *Limiter) Charge(ctx context.Context, tenantID, userID string, tokens int) error {
	switch {
	case tenantID == "":
		return errors.New("quota/postgres: charge: tenant ID is empty")
	case userID == "":
		return errors.New("quota/postgres: charge: user ID is empty")
	case tokens < 0:
		return fmt.Errorf("quota/postgres: charge: tokens %d is negative", tokens)
	}
	tl, ul, err := l.policy.Resolve(tenantID)
	if err != nil {
		return fmt.Errorf("quota/postgres: charge: %w", err)
	}
	scopes := scopesOf(userID, tl, ul, func(x quota.Limits) bool { return x.TokensPerMinute > 0 })
	if tokens == 0 || len(scopes) == 0 {
		return nil
	}
	err = pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		now, err := l.lockScopes(ctx, tx, tenantID, scopes)
		if err != nil {
			return err
		}
		for _, s := range scopes {
			s.state = s.state.Charge(s.limits, tokens)
		}
		b := &pgx.Batch{}
		l.queueSave(b, tenantID, scopes, now)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("quota/postgres: charge: %w", err)
	}
	return nil
}

// Renew extends the slot of runID of tenantID to SlotTTL after the
// database clock. A run that lasts longer than SlotTTL calls it
// periodically (every SlotTTL/3, say); a slot of a replica that died is
// renewed by no one and frees itself. It returns ErrNoSlot when the run
// holds no live slot (released, expired, or never admitted under a
// limit).
func (l *Limiter) Renew(ctx context.Context, tenantID, runID string) error {
	if tenantID == "" || runID == "" {
		return errors.New("quota/postgres: renew: tenant ID and run ID must not be empty")
	}
	tag, err := l.pool.Exec(ctx, `UPDATE `+l.qSlots+` SET expires_at = clock_timestamp() + $3::interval
		WHERE tenant_id = $1 AND run_id = $2 AND expires_at > clock_timestamp()`, tenantID, runID, l.ttl)
	if err != nil {
		return fmt.Errorf("quota/postgres: renew run %q: %w", runID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("quota/postgres: renew run %q of tenant %q: %w", runID, tenantID, ErrNoSlot)
	}
	return nil
}

// Prune deletes the scope rows whose buckets have refilled (unused for a
// minute and not in debt: the same as missing rows) and the expired
// slots, across all tenants, and returns how many rows it deleted. Call
// it periodically (hourly, say) from one replica or several; it changes
// no limit.
func (l *Limiter) Prune(ctx context.Context) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		// SKIP LOCKED: rows an Admit holds are in use, not idle.
		tag, err := tx.Exec(ctx, `DELETE FROM `+l.qScopes+` WHERE (tenant_id, user_id) IN (
			SELECT tenant_id, user_id FROM `+l.qScopes+`
			WHERE updated_at < clock_timestamp() - interval '1 minute' AND req_level >= 0 AND tok_level >= 0
			FOR UPDATE SKIP LOCKED)`)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		tag, err = tx.Exec(ctx, `DELETE FROM `+l.qSlots+` WHERE expires_at <= clock_timestamp()`)
		n += tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("quota/postgres: prune: %w", err)
	}
	return n, nil
}

func newAdmission() (int64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("random admission id: %w", err)
	}
	return int64(binary.LittleEndian.Uint64(b[:])), nil
}
