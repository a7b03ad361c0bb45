// Package postgres is the PostgreSQL adapter of sqldb.DB, the reference
// implementation of bichat's read-only data access, on
// github.com/jackc/pgx/v5.
//
// Every statement passes three layers, each tested on its own:
//
//  1. Validator parses it with the real PostgreSQL parser
//     (github.com/pganalyze/pg_query_go/v6) and accepts exactly one
//     statement whose root is a SELECT (plain, WITH, set operations,
//     VALUES, TABLE) with no data-modifying CTE, no SELECT INTO, no locking
//     clause, no function on the deny list (DefaultDeniedFunctions: file,
//     network, administration, sleep, sequence, advisory-lock, set_config
//     and server-information families) anywhere in the tree, no system
//     catalog unless Policy.AllowSystemCatalogs, and, when the request
//     carries an allowlist (sqldb.Limits.Tables), only allowed relations
//     (schema-qualified; CTE names excluded with correct scoping; bare
//     names resolved against Policy.SearchPath).
//  2. DB.Query runs it in BEGIN READ ONLY with the transaction-local
//     statement_timeout (sqldb.Limits.Timeout, default 30 s), search_path
//     and, when Options.TenantSetting is set, the tenant id for row-level
//     security policies; the transaction always rolls back.
//  3. The statement becomes a cursor (DECLARE ... NO SCROLL CURSOR FOR,
//     which itself admits only queries) and at most MaxRows+1 rows are
//     fetched: the full result is never materialised, and the extra row
//     tells whether the result was truncated. Cells and total bytes are
//     capped.
//
// All of this is one network round trip. Errors are *sqldb.Error values
// classified from SQLSTATE with a repair hint for the model; they never
// contain the connection string or the password.
package postgres
