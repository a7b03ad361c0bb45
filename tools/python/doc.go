// Package python provides run_python, the tool through which the agent
// runs model-written Python in a sandbox (sandbox/bwrap by default,
// sandbox/docker as the reference adapter).
//
// Arguments are {code, inputs[]}: inputs name earlier query results of the
// session (tools.Results); each is copied into the sandbox as the CSV file
// inputs/<name>.csv. The model sees the outcome (ok or the reason for the
// failure), the captured stdout (capped), the end of stderr (where
// tracebacks are) and the names of the files the code saved. The host gets
// a *Run payload with the files' bytes and one domain.Artifact per file:
// kind chart for PNG and SVG, file for CSV, XLSX and JSON, with SHA-256,
// size and media type, ready for the host's artifact store.
package python
