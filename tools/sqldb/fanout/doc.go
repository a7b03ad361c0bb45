// Package fanout guards free-form SQL against the join fan-out (chasm
// trap): an aggregate over a column of the "one" side of a one-to-many
// join counts each of its rows once per matching row of the "many" side.
// SUM(orders.total) after JOIN order_items ON order_items.order_id =
// orders.id adds each order's total once per order line; COUNT(orders.id)
// counts lines, not orders.
//
// Build a Checker once per catalog with New (or call Check) and ask it
// about each statement:
//
//	chk := fanout.New(nil, datasets)
//	for _, w := range chk.Check(sql) {
//		fmt.Println(w) // message, then the repair hint
//	}
//
// What it knows comes from join cardinalities: each Relationship with a
// Cardinality (declared foreign keys are many_to_one from the
// referencing table; inferred joins and a semantic layer carry one too),
// from the rels argument and from the datasets' own Relationships, plus
// each dataset's primary key. A join whose columns are not known to
// repeat never warns: the guard prefers silence to a false alarm.
//
// Statements are parsed with the PostgreSQL parser (pg_query_go), which
// also reads the common SQLite subset; a statement that does not parse
// gets no warning, and a warning never blocks a statement. The analysis
// resolves aliases, schema-qualified and bare table names (matched
// against dataset names and sources), unqualified columns (through the
// datasets' fields), join conditions (ON a.x = b.y, USING, NATURAL and
// comma joins with WHERE equalities; a column bound to a constant, as in
// AND i.line = 1, counts towards a key), CTEs and subqueries (a CTE or
// subquery grouped by a column is unique on it; one that selects a key
// keeps it) and every query level on its own.
//
// It warns on SUM, AVG, COUNT(col), TOTAL, STDDEV and VARIANCE when every
// column they read belongs to a relation whose rows a one-to-many join in
// the same FROM repeats, and on COUNT(*) when every relation of the FROM
// is repeated (two one-to-many branches). It does not warn on
// COUNT(DISTINCT ...) or any DISTINCT aggregate, MIN or MAX, aggregates
// over the "many" side, expressions that mix in a column of the "many"
// side (SUM(i.quantity * p.unit_price) is computed per order line), nor on
// an aggregate in a CTE or subquery grouped at the right grain before
// joining.
//
// The sqldb tools run the guard on every query_database statement unless
// sqldb.Config.DisableFanOutGuard is set: the warning is appended to the
// summary the model reads and listed in the host's payload
// (sqldb.QueryPayload.FanOut), and the statement runs all the same.
//
// The check needs cgo (pg_query_go embeds the PostgreSQL parser in C); a
// build with CGO_ENABLED=0 compiles, and Check then finds nothing.
package fanout
