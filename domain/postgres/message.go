package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/jackc/pgx/v5"
)

type messageRepo Store

func (r *messageRepo) st() *Store { return (*Store)(r) }

const messageCols = `id, tenant_id, session_id, role, parts, status, run_id, lease_until, cancel_requested,
	metadata, error, citations, attachments, created_at, updated_at`

// scanMessage reads a row of messageCols.
func scanMessage(row pgx.Row) (domain.Message, error) {
	var m domain.Message
	var parts, md, merr, cits, atts []byte
	var lease *time.Time
	err := row.Scan(&m.ID, &m.TenantID, &m.SessionID, &m.Role, &parts, &m.Status, &m.RunID, &lease, &m.CancelRequested,
		&md, &merr, &cits, &atts, &m.CreatedAt, &m.UpdatedAt)
	if err != nil {
		return m, err
	}
	m.LeaseUntil = fromNullTime(lease)
	for _, f := range []struct {
		b []byte
		v any
	}{{parts, &m.Parts}, {md, &m.Metadata}, {cits, &m.Citations}, {atts, &m.Attachments}} {
		if len(f.b) == 0 {
			continue
		}
		if err := json.Unmarshal(f.b, f.v); err != nil {
			return m, fmt.Errorf("decode message %s: %w", m.ID, err)
		}
	}
	m.Metadata.Error = nil
	if len(merr) > 0 && string(merr) != "null" {
		var e domain.MessageError
		if err := json.Unmarshal(merr, &e); err != nil {
			return m, fmt.Errorf("decode message %s: %w", m.ID, err)
		}
		m.Metadata.Error = &e
	}
	return m, nil
}

// encodedMessage holds the JSON columns of a message.
type encodedMessage struct {
	parts, metadata, err, citations, attachments []byte
}

func encodeMessage(m *domain.Message) (encodedMessage, error) {
	var e encodedMessage
	var err error
	if e.parts, err = json.Marshal(m.Parts); err != nil {
		return e, fmt.Errorf("encode parts: %w", err)
	}
	md := m.Metadata
	md.Error = nil
	if e.metadata, err = json.Marshal(md); err != nil {
		return e, fmt.Errorf("encode metadata: %w", err)
	}
	if m.Metadata.Error != nil {
		if e.err, err = json.Marshal(m.Metadata.Error); err != nil {
			return e, fmt.Errorf("encode error: %w", err)
		}
	}
	if m.Citations != nil {
		if e.citations, err = json.Marshal(m.Citations); err != nil {
			return e, fmt.Errorf("encode citations: %w", err)
		}
	}
	if m.Attachments != nil {
		if e.attachments, err = json.Marshal(m.Attachments); err != nil {
			return e, fmt.Errorf("encode attachments: %w", err)
		}
	}
	return e, nil
}

