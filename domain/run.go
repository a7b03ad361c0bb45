package domain

import (
	"context"
	"time"
)

// RunRepository tracks the liveness and cancellation of claimed runs, so
// that a run belongs to the service rather than to the request that
// started it, and a run whose process died is failed by lease expiry, not
// by age.
//
// A run holds a lease on the assistant message it generates: ClaimRun
// takes it, the runner renews it with RenewLease well before it ends (the
// service renews every third of Limits.RunLease), and a reaper calls
// FailExpired to fail the messages whose lease ran out, in whatever
// process that runner lived. Cancellation is a flag on the message:
// RequestCancel sets it from any process, and the runner sees it on its
// next renewal (or sooner through a notification). The runner records its
// outcome with FinishRun, which succeeds only while the run still owns
// the message, so an outcome never overwrites the failure a reaper wrote.
//
// Every method is scoped by tenant, like the other repositories, except
// FailExpired, which sweeps across tenants for the reaper.
type RunRepository interface {
	// ClaimRun atomically marks a generating, unclaimed message as claimed
	// by runID, with a lease that ends at leaseUntil, and clears its
	// CancelRequested: a new run starts without a cancel request (one
	// made before the claim was meant for no run, or for the run that
	// generated the message before it was reopened). Exactly one of any
	// number of concurrent callers succeeds; the others get ErrConflict.
	// An unknown message (or another tenant's) yields ErrNotFound.
	ClaimRun(ctx context.Context, tenantID, messageID, runID string, leaseUntil time.Time) error
	// RenewLease moves the lease of the run runID on messageID to until and
	// reports whether RequestCancel was called for it. When the message is
	// no longer generating under runID (it completed, failed, or a reaper
	// failed it after its lease expired) it yields ErrConflict: the runner
	// must stop, its result is no longer wanted. An unknown message (or
	// another tenant's, or one deleted with its session) yields
	// ErrNotFound, which means the same to the runner.
	RenewLease(ctx context.Context, tenantID, messageID, runID string, until time.Time) (cancelRequested bool, err error)
	// RequestCancel records that the run generating messageID must stop.
	// It yields ErrNotFound for an unknown message and ErrConflict when the
	// message is not generating (nothing to cancel). Calling it twice is
	// not an error.
	RequestCancel(ctx context.Context, tenantID, messageID string) error
	// FinishRun records the outcome of the run runID: like
	// MessageRepository.UpdateMessage it replaces the parts, status,
	// metadata, citations and updated time of the message identified by
	// m.TenantID and m.ID, and clears its LeaseUntil and CancelRequested,
	// but only while the stored message is generating and claimed by
	// runID, checked and written in one atomic step. Otherwise (a reaper
	// failed the message after its lease expired, or the run was finished
	// elsewhere) it yields ErrConflict and changes nothing: the runner
	// must not record anything more, the message already has its outcome.
	// m.Status must not be generating and m.RunID must be runID (ErrInvalid
	// otherwise). A zero m.UpdatedAt is set to the current time, in m as
	// well. An unknown message (or another tenant's) yields ErrNotFound.
	// Of FinishRun and a concurrent FailExpired exactly one changes the
	// message.
	FinishRun(ctx context.Context, m *Message, runID string) error
	// FailExpired marks as failed with e every generating message, in any
	// tenant, whose lease ended before now (a zero lease never expires:
	// such messages are left to FailStale), and returns those messages as
	// stored after the change, oldest lease first, at most limit of them
	// (0: no limit). Of two concurrent callers each message is returned to
	// exactly one.
	FailExpired(ctx context.Context, now time.Time, e MessageError, limit int) ([]Message, error)
}

// RunEventNotifier is implemented by RunEventRepositories that can tell a
// watcher when a run has new events, including events appended by another
// process that shares the store (the PostgreSQL repositories use
// LISTEN/NOTIFY). The run log stays the source of truth: a signal only
// says "read the log again". Watchers must also poll at a modest interval,
// because a notification can be lost (a listener reconnecting).
type RunEventNotifier interface {
	// SubscribeRunEvents returns a channel that receives a value after
	// events of the run are appended. Signals are coalesced (the channel
	// holds at most one pending value) and may be spurious. The
	// subscription ends when ctx is done or stop is called; stop may be
	// called more than once.
	SubscribeRunEvents(ctx context.Context, tenantID, runID string) (signal <-chan struct{}, stop func(), err error)
}

// StoredResult is a query result kept under a name (result_1, result_2,
// ... or a name the caller chose) so later tool calls, resumed runs and
// other processes of the same session can use it.
type StoredResult struct {
	TenantID  string `json:"tenant_id"`
	SessionID string `json:"session_id"`
	// Name identifies the result in its session. Empty in PutResult asks
	// the repository for the next "result_N" of the session.
	Name string `json:"name"`
	// Data is the result itself as JSON (tools.Table's encoding). The
	// repository treats it as opaque.
	Data      []byte    `json:"data"`
	CreatedAt time.Time `json:"created_at"`
}

// ResultRepository keeps a bounded number of named results per session.
// Results are deleted with their session.
type ResultRepository interface {
	// PutResult stores r and returns its name: r.Name when set (replacing a
	// result of that name, which then counts as the newest), otherwise the
	// next "result_N" of the session, N increasing from 1 and never
	// reused. When the session then holds more results than the
	// repository keeps, the oldest are deleted. Data over the repository's
	// size cap yields ErrTooLarge and stores nothing; an unknown session
	// yields ErrNotFound; a bad name ErrInvalid.
	PutResult(ctx context.Context, r *StoredResult) (string, error)
	// GetResult returns the result called name in the session, or
	// ErrNotFound.
	GetResult(ctx context.Context, tenantID, sessionID, name string) (*StoredResult, error)
	// ListResults returns the session's result names, oldest first. An
	// unknown session yields ErrNotFound.
	ListResults(ctx context.Context, tenantID, sessionID string) ([]string, error)
}
