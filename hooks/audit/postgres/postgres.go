package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"regexp"
	"strings"

	"github.com/bichat-go/bichat/hooks/audit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options configure a Sink.
type Options struct {
	// Schema holds the audit_entries and audit_heads tables (see
	// domain/postgres.Migrate); empty means "bichat".
	Schema string
}

// Sink is the PostgreSQL audit.Sink and audit.Reader. It is safe for
// concurrent use, also by several processes sharing the database.
type Sink struct {
	pool    *pgxpool.Pool
	entries string
	heads   string
}

var (
	_ audit.Sink   = (*Sink)(nil)
	_ audit.Reader = (*Sink)(nil)
)

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`)

// New returns a Sink over pool, whose tables live in opts.Schema. It
// never opens connections of its own.
func New(pool *pgxpool.Pool, opts Options) (*Sink, error) {
	if pool == nil {
		return nil, errors.New("audit/postgres: new sink: pool is nil")
	}
	if opts.Schema == "" {
		opts.Schema = "bichat"
	}
	if !schemaRE.MatchString(opts.Schema) {
		return nil, fmt.Errorf("audit/postgres: new sink: schema %q: must be 1 to 40 lowercase letters, digits or underscores, not starting with a digit", opts.Schema)
	}
	return &Sink{pool: pool,
		entries: pgx.Identifier{opts.Schema, "audit_entries"}.Sanitize(),
		heads:   pgx.Identifier{opts.Schema, "audit_heads"}.Sanitize()}, nil
}

func (s *Sink) q(stmt string) string {
	return strings.NewReplacer("{E}", s.entries, "{H}", s.heads).Replace(stmt)
}

// Append implements audit.Sink. In one transaction it creates the
// tenant's head row when missing, locks it (SELECT ... FOR UPDATE), so
// the appends of every process to that tenant take turns, calls seal
// with it, inserts the entry and moves the head.
func (s *Sink) Append(ctx context.Context, tenantID string, seal audit.SealFunc) (audit.Entry, error) {
	var out audit.Entry
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(s.q(`INSERT INTO {H} (tenant_id, seq, hash) VALUES ($1, 0, $2) ON CONFLICT (tenant_id) DO NOTHING`), tenantID, audit.ZeroHash)
		var seq int64
		head := audit.Anchor{TenantID: tenantID}
		b.Queue(s.q(`SELECT seq, hash FROM {H} WHERE tenant_id = $1 FOR UPDATE`), tenantID).QueryRow(func(row pgx.Row) error {
			return row.Scan(&seq, &head.Hash)
		})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("lock the head: %w", err)
		}
		head.Seq = uint64(seq)
		e, err := seal(head)
		if err != nil {
			return err
		}
		if e.Seq > math.MaxInt64 {
			return fmt.Errorf("seq %d does not fit a bigint", e.Seq)
		}
		b = &pgx.Batch{}
		b.Queue(s.q(`INSERT INTO {E} (tenant_id, seq, occurred_at, type, user_id, session_id, message_id, run_id, data, prev, hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`),
			tenantID, int64(e.Seq), e.Time, e.Type, e.UserID, e.SessionID, e.MessageID, e.RunID, string(e.Data), e.Prev, e.Hash)
		b.Queue(s.q(`UPDATE {H} SET seq = $2, hash = $3, updated_at = now() WHERE tenant_id = $1`), tenantID, int64(e.Seq), e.Hash)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("insert seq %d: %w", e.Seq, err)
		}
		out = e
		return nil
	})
	if err != nil {
		return audit.Entry{}, fmt.Errorf("audit/postgres: append for tenant %q: %w", tenantID, err)
	}
	return out, nil
}

// Head implements audit.Sink and audit.Reader.
func (s *Sink) Head(ctx context.Context, tenantID string) (audit.Anchor, error) {
	a := audit.Anchor{TenantID: tenantID, Hash: audit.ZeroHash}
	var seq int64
	err := s.pool.QueryRow(ctx, s.q(`SELECT seq, hash FROM {H} WHERE tenant_id = $1`), tenantID).Scan(&seq, &a.Hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, nil
	}
	if err != nil {
		return audit.Anchor{}, fmt.Errorf("audit/postgres: head of tenant %q: %w", tenantID, err)
	}
	if seq < 0 {
		return audit.Anchor{}, fmt.Errorf("audit/postgres: head of tenant %q: negative seq %d", tenantID, seq)
	}
	a.Seq = uint64(seq)
	return a, nil
}

// Entries implements audit.Reader: tenantID's rows in seq order, with
// the tenant's head row, read by one statement (one snapshot). A row the
// head does not cover (a seq above the head's, or no head row at all:
// Append writes both in one transaction, so only a write that bypassed
// it makes one) and a row with a negative seq are yielded as
// audit.ErrCorrupt errors.
func (s *Sink) Entries(ctx context.Context, tenantID string) iter.Seq2[audit.Entry, error] {
	return func(yield func(audit.Entry, error) bool) {
		rows, err := s.pool.Query(ctx, s.q(`SELECT e.tenant_id, e.seq, e.occurred_at, e.type, e.user_id, e.session_id, e.message_id, e.run_id, e.data, e.prev, e.hash, h.seq
			FROM {E} e LEFT JOIN {H} h ON h.tenant_id = e.tenant_id WHERE e.tenant_id = $1 ORDER BY e.seq`), tenantID)
		if err != nil {
			yield(audit.Entry{}, fmt.Errorf("audit/postgres: entries of tenant %q: %w", tenantID, err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var e audit.Entry
			var seq int64
			var head *int64
			var data string
			if err := rows.Scan(&e.TenantID, &seq, &e.Time, &e.Type, &e.UserID, &e.SessionID, &e.MessageID, &e.RunID, &data, &e.Prev, &e.Hash, &head); err != nil {
				yield(audit.Entry{}, fmt.Errorf("audit/postgres: entries of tenant %q: %w", tenantID, err))
				return
			}
			var bad error
			switch {
			case seq < 0:
				bad = fmt.Errorf("%w: tenant %q row with seq %d", audit.ErrCorrupt, tenantID, seq)
			case head == nil:
				bad = fmt.Errorf("%w: tenant %q row with seq %d but no head row", audit.ErrCorrupt, tenantID, seq)
			case seq > *head:
				bad = fmt.Errorf("%w: tenant %q row with seq %d beyond the head (seq %d): written outside Append", audit.ErrCorrupt, tenantID, seq, *head)
			}
			if bad != nil {
				if !yield(audit.Entry{}, bad) {
					return
				}
				continue
			}
			e.Seq = uint64(seq)
			e.Time = e.Time.UTC()
			e.Data = []byte(data)
			if !yield(e, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(audit.Entry{}, fmt.Errorf("audit/postgres: entries of tenant %q: %w", tenantID, err))
		}
	}
}

// Tenants implements audit.Reader: every tenant with a head row or an
// entry.
func (s *Sink) Tenants(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, s.q(`SELECT t FROM (SELECT tenant_id FROM {H} UNION SELECT tenant_id FROM {E}) AS u(t) ORDER BY t COLLATE "C"`))
	if err != nil {
		return nil, fmt.Errorf("audit/postgres: tenants: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("audit/postgres: tenants: %w", err)
	}
	return out, nil
}
