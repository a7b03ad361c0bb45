//go:build !unix

package llmtest

import "time"

// CPUTime is unavailable here: it returns 0 and the CPU-time metrics are
// not reported.
func CPUTime() time.Duration { return 0 }
