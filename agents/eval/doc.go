// Package eval measures how well an agent answers questions over data,
// by execution: each question of a set comes with a verified (gold) SQL
// query; the agent's final SQL and the gold SQL both run read-only, and
// their results are compared.
//
// It lives under agents because it evaluates agent runs: it consumes the
// agents.Event stream of a run and needs only the layers below the root
// (agents, tools/sqldb, kb, kb/recipes). The root package provides the
// adapter, bichat's Service.EvalTarget, so imports still point down.
//
// # Question sets
//
// A Set is read from YAML or JSONL (LoadSet, ParseSet): id, question, sql
// (the gold query), optional hints (sent as discovery hints), tags
// (grouping in the report) and datasets (the gold query's tables, for the
// retrieval recall; by default the tables the database reports the gold
// query read). Errors name the question, or the line in JSONL.
//
//	name: retail
//	questions:
//	  - id: revenue-2025
//	    question: Which region had the highest revenue in 2025?
//	    sql: SELECT r.name, SUM(...) FROM ... GROUP BY r.name ORDER BY 2 DESC
//	    tags: [join, ranking]
//
// # Running
//
// Run sends every question to a Target (Service.EvalTarget, or a scripted
// one in tests) with a concurrency cap, reads the transcript, and judges
// the agent's final SQL: the SQL argument of the last successful
// query_database call (Config.SQLTool); the failed calls before it count
// as repairs, and a run without one fails with "no SQL answer". Both
// statements run through a Querier (a sqldb.DB: PostgreSQL's parser
// check and READ ONLY transaction, SQLite's read-only connection), so an
// answer that writes is refused, never run.
//
// Compare decides: rows as a multiset, in order only when the gold query
// has a top-level ORDER BY (OrdersRows); numbers equal within a relative
// and absolute tolerance whatever their type; column order and names
// ignored (columns are matched by their values); NULL equal only to NULL.
// Every failure has a reason ("row count 3, want 4", "order differs: row 1
// is ...", "values differ: ...").
//
// Results are appended to a JSONL file as they finish (Config.Results);
// a run started again with the same file skips the questions already
// there, so an interrupted evaluation resumes. A progress line
// ("[12/40] 9 ok 3 failed") updates in place on a terminal.
//
// # Reports
//
// The Report lists per question: pass or the failure's reason, retrieval
// recall of the discovery step against the gold tables, tool calls,
// turns, tokens, cost, latency and repairs; and totals overall and per
// tag (execution accuracy, mean recall, sums). It is written as JSON for
// machines (WriteJSON, ReadReport), Markdown and a self-contained HTML
// page with an SVG bar chart for people (WriteMarkdown, WriteHTML), always
// in the set's order. CompareReports lists the questions that got better
// or worse between two runs.
//
// # Seeding recipes
//
// Verified queries are also what recipes should be: SeedRecipes saves
// each question with its gold SQL as a verified recipe (kb/recipes), so
// the discovery step offers it first for similar questions.
//
// The command examples/eval runs all of this on the sample retail data.
package eval
