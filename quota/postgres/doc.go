// Package postgres is the PostgreSQL implementation of quota.Limiter:
// the buckets and run slots live in two tables, so every replica sharing
// the database enforces the same limits.
//
//	if err := dpg.Migrate(ctx, pool, "bichat"); err != nil { ... } // domain/postgres: creates the tables
//	lim, err := postgres.New(pool, policy, postgres.Options{Schema: "bichat"})
//	release, err := lim.Admit(ctx, tenantID, userID, runID) // errors.Is(err, quota.ErrExceeded) on refusal
//	defer release()
//	// a run that may outlast SlotTTL calls lim.Renew(ctx, tenantID, runID) every SlotTTL/3
//	lim.Charge(ctx, tenantID, userID, tokens)                // after each model call
//
// # Tables
//
// Migration 0007_quotas.sql of domain/postgres creates them:
//
//   - quota_scopes: one row per tenant (an empty user_id) and per user of a
//     tenant, with the levels of its request and token buckets and the
//     database time of their last update. A missing row is a scope whose
//     buckets are full; Prune deletes rows that have refilled.
//   - quota_slots: one row per admitted run not yet released, with an
//     expiry. A slot past its expiry is free.
//
// # Consistency
//
// Admit is one transaction: it creates the scope rows when missing,
// locks them in a fixed order (the tenant's first, then the user's), so
// concurrent calls never deadlock, reads the database clock
// (clock_timestamp(), after the locks), refills the buckets to it, counts
// the live slots, and either rolls back with the refusal (nothing taken)
// or takes one request from each scope and inserts the slot. Charge locks
// the same rows in the same order. Every replica thus decides on the
// database's clock, whatever its own clock says, and the decisions are
// those of quota.Memory (both use quota.State).
//
// # Slots of dead replicas
//
// A slot expires Options.SlotTTL (default 15 minutes) after its Admit or
// its last Renew. A run that may last longer renews its slot periodically
// (every SlotTTL/3, say); a replica that dies renews nothing, and its
// runs' slots free themselves after at most SlotTTL. The release function
// deletes the slot with a 5-second deadline of its own (so it works after
// the request's context ended); if that fails, the slot expires.
//
// The service's role needs SELECT, INSERT, UPDATE and DELETE on both
// tables.
package postgres
