//go:build unix

package gemini_test

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user+system) the process consumed so far,
// so benchmark ratios hold on a machine shared with other work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
