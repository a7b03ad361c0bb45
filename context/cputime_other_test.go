//go:build !unix

package context

import "time"

func processCPU() time.Duration { return 0 }
