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
//
// # Per-user data scoping (weaker than PostgreSQL's)
//
// SQLite has no row-level security. What this package offers instead:
// the SQL function bichat_attr(name) returns the caller's data-scoping
// attribute (sqldb.Limits.Attributes, which the data tools fill from
// agents.CallInfo.Attributes) of the statement running on that
// connection, and fails the statement when the call lacks it. A host
// defines views that filter by it and lets the agent read only the views
// (the allowlist, sqldb.Limits.Tables):
//
//	sqlite.RegisterAttrFunction() // before opening the writable connection
//	CREATE VIEW my_orders AS SELECT * FROM orders
//	  WHERE tenant = bichat_attr('tenant_id') AND owner = bichat_attr('user_id');
//
//	db, _ := sqlite.Open(path, sqlite.Options{Attributes: []string{"tenant_id", "user_id"}})
//	tools, _ := sqldb.New(sqldb.Config{DB: db, Limits: sqldb.Limits{Tables: []string{"my_orders"}}})
//
// Two users asking the same question of my_orders get their own rows; a
// statement whose call lacks an attribute of Options.Attributes is
// refused before it runs. Each connection is opened through a driver of
// its own whose bichat_attr reads that connection's current statement's
// attributes, so concurrent statements never see each other's.
//
// Why it is weaker: nothing below the views enforces the scoping. The
// base tables hold every user's rows and any statement that reaches
// them sees everything; only the allowlist keeps the agent on the views
// (the authorizer lets a view in the allowlist read the tables it is
// defined on, and refuses a common table expression named like a view).
// Without an allowlist, or with a base table in it, there is no scoping
// at all, and a view the host writes without bichat_attr shows every
// row. The file itself is not protected: whoever can read it reads
// everything. Use PostgreSQL with row-level security (tools/sqldb/postgres
// Options.Settings) where users must not see each other's data.
//
// # Introspection
//
// DB.Introspect lists tables and views with Schema "main" (Database is
// left empty: a host pooling several files names them), declared types,
// NOT NULL, primary keys, foreign keys as Relationships with their
// Cardinality, and exact row counts of tables. For the text columns (TEXT
// affinity) of tables it collects a bounded sample of distinct values
// (Field.Values), one query per table over at most
// Options.SampleValues.MaxRows rows within its timeout; a column with more
// than MaxDistinct values gets none, and so does a column with a distinct
// value per row of a partial sample. Columns the host marks sensitive
// (SampleValues.SensitiveColumns or Sensitive) get Sensitive and are never
// read; views are never sampled. SQLite has no COMMENT ON: descriptions
// come from the comments of the CREATE TABLE statement SQLite keeps,
//
//	CREATE TABLE orders ( -- One row per order.
//	  id INTEGER PRIMARY KEY,
//	  -- When the order was placed (UTC).
//	  ordered_at TEXT NOT NULL,
//	  status TEXT NOT NULL -- completed, cancelled or returned
//	)
//
// and are the host's to add otherwise.
package sqlite
