// Package audit keeps a tamper-evident audit trail of what bichat did for
// each tenant: every question, model call, tool call, SQL statement,
// policy decision, artifact and answer becomes an Entry in the tenant's
// hash chain. Each entry carries the SHA-256 of its own canonical
// encoding (Entry documents exactly which bytes) and the hash of the
// tenant's previous entry, so changing, removing, reordering or inserting
// an entry breaks the chain at that point, and Verify names the first
// broken link (*BreakError).
//
// Wiring:
//
//	sink, err := audit.OpenJSONL("/var/lib/bichat/audit.jsonl", audit.JSONLOptions{})
//	rec, err := audit.New(sink, audit.Options{Redact: maskSecrets})
//	unsubscribe, err := bus.Subscribe(rec, audit.Kinds()...)
//	...
//	err = audit.VerifyAll(ctx, sink) // nil, or the broken chains
//
// Recorder.Handle maps bichat's events to entries (see the Type
// constants for what each entry's Data holds); Recorder.Record appends
// entries of the host's own. Options.Redact rewrites every string of an
// entry's Data before it is hashed, so redacted text never reaches the
// chain.
//
// Sinks: Memory (tests), JSONL (one append-only file per process) and
// hooks/audit/postgres (tables created by domain/postgres.Migrate; safe
// for several replicas appending to the same tenant's chain). A Sink
// computes nothing itself: its Append reads the tenant's head and stores
// the entry the Recorder's seal function builds from it, in one
// serialised step, so Seq and Prev always come from the stored head,
// never from a stale copy in memory, and a restarted process continues
// its chains where they ended.
//
// Each sink also keeps every tenant's head (last Seq and Hash) apart from
// the entries; VerifyTenant checks the chain against it, which reveals
// entries cut from the end. Someone who can rewrite both the entries and
// the heads can rebuild a consistent chain: to detect that too, copy the
// heads (Reader.Head) to a system they cannot write, and pass them to
// Verify or VerifyTenant as anchors.
package audit
