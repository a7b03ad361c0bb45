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
	sandboxtest.Bench(b, func(b *testing.B, pool int) sandbox.Sandbox {
		return newSandbox(b, docker.Config{PoolSize: pool})
	})
}
