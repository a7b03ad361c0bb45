// Package sqlite is the embedded SQLite adapter of sqldb.DB, on
// modernc.org/sqlite (pure Go, no cgo).
//
// The database file is opened read-only (mode=ro) with PRAGMA query_only
// on every connection. A statement must be exactly one SELECT, WITH or
// VALUES statement (CheckStatement: no second statement after a semicolon,
// no ATTACH, PRAGMA or data-changing keyword), and while it is prepared an
// SQLite authorizer allows only reading ordinary tables (those of
// Limits.Tables when an allowlist is given) and calling functions not on
// DefaultDeniedFunctions (load_extension, file access, sqlite_*). Rows are
// read from the stream and reading stops at Limits.MaxRows; the timeout
// interrupts the statement through its context.
package sqlite
