//go:build !unix

package openai_test

import "time"

var start = time.Now()

// cpuTime falls back to wall time where getrusage is unavailable.
func cpuTime() time.Duration { return time.Since(start) }
