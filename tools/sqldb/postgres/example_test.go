package postgres_test

import (
	"fmt"

	"github.com/bichat-go/bichat/tools/sqldb/postgres"
)

// The validator needs no database: it is the first of the three layers.
func ExampleValidator() {
	v := postgres.NewValidator(postgres.Policy{SearchPath: []string{"sales"}})
	allow := []string{"sales.orders", "sales.customers"}
	for _, sql := range []string{
		"WITH big AS (SELECT * FROM orders WHERE total > 100) SELECT c.name, count(*) FROM big JOIN customers c ON c.id = big.customer_id GROUP BY 1",
		"SELECT * FROM orders; DROP TABLE orders",
		"WITH gone AS (DELETE FROM orders RETURNING *) SELECT count(*) FROM gone",
		"SELECT * FROM orders ORDER BY pg_sleep(10)",
		"SELECT * FROM hr.salaries",
	} {
		st, err := v.Validate(sql, allow)
		if err != nil {
			fmt.Println("refused:", err)
			continue
		}
		fmt.Println("accepted, reads", st.Relations)
	}
	// Output:
	// accepted, reads [sales.customers sales.orders]
	// refused: rejected: 2 statements were sent; only one is allowed. send a single SELECT statement without semicolons between statements
	// refused: rejected: DELETE statements are not allowed, not even inside WITH. only read-only SELECT statements can run
	// refused: rejected: function pg_sleep is not allowed (sleep: holds the connection without work). use only ordinary functions on the data (aggregates, window functions, math, text, date/time, formatting, JSON, arrays, ranges); functions that run SQL from text or reach files, the server, sessions or catalogs are refused
	// refused: rejected: relation hr.salaries is not in the allowed datasets. use only the allowed datasets, schema-qualified
}

// Options.Settings maps the caller's data-scoping attributes to the custom
// settings row-level security policies read; Open and New check the
// mapping first (Validate needs no server).
func ExampleOptions_Validate() {
	for _, opts := range []postgres.Options{
		{Settings: map[string]string{"tenant_id": "app.tenant_id", "user_id": "app.user_id", "region": "app.region"}},
		{Settings: map[string]string{"user_id": "app.user_id'); SELECT 1; --"}},
		{Settings: map[string]string{"user_id": "plpgsql.variable_conflict"}},
		{Settings: map[string]string{"user_id": "app.who", "region": "app.who"}},
	} {
		if err := opts.Validate(); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println("ok: each statement sets", len(opts.Settings), "settings from the call's attributes")
	}
	// Output:
	// ok: each statement sets 3 settings from the call's attributes
	// postgres: setting of attribute "user_id", "app.user_id'); SELECT 1; --" must look like prefix.name (e.g. app.user_id): letters, digits and underscores, one dot
	// postgres: setting of attribute "user_id", "plpgsql.variable_conflict" uses the reserved prefix "plpgsql" (PostgreSQL's, an extension's or bichat's own settings); choose your own, e.g. app.variable_conflict
	// postgres: attributes "region" and "user_id" both map to setting "app.who"; each setting takes one attribute
}
