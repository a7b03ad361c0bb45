package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultSchema is the schema a Store uses when Options.Schema is empty.
const DefaultSchema = "bichat"

// Defaults of Options.
const (
	// DefaultResultsPerSession is how many named results a session keeps
	// (the same default as domain/memory).
	DefaultResultsPerSession = 10
	// DefaultMaxResultBytes is the size cap of one result's data: 8 MiB.
	DefaultMaxResultBytes = 8 << 20
)

// Options configures a Store.
type Options struct {
	// Schema is the PostgreSQL schema holding the tables: lowercase
	// letters, digits and underscores, starting with a letter or
	// underscore, at most 40 bytes. Empty means DefaultSchema. Run
	// Migrate on it before New.
	Schema string
	// ResultsPerSession is how many named results
	// (domain.ResultRepository) a session keeps; PutResult deletes the
	// oldest beyond it. 0 or less means DefaultResultsPerSession.
	ResultsPerSession int
	// MaxResultBytes caps the data of one result: larger data yields
	// domain.ErrTooLarge. 0 or less means DefaultMaxResultBytes.
	MaxResultBytes int64
	// MaxSessionResultBytes, when positive, caps the data of a session's
	// results together: PutResult then also deletes the oldest results
	// until the rest fit (the result just put is always kept). 0 means
	// no cap beyond ResultsPerSession × MaxResultBytes.
	MaxSessionResultBytes int64
	// ListenRetry is the longest pause between attempts to re-establish
	// the LISTEN connection after it broke. 0 means 5 seconds.
	ListenRetry time.Duration
}

// Store is the PostgreSQL implementation of every repository in package
// domain, over the host's connection pool. Create it with New after
// Migrate; it is safe for concurrent use. Close it to stop the
// notification listener.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	// qs is the quoted schema, substituted for {S} in statements.
	qs      string
	opts    Options
	channel string

	sqlMu    sync.Mutex
	sqlCache map[string]string

	notify *notifier
}

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`)

func checkSchema(s string) error {
	if !schemaRE.MatchString(s) {
		return domain.Invalid("schema", "must be 1 to 40 lowercase letters, digits or underscores, not starting with a digit")
	}
	return nil
}

// New returns a Store over pool, whose tables live in opts.Schema. The
// Store never opens connections of its own: every statement runs on a
// connection of pool, and while at least one SubscribeRunEvents
// subscription is active the Store holds one connection of pool for
// LISTEN (size the pool for it). New checks that the schema was migrated
// to the version this SDK expects and returns an error naming the
// versions otherwise.
func New(pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("postgres: new store: pool is nil")
	}
	if opts.Schema == "" {
		opts.Schema = DefaultSchema
	}
	if err := checkSchema(opts.Schema); err != nil {
		return nil, fmt.Errorf("postgres: new store: %w", err)
	}
	if opts.ResultsPerSession <= 0 {
		opts.ResultsPerSession = DefaultResultsPerSession
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.MaxSessionResultBytes < 0 {
		opts.MaxSessionResultBytes = 0
	}
	if opts.ListenRetry <= 0 {
		opts.ListenRetry = 5 * time.Second
	}
	s := &Store{
		pool:     pool,
		schema:   opts.Schema,
		qs:       pgx.Identifier{opts.Schema}.Sanitize(),
		opts:     opts,
		channel:  "bichat_run_events_" + opts.Schema,
		sqlCache: make(map[string]string),
	}
	s.notify = newNotifier(s)
	return s, nil
}

// CheckSchema reports an error unless the store's schema was migrated to
// LatestVersion. Call it at start-up to fail fast on a missing migration.
func (s *Store) CheckSchema(ctx context.Context) error {
	v, err := SchemaVersion(ctx, s.pool, s.schema)
	if err != nil {
		return err
	}
	if want := LatestVersion(); v != want {
		return fmt.Errorf("postgres: schema %s is at version %d, this SDK needs %d: run postgres.Migrate", s.schema, v, want)
	}
	return nil
}

// Schema returns the schema the store's tables live in.
func (s *Store) Schema() string { return s.schema }

// Channel returns the NOTIFY channel on which AppendRunEvents announces
// new events (one per schema).
func (s *Store) Channel() string { return s.channel }

// Close stops the LISTEN connection, if any, and returns it to the pool.
// Subscriptions then receive no more signals. It does not close the pool,
// which belongs to the host.
func (s *Store) Close() { s.notify.close() }

// Repositories returns the repositories of the store, every field set.
// RunEvents also implements domain.RunEventNotifier.
func (s *Store) Repositories() domain.Repositories {
	return domain.Repositories{
		Sessions:    (*sessionRepo)(s),
		Messages:    (*messageRepo)(s),
		Checkpoints: (*checkpointRepo)(s),
		Artifacts:   (*artifactRepo)(s),
		RunEvents:   (*runEventRepo)(s),
		Runs:        (*runRepo)(s),
		Results:     (*resultRepo)(s),
	}
}

// Compile-time checks.
var (
	_ domain.SessionRepository    = (*sessionRepo)(nil)
	_ domain.MessageRepository    = (*messageRepo)(nil)
	_ domain.CheckpointRepository = (*checkpointRepo)(nil)
	_ domain.ArtifactRepository   = (*artifactRepo)(nil)
	_ domain.RunEventRepository   = (*runEventRepo)(nil)
	_ domain.RunEventNotifier     = (*runEventRepo)(nil)
	_ domain.RunRepository        = (*runRepo)(nil)
	_ domain.ResultRepository     = (*resultRepo)(nil)
)

// sql returns stmt with {S} replaced by the quoted schema. Results are
// cached so the text (the key of pgx's statement cache) is built once.
func (s *Store) sql(stmt string) string {
	s.sqlMu.Lock()
	defer s.sqlMu.Unlock()
	if q, ok := s.sqlCache[stmt]; ok {
		return q
	}
	q := strings.ReplaceAll(stmt, "{S}", s.qs)
	s.sqlCache[stmt] = q
	return q
}

// Error helpers.

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// classify maps PostgreSQL errors to domain sentinels: a unique
// violation is a conflict, a foreign-key violation a missing parent.
func classify(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w (%s)", domain.ErrConflict, pe.ConstraintName)
		case "23503": // foreign_key_violation
			return fmt.Errorf("%w (%s)", domain.ErrNotFound, pe.ConstraintName)
		}
	}
	return err
}

// nullTime stores a zero time as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func fromNullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// limitArg turns "0 means no limit" into a LIMIT argument (NULL: none).
func limitArg(n int) *int64 {
	if n <= 0 {
		return nil
	}
	v := int64(n)
	return &v
}

// collect reads every row of rows with scan. The result is never nil:
// no rows make an empty slice, as the repository interfaces promise.
func collect[T any](rows pgx.Rows, scan func(pgx.Row) (T, error)) ([]T, error) {
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []T{}
	}
	return out, nil
}

func now() time.Time { return time.Now().UTC() }

func checkCtx(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return wrap(op, err)
	}
	return nil
}
