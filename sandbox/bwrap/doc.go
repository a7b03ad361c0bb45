// Package bwrap is the embedded default sandbox.Sandbox: bubblewrap
// (Debian's bubblewrap package), no daemon, no root needed.
//
// # Isolation
//
// A worker is one bwrap process tree started with --unshare-all (user,
// mount, pid, network, ipc, uts and cgroup namespaces: no network
// interface but a loopback), --die-with-parent, --new-session (no
// terminal injection), --cap-drop ALL, an in-sandbox user 1000, and a
// filesystem of read-only binds only: /usr (with the /bin, /lib, /lib64,
// /sbin symlinks), the few /etc entries Python, BLAS and fontconfig need
// (ld.so.cache, alternatives, fonts, matplotlibrc, localtime, python3*),
// a private /proc and a minimal /dev. No home directory, no /etc/passwd,
// no /etc/shadow, nothing of the host's /tmp. When the host process is
// root, bwrap itself runs as an unprivileged host user (Config.UID/GID,
// default 65534) so the sandbox user maps to it rather than to root.
//
// Inside, Debian's /usr/bin/python3 runs the runner as a zygote: it loads
// numpy, pandas and matplotlib (Agg) once, marks itself non-dumpable and
// waits on a control socket (fd 3). The zygote never holds a job: per job
// the host sends it one byte and two pipe file descriptors, the zygote
// forks and closes its copies, and only the forked process reads the
// job's code and inputs from the first pipe; the job's pid 1 writes the
// result frame straight to the second, which the host reads. So every
// job starts from a zygote whose memory never held another job's code,
// inputs or outputs, and nothing of one job is in the memory a later job
// inherits (TestNoLeakAcrossJobs searches the next job's frames, objects,
// modules, environment, files and whole address space for a marker of
// the previous one). The zygote answers when the job's processes are
// gone, and only then takes the next job.
//
// The forked process enters fresh user, mount, pid, network, ipc and uts
// namespaces nested in the worker's. It starts pid 1 of the job, which
// reads the job, mounts a new tmpfs (size Limits.WorkBytes plus the
// inputs, nr_inodes Limits.Inodes) on /work and binds /tmp and /dev/shm to
// folders of it (so the file cap covers all three: creating more fails
// with ENOSPC), makes /dev read-only, mounts a fresh /proc, writes the
// inputs, then forks the job's code with: its own session, RLIMIT_AS (the
// pre-loaded address space plus Limits.Memory; BLAS threads are limited to
// the CPU count so the address space stays small), RLIMIT_NPROC
// (Limits.Pids, counted per job because the job has its own user
// namespace and a non-root host uid), RLIMIT_FSIZE (Limits.FileBytes),
// RLIMIT_CPU, RLIMIT_NOFILE 256, no core dumps, every capability dropped
// (bounding set included), no_new_privs, oom_score_adj 1000 (the first
// victim of the memory cgroup), as many BLAS threads as Limits.CPUs and,
// with Config.PinCPUs, CPU affinity to ceil(Limits.CPUs) cores. The
// code's own process is dumpable (it may read its own /proc/self/mem,
// which holds only its job); the runner processes are not. When the code
// exits or the wall time passes, pid 1 kills every process in the job's
// pid namespace (kill(-1)), collects the files without following
// symlinks, sends the result and exits, which tears down the job's
// namespaces and tmpfs: no file, process, IPC object, socket or Python
// state reaches the next job of the same worker. A job cannot see or
// signal the zygote (other pid namespace) nor trace its pid 1
// (non-dumpable, no capabilities).
//
// # Cgroups
//
// Where the host allows it, each worker gets a cgroup, made by the Go
// side: in the cgroup v1 cpu, memory and pids controllers (below this
// process's own cgroup of each; root can do this, as in CI), or in the
// cgroup v2 hierarchy below this process's cgroup or Config.CgroupParent
// (a delegated subtree without processes of its own). The zygote is moved
// into it once it is ready (its own memory stays charged where it was);
// the jobs it forks inherit it. One job runs on a worker at a time, so
// before each job the cgroup gets that job's limits: a CPU quota of
// Limits.CPUs (cpu.cfs_quota_us, or cpu.max), pids.max of Limits.Pids
// plus the zygote and the job's two runner processes, and a memory limit
// (memory.limit_in_bytes and memsw, or memory.max and memory.swap.max 0)
// of max(Memory+work, 5×work) + the zygote's resident size + 64 MiB, where
// work is the job's tmpfs size: the tmpfs is charged as memory and the
// runner holds the produced files a few times over while it sends them.
// RLIMIT_AS still bounds each process to Memory; the cgroup bounds all of
// them together. A job the memory cgroup stopped has Output.OOMKilled
// set. Close removes the cgroups the sandbox made (only those).
//
// Where a limit cannot be set (not root, no controller, no delegated
// cgroup, or Config.NoCgroups), jobs still run, with rlimits only, and
// every sandbox.Output.Unenforced names the limit and why;
// Sandbox.Unenforced says it at start. Without the cpu cgroup a job with
// many threads can use every core (RLIMIT_CPU bounds its CPU seconds
// only); without the memory cgroup, a job's processes each have Memory of
// address space.
//
// Not in effect: seccomp syscall filtering. Unprivileged user namespaces
// must be enabled, and nested ones are created per job: New fails when
// bwrap cannot start, and jobs fail with "job namespaces failed" where a
// policy forbids nesting (e.g. Ubuntu's AppArmor user-namespace
// restriction without a profile allowing it).
//
// # Pool
//
// Config.PoolSize workers are kept warm; a job takes an idle worker (or
// starts one), and the worker goes back after the job. A worker that died
// is replaced; Config.IdleTimeout closes unused ones. With PoolSize 0
// every job starts and then closes its own worker (cold: about the cost
// of importing pandas and matplotlib).
package bwrap
