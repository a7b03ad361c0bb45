// Command postgres points bichat's SQL tools at a PostgreSQL database:
// it introspects the schema, prints the YAML definitions the agent reads,
// and asks a bichat.Service one question, which a scripted model (no API
// key needed) answers by describing a table and querying it through the
// read-only path.
//
// The agent connects as a read-only role: postgres.Open refuses a role
// that is a superuser, may write to the schemas it reads, may create
// roles or is a member of pg_read_server_files and the like (see
// postgres.CheckRole). Print the SQL that creates one, run it as the
// owner of the tables, then point -dsn at it:
//
//	go run ./examples/postgres -role-sql analyst -schema sales
//	go run ./examples/postgres -dsn postgres://analyst:pass@localhost:5432/db -schema sales
//
// To try it on an empty database, let a role that may create tables load
// the retail sample data and grant the read-only role access to it:
//
//	go run ./examples/postgres -dsn postgres://analyst:pass@localhost:5432/db \
//	    -owner-dsn postgres://owner:pass@localhost:5432/db -sample retail
//
// The service can keep its own data in PostgreSQL too: with -store-dsn
// (a role that owns the storage schema, never the read-only role above) it
// runs domain/postgres.Migrate on -store-schema (default "bichat"; safe
// to run from several processes at once) and uses that store's
// repositories as bichat.Config.Store, its artifact store for files, and
// tools.StoreResults(repos.Results) for the tools' named results. Sessions,
// messages, run logs, result_1, result_2, ... and their CSV files then
// outlive the program: it prints the session id, and -session continues
// that session from any later run or another process:
//
//	go run ./examples/postgres -dsn postgres://analyst:pass@localhost:5432/db -schema sales \
//	    -store-dsn postgres://bichat:pass@localhost:5432/db
//	go run ./examples/postgres -dsn ... -schema sales -store-dsn ... -session 01a2...
//
// The data and the storage may live in the same database: the read-only
// role has no privilege on the storage schema. Without -store-dsn the
// service keeps everything in memory and it is lost at exit.
//
// Each user sees only their rows: -role-sql ROLE -rls also prints a
// row-level security policy for the sample's orders (and their items)
// that reads the custom setting app.region, and -region NAME asks as a
// caller of that region. The service maps its caller to data-scoping
// attributes (bichat.Config.Attributes: here bichat.DefaultAttributes plus
// the caller's region) and the PostgreSQL adapter sets them for each
// statement (postgres.Options.Settings{"region": "app.region"}), so two
// users of one tenant asking the same question get the orders of their
// own region, and a caller without a region is refused:
//
//	go run ./examples/postgres -role-sql analyst -schema retail -rls   # run its output as the owner
//	go run ./examples/postgres -dsn postgres://analyst:pass@localhost:5432/db -schema retail -region North
//
// Flags:
//
//	-dsn               the read-only role's connection string (default $DATABASE_URL)
//	-schema            introspect only this schema
//	-sample            first create the retail sample data in this schema (writes, through -owner-dsn)
//	-owner-dsn         a role that may create tables (default $DATABASE_OWNER_URL)
//	-role-sql          print the SQL that creates a read-only login role, and exit
//	-allow-privileged  accept a privileged -dsn role (local experiments only)
//	-store-dsn         the storage schema's owner (default $BICHAT_STORE_URL; empty: in memory)
//	-store-schema      the storage schema (default bichat)
//	-session           ask in this stored session (needs -store-dsn)
//	-rls               with -role-sql, also print the sample's row-level security policy
//	-region            ask as a caller of this region (sets app.region for each statement)
package main
