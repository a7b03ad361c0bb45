// Package postgres is the PostgreSQL implementation of the repositories
// in package domain (pgx/v5 over the host's *pgxpool.Pool): sessions,
// messages, checkpoints, artifacts, run events with LISTEN/NOTIFY, run
// leases and cancellation, named query results, and an artifact content
// store. It passes the conformance suites of domain/domaintest
// (RunRepositoryTests, RunArtifactStoreTests) and behaves like
// domain/memory.
//
// # Migrating
//
// Migrate creates the schema (default "bichat") and applies the embedded
// migrations, in one transaction under a transaction-scoped advisory lock,
// so any number of processes may run it at start-up at once. Applied
// versions are recorded in <schema>.schema_version; running it again does
// nothing. Hosts with their own migration tool take the SQL files from
// Migrations() (0001_init.sql, 0002_runs_results_content.sql,
// 0003_recipes.sql, ...) and run each, in order, with search_path set to
// the schema; Store.CheckSchema then verifies the version.
//
//	if err := postgres.Migrate(ctx, pool, "bichat"); err != nil { ... }
//	store, err := postgres.New(pool, postgres.Options{Schema: "bichat"})
//	defer store.Close()
//	repos := store.Repositories()          // every field set
//	artifacts := store.ArtifactStore(0)    // domain.ArtifactStore
//
// Migrate needs a role that may create the schema and its tables; the
// service needs only SELECT, INSERT, UPDATE and DELETE on the tables and
// USAGE on the schema and the sequence results_put_seq.
//
// # Tables
//
// Every table carries tenant_id, which leads its primary key, and every
// statement of the package filters by it (ids are scoped by tenant). The
// only statements that span tenants are the reaper's sweeps (FailStale,
// FailExpired, TakeExpiredCheckpoints), as the interfaces require.
//
//   - sessions: one row per session; index (tenant, owner, updated_at
//     desc, id) for listing. last_result numbers result_N.
//   - messages: parts, metadata, citations and attachments as json (not
//     jsonb, so provider data keeps its bytes), Metadata.Error in its own
//     column; seq keeps insertion order; lease_until and cancel_requested
//     hold run leases. Indexes: (tenant, session, created_at, seq) for
//     listing, generating messages by updated_at (FailStale) and by
//     lease_until (FailExpired), both partial.
//   - checkpoints: one per message; partial index on expires_at.
//   - artifacts: artifact metadata; indexes by message (listing) and by
//     content hash (reference counting).
//   - run_events: the run log, primary key (tenant, run, seq).
//   - results: named query results per session, put_seq ordering them.
//   - artifact_content and artifact_chunks: artifact bytes (below).
//   - recipes: the recipe memory of package kb/recipes/postgres.
//
// Claim, ClaimRun and FinishRun are one UPDATE ... RETURNING each; exactly
// one of any number of concurrent callers wins, and of FinishRun and a
// concurrent FailExpired exactly one changes the message. DeleteSession removes the
// session, its messages, checkpoints, artifacts, run events and results,
// and frees artifact content nobody else uses, in one transaction.
//
// # Connections
//
// The package never opens connections of its own: every statement runs
// on a connection of the pool passed to New. While at least one
// SubscribeRunEvents subscription is active, the Store holds one
// connection of that pool for LISTEN (size the pool for it); it returns
// the connection after the last subscription ends and on Close.
//
// # Run events and notifications
//
// AppendRunEvents writes a batch with one statement that also calls
// pg_notify on the store's channel (Store.Channel, one per schema;
// payload: tenant, run, last seq), so the notification is sent if and only
// if the events commit. RunEvents implements domain.RunEventNotifier: one
// listener goroutine per Store waits for notifications on its LISTEN
// connection and wakes the subscribers of the tenant's run; if the
// connection breaks it reconnects with backoff (up to
// Options.ListenRetry) and signals every subscriber, since notifications
// sent meanwhile are lost. The log is the source of truth and a signal
// only says "read it again": watchers must also poll at a modest interval.
// RequestCancel and DeleteSession notify the affected runs too.
//
// # Artifact content: PostgreSQL rather than domain/fsartifacts
//
// Store.ArtifactStore keeps artifact bytes in the database: one
// artifact_content row per distinct content of a tenant (content-addressed
// by SHA-256, so the same bytes are stored once per tenant) and the bytes
// in artifact_chunks rows of ChunkSize (256 KiB). It is the choice for a
// deployment of several processes: every process reads what another
// wrote, backups and tenant deletion cover content and metadata together,
// and the content can be freed in the same transaction as the metadata
// that refers to it. Reference counting is derived, not stored:
// DeleteArtifact and DeleteSession delete, in their transaction, the
// content whose hash no remaining artifact row of the tenant carries, so
// counts cannot drift. domain/fsartifacts remains the better choice for a
// single process with large files or a shared filesystem, and when
// content should not grow the database; it does not free content on
// session delete.
//
// A narrow race remains: content put by ArtifactStore.Put and saved as an
// artifact only after a concurrent delete freed the last earlier
// reference is gone when read (Get yields domain.ErrNotFound); putting it
// again restores it.
//
// Results (domain.ResultRepository) are capped per session by count
// (Options.ResultsPerSession) and size (Options.MaxResultBytes per result,
// Options.MaxSessionResultBytes for all of a session's results).
//
// Store also implements domain.DataSourceRepository (table datasources:
// connection settings only ever stored sealed, see package secrets) and
// domain.CostLedger (tables cost_sessions and
// cost_days, exact nano-dollar sums, one statement per AddCost, shared by
// every replica; old rows go with PruneCosts), the table of the
// hooks/audit/postgres sink and those of quota/postgres: Migrate creates
// them all.
package postgres
