// Command eval measures an agent's execution accuracy on a set of
// verified questions (package agents/eval), end to end through a
// bichat.Service over the embedded SQLite retail sample.
//
//	go run ./examples/eval                       # the built-in sample set, offline
//	go run ./examples/eval -set my-set.yaml -out run2 -compare run1/report.json
//
// Each question runs in a session of its own; the agent's final SQL (the
// last successful query_database call) and the question's verified SQL
// both run read-only, and their results are compared by execution (rows
// as a multiset, ordered only when the verified query orders, numbers
// within a tolerance, column names and order ignored).
//
// Flags:
//
//	-set FILE        question set, YAML or JSONL (id, question, sql, hints,
//	                 tags, datasets); default: the built-in sample.yaml
//	-out DIR         report.json, report.md, report.html and results.jsonl
//	                 (default eval-out)
//	-concurrency N   questions run at once (default 4)
//	-compare OLD     an earlier report.json: list what got better or worse
//	                 (also written to DIR/compare.md)
//	-seed            save the set's questions as verified recipes first
//	-offline         use the scripted analyst even with a provider configured
//
// Results are appended to DIR/results.jsonl as they finish: after an
// interruption (Ctrl-C), the same command resumes with the questions left.
// Delete the folder to start over.
//
// With no provider configured, a scripted analyst answers the sample set:
// four answers are right (one after repairing a failed statement), and
// two are wrong on purpose, a forgotten filter ("values differ") and a
// reversed sort ("order differs"), so the report shows 4/6. Set
// OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, OLLAMA_HOST or
// OPENAI_BASE_URL (and optionally BICHAT_MODEL) to evaluate a real model.
package main
