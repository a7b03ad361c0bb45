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
// other's tables; implement Results over a shared store to keep them
// longer.
//
// The tools themselves live in subpackages, one per dependency: sqldb (SQL
// databases), python (the sandbox), chart, export (Excel and PDF), catalog
// (dataset discovery) and knowledge (documents and recipes).
package tools
