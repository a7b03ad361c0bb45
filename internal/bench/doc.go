// Package bench holds what the SDK's benchmarks share: the three cheap
// tools of the benchmark runs (two parallel-safe, one not) and the tool
// calls that exercise them, so the executor's and the service's
// benchmarks measure the same shape of run.
package bench
