// Package sqldb gives the agent safe, bounded, informative SQL access.
//
// DB is the small interface adapters implement: tools/sqldb/postgres
// (PostgreSQL through pgx; every statement checked with the real PostgreSQL
// parser, run in a READ ONLY transaction with a server-side timeout and
// read through a cursor) and tools/sqldb/sqlite (embedded SQLite, no cgo;
// read-only connection, query_only and an authorizer). Both return a
// Result of at most Limits.MaxRows rows with database type names and a
// truncation flag, and classify failures as an *Error with a Kind and a
// short repair hint for the model ("column x does not exist; call
// describe_table"); an error that points into the statement carries the
// character Position and an Excerpt of that line with a caret under it
// (ExcerptAt, Error.Locate). Error messages never contain connection
// strings or passwords.
//
// New builds the data tools over a DB, each an agents.Tool with two-track
// results:
//
//   - query_database {sql}: the model sees a markdown preview (20 rows by
//     default) with the row count, a truncation note and the duration, or
//     in data-minimisation mode only column statistics; the host gets every
//     fetched row (QueryPayload) and a CSV table artifact. The table is kept
//     in a tools.Results store under a name (result_N) that run_python,
//     draw_chart and the export tools accept.
//   - get_sample_data {dataset, limit}: a few rows of one dataset.
//   - describe_table {datasets}: the YAML definitions (domain.Dataset.YAML).
//   - profile_dataset {dataset}: per column type, nulls, distinct count,
//     min, max, mean and median for numbers and top values for text,
//     computed in SQL within the timeout.
//
// With Config.Bus set, every statement the tools run is published as a
// QueryEvent (tool, rows, truncation, duration, error kind), next to the
// executor's tool.start and tool.finish events.
//
// Introspection (DB.Introspect) describes what the agent may read; the
// adapters also collect, within the bounds of SampleValues (their
// Options.SampleValues), a sample of the distinct values of low-cardinality
// text columns (domain.Field.Values), never of columns the host marks
// sensitive. For schemas without declared foreign keys, InferJoins
// proposes joins from column names and types and confirms each with a
// bounded value-overlap query through DB.Query, returning the confirmed
// ones with a Confidence and a Cardinality (domain.Relationship.Inferred):
//
//	datasets, _ := db.Introspect(ctx)
//	joins, _ := sqldb.InferJoins(ctx, db, datasets, sqldb.InferOptions{})
//	// add joins to datasets[i].Relationships before building the catalog
//
// tools/sqldb/sampledata generates the project's deterministic retail
// sample database for both dialects.
package sqldb
