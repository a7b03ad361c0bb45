package bwrap_test

import (
	"testing"

	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/sandbox/bwrap"
	"github.com/bichat-go/bichat/sandbox/sandboxtest"
)

// TestNoLeakAcrossJobs: the next job on the same warm worker finds
// nothing of the previous job's code, inputs or outputs anywhere it can
// reach (frames, objects, modules, environment, files, its own memory).
func TestNoLeakAcrossJobs(t *testing.T) {
	sandboxtest.NoLeakAcrossJobs(t, func(t *testing.T, poolSize int) sandbox.Sandbox {
		return newSandbox(t, bwrap.Config{PoolSize: poolSize})
	})
}
