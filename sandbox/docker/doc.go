// Package docker is the reference sandbox.Sandbox adapter: Docker
// containers driven through the Engine API over its unix socket with plain
// net/http (no Docker client module). The API version is negotiated with
// /_ping (the engine's version, capped at 1.43; at least 1.25).
//
// Each job runs in its own container, created from Config.Image (`make
// sandbox-image` builds bichat-sandbox:bookworm-N offline from Debian
// packages) with: NetworkMode none and networking disabled, a read-only
// root filesystem, the work folder /work on a tmpfs-backed anonymous
// volume with a size cap of Limits.WorkBytes (the archive endpoint cannot
// write into plain tmpfs mounts of a read-only container; volumes it can),
// a writable /tmp (TMPDIR=/tmp; a tmpfs of Limits.WorkBytes, noexec, so
// tempfile, matplotlib and code that hard-codes /tmp work), CapDrop ALL,
// no-new-privileges, Memory = MemorySwap (Limits.Memory plus
// Config.RunnerMemory for the resident runner; what the job writes to
// /work, /tmp and /dev/shm counts against it too), NanoCPUs (the CFS
// quota: 8 busy processes under Limits.CPUs = 1 get one core's worth),
// PidsLimit, private IPC with a 16 MiB /dev/shm tmpfs, nofile 256, no core
// dumps, the non-root user 10001.
//
// Inodes: /work, /tmp and /dev/shm are three tmpfs mounts, each capped
// (nr_inodes) at Limits.Inodes entries plus a few for the runner's own
// (/work also gets one per input file and folder, so inputs do not eat the
// job's share); creating more fails inside the job with ENOSPC. A job can
// thus pin at most about 3 × Limits.Inodes inodes of kernel memory, which
// no memory limit counts.
//
// Labels: every container and work volume carries LabelSandbox
// (io.bichat.sandbox=1) and LabelInstance (io.bichat.sandbox.instance=
// Sandbox.Instance(), random per Sandbox), so a host or a test finds, counts
// or cleans up exactly what one Sandbox created, with other sandboxes
// (other processes, other test runs) on the same engine:
// `docker ps -a --filter label=io.bichat.sandbox.instance=<id>`. When the
// engine discards a limit at create time (its warnings, e.g. a kernel
// without the pids cgroup), Output.Unenforced says so ("pids: ..."). The code and the inputs are copied in with PUT
// /containers/{id}/archive; the runner (the same one sandbox/bwrap uses)
// runs the code in a child process with the wall time, output caps and
// file-size limit, kills every process of the container when it is done,
// and writes the capped stdout and stderr to the container's streams,
// then its result (exit status, timing) as one JSON line, which are read
// from the logs endpoint and demultiplexed from the 8-byte-header stream
// format; nothing of the result depends on free space in the work folder,
// so a job that filled it still gets its Output. The files come out with GET
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
