// Package postgres stores hooks/audit chains in PostgreSQL: an
// [audit.Sink] and [audit.Reader] over the tables audit_entries (one row
// per entry, PRIMARY KEY (tenant_id, seq); data is the canonical JSON
// text that was hashed) and audit_heads (each tenant's last seq and hash),
// created by domain/postgres.Migrate (migration version 6) in the same
// schema as the other bichat tables; run it before New.
//
// Several replicas may record into the same tenant's chain: Append runs
// in one transaction that locks the tenant's head row (SELECT ... FOR
// UPDATE), hands the head to the Recorder's seal function, inserts the
// entry and moves the head, so appends to one tenant are serialised by
// the database and every entry's Seq and Prev come from the committed
// head. Verification (audit.VerifyTenant, audit.VerifyAll) reads the head
// row first, then the entries in seq order; deleting rows from the end
// of a chain leaves the head ahead of it, which Verify reports.
//
// The service needs SELECT, INSERT and UPDATE on the two tables; grant
// it nothing more (no DELETE, no UPDATE on audit_entries) to make the
// chain append-only for it.
//
// New takes the host's pool; the sink never opens connections of its
// own.
package postgres
