// Package sandboxtest holds the suite every sandbox.Sandbox adapter runs
// against its real isolation mechanism (Run: conformance, the security
// cases, no leaks across a pooled worker) and the shared benchmark
// helpers (BenchJob, BenchImportBaseline, PrintJob, ChartJob).
//
// The security cases: connecting to a port listening on the host's
// 127.0.0.1 and to outside addresses; writing outside the work folder
// (including a host file and a host folder); reading another job's files,
// concurrently and afterwards; allocating 2 GiB; a fork bomb; an infinite
// loop; 100 MB to stdout; symlinks to /etc/shadow read back as output
// files; a background process that must not survive its job; a pooled
// worker reused after a job that changed global state. Each must be
// contained, reported with a reason, and the sandbox must still work
// afterwards.
//
// The limit cases (Limits): 8 forked processes spinning for 3 s under
// Limits.CPUs = 1 must use at most 1.1 CPU seconds per wall second
// (CPULimit; a sandbox that reports "cpu" in Output.Unenforced skips it,
// or fails it under BICHAT_REQUIRE_INTEGRATION=1); creating empty files in
// the work folder, /tmp and /dev/shm stops with ENOSPC at Limits.Inodes
// (Inodes); TMPDIR is a writable /tmp where tempfile works and writing
// past Limits.WorkBytes fails with ENOSPC (WritableTmp).
//
// NoLeakAcrossJobs (not part of Run; adapters call it on their own) runs a
// job holding a random marker, then searches for it from the next job on
// the same warm worker: frames, objects, modules, files and memory.
//
// Unavailable skips a test when the sandbox cannot run here, or fails it
// when BICHAT_REQUIRE_INTEGRATION=1.
package sandboxtest
