// Package semantic is a small semantic layer, in the spirit of dbt
// MetricFlow, Cube and WrenAI's MDL: metrics and dimensions are defined
// once, in YAML next to the datasets, and the query_metrics tool lets the
// model ask for "revenue and orders by region and month" without writing
// SQL. The SDK writes the statement with the right joins, aggregating each
// measure at its own grain first, so nothing double counts, and runs it
// through the same read-only path as query_database (sqldb.DB.Query: the
// statement check, the read-only transaction, the timeout and row cap).
//
// # The model
//
//	entities:                  # datasets and their primary keys
//	  - {name: orders, primary_key: [id]}          # dataset defaults to the name
//	  - {name: order_items, dataset: sales.order_items, primary_key: [order_id, line]}
//	  - {name: customers, primary_key: [id]}
//	joins:                     # cardinality seen from "from"; to_columns default to to's key
//	  - {from: order_items, to: orders, from_columns: [order_id], cardinality: many_to_one}
//	  - {from: orders, to: customers, from_columns: [customer_id], cardinality: many_to_one}
//	measures:                  # an aggregation over one entity's rows
//	  - {name: revenue, entity: order_items, expr: quantity * unit_price, agg: sum}
//	  - {name: order_count, entity: orders, expr: id, agg: count_distinct}
//	  - {name: completed, entity: orders, agg: count, filter: "status = 'completed'"}
//	dimensions:                # what to group and filter by
//	  - {name: status, entity: orders, column: status}
//	  - {name: ordered_at, entity: orders, column: ordered_at, type: time, grains: [day, month, year]}
//	metrics:                   # what the model may ask for
//	  - {name: revenue, measure: revenue}
//	  - {name: orders, measure: order_count}
//	  - {name: avg_order_value, numerator: revenue, denominator: order_count}
//
// Names are lower-case identifiers without a double underscore (it
// separates a time dimension from its grain in a query: ordered_at__month).
// Aggregations are sum, count, count_distinct, avg, min and max; a count
// without expr counts rows. Cardinalities are domain.CardinalityOneToOne,
// CardinalityManyToOne and CardinalityOneToMany; a many-to-many relation
// is modelled as a bridge entity with two many-to-one joins.
//
// Expressions (a measure's expr and filter, a dimension's expr) are SQL
// over the columns of their own entity, named bare: every bare or
// double-quoted identifier is a column (qualified with the entity's table
// alias in the generated SQL), except SQL keywords, function names (a word
// followed by "("), and type names after "::" or in CAST(x AS type).
// Semicolons, comments, parameter markers and qualified names (a.b) are
// refused. They are written by the host, never by the model.
//
// Load parses and checks the model; Validate checks it against the
// database (db.Introspect): datasets, columns of keys, joins, measures,
// filters and dimensions exist, joined columns have compatible types, sums
// and averages of one column are numeric, time dimensions of one column
// are dates or timestamps, and every entity is joined to the others.
// Errors name the offending item.
//
// # The SQL
//
// Model.SQL turns a Query (metrics, dimensions, filters, time range,
// order, limit) into one statement for sqldb.DialectPostgres or
// sqldb.DialectSQLite. Each measure gets a common table expression that
// reads its entity, LEFT JOINs only the entities its dimensions and filters
// need along the join graph (the path with the fewest one-to-many steps),
// applies the filters and groups by the dimensions; the measures are then
// joined on the dimension values (null-safe), and ratios divide with
// NULLIF. A measure of the "one" side (orders) is thereby never repeated
// by the "many" side (order lines) of another measure. A measure whose
// dimension or filter lies across a one-to-many join is refused with an
// error saying why, unless its aggregation ignores repeated rows
// (count_distinct, min, max: "distinct customers by order month"). Rows
// whose dimension entity is missing group under NULL; counts of absent
// combinations are 0, other measures NULL.
//
// Time grains truncate with date_trunc in PostgreSQL (the value is a date)
// and with date/strftime in SQLite (the value is YYYY-MM-DD text); weeks
// start on Monday. A time dimension asked without a grain uses its first
// (finest) grain.
//
// Filter values are never SQL text: strings become quoted literals with
// quotes doubled (in PostgreSQL a string holding a backslash becomes an
// escape string with the backslash doubled, so it reads the same whatever
// standard_conforming_strings says), numbers are re-rendered from their
// value, booleans are TRUE or FALSE, and a time dimension accepts only
// dates and timestamps (parsed, then re-rendered). NUL bytes and invalid
// UTF-8 are refused.
//
// In SQLite, time columns must hold ISO-8601 text ("2025-01-31 12:00:00"),
// the form SQLite's date functions read; time ranges and time filters
// compare through datetime() so the "T" and space separators agree.
//
// # Using it
//
//	m, err := semantic.Load(yamlBytes)
//	if err != nil { ... }
//	if err := m.Validate(ctx, db); err != nil { ... } // db is a sqldb.DB
//	tool, err := semantic.NewTool(semantic.Config{Model: m, DB: db, Results: results})
//	// add tool to the agent's tools, and m.Describe() to its context
//
// The tool's result is the one query_database returns: a summary with a
// preview for the model, a *sqldb.QueryPayload (all rows, the generated
// SQL as Table.SQL, a CSV) and a CSV artifact for the host, stored under a
// result name the python, chart and export tools accept. Model.Describe is
// a compact, deterministic block listing the metrics and dimensions for
// the model's context; Model.Relationships exports the joins with their
// cardinalities for the catalog and fan-out checks.
package semantic
