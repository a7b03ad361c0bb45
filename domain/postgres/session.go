package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bichat-go/bichat/domain"
	"github.com/jackc/pgx/v5"
)

type sessionRepo Store

func (r *sessionRepo) st() *Store { return (*Store)(r) }

// CreateSession implements domain.SessionRepository. Input is checked by
// domain.CheckCreateSession (sess.ID must pass domain.ValidID, tenant
// and owner are required); defaults match domain/memory: a zero CreatedAt becomes the current time and a
// zero UpdatedAt becomes CreatedAt (written back to sess). Ids are scoped
// by tenant: an id used in the same tenant yields domain.ErrConflict.
func (r *sessionRepo) CreateSession(ctx context.Context, sess *domain.Session) error {
	const op = "create session"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckCreateSession(sess); err != nil {
		return wrap(op, err)
	}
	created, updated := sess.CreatedAt, sess.UpdatedAt
	if created.IsZero() {
		created = now()
	}
	if updated.IsZero() {
		updated = created
	}
	_, err := r.st().pool.Exec(ctx, r.st().sql(`INSERT INTO {S}.sessions
		(tenant_id, id, owner_id, title, model, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`),
		sess.TenantID, sess.ID, sess.OwnerID, sess.Title, sess.Model, created, updated)
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, sess.ID, classify(err))
	}
	sess.CreatedAt, sess.UpdatedAt = created, updated
	return nil
}

const sessionCols = `id, tenant_id, owner_id, title, model, created_at, updated_at`

func scanSession(row pgx.Row) (domain.Session, error) {
	var s domain.Session
	err := row.Scan(&s.ID, &s.TenantID, &s.OwnerID, &s.Title, &s.Model, &s.CreatedAt, &s.UpdatedAt)
	return s, err
}

// GetSession implements domain.SessionRepository.
func (r *sessionRepo) GetSession(ctx context.Context, tenantID, id string) (*domain.Session, error) {
	const op = "get session"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	s, err := scanSession(r.st().pool.QueryRow(ctx, r.st().sql(`SELECT `+sessionCols+`
		FROM {S}.sessions WHERE tenant_id = $1 AND id = $2`), tenantID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: %s %s: %w", op, id, domain.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: %s %s: %w", op, id, err)
	}
	return &s, nil
}

// ListSessions implements domain.SessionRepository with the semantics of
// domain/memory: Search keeps titles containing it ignoring case (compared
// with lower() on both sides), title sorting compares lower-cased titles
// byte-wise and then the titles themselves, and ties go by id, all in the
// requested order.
func (r *sessionRepo) ListSessions(ctx context.Context, tenantID, ownerID string, opts domain.ListOptions) (domain.Page[domain.Session], error) {
	const op = "list sessions"
	if err := checkCtx(ctx, op); err != nil {
		return domain.Page[domain.Session]{}, err
	}
	opts, err := opts.Normalize()
	if err != nil {
		return domain.Page[domain.Session]{}, wrap(op, err)
	}
	search := strings.ToLower(opts.Search)
	where := `tenant_id = $1 AND owner_id = $2 AND ($3 = '' OR strpos(lower(title), $3) > 0)`
	var total int
	if err := r.st().pool.QueryRow(ctx, r.st().sql(`SELECT count(*) FROM {S}.sessions WHERE `+where),
		tenantID, ownerID, search).Scan(&total); err != nil {
		return domain.Page[domain.Session]{}, wrap(op, err)
	}
	page := domain.Page[domain.Session]{Items: []domain.Session{}, Total: total, Page: opts.Page, PageSize: opts.PageSize,
		TotalPages: (total + opts.PageSize - 1) / opts.PageSize}
	if total == 0 || opts.Page > page.TotalPages {
		return page, nil
	}
	dir := "DESC"
	if opts.Order == domain.Asc {
		dir = "ASC"
	}
	var order string
	switch opts.Sort {
	case domain.SortCreated:
		order = "created_at " + dir + ", id COLLATE \"C\" " + dir
	case domain.SortTitle:
		order = "lower(title) COLLATE \"C\" " + dir + ", title COLLATE \"C\" " + dir + ", id COLLATE \"C\" " + dir
	default:
		order = "updated_at " + dir + ", id COLLATE \"C\" " + dir
	}
	offset := int64(opts.Page-1) * int64(opts.PageSize)
	rows, err := r.st().pool.Query(ctx, r.st().sql(`SELECT `+sessionCols+` FROM {S}.sessions WHERE `+where+
		` ORDER BY `+order+` LIMIT $4 OFFSET $5`), tenantID, ownerID, search, opts.PageSize, offset)
	if err != nil {
		return domain.Page[domain.Session]{}, wrap(op, err)
	}
	if page.Items, err = collect(rows, scanSession); err != nil {
		return domain.Page[domain.Session]{}, wrap(op, err)
	}
	return page, nil
}

