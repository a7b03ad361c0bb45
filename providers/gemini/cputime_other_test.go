//go:build !unix

package gemini_test

import "time"

// cpuTime is unavailable here: the CPU-time metrics report 0.
func cpuTime() time.Duration { return 0 }
