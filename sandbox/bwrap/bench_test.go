package bwrap_test

import (
	"testing"

	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/sandbox/bwrap"
	"github.com/bichat-go/bichat/sandbox/sandboxtest"
)

// BenchmarkBwrap reports p50/p95 (run with -benchtime=50x) of print(1) and
// of the pandas+matplotlib chart job, cold (a fresh sandbox per job) and
// warm (pooled zygote, a fresh forked process per job), and the cold
// baseline of a bare `python3 -c "import pandas, matplotlib"`.
func BenchmarkBwrap(b *testing.B) {
	sandboxtest.Bench(b, func(b *testing.B, pool int) sandbox.Sandbox {
		return newSandbox(b, bwrap.Config{PoolSize: pool})
	})
}