// jsonArg passes encoded JSON to a json column, nil as NULL.
func jsonArg(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// CreateMessages implements domain.MessageRepository: all messages or
// none, in one transaction (one multi-row INSERT). Input is checked by
// domain.CheckCreateMessages; defaults match domain/memory. An id already used in the tenant, or
// repeated in msgs, yields domain.ErrConflict; a session that does not
// exist in the tenant domain.ErrNotFound.
func (r *messageRepo) CreateMessages(ctx context.Context, msgs ...*domain.Message) error {
	const op = "create messages"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return nil
	}
	if err := domain.CheckCreateMessages(msgs); err != nil {
		return wrap(op, err)
	}
	seen := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if seen[m.ID] {
			return fmt.Errorf("postgres: %s: message %s: %w", op, m.ID, domain.ErrConflict)
		}
		seen[m.ID] = true
	}
	tenantID, sessionID := msgs[0].TenantID, msgs[0].SessionID
	n := len(msgs)
	ids, roles, statuses, runIDs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	parts, mds, errs, cits, atts := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	leases := make([]*time.Time, n)
	cancels := make([]bool, n)
	created, updated := make([]time.Time, n), make([]time.Time, n)
	t := now()
	str := func(b []byte) *string {
		if b == nil {
			return nil
		}
		s := string(b)
		return &s
	}
	for i, m := range msgs {
		enc, err := encodeMessage(m)
		if err != nil {
			return fmt.Errorf("postgres: %s: message %s: %w", op, m.ID, err)
		}
		ids[i], roles[i], statuses[i], runIDs[i] = m.ID, string(m.Role), string(m.Status), m.RunID
		parts[i], mds[i], errs[i], cits[i], atts[i] = str(enc.parts), str(enc.metadata), str(enc.err), str(enc.citations), str(enc.attachments)
		leases[i], cancels[i] = nullTime(m.LeaseUntil), m.CancelRequested
		created[i] = m.CreatedAt
		if created[i].IsZero() {
			created[i] = t
		}
		updated[i] = m.UpdatedAt
		if updated[i].IsZero() {
			updated[i] = created[i]
		}
	}
	s := r.st()
	// One statement: the insert is atomic, and unnest WITH ORDINALITY
	// keeps the batch's order in the identity column seq.
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {S}.messages
		(tenant_id, session_id, id, role, parts, status, run_id, lease_until, cancel_requested,
		 metadata, error, citations, attachments, created_at, updated_at)
		SELECT $1, $2, u.id, u.role, u.parts::json, u.status, u.run_id, u.lease_until, u.cancel_requested,
		       u.metadata::json, u.error::json, u.citations::json, u.attachments::json, u.created_at, u.updated_at
		FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::bool[],
		            $10::text[], $11::text[], $12::text[], $13::text[], $14::timestamptz[], $15::timestamptz[])
		     WITH ORDINALITY AS u(id, role, parts, status, run_id, lease_until, cancel_requested,
		                         metadata, error, citations, attachments, created_at, updated_at, ord)
		ORDER BY u.ord`),
		tenantID, sessionID, ids, roles, parts, statuses, runIDs, leases, cancels, mds, errs, cits, atts, created, updated)
	if err != nil {
		return fmt.Errorf("postgres: %s in session %s: %w", op, sessionID, classify(err))
	}
	for i, m := range msgs {
		m.CreatedAt, m.UpdatedAt = created[i], updated[i]
	}
	return nil
}

// GetMessage implements domain.MessageRepository.
func (r *messageRepo) GetMessage(ctx context.Context, tenantID, id string) (*domain.Message, error) {
	const op = "get message"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	m, err := scanMessage(r.st().pool.QueryRow(ctx, r.st().sql(`SELECT `+messageCols+`
		FROM {S}.messages WHERE tenant_id = $1 AND id = $2`), tenantID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: %s %s: %w", op, id, domain.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: %s %s: %w", op, id, err)
	}
	return &m, nil
}

// ListMessages implements domain.MessageRepository: oldest first by
// CreatedAt, then insertion order; Before, then Limit (the most recent).
func (r *messageRepo) ListMessages(ctx context.Context, tenantID, sessionID string, opts domain.MessageListOptions) ([]domain.Message, error) {
	const op = "list messages"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	if opts.Limit < 0 {
		return nil, wrap(op, domain.Invalid("limit", "must be 0 or greater"))
	}
	s := r.st()
	var sessExists bool
	var beforeAt *time.Time
	var beforeSeq *int64
	if err := s.pool.QueryRow(ctx, s.sql(`SELECT
		EXISTS (SELECT 1 FROM {S}.sessions WHERE tenant_id = $1 AND id = $2),
		b.created_at, b.seq
		FROM (SELECT 1) one LEFT JOIN {S}.messages b
		  ON b.tenant_id = $1 AND b.session_id = $2 AND b.id = $3`),
		tenantID, sessionID, opts.Before).Scan(&sessExists, &beforeAt, &beforeSeq); err != nil {
		return nil, wrap(op, err)
	}
	if !sessExists {
		return nil, fmt.Errorf("postgres: %s: session %s: %w", op, sessionID, domain.ErrNotFound)
	}
	if opts.Before != "" && beforeAt == nil {
		return nil, fmt.Errorf("postgres: %s: before message %s: %w", op, opts.Before, domain.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+messageCols+` FROM (
		SELECT * FROM {S}.messages
		WHERE tenant_id = $1 AND session_id = $2 AND ($3::timestamptz IS NULL OR (created_at, seq) < ($3, $4))
		ORDER BY created_at DESC, seq DESC LIMIT $5) m
		ORDER BY created_at, seq`), tenantID, sessionID, beforeAt, beforeSeq, limitArg(opts.Limit))
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := collect(rows, scanMessage)
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// UpdateMessage implements domain.MessageRepository: it replaces Parts,
// Status, RunID, Metadata, Citations and UpdatedAt (the current time when
// zero, written back). LeaseUntil and CancelRequested are kept while m is
// generating with a run id and cleared otherwise, in the same statement.
func (r *messageRepo) UpdateMessage(ctx context.Context, m *domain.Message) error {
	const op = "update message"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckUpdateMessage(m); err != nil {
		return wrap(op, err)
	}
	enc, err := encodeMessage(m)
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, m.ID, err)
	}
	updated := m.UpdatedAt
	if updated.IsZero() {
		updated = now()
	}
	s := r.st()
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {S}.messages SET `+replaceCols+`
		WHERE tenant_id = $1 AND id = $2`),
		m.TenantID, m.ID, jsonArg(enc.parts), string(m.Status), m.RunID, jsonArg(enc.metadata), jsonArg(enc.err),
		jsonArg(enc.citations), updated)
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, m.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s %s: %w", op, m.ID, domain.ErrNotFound)
	}
	m.UpdatedAt = updated
	return nil
}

