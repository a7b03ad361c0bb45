// Package domain holds bichat's entities and the repository interfaces that
// persist them. It is the centre of the dependency graph: every other package
// may import it, and it imports nothing but the standard library.
//
// # Entities
//
// A [Session] is one conversation owned by a user inside a tenant. It holds
// [Message] values; each message has a [Role], an ordered list of [Part]
// values (text, reasoning, tool calls, tool results, file references), a
// [MessageStatus] and [MessageMetadata] (tool calls, token usage, datasets
// used, errors). [Artifact] values (tables, charts, reports, files) hang off
// messages. A [Principal] says who is calling and what they may do.
//
// # Repositories
//
// [SessionRepository], [MessageRepository], [CheckpointRepository],
// [ArtifactRepository], [RunEventRepository], [RunRepository] and
// [ResultRepository] are the persistence seams, bundled in [Repositories].
// Every method takes the tenant id and returns [ErrNotFound] for ids that
// belong to another tenant, so a cross-tenant read yields nothing; the
// exceptions are the sweeps a reaper runs across tenants
// ([MessageRepository].FailStale, [RunRepository].FailExpired and
// [CheckpointRepository].TakeExpiredCheckpoints). The in-memory
// implementation lives in package domain/memory and the PostgreSQL one in
// domain/postgres; package domain/domaintest holds the conformance suite
// every implementation must pass.
//
// Two more seams stand apart from [Repositories]: [CostLedger] (what model
// calls cost per session and per tenant per UTC day, exact in nano-dollars;
// memory.NewCostLedger, postgres.Store) and [DataSourceRepository] (the
// databases a tenant's agent may query, their connection settings sealed
// by package secrets; memory.NewDataSources, postgres.Store). Its
// ScanDataSources is a cross-tenant sweep, for key rotation.
//
// # Writing a repository
//
// The Check functions ([CheckCreateSession], [CheckCreateMessages],
// [CheckUpdateMessage], [CheckClaimRun], [CheckRenewLease],
// [CheckFinishRun], [CheckAppendRunEvents], [CheckSubscribeRunEvents],
// [CheckSaveArtifact], [CheckSaveCheckpoint], [CheckPutResult],
// [CheckCostEntry], [CheckSessionCost], [CheckTenantDayCost],
// [CheckTenantDays], [CheckDataSource], [CheckSwapSealedConfig],
// [CheckScanDataSources]) validate
// the input of one repository method each, the way the interfaces
// require and the conformance suite expects. Both bundled
// implementations call them first; a repository of the host's own should
// too, wrapping the error with its operation name
// (fmt.Errorf("mystore: create session: %w", err)). Each returns nil or
// a [*ValidationError] naming every offending field. They check the input
// only: a taken id (ErrConflict) or a missing parent (ErrNotFound) is the
// store's to report.
//
// # Durable runs
//
// A run holds a lease on the assistant message it generates
// ([RunRepository].ClaimRun), renews it while it works (RenewLease, which
// also reports a cancel request made with RequestCancel from any process)
// and loses the message to FailExpired when it stops renewing, so a run
// whose process died is failed by lease expiry, not by age. It records
// its outcome with FinishRun, which only succeeds while the run still
// owns the message: of an outcome and a reaper racing for the same
// message exactly one wins. A lease and a cancel request belong to one
// run: ClaimRun starts without a cancel request, and UpdateMessage clears
// both when the message leaves generating or is reopened without a run
// id (the reopen before a resumed run is claimed). The run log
// ([RunEventRepository]) is the source of truth for watchers; a store
// that can also wake them on append implements [RunEventNotifier].
// Named query results (result_1, ...) that later tool calls use are kept
// per session, bounded in number and size, by a [ResultRepository]
// ([StoredResult]); checkpoints that nobody answers before their
// ExpiresAt are collected with TakeExpiredCheckpoints.
//
// # Errors
//
// Callers branch on the sentinel errors [ErrNotFound], [ErrForbidden],
// [ErrConflict] and [ErrInvalid] with errors.Is. Validation failures are
// [*ValidationError] values that name each offending field.
package domain
