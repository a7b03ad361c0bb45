// Package docker is the reference sandbox.Sandbox adapter: Docker
// containers driven through the Engine API over its unix socket with plain
// net/http (no Docker client module). The API version is negotiated with
// /_ping (the engine's version, capped at 1.43; at least 1.25).
//
// Each job runs in its own container, created from Config.Image (`make
// sandbox-image` builds bichat-sandbox:bookworm-N offline from Debian
// packages) with: NetworkMode none and networking disabled, a read-only
// root filesystem, the work folder /work on a tmpfs-backed anonymous
// volume with a size cap (the archive endpoint cannot write into plain
// tmpfs mounts of a read-only container; volumes it can), CapDrop ALL,
// no-new-privileges, Memory = MemorySwap (Limits.Memory plus
// Config.RunnerMemory for the resident runner), NanoCPUs, PidsLimit,
// private IPC with a 16 MiB /dev/shm, nofile 256, no core dumps, the
// non-root user 10001. The code and the inputs are copied in with PUT
// /containers/{id}/archive; the runner (the same one sandbox/bwrap uses)
// runs the code in a child process with the wall time, output caps and
// file-size limit, kills every process of the container when it is done,
// and writes the capped stdout and stderr to the container's streams,
// which are read from the logs endpoint and demultiplexed from the
// 8-byte-header stream format. The files come out with GET
// /containers/{id}/archive; symlinks and special files are reported,
// never followed. The container and its volume are removed afterwards,
// with a fresh context, also when the job times out or ctx is cancelled.
// A job killed by the OOM killer is reported as OOMKilled.
//
// With Config.PoolSize > 0, that many containers are created and started
// ahead (pandas and matplotlib loaded, waiting for a job); each still
// serves one job only, so nothing leaks between jobs. A job whose memory,
// CPU, pids or work-folder limits differ from the pool's gets a fresh
// container.
package docker
