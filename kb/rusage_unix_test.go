//go:build unix

package kb_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time so far: benchmarks report
// it per operation beside wall-clock latency, which on a shared machine
// includes time spent waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