// replaceCols is the SET list of UpdateMessage and FinishRun, over the
// arguments $3 parts, $4 status, $5 run id, $6 metadata, $7 error, $8
// citations and $9 updated time. The lease and the cancel request belong
// to a run: they are cleared unless the message stays generating under a
// run id.
const replaceCols = `parts = $3, status = $4::text, run_id = $5::text, metadata = $6, error = $7, citations = $8,
		updated_at = $9,
		lease_until = CASE WHEN $4::text = 'generating' AND $5::text <> '' THEN lease_until END,
		cancel_requested = ($4::text = 'generating' AND $5::text <> '' AND cancel_requested)`

// Claim implements domain.MessageRepository with one UPDATE ... RETURNING:
// it sets RunID and stamps UpdatedAt with the server's time, only when
// the message is generating and unclaimed. An empty runID yields
// domain.ErrInvalid.
func (r *messageRepo) Claim(ctx context.Context, tenantID, messageID, runID string) error {
	const op = "claim message"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if runID == "" {
		return fmt.Errorf("postgres: %s %s: %w", op, messageID, domain.Invalid("run_id", "is required"))
	}
	s := r.st()
	return claim(ctx, s, op, s.sql(`UPDATE {S}.messages SET run_id = $3, updated_at = clock_timestamp()
		WHERE tenant_id = $1 AND id = $2 AND status = 'generating' AND run_id = ''
		RETURNING 1`), tenantID, messageID, runID)
}

// claim runs an UPDATE ... RETURNING 1 statement whose first two
// arguments are tenant and message id; no row means a conflict when the
// message exists and not found otherwise.
func claim(ctx context.Context, s *Store, op, stmt string, args ...any) error {
	var one int
	err := s.pool.QueryRow(ctx, stmt, args...).Scan(&one)
	if err == nil {
		return nil
	}
	messageID := args[1].(string)
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: %s %s: %w", op, messageID, err)
	}
	return fmt.Errorf("postgres: %s %s: %w", op, messageID, missingOrConflict(ctx, s, args[0].(string), messageID))
}

// missingOrConflict tells why an update of a message matched no row.
func missingOrConflict(ctx context.Context, s *Store, tenantID, messageID string) error {
	var exists bool
	if err := s.pool.QueryRow(ctx, s.sql(`SELECT EXISTS (SELECT 1 FROM {S}.messages WHERE tenant_id = $1 AND id = $2)`),
		tenantID, messageID).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return domain.ErrConflict
	}
	return domain.ErrNotFound
}

// FailStale implements domain.MessageRepository like domain/memory: one
// UPDATE across tenants of the generating messages that hold no run lease
// (leased runs are failed by lease expiry, see FailExpired) and whose
// UpdatedAt is before cutoff (an index covers generating messages by
// UpdatedAt).
func (r *messageRepo) FailStale(ctx context.Context, cutoff time.Time, e domain.MessageError) (int, error) {
	const op = "fail stale messages"
	if err := checkCtx(ctx, op); err != nil {
		return 0, err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return 0, wrap(op, err)
	}
	s := r.st()
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {S}.messages SET status = 'failed', error = $2, updated_at = clock_timestamp()
		WHERE status = 'generating' AND lease_until IS NULL AND updated_at < $1`), cutoff, string(b))
	if err != nil {
		return 0, wrap(op, err)
	}
	return int(tag.RowsAffected()), nil
}
