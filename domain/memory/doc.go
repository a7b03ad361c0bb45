// Package memory is an in-memory implementation of the repositories in
// package domain, for tests, examples and single-process deployments that
// do not need durability.
//
// New returns a [Store], which implements [domain.SessionRepository],
// [domain.MessageRepository], [domain.CheckpointRepository],
// [domain.ArtifactRepository], [domain.RunEventRepository] (and
// [domain.RunEventNotifier]), [domain.RunRepository] and
// [domain.ResultRepository]. Pass [Store.Repositories] wherever a
// [domain.Repositories] is needed:
//
//	repos := memory.New().Repositories()
//	err := repos.Sessions.CreateSession(ctx, &domain.Session{
//		ID: domain.NewID(), TenantID: "acme", OwnerID: "alice", Title: "Q3",
//	})
//
// # Behaviour
//
// The Store passes the conformance suite in package domain/domaintest; the
// method docs spell out the details. In short:
//
//   - Everything lives in one state behind one mutex, so cascading deletes,
//     all-or-nothing batches, Claim, ClaimRun, FailExpired, TakeCheckpoint
//     and TakeExpiredCheckpoints are atomic: of concurrent callers exactly
//     one wins each message or checkpoint. The run-event logs are the
//     exception that keeps many concurrent runs cheap: each run's log has
//     its own lock, so AppendRunEvents and ListRunEvents wait neither for
//     other runs nor for the other repositories; DeleteSession still
//     removes a session's run events in one step no reader sees half done.
//     An append stores its batch's data in one block and never copies
//     the events already stored.
//   - Values are deep-copied on the way in and on the way out; mutating a
//     value after passing it in, or a value returned, never changes the
//     store.
//   - Every lookup is scoped by tenant. An id that exists only in another
//     tenant yields an error matching [domain.ErrNotFound], and error texts
//     never carry another tenant's data. Listing artifacts or run events of
//     another tenant's message or run yields an empty slice.
//   - Errors wrap the domain sentinels with an operation name, e.g.
//     "memory: get session <id>: not found"; test them with errors.Is.
//   - Timestamps are stored as the caller sets them. A zero CreatedAt on
//     create becomes the current UTC time and a zero UpdatedAt becomes
//     CreatedAt (or, on update, the current time); these defaults are
//     written back to the value passed in. Claim and FailStale stamp
//     UpdatedAt with the current time.
//   - DeleteCheckpoint and DeleteArtifact report a missing entry with
//     [domain.ErrNotFound].
//   - Leases: ClaimRun sets RunID, LeaseUntil and UpdatedAt and clears
//     CancelRequested; RenewLease changes only LeaseUntil and
//     RequestCancel only CancelRequested. UpdateMessage keeps both while
//     the message stays generating under a run id and clears both
//     otherwise. FinishRun writes a run's outcome like UpdateMessage, but
//     only while the message is generating under that run (ErrConflict
//     otherwise). FailExpired fails generating messages whose non-zero
//     lease ended, in every tenant, and keeps their RunID and LeaseUntil.
//   - Notifications: SubscribeRunEvents is an in-process broadcast. Every
//     AppendRunEvents signals the subscribers of that tenant's run on a
//     channel with a buffer of one (signals coalesce); DeleteSession
//     signals the subscribers of the runs whose events it removed. A
//     subscription starts no goroutine, and stop (idempotent) or the end
//     of its context removes it. Other processes are not notified.
//   - Results: each session keeps [Options].ResultsPerSession named
//     results (default 10) of at most [Options].MaxResultBytes each
//     (default 8 MiB); configure them with [NewWithOptions]. Automatic
//     names result_1, result_2, ... are never reused within a session,
//     and DeleteSession deletes the session's results.
//
// NewCostLedger returns a domain.CostLedger (what model calls cost per
// session and per tenant per UTC day) with exact nano-dollar totals,
// bounded by CostLedgerOptions: MaxSessions sessions (the least recently
// updated evicted) and KeepDays days. NewDataSources returns a
// domain.DataSourceRepository.
//
// Nothing is persisted: the data is gone when the process exits.
package memory
