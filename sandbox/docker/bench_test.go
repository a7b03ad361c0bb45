package docker_test

import (
	"testing"

	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/sandbox/docker"
	"github.com/bichat-go/bichat/sandbox/sandboxtest"
)

// BenchmarkDocker reports p50/p95 (run with -benchtime=50x) of print(1)
// and of the pandas+matplotlib chart job, cold (a container created per
// job) and warm (a started container from the pool, waited for untimed),
// and the cold baseline of a bare `python3 -c "import pandas, matplotlib"`.
func BenchmarkDocker(b *testing.B) {
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
				s := newSandbox(b, docker.Config{PoolSize: mode.pool})
				defer s.Close()
				sandboxtest.BenchJob(b, s, job.job, mode.pool > 0)
			})
		}
	}
}
