// Package tools holds what the built-in tools share: Table, the rectangular
// result a query produces and later tools (run_python, draw_chart,
// export_excel, export_pdf) consume, and Results, the per-session store
// that lets those tools refer to earlier results by name.
//
// The default Results, MemoryResults (what the tools use when none is
// given), keeps the last tables of each session in process memory only:
// names such as result_1 are not persisted with the messages, are not
// shared between processes, and vanish when the process restarts (a later
// Get reports domain.ErrNotFound with the names still available, and the
// model queries again). Give every tool the same Results so they see each
// other's tables. To keep them longer, use StoreResults over the
// domain.ResultRepository of the service's repositories (Repositories.
// Results): the tables then reach resumed runs and later messages of the
// session and, with a durable repository such as domain/postgres, survive
// restarts and are shared between processes; they are bounded
// per session and in size by the repository, and are deleted with the
// session. StoreResults records each column's Go type, so cells come back
// as the int64, float64, string, bool, time.Time or []byte they were.
//
// The tools themselves live in subpackages, one per dependency: sqldb (SQL
// databases), python (the sandbox), chart, export (Excel and PDF), catalog
// (dataset discovery) and knowledge (documents and recipes).
package tools
