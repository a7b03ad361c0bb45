package sandboxtest

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/sandbox"
)

// PrintJob is the smallest job: print(1).
var PrintJob = sandbox.Job{Code: "print(1)"}

// ChartJob is a pandas group-by over 10,000 rows with a matplotlib bar
// chart saved to PNG.
var ChartJob = sandbox.Job{
	Code: `import pandas as pd, matplotlib.pyplot as plt
df = pd.read_csv("inputs/sales.csv")
g = df.groupby("region")["amount"].agg(["sum", "mean", "count"])
print(g.head())
ax = g["sum"].plot(kind="bar", title="sales by region")
plt.tight_layout()
plt.savefig("chart.png")
`,
	Files: []sandbox.File{{Name: "sales.csv", Data: salesCSV(10000)}},
}

func salesCSV(n int) []byte {
	var b strings.Builder
	b.WriteString("region,product,amount\n")
	regions := []string{"north", "south", "east", "west", "center"}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s,p%d,%d.%02d\n", regions[i%len(regions)], i%37, (i*7919)%1000, i%100)
	}
	return []byte(b.String())
}

// Pool is implemented by adapters whose pool reports how many workers are
// ready; warm benchmarks wait (untimed) for one before each run.
type Pool interface{ Ready() int }

// importOnce times one fresh `python3 -c "import pandas, matplotlib"`
// outside any sandbox.
func importOnce(b *testing.B) time.Duration {
	t0 := time.Now()
	if err := exec.Command("/usr/bin/python3", "-c", "import pandas, matplotlib").Run(); err != nil {
		b.Fatalf("baseline: %v", err)
	}
	return time.Since(t0)
}

// BenchImportBaseline measures the cold baseline itself: a fresh
// `python3 -c "import pandas, matplotlib"`, p50/p95 over b.N runs.
func BenchImportBaseline(b *testing.B) {
	var d []time.Duration
	for i := 0; i < b.N; i++ {
		d = append(d, importOnce(b))
	}
	report(b, d, nil)
}

// BenchJob runs job b.N times (use -benchtime=50x for the 50
// runs) and reports p50_ms, p95_ms and p50/import: its p50 over the p50
// of the import baseline, sampled (untimed) every fifth run so both see
// the same machine load.
// With warm set and a sandbox implementing Pool, each run waits untimed
// until a warm worker is ready, so the figure is the warm latency.
func BenchJob(b *testing.B, s sandbox.Sandbox, job sandbox.Job, warm bool) {
	var base []time.Duration
	ctx := context.Background()
	p, _ := s.(Pool)
	if warm { // first run warms everything up
		if out, err := s.Run(ctx, job); err != nil || !out.OK() {
			b.Fatalf("warm-up: %v %+v", err, out)
		}
	}
	var d []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%5 == 0 {
			b.StopTimer()
			base = append(base, importOnce(b))
			b.StartTimer()
		}
		if warm && p != nil {
			b.StopTimer()
			deadline := time.Now().Add(2 * time.Minute)
			for p.Ready() == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			b.StartTimer()
		}
		t0 := time.Now()
		out, err := s.Run(ctx, job)
		d = append(d, time.Since(t0))
		if err != nil || !out.OK() {
			b.Fatalf("run: %v %+v", err, out)
		}
	}
	b.StopTimer()
	report(b, d, base)
}

func report(b *testing.B, d, base []time.Duration) {
	if len(d) < 50 {
		b.Logf("%d runs; use -benchtime=50x for stable percentiles", len(d))
	}
	p50, p95 := pct(d, 50), pct(d, 95)
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(p95.Microseconds())/1000, "p95_ms")
	if len(base) > 0 {
		b.ReportMetric(float64(p50)/float64(pct(base, 50)), "p50/import")
	}
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p+99)/100 - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}

// Bench runs the standard benchmark matrix of an adapter: the import
// baseline, then print(1) and the chart job, cold (newSandbox with pool
// size 0) and warm (pool size 1). Report p50/p95 with -benchtime=50x.
func Bench(b *testing.B, newSandbox func(b *testing.B, poolSize int) sandbox.Sandbox) {
	b.Run("baseline-python-import", BenchImportBaseline)
	for _, mode := range []struct {
		name string
		pool int
	}{{"cold", 0}, {"warm", 1}} {
		for _, job := range []struct {
			name string
			job  sandbox.Job
		}{{"print", PrintJob}, {"chart", ChartJob}} {
			b.Run(mode.name+"-"+job.name, func(b *testing.B) {
				s := newSandbox(b, mode.pool)
				defer s.Close()
				BenchJob(b, s, job.job, mode.pool > 0)
			})
		}
	}
}
