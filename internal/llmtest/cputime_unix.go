//go:build unix

package llmtest

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user+system) the process consumed so far,
// so benchmark ratios hold on a machine shared with other work.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
