// Command postgres points bichat's SQL tools at a PostgreSQL database:
// it introspects the schema, prints the YAML definitions the agent reads,
// and runs a short agent session (a scripted model, no API key needed)
// that describes a table and queries it through the read-only path.
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
// Flags:
//
//	-dsn               the read-only role's connection string (default $DATABASE_URL)
//	-schema            introspect only this schema
//	-sample            first create the retail sample data in this schema (writes, through -owner-dsn)
//	-owner-dsn         a role that may create tables (default $DATABASE_OWNER_URL)
//	-role-sql          print the SQL that creates a read-only login role, and exit
//	-allow-privileged  accept a privileged -dsn role (local experiments only)
package main
