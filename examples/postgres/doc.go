// Command postgres points bichat's SQL tools at a PostgreSQL database:
// it introspects the schema, prints the YAML definitions the agent reads,
// and runs a short agent session (a scripted model, no API key needed)
// that describes a table and queries it through the read-only path.
//
//	go run ./examples/postgres -dsn postgres://user:pass@localhost:5432/db
//	DATABASE_URL=postgres://... go run ./examples/postgres
//
// Flags:
//
//	-dsn      connection string (default $DATABASE_URL)
//	-schema   introspect only this schema
//	-sample   first create the retail sample data in this schema (writes!)
package main
