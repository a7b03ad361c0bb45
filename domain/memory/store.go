package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// Store is an in-memory implementation of every repository interface in
// package domain. All repositories share one state guarded by a single
// read-write mutex, so a cascading DeleteSession, an all-or-nothing
// CreateMessages or a Claim is atomic with respect to every other call.
//
// Create a Store with New; the zero value is not usable. A Store is safe
// for concurrent use. Values passed in are copied before they are stored
// and values returned are fresh copies, so callers may modify either
// freely without affecting the stored state.
type Store struct {
	mu sync.RWMutex

	// seq numbers insertions; it breaks ties between equal timestamps so
	// listings follow insertion order.
	seq uint64

	sessions map[string]*domain.Session // by session id
	messages map[string]*storedMessage  // by message id
	// sessionMessages lists each session's message ids in insertion order.
	sessionMessages map[string][]string
	checkpoints     map[messageKey]*domain.Checkpoint
	artifacts       map[string]*storedArtifact // by artifact id
	// messageArtifacts lists each message's artifact ids in insertion order.
	messageArtifacts map[messageKey][]string
	runEvents        map[runKey][]domain.RunEvent // sorted by Seq
}

type storedMessage struct {
	msg domain.Message
	seq uint64
}

type storedArtifact struct {
	art domain.Artifact
	seq uint64
}

// messageKey scopes a message id by tenant.
type messageKey struct{ tenantID, messageID string }

// runKey scopes a run id by tenant: each tenant has its own event log per
// run id.
type runKey struct{ tenantID, runID string }

// Compile-time checks that *Store implements every repository.
var (
	_ domain.SessionRepository    = (*Store)(nil)
	_ domain.MessageRepository    = (*Store)(nil)
	_ domain.CheckpointRepository = (*Store)(nil)
	_ domain.ArtifactRepository   = (*Store)(nil)
	_ domain.RunEventRepository   = (*Store)(nil)
)

// New returns an empty Store.
func New() *Store {
	return &Store{
		sessions:         make(map[string]*domain.Session),
		messages:         make(map[string]*storedMessage),
		sessionMessages:  make(map[string][]string),
		checkpoints:      make(map[messageKey]*domain.Checkpoint),
		artifacts:        make(map[string]*storedArtifact),
		messageArtifacts: make(map[messageKey][]string),
		runEvents:        make(map[runKey][]domain.RunEvent),
	}
}

// Repositories returns a bundle with s in every field, ready to hand to
// the service or to domaintest.RunRepositoryTests.
func (s *Store) Repositories() domain.Repositories {
	return domain.Repositories{
		Sessions:    s,
		Messages:    s,
		Checkpoints: s,
		Artifacts:   s,
		RunEvents:   s,
	}
}

// nextSeq returns the next insertion number. The caller holds s.mu for
// writing.
func (s *Store) nextSeq() uint64 {
	s.seq++
	return s.seq
}

// now is the time the store stamps on rows it changes by itself (Claim,
// FailStale) and on rows created without a timestamp.
func now() time.Time { return time.Now().UTC() }

// checkCtx returns the context's error, wrapped with op, when ctx is done.
func checkCtx(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	return nil
}
