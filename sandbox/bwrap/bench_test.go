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
	b.Run("baseline-python-import", sandboxtest.BenchImportBaseline)
	for _, mode := range []struct {
		name string
		pool int
	}{{"cold", 0}, {"warm", 1}} {
		for _, job := range []struct {
			name string
			job  sandbox.Job
		}{{"print", sandboxtest.PrintJob}, {"chart", sandboxtest.ChartJob}} {
			b.Run(mode.name+"-"+job.name, func(b *testing.B) {
				s := newSandbox(b, bwrap.Config{PoolSize: mode.pool})
				defer s.Close()
				sandboxtest.BenchJob(b, s, job.job, mode.pool > 0)
			})
		}
	}
}
