// Package tools holds what the built-in tools share: Table, the rectangular
// result a query produces and later tools (run_python, draw_chart,
// export_excel, export_pdf) consume, and Results, the per-session store
// that lets those tools refer to earlier results by name.
//
// The tools themselves live in subpackages, one per dependency: sqldb (SQL
// databases), python (the sandbox), chart, export (Excel and PDF), catalog
// (dataset discovery) and knowledge (documents and recipes).
package tools
