package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/jackc/pgx/v5"
)

type runEventRepo Store

func (r *runEventRepo) st() *Store { return (*Store)(r) }

// notice is the payload of a run-event notification.
type notice struct {
	Tenant string `json:"t"`
	Run    string `json:"r"`
	// Seq is the last appended seq; 0 for other changes (a cancel
	// request, a deleted log).
	Seq int64 `json:"s"`
}

// AppendRunEvents implements domain.RunEventRepository, its input checked
// by domain.CheckAppendRunEvents. The batch is written by one statement, which
// also checks that the first Seq is above the run's last one and, when
// rows were inserted, calls pg_notify on the store's channel (payload:
// tenant, run, last seq), so the notification is part of the same
// transaction and is delivered only if the events are committed. A Seq
// that is not above the run's last, or that a concurrent append took,
// yields domain.ErrConflict and stores nothing.
func (r *runEventRepo) AppendRunEvents(ctx context.Context, events ...domain.RunEvent) error {
	const op = "append run events"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	if err := domain.CheckAppendRunEvents(events); err != nil {
		return wrap(op, err)
	}
	first := events[0]
	for i := 1; i < len(events); i++ {
		if events[i].Seq <= events[i-1].Seq {
			return fmt.Errorf("postgres: %s: run %s: seq %d not greater than %d: %w",
				op, first.RunID, events[i].Seq, events[i-1].Seq, domain.ErrConflict)
		}
	}
	n := len(events)
	seqs, sessions, messages, types := make([]int64, n), make([]string, n), make([]string, n), make([]string, n)
	times, data := make([]time.Time, n), make([][]byte, n)
	t := now()
	for i, e := range events {
		seqs[i], sessions[i], messages[i], types[i], data[i] = e.Seq, e.SessionID, e.MessageID, e.Type, e.Data
		times[i] = e.Time
		if times[i].IsZero() {
			times[i] = t
		}
	}
	payload, err := json.Marshal(notice{Tenant: first.TenantID, Run: first.RunID, Seq: events[n-1].Seq})
	if err != nil {
		return wrap(op, err)
	}
	s := r.st()
	var last, inserted int64
	err = s.pool.QueryRow(ctx, s.sql(`WITH
		last AS (SELECT coalesce(max(seq), 0) AS seq FROM {S}.run_events WHERE tenant_id = $1 AND run_id = $2),
		ins AS (
			INSERT INTO {S}.run_events (tenant_id, run_id, seq, session_id, message_id, type, time, data)
			SELECT $1, $2, u.seq, u.session_id, u.message_id, u.type, u.time, u.data
			FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::bytea[])
			     AS u(seq, session_id, message_id, type, time, data)
			WHERE $9::bigint > (SELECT seq FROM last)
			RETURNING 1)
		SELECT (SELECT seq FROM last), (SELECT count(*) FROM ins),
		       (SELECT count(*) FROM (SELECT pg_notify($10, $11) WHERE EXISTS (SELECT 1 FROM ins)) n)`),
		first.TenantID, first.RunID, seqs, sessions, messages, types, times, data, seqs[0],
		s.channel, string(payload)).Scan(&last, &inserted, new(int64))
	if err != nil {
		return fmt.Errorf("postgres: %s: run %s: %w", op, first.RunID, classify(err))
	}
	if inserted == 0 {
		return fmt.Errorf("postgres: %s: run %s: seq %d not greater than %d: %w",
			op, first.RunID, seqs[0], last, domain.ErrConflict)
	}
	return nil
}

// ListRunEvents implements domain.RunEventRepository: an unknown run, or
// another tenant's, yields an empty slice; a negative limit
// domain.ErrInvalid.
func (r *runEventRepo) ListRunEvents(ctx context.Context, tenantID, runID string, afterSeq int64, limit int) ([]domain.RunEvent, error) {
	const op = "list run events"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, wrap(op, domain.Invalid("limit", "must be 0 or greater"))
	}
	s := r.st()
	rows, err := s.pool.Query(ctx, s.sql(`SELECT tenant_id, run_id, session_id, message_id, seq, type, time, data
		FROM {S}.run_events WHERE tenant_id = $1 AND run_id = $2 AND seq > $3
		ORDER BY seq LIMIT $4`), tenantID, runID, afterSeq, limitArg(limit))
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := collect(rows, func(row pgx.Row) (domain.RunEvent, error) {
		var e domain.RunEvent
		var data []byte
		err := row.Scan(&e.TenantID, &e.RunID, &e.SessionID, &e.MessageID, &e.Seq, &e.Type, &e.Time, &data)
		if data != nil {
			e.Data = data
		}
		return e, err
	})
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// SubscribeRunEvents implements domain.RunEventNotifier across processes:
// the channel receives a value after events of the run are committed by
// any Store on the same database and schema (and after a cancel request
// or a session delete touching the run). It returns once the store's
// LISTEN connection is established, so every append committed after it
// returns is signalled, barring a broken connection: after the listener
// reconnects it signals every subscriber, because notifications sent while
// it was down are lost. Watchers must still poll the log at a modest
// interval. Signals are coalesced (a buffer of one) and may be spurious;
// the channel is never closed, so select on ctx.Done() as well.
//
// The first subscription acquires one connection from the pool and holds
// it for LISTEN until the last subscription ends. An empty tenantID or
// runID yields domain.ErrInvalid; when the listen connection cannot be
// established the error says why.
func (r *runEventRepo) SubscribeRunEvents(ctx context.Context, tenantID, runID string) (<-chan struct{}, func(), error) {
	const op = "subscribe run events"
	if err := checkCtx(ctx, op); err != nil {
		return nil, nil, err
	}
	if err := domain.CheckSubscribeRunEvents(tenantID, runID); err != nil {
		return nil, nil, wrap(op, err)
	}
	ch, stop, err := r.st().notify.subscribe(ctx, runKey{tenantID, runID})
	if err != nil {
		return nil, nil, wrap(op, err)
	}
	return ch, stop, nil
}
