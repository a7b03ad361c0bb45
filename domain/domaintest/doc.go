// Package domaintest is the conformance suite for implementations of the
// repository interfaces in package domain. Every implementation (the
// in-memory store in domain/memory, a database adapter) runs it from its
// own tests:
//
//	package pgstore_test
//
//	func TestRepositories(t *testing.T) {
//		domaintest.RunRepositoryTests(t, func(t *testing.T) domain.Repositories {
//			db := openEmptySchema(t) // a fresh schema, dropped in t.Cleanup
//			return pgstore.New(db).Repositories()
//		})
//	}
//
// The factory is called once per subtest and subtests run in parallel, so
// each call must return repositories over an empty store of its own. Run
// the suite with the race detector (go test -race): several subtests
// race goroutines against Claim, ClaimRun, FailExpired, TakeCheckpoint and
// TakeExpiredCheckpoints.
//
// [RunCostLedgerTests] and [RunDataSourceTests] do the same for a
// domain.CostLedger and a domain.DataSourceRepository.
//
// Pass an [Options] when the store is configured with limits other than
// the defaults (10 results per session, 8 MiB per result), e.g.
//
//	domaintest.RunRepositoryTests(t, newRepos, domaintest.Options{ResultsKeep: 3, ResultBytes: 1000})
//
// # What the suite requires
//
// Beyond the contracts documented on the interfaces in package domain, the
// suite pins down these choices, which an adapter must match:
//
//   - Errors match the domain sentinels with errors.Is: ErrInvalid for bad
//     input, ErrNotFound for unknown ids and for ids of another tenant,
//     ErrConflict for duplicate ids, lost races and stale run event
//     sequences.
//   - Session and message ids must pass domain.ValidID; checkpoint and
//     artifact ids must be non-empty. Everything needs a tenant id,
//     sessions an owner id, checkpoints and artifacts a message id.
//   - CreateMessages rejects, with ErrInvalid, a batch whose messages
//     differ in tenant or session or have an unknown role or status.
//   - ListMessages orders by CreatedAt and then by insertion order (not by
//     id); it returns ErrNotFound for a session that does not exist in the
//     tenant and for a Before id that is not a message of the session, and
//     ErrInvalid for a negative Limit.
//   - ListSessions breaks ties in the sort field so that paging through
//     equal values neither repeats nor skips a session.
//   - UpdateMessage rejects an unknown status with ErrInvalid and keeps
//     Role, SessionID, Attachments and CreatedAt.
//   - Claim sets UpdatedAt to the store's current time and rejects an
//     empty run id with ErrInvalid.
//   - FailStale affects generating messages without a run lease whose
//     UpdatedAt is strictly before the cutoff, in every tenant, and keeps
//     the rest of each message.
//   - DeleteCheckpoint and DeleteArtifact return ErrNotFound when there is
//     nothing to delete.
//   - AppendRunEvents rejects a Seq below 1, an empty run or tenant id, and
//     a batch that mixes runs or tenants with ErrInvalid; ListRunEvents
//     returns an empty slice, not an error, for an unknown run or another
//     tenant's run, and ErrInvalid for a negative limit.
//   - CreateMessages stores LeaseUntil and CancelRequested as given;
//     UpdateMessage keeps both while the updated message is generating
//     with a run id, and clears both when it is not generating or has an
//     empty RunID (a reopened message must not be reaped for its old
//     lease nor inherit an old cancel request).
//   - ClaimRun rejects an empty run id or a zero lease with ErrInvalid,
//     conflicts with a message claimed by Claim, clears CancelRequested,
//     and sets UpdatedAt to the store's current time. FinishRun writes
//     what UpdateMessage writes (clearing the lease and the cancel
//     request) only while the message is generating under the given run;
//     otherwise it yields ErrConflict and changes nothing (also after
//     FailExpired: of the two racing, exactly one changes the message); it
//     rejects a nil message, an empty run id, a generating or unknown
//     status and a message whose RunID is not the run with ErrInvalid,
//     and sets a zero UpdatedAt to the store's current time. RenewLease rejects an empty run id or a zero
//     time with ErrInvalid, changes only LeaseUntil (not UpdatedAt), and
//     renews a lease that expired but was not reaped yet. RequestCancel
//     changes only CancelRequested, also on an unclaimed generating
//     message (a later ClaimRun clears it). FailExpired keeps the rest of each message it fails (RunID
//     and LeaseUntil included), sets UpdatedAt to the store's current
//     time, treats a lease ending exactly at now as live, and rejects a
//     negative limit with ErrInvalid; so does TakeExpiredCheckpoints.
//   - RunEventNotifier (checked when RunEvents implements it): the channel
//     has capacity 1; a subscriber is signalled within 10 s of an append
//     to its run, and gets nothing within 300 ms for appends to other
//     runs or to the same run id in another tenant; after stop, or once
//     its context is done, no further signal arrives (the channel may be
//     closed or left open).
//   - ResultRepository: automatic names start at result_1 in each session,
//     skip names a caller chose, and are never reused after eviction; a
//     result rejected with ErrTooLarge uses up no name. GetResult,
//     ListResults and PutResult return ErrNotFound for a session that does
//     not exist in the tenant; a name that fails domain.ValidName is
//     ErrInvalid. Data comes back byte for byte.
//
// # Comparisons
//
// Times are compared as instants (time zone and monotonic reading are
// ignored). Fixture times are whole milliseconds after 2026-01-01, so a
// store with microsecond precision round-trips them. Nil and empty slices
// and maps compare equal. Provider data (ToolCall.Opaque, Reasoning.Opaque)
// is bytes and must come back byte for byte. Raw JSON fields
// (ToolCall.Arguments, Checkpoint.Data, RunEvent.Data) must too: the
// fixtures are compact JSON with unsorted keys and \u escapes, so storing
// them as text, json or bytea, or inside a document written with
// encoding/json, passes, while a PostgreSQL jsonb column, which reorders
// keys and rewrites escapes, does not.
//
// The tenant-isolation part calls every tenant-scoped method of every
// repository with tenant B and tenant A's ids and checks that the answer
// is ErrNotFound (or empty, for the listings documented so) and that
// nothing of tenant A changed.
//
// Where tenant B creates data that reuses one of tenant A's ids (a session,
// message or artifact id, the message id of a checkpoint, a run id), the
// suite accepts success or failure and checks only that tenant A's data
// is unchanged.
package domaintest
