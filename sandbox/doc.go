// Package sandbox runs untrusted, model-written Python in isolation.
//
// The Sandbox interface has one method that matters, Run(ctx, Job): a
// Job is code, input files (placed under InputDir, "inputs/", in the
// job's working directory) and Limits; the Output is stdout and stderr
// (each capped, with a truncation note), the exit code, whether the job
// timed out or hit its memory limit, the produced files (png, svg, csv,
// xlsx, json; see CollectFiles for the policy) and the duration. A job
// that fails is not an error: Output.Reason explains it. Close releases
// pooled workers.
//
// Two adapters implement it:
//
//   - sandbox/bwrap, the embedded default: bubblewrap, no daemon. Debian's
//     /usr/bin/python3 with python3-pandas, -numpy, -matplotlib, -scipy and
//     -openpyxl, every namespace unshared, read-only system binds, a private
//     tmpfs work folder, warm pools of pre-loaded zygotes that fork a fresh
//     process in fresh namespaces per job.
//   - sandbox/docker, the reference adapter: the Docker Engine API over its
//     unix socket with net/http, one container per job (no network,
//     read-only root, tmpfs work volume, no capabilities, memory and pids
//     cgroup limits, non-root), optionally from a pool of started
//     containers. `make sandbox-image` builds the image offline.
//
// Both run the same in-sandbox runner and the same output policy, and
// both pass the conformance and security suite in sandbox/sandboxtest.
// Defaults: 30 s wall time, 512 MiB memory, 1 CPU, 64 processes, 64 KiB
// per output stream, 20 files of at most 16 MiB, a 64 MiB work folder.
package sandbox
