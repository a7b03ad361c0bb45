// Package postgres is the PostgreSQL adapter of sqldb.DB, the reference
// implementation of bichat's read-only data access, on
// github.com/jackc/pgx/v5.
//
// Open and New first check the role they connect as (CheckRole) and
// refuse, with an error naming each finding (ErrPrivilegedRole), a
// superuser, a role with BYPASSRLS, CREATEROLE or REPLICATION, a member
// of pg_read_server_files, pg_write_server_files,
// pg_execute_server_program, pg_signal_backend or pg_write_all_data, and
// a role that may create in the database or in the schemas the agent
// reads or write their tables; Options.AllowPrivilegedRole accepts such a
// role at the stated risk. Give the agent a read-only role:
//
//	CREATE ROLE analyst LOGIN PASSWORD '...';
//	ALTER ROLE analyst SET default_transaction_read_only = on;
//	GRANT USAGE ON SCHEMA sales TO analyst;
//	GRANT SELECT ON ALL TABLES IN SCHEMA sales TO analyst;
//	ALTER DEFAULT PRIVILEGES IN SCHEMA sales GRANT SELECT ON TABLES TO analyst;
//
// Every statement then passes three layers, each tested on its own:
//
//  1. Validator parses it with the real PostgreSQL parser
//     (github.com/pganalyze/pg_query_go/v6) and accepts exactly one
//     statement whose root is a SELECT (plain, WITH, set operations,
//     VALUES, TABLE) with no data-modifying CTE, no SELECT INTO, no locking
//     clause, no system catalog unless Policy.AllowSystemCatalogs, and,
//     when the request carries an allowlist (sqldb.Limits.Tables), only
//     allowed relations (schema-qualified; CTE names excluded with correct
//     scoping; bare names resolved against Policy.SearchPath). Functions
//     are default-deny: every function call, operator, cast target type,
//     column definition type, TABLESAMPLE method and SQL keyword function
//     (CURRENT_USER, LOCALTIMESTAMP, ...) anywhere in the tree must be
//     allowed by policy.txt, a reviewed list embedded in the package with
//     one line per PostgreSQL function and its family (aggregates, window,
//     math, text, date/time, formatting, JSON, arrays, ranges, network,
//     full-text search without query text, geometric, uuid, xml values,
//     ...). Functions that run query text (ts_rewrite(query, text),
//     ts_stat, query_to_xml), read tables named by an argument
//     (table_to_xml), open connections, touch files or large objects,
//     lock, use sequences, settings, statistics, replication or backends,
//     or read the catalogs are denied there with a reason the error
//     names. Operators are allowed when every function implementing them
//     is; casts by target type, reg* types (regclass, regproc, ...)
//     denied. A host extends the list with Policy.AllowFunctions,
//     AllowOperators and AllowTypes (its own functions, operators, enums
//     and domains) and narrows it with Policy.DeniedFunctions. Tests
//     against the real server enumerate pg_proc, pg_operator and pg_cast
//     and fail on anything policy.txt does not classify, so a new server
//     version forces a review. Syntax errors carry the parser's position
//     and the statement's line with a caret under it.
//  2. DB.Query runs it in BEGIN READ ONLY with the transaction-local
//     statement_timeout (sqldb.Limits.Timeout, default 30 s), search_path
//     and the data-scoping settings (below); the transaction always rolls
//     back.
//  3. The statement becomes a cursor (DECLARE ... NO SCROLL CURSOR FOR,
//     which itself admits only queries) and at most MaxRows+1 rows are
//     fetched: the full result is never materialised, and the extra row
//     tells whether the result was truncated. Cells and total bytes are
//     capped. Rows arrive in the text format (with DateStyle,
//     IntervalStyle, extra_float_digits and bytea_output set for the
//     transaction): booleans, integers, floating-point and numeric
//     values, dates and timestamps, bytea, json and jsonb and arrays of
//     these become Go values (sqldb.Result); every other type, such as
//     tsvector, tsquery, interval, ranges and multiranges, geometric and
//     network types, money, xml, pg_lsn, enums, composites and arrays of
//     them, is the server's own text form, never raw bytes.
//
// Per-user data scoping: Options.Settings maps the caller's data-scoping
// attributes (sqldb.Limits.Attributes; the data tools fill them from
// agents.CallInfo.Attributes, which bichat.Config.Attributes derives from
// the principal: tenant_id, user_id and roles by default) to custom
// settings, e.g. {"tenant_id": "app.tenant_id", "user_id": "app.user_id"}.
// Each statement's transaction sets them with set_config(name, value,
// true), values bound as parameters, in the same round trip, so
// row-level security policies see the caller:
//
//	ALTER TABLE sales.orders ENABLE ROW LEVEL SECURITY;
//	ALTER TABLE sales.orders FORCE ROW LEVEL SECURITY;
//	CREATE POLICY own_orders ON sales.orders FOR SELECT USING (
//	  tenant_id = current_setting('app.tenant_id', true)
//	  AND sales_rep = current_setting('app.user_id', true));
//
// Two users asking the same question then get different rows. It fails
// closed: a call without a mapped attribute (or with it empty, over
// MaxSettingValueBytes, with a NUL byte) is refused before anything
// reaches the server. The model cannot change the settings: set_config
// and current_setting are denied by policy.txt (under any spelling or
// schema), SET, RESET, DO and every other non-SELECT statement are
// refused, pg_settings is a system catalog, and the settings are
// transaction-local, so the session keeps none of them; tests on the
// real server try each route and check that the next statement still
// sees the caller's values. The policies bind only a role that does not
// own the tables (or FORCE ROW LEVEL SECURITY) and has no BYPASSRLS,
// which CheckRole refuses. Options.TenantSetting is the older form of a
// "tenant_id" entry (an empty tenant id is set as the empty string rather than
// refused).
//
// All of this is one network round trip (plus one format_type look-up per
// type pgx does not know, cached). Errors are *sqldb.Error values
// classified from SQLSTATE with a repair hint for the model; they never
// contain the connection string or the password. A server error's
// Position points into the statement as the caller wrote it, with an
// Excerpt and a caret. A timeout of a statement that calls a function in
// FROM (generate_series, unnest, ...) gets its own hint: PostgreSQL
// computes such a function in full before the first row, so a LIMIT does
// not help; the hint says to bound the function's arguments or to call it
// in the select list, where its rows stream.
//
// A host that keeps its tenants' databases as data sources (package
// secrets: connection settings sealed with AES-256-GCM) connects with
// OpenDataSource, which decrypts the settings only then.
//
// # Introspection
//
// DB.Introspect lists what the role may SELECT in Options.Schemas (every
// schema but pg_* and information_schema when empty) with the database
// (current_database()) and schema of each dataset, column types,
// nullability, primary keys, foreign keys as Relationships with their
// Cardinality, COMMENT ON texts as descriptions, row estimates, and, for
// low-cardinality text and enum columns, a bounded sample of distinct
// values (Field.Values) that lets the catalog find a column from a value a
// question names. Sampling costs little and never needs more than SELECT:
// pg_stats answers first for free (a column whose n_distinct estimate is
// over Options.SampleValues.MaxDistinct is skipped, one whose most common
// values are all of them takes those); the remaining columns of a table are
// read by one query over at most MaxRows rows (TABLESAMPLE SYSTEM first
// for big tables) in a READ ONLY transaction with a statement timeout.
// Columns the host marks sensitive get Sensitive and are never read;
// tables with row-level security enabled, views and foreign tables are
// never sampled:
//
//	db, err := postgres.Open(ctx, dsn, postgres.Options{
//		Schemas:      []string{"sales"},
//		SampleValues: sqldb.SampleValues{SensitiveColumns: []string{"email", "sales.customers.phone"}},
//	})
//
// For schemas without foreign keys, sqldb.InferJoins proposes and
// confirms the joins through the same read-only Query path.
package postgres
