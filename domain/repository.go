package domain

import (
	"context"
	"time"
)

// SessionRepository persists sessions. Every method is scoped by tenant:
// an id from another tenant yields ErrNotFound.
type SessionRepository interface {
	// CreateSession stores s. s.ID, TenantID and OwnerID must be set; a
	// duplicate id yields ErrConflict.
	CreateSession(ctx context.Context, s *Session) error
	// GetSession returns the session with id in tenant.
	GetSession(ctx context.Context, tenantID, id string) (*Session, error)
	// ListSessions returns the owner's sessions in tenant, filtered, sorted
	// and paged by opts (which the repository normalizes). Title search and
	// title sorting ignore case; ties are broken by id so pages are stable.
	ListSessions(ctx context.Context, tenantID, ownerID string, opts ListOptions) (Page[Session], error)
	// UpdateSession replaces the title, model and updated time of the
	// session identified by s.TenantID and s.ID.
	UpdateSession(ctx context.Context, s *Session) error
	// DeleteSession removes the session and, in the same step, its
	// messages, checkpoints, artifacts and run events.
	DeleteSession(ctx context.Context, tenantID, id string) error
}

// MessageRepository persists messages.
type MessageRepository interface {
	// CreateMessages stores all messages atomically: either every message
	// is stored or none is. They must belong to one session of one tenant
	// (ErrInvalid otherwise) and that session must exist (ErrNotFound).
	CreateMessages(ctx context.Context, msgs ...*Message) error
	// GetMessage returns the message with id in tenant.
	GetMessage(ctx context.Context, tenantID, id string) (*Message, error)
	// ListMessages returns a session's messages oldest first. Before is
	// applied first, then Limit keeps the most recent. An unknown session
	// or Before id yields ErrNotFound; a negative Limit ErrInvalid.
	ListMessages(ctx context.Context, tenantID, sessionID string, opts MessageListOptions) ([]Message, error)
	// UpdateMessage replaces parts, status, run id, metadata, citations and
	// updated time of the message identified by m.TenantID and m.ID,
	// whatever its stored state. When the updated message is not
	// generating, or has an empty RunID (a message reopened for a new run),
	// it also clears LeaseUntil and CancelRequested: no run holds it any
	// more, so a reaper must not fail it for an old lease and the next run
	// must not inherit an old cancel request. A generating message with a
	// run id keeps both as stored. A runner recording its outcome uses
	// RunRepository.FinishRun instead, which refuses to overwrite a message
	// the run no longer owns.
	UpdateMessage(ctx context.Context, m *Message) error
	// Claim atomically marks a generating, unclaimed message as claimed by
	// runID. Exactly one of any number of concurrent callers succeeds; the
	// others get ErrConflict.
	Claim(ctx context.Context, tenantID, messageID, runID string) error
	// FailStale marks every message with status generating (claimed or
	// not) that holds no run lease (zero LeaseUntil) and whose UpdatedAt is
	// before cutoff as failed with e, across all tenants, and returns how
	// many it changed. Messages awaiting input are not touched, nor are
	// leased ones: RunRepository.FailExpired fails those by liveness. The
	// service calls it to recover from crashes of runs without a lease.
	FailStale(ctx context.Context, cutoff time.Time, e MessageError) (int, error)
}

// CheckpointRepository persists checkpoints of interrupted runs.
type CheckpointRepository interface {
	// SaveCheckpoint stores cp, replacing any checkpoint of the same message.
	SaveCheckpoint(ctx context.Context, cp *Checkpoint) error
	// GetCheckpoint returns the checkpoint of a message.
	GetCheckpoint(ctx context.Context, tenantID, messageID string) (*Checkpoint, error)
	// TakeCheckpoint atomically returns and deletes the checkpoint of a
	// message; of concurrent callers exactly one gets it, the others get
	// ErrNotFound.
	TakeCheckpoint(ctx context.Context, tenantID, messageID string) (*Checkpoint, error)
	// DeleteCheckpoint removes the checkpoint of a message; ErrNotFound when
	// there is none.
	DeleteCheckpoint(ctx context.Context, tenantID, messageID string) error
	// TakeExpiredCheckpoints atomically deletes and returns the
	// checkpoints, in any tenant, whose ExpiresAt is set and before now,
	// oldest expiry first, at most limit (0: no limit). Of concurrent
	// callers each checkpoint goes to exactly one. The service's reaper
	// then fails their messages with code "expired".
	TakeExpiredCheckpoints(ctx context.Context, now time.Time, limit int) ([]Checkpoint, error)
}

// ArtifactRepository persists artifact metadata.
type ArtifactRepository interface {
	// SaveArtifact stores a; a duplicate id yields ErrConflict.
	SaveArtifact(ctx context.Context, a *Artifact) error
	// GetArtifact returns the artifact with id in tenant.
	GetArtifact(ctx context.Context, tenantID, id string) (*Artifact, error)
	// ListArtifacts returns a message's artifacts in creation order.
	ListArtifacts(ctx context.Context, tenantID, messageID string) ([]Artifact, error)
	// DeleteArtifact removes the artifact with id in tenant.
	DeleteArtifact(ctx context.Context, tenantID, id string) error
}

// RunEventRepository is the append-only log of run events.
type RunEventRepository interface {
	// AppendRunEvents appends events of one run. Each Seq must be greater
	// than every Seq already stored for that run (ErrConflict otherwise);
	// the batch is stored atomically. It must not keep events or their
	// Data after it returns (copy what it stores): the caller reuses their
	// memory for its next batch.
	AppendRunEvents(ctx context.Context, events ...RunEvent) error
	// ListRunEvents returns up to limit events of a run with Seq > afterSeq,
	// in Seq order; limit 0 means all. An unknown run, or another tenant's,
	// yields an empty slice.
	ListRunEvents(ctx context.Context, tenantID, runID string, afterSeq int64, limit int) ([]RunEvent, error)
}

// Repositories bundles the repositories of one store. Implementations that
// cascade deletes across repositories (a session and its messages) must
// share state, so they are created together. DeleteSession also removes
// the session's results (Results).
type Repositories struct {
	Sessions    SessionRepository
	Messages    MessageRepository
	Checkpoints CheckpointRepository
	Artifacts   ArtifactRepository
	// RunEvents is the run log. When it also implements RunEventNotifier,
	// watchers are woken on append instead of only polling.
	RunEvents RunEventRepository
	// Runs holds run leases and cancellation requests.
	Runs RunRepository
	// Results keeps named query results (result_1, ...) per session.
	Results ResultRepository
}
