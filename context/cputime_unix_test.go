//go:build unix

package context

import (
	"syscall"
	"time"
)

// processCPU returns the user+system CPU time the process has used, a
// figure less sensitive than wall time to other load on the machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
