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
// then, per job, forks a process that enters fresh user, mount, pid,
// network, ipc and uts namespaces nested in the worker's. That process is
// pid 1 of the job: it mounts a new tmpfs (size Limits.WorkBytes) on
// /work and binds /tmp and /dev/shm to folders of it, makes /dev
// read-only, mounts a fresh /proc, writes the inputs, then forks the
// job's code with: its own session, RLIMIT_AS (the pre-loaded address
// space plus Limits.Memory; BLAS threads are limited to the CPU count so
// the address space stays small), RLIMIT_NPROC (Limits.Pids, counted per
// job because the job has its own user namespace and a non-root host
// uid), RLIMIT_FSIZE (Limits.FileBytes), RLIMIT_CPU, RLIMIT_NOFILE 256,
// no core dumps, every capability dropped (bounding set included),
// no_new_privs, as many BLAS threads as Limits.CPUs and, with
// Config.PinCPUs, CPU affinity to ceil(Limits.CPUs) cores. When the code
// exits or the wall time passes, pid 1 kills every process in the job's
// pid namespace (kill(-1)), collects the files without following symlinks
// and exits, which tears down the job's namespaces and tmpfs: no file,
// process, IPC object, socket or Python state reaches the next job of the
// same worker. A job cannot see or signal the zygote (other pid
// namespace) nor trace its pid 1 (non-dumpable, no capabilities).
//
// Not in effect: cgroup memory accounting (RLIMIT_AS bounds address space,
// so a job's tmpfs files and page cache are bounded by WorkBytes, not by
// Memory), a CPU-share quota (only RLIMIT_CPU and optional affinity), seccomp
// syscall filtering. Unprivileged user namespaces must be enabled, and
// nested ones are created per job: New fails when bwrap cannot start, and
// jobs fail with "job namespaces failed" where a policy forbids nesting
// (e.g. Ubuntu's AppArmor user-namespace restriction without a profile
// allowing it).
//
// # Pool
//
// Config.PoolSize workers are kept warm; a job takes an idle worker (or
// starts one), and the worker goes back after the job. A worker that died
// is replaced; Config.IdleTimeout closes unused ones. With PoolSize 0
// every job starts and then closes its own worker (cold: about the cost
// of importing pandas and matplotlib).
package bwrap