// UpdateSession implements domain.SessionRepository: it sets Title,
// Model and UpdatedAt (the current time when zero, written back).
func (r *sessionRepo) UpdateSession(ctx context.Context, sess *domain.Session) error {
	const op = "update session"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if sess == nil {
		return wrap(op, domain.Invalid("session", "is required"))
	}
	updated := sess.UpdatedAt
	if updated.IsZero() {
		updated = now()
	}
	tag, err := r.st().pool.Exec(ctx, r.st().sql(`UPDATE {S}.sessions SET title = $3, model = $4, updated_at = $5
		WHERE tenant_id = $1 AND id = $2`), sess.TenantID, sess.ID, sess.Title, sess.Model, updated)
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, sess.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s %s: %w", op, sess.ID, domain.ErrNotFound)
	}
	sess.UpdatedAt = updated
	return nil
}

// DeleteSession implements domain.SessionRepository. In one transaction
// it removes the session, its messages, the checkpoints and artifacts of
// the session or of its messages, the session's run events and results,
// and the artifact content (see ArtifactStore) that no remaining artifact
// of the tenant refers to any more.
func (r *sessionRepo) DeleteSession(ctx context.Context, tenantID, id string) error {
	const op = "delete session"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	s := r.st()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, s.sql(`SELECT 1 FROM {S}.sessions WHERE tenant_id = $1 AND id = $2 FOR UPDATE`),
			tenantID, id).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.ErrNotFound
		}
		if err != nil {
			return err
		}
		var hashes, runs []string
		err = tx.QueryRow(ctx, s.sql(`WITH
			msgs AS (DELETE FROM {S}.messages WHERE tenant_id = $1 AND session_id = $2 RETURNING id),
			cps  AS (DELETE FROM {S}.checkpoints WHERE tenant_id = $1
			           AND (session_id = $2 OR message_id IN (SELECT id FROM msgs))),
			arts AS (DELETE FROM {S}.artifacts WHERE tenant_id = $1
			           AND (session_id = $2 OR message_id IN (SELECT id FROM msgs)) RETURNING sha256),
			evs  AS (DELETE FROM {S}.run_events WHERE tenant_id = $1 AND session_id = $2 RETURNING run_id),
			res  AS (DELETE FROM {S}.results WHERE tenant_id = $1 AND session_id = $2),
			sess AS (DELETE FROM {S}.sessions WHERE tenant_id = $1 AND id = $2)
			SELECT (SELECT coalesce(array_agg(DISTINCT sha256) FILTER (WHERE sha256 <> ''), '{}') FROM arts),
			       (SELECT coalesce(array_agg(DISTINCT run_id), '{}') FROM evs)`),
			tenantID, id).Scan(&hashes, &runs)
		if err != nil {
			return err
		}
		if err := freeContent(ctx, s, tx, tenantID, hashes); err != nil {
			return err
		}
		// Watchers of the removed runs read the log again and find it
		// gone; the notifications are delivered at commit.
		if len(runs) > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, json_build_object('t', $2::text, 'r', r, 's', 0)::text)
				FROM unnest($3::text[]) AS r`, s.channel, tenantID, runs); err != nil {
				return fmt.Errorf("notify watchers of the deleted runs: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, id, err)
	}
	return nil
}

// freeContent deletes, within tx, the artifact content of tenantID among
// hashes that no artifact of the tenant refers to any more.
func freeContent(ctx context.Context, s *Store, tx pgx.Tx, tenantID string, hashes []string) error {
	if len(hashes) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, s.sql(`WITH freed AS (
			DELETE FROM {S}.artifact_content c
			WHERE c.tenant_id = $1 AND c.sha256 = ANY($2)
			  AND NOT EXISTS (SELECT 1 FROM {S}.artifacts a WHERE a.tenant_id = c.tenant_id AND a.sha256 = c.sha256)
			RETURNING sha256)
		DELETE FROM {S}.artifact_chunks WHERE tenant_id = $1 AND sha256 IN (SELECT sha256 FROM freed)`),
		tenantID, hashes)
	if err != nil {
		return fmt.Errorf("free unreferenced artifact content: %w", err)
	}
	return nil
}
