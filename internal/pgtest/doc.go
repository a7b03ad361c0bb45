// Package pgtest is test support for the packages whose tests run
// against a real PostgreSQL server: it finds the server, shares a pool
// within a test binary, and gives each test a schema of its own that is
// dropped when the test ends, so tests never see or remove each other's
// tables.
//
// The server is named by the environment variable BICHAT_TEST_POSTGRES_DSN
// (make setup writes it to .ci/test.env). When it is unset, a test that
// asks for it is skipped with a message saying how to run it, or fails
// when BICHAT_REQUIRE_INTEGRATION=1, so CI cannot pass by skipping.
//
//	func TestSomething(t *testing.T) {
//		p := pgtest.SharedPool(t, 12)
//		schema := pgtest.Schema(t, p) // then migrate it: postgres.Migrate(ctx, p, schema)
//		...
//	}
package pgtest
