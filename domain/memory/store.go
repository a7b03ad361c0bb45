package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// Store is an in-memory implementation of every repository interface in
// package domain. All repositories share one state guarded by one
// read-write mutex, so a cascading DeleteSession, an all-or-nothing
// CreateMessages or a Claim is atomic with respect to every other call.
// The run-event logs have locks of their own (one for the set of logs,
// one per run): runs appending to their logs wait neither for each other
// nor for the other repositories, and DeleteSession still removes a
// session's run events in one step that no reader sees half done.
//
// Create a Store with New or NewWithOptions; the zero value is not
// usable. A Store is safe for concurrent use. Values passed in are copied before they are stored
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
	// results holds each session's named results, by session id.
	results map[string]*sessionResults

	// runEvents maps a runKey to its *runEventLog. evMu orders appends
	// and reads (shared) against DeleteSession (exclusive); each log has
	// its own lock for its events (see runevent.go). evMu is taken after
	// mu, never before.
	evMu      sync.RWMutex
	runEvents sync.Map

	resultsKeep int
	resultBytes int64

	// subMu guards subs, the live run-event subscriptions. It is separate
	// from mu and evMu so that subscribing and stopping never wait for a
	// writer, and it is only ever taken after them, never before.
	subMu sync.Mutex
	subs  map[runKey]map[*subscription]struct{}
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
	_ domain.RunEventNotifier     = (*Store)(nil)
	_ domain.RunRepository        = (*Store)(nil)
	_ domain.ResultRepository     = (*Store)(nil)
)

// Defaults for Options.
const (
	// DefaultResultsPerSession is how many named results a session keeps
	// when Options.ResultsPerSession is 0.
	DefaultResultsPerSession = 10
	// DefaultMaxResultBytes is the largest StoredResult.Data accepted when
	// Options.MaxResultBytes is 0: 8 MiB.
	DefaultMaxResultBytes = 8 << 20
)

// Options configures a Store made by NewWithOptions. The zero value gives
// the defaults, the same Store as New.
type Options struct {
	// ResultsPerSession bounds the named results (ResultRepository) each
	// session keeps; when a session holds more, the oldest are deleted.
	// 0 or less means DefaultResultsPerSession.
	ResultsPerSession int
	// MaxResultBytes is the largest StoredResult.Data that PutResult
	// accepts; larger data yields domain.ErrTooLarge. 0 or less means
	// DefaultMaxResultBytes.
	MaxResultBytes int64
}

// New returns an empty Store with the default Options.
func New() *Store { return NewWithOptions(Options{}) }

// NewWithOptions returns an empty Store configured by o.
func NewWithOptions(o Options) *Store {
	if o.ResultsPerSession <= 0 {
		o.ResultsPerSession = DefaultResultsPerSession
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	return &Store{
		sessions:         make(map[string]*domain.Session),
		messages:         make(map[string]*storedMessage),
		sessionMessages:  make(map[string][]string),
		checkpoints:      make(map[messageKey]*domain.Checkpoint),
		artifacts:        make(map[string]*storedArtifact),
		messageArtifacts: make(map[messageKey][]string),
		results:          make(map[string]*sessionResults),
		resultsKeep:      o.ResultsPerSession,
		resultBytes:      o.MaxResultBytes,
		subs:             make(map[runKey]map[*subscription]struct{}),
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
		Runs:        s,
		Results:     s,
	}
}

// nextSeq returns the next insertion number. The caller holds s.mu for
// writing.
func (s *Store) nextSeq() uint64 {
	s.seq++
	return s.seq
}

// now is the time the store stamps on rows it changes by itself (Claim,
// ClaimRun, FailStale, FailExpired) and on rows created without a
// timestamp.
func now() time.Time { return time.Now().UTC() }

// checkCtx returns the context's error, wrapped with op, when ctx is done.
func checkCtx(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	return nil
}
