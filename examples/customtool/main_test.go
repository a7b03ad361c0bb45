package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// sampleDB returns the path of a sample database created once for the
// package's tests (creating it is the slowest step). The tests open it
// read-only.
func sampleDB(t *testing.T) string {
	t.Helper()
	path, err := sharedSampleDB()
	if err != nil {
		t.Fatalf("create sample database: %v", err)
	}
	return path
}

// sharedSampleDB creates the package's sample database on first use.
func sharedSampleDB() (string, error) {
	sampleOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bichat-customtool-test-")
		if err != nil {
			sampleErr = err
			return
		}
		samplePath = filepath.Join(dir, "retail.db")
		sampleErr = sampledata.CreateSQLite(context.Background(), samplePath)
	})
	return samplePath, sampleErr
}

var (
	sampleOnce sync.Once
	samplePath string
	sampleErr  error
)

// TestMain removes the shared sample database after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if samplePath != "" {
		os.RemoveAll(filepath.Dir(samplePath))
	}
	os.Exit(code)
}

// monthlyRevenue computes, from the generated rows themselves rather than
// the database, the revenue of completed orders per month for region
// ("" for all regions).
func monthlyRevenue(t *testing.T, region string) map[string]float64 {
	t.Helper()
	d := sampledata.Generate(0)
	regionOf := map[int64]string{}
	for _, r := range d.Regions {
		regionOf[r[0].(int64)] = r[1].(string)
	}
	customerRegion := map[int64]string{}
	for _, c := range d.Customers {
		customerRegion[c[0].(int64)] = regionOf[c[3].(int64)]
	}
	type order struct {
		month  string
		region string
	}
	completed := map[int64]order{}
	for _, o := range d.Orders {
		if o[3].(string) == "completed" {
			completed[o[0].(int64)] = order{o[2].(time.Time).Format("2006-01"), customerRegion[o[1].(int64)]}
		}
	}
	out := map[string]float64{}
	for _, it := range d.OrderItems {
		o, ok := completed[it[0].(int64)]
		if !ok || (region != "" && o.region != region) {
			continue
		}
		out[o.month] += float64(it[3].(int64)) * it[4].(float64)
	}
	return out
}

// lineThrough fits y = a + b·x with the normal equations (a different
// route than the tool's centred sums).
func lineThrough(ys []float64) (a, b float64) {
	var sx, sy, sxy, sxx float64
	n := float64(len(ys))
	for i, y := range ys {
		x := float64(i)
		sx += x
		sy += y
		sxy += x * y
		sxx += x * x
	}
	b = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	a = (sy - b*sx) / n
	return a, b
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// months lists YYYY-MM from first to last inclusive.
func months(first, last string) []string {
	from, _ := time.Parse("2006-01", first)
	to, _ := time.Parse("2006-01", last)
	var out []string
	for m := from; !m.After(to); m = m.AddDate(0, 1, 0) {
		out = append(out, m.Format("2006-01"))
	}
	return out
}

// TestRun runs the example offline (one run, since creating the sample
// database dominates the test time) and checks the lines a reader is
// promised, then the state the run leaves: the validation error reached
// the model, the payload holds the right numbers (computed here from the
// generated rows), the model never saw the history, and the answer quotes
// the forecast.
func TestRun(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	res, err := runDemo(t.Context(), &out, options{offline: true, dbPath: sampleDB(t)})
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		`(?m)^model: scripted/scripted-analyst$`,
		`(?m)^tool call  forecast_revenue \{"from":"2024-01","to":"2026-03","months":3\}$`,
		`(?m)^tool error forecast_revenue \(invalid_arguments\); the model reads:\n +invalid arguments for forecast_revenue: /to: 2026-03 is after the last month with data \(2025-12\)`,
		`(?m)^tool call  forecast_revenue \{"from":"2024-01","to":"2025-12","months":3\}$`,
		`(?m)^tool done  forecast_revenue; the model reads:\n +Monthly revenue of completed orders \(all regions, EUR\), 2024-01 to 2025-12 \(24 months\)`,
		`(?m)^payload    the host draws \(never sent to the model\):$`,
		`(?m)^ +2024-06 █+ +\d+\.\d\d  trend +\d+\.\d\d$`,
		`(?m)^ +2026-03 ░+ +\d+\.\d\d  forecast$`,
		`(?m)^finished   end_turn after 3 turns and 2 tool calls$`,
		`(?m)^assistant complete: .*the first quarter of 2026 brings 2026-01: €\d+\.\d\d, 2026-02: €\d+\.\d\d, 2026-03: €\d+\.\d\d\.`,
		`(?m)^  tool forecast_revenue error \{"from":"2024-01","to":"2026-03","months":3\}$`,
		`(?m)^  tool forecast_revenue ok \{"from":"2024-01","to":"2025-12","months":3\}$`,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("output lacks a match for %s\noutput:\n%s", want, got)
		}
	}

	// The model's second request carries the rejected call's error.
	reqs := res.analyst.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model got %d requests, want 3", len(reqs))
	}
	var toolResults []*domain.ToolResult
	for _, m := range reqs[1].Messages {
		for _, p := range m.Parts {
			if p.ToolResult != nil {
				toolResults = append(toolResults, p.ToolResult)
			}
		}
	}
	if len(toolResults) != 1 || !toolResults[0].IsError ||
		!strings.Contains(toolResults[0].Content, "/to: 2026-03 is after the last month with data (2025-12)") {
		t.Errorf("second request's tool results = %+v, want the validation error", toolResults)
	}

	// The payload: 24 months of history and 3 forecast months.
	if len(res.forecasts) != 1 {
		t.Fatalf("host got %d forecast payloads, want 1", len(res.forecasts))
	}
	f := res.forecasts[0]
	want := monthlyRevenue(t, "")
	hist := months("2024-01", "2025-12")
	if len(f.History) != len(hist) {
		t.Fatalf("history has %d months, want %d", len(f.History), len(hist))
	}
	ys := make([]float64, len(hist))
	for i, m := range hist {
		ys[i] = want[m]
		if p := f.History[i]; p.Month != m || !near(p.Revenue, want[m], 0.01) {
			t.Errorf("history[%d] = %+v, want %s %.2f", i, p, m, want[m])
		}
	}
	a, b := lineThrough(ys)
	if !near(f.Slope, b, 0.01) || !near(f.Intercept, a, 0.01) {
		t.Errorf("fit = %.2f + %.2f·x, want %.2f + %.2f·x", f.Intercept, f.Slope, a, b)
	}
	if f.R2 <= 0 || f.R2 > 1 {
		t.Errorf("R² = %v, want in (0, 1]", f.R2)
	}
	var quoted []string
	for i, m := range []string{"2026-01", "2026-02", "2026-03"} {
		v := a + b*float64(24+i)
		if i >= len(f.Forecast) || f.Forecast[i].Month != m || !near(f.Forecast[i].Revenue, v, 0.02) {
			t.Fatalf("forecast = %+v, want %s ≈ %.2f at %d", f.Forecast, m, v, i)
		}
		quoted = append(quoted, fmt.Sprintf("%s: €%.2f", m, f.Forecast[i].Revenue))
	}
	if !strings.Contains(res.answer, strings.Join(quoted, ", ")) {
		t.Errorf("answer %q does not quote the forecast %q", res.answer, quoted)
	}

	// Two tracks: the history values went to the host only.
	allRequests, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.History[:len(f.History)-1] { // the summary names the last month
		if s := fmt.Sprintf("%.2f", p.Revenue); bytes.Contains(allRequests, []byte(s)) {
			t.Errorf("the model saw the history value %s of %s", s, p.Month)
		}
	}

	// The stored answer records both calls, the first failed.
	msg, err := res.svc.Message(t.Context(), res.user, res.messageID)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Status != domain.StatusComplete || !strings.HasSuffix(msg.Text(), res.answer) {
		t.Errorf("message %s %q, want complete ending with %q", msg.Status, msg.Text(), res.answer)
	}
	tc := msg.Metadata.ToolCalls
	if len(tc) != 2 || !strings.Contains(tc[0].Error, "after the last month with data") || tc[1].Error != "" {
		t.Errorf("recorded tool calls = %+v", tc)
	}
}

// TestForecastValidation calls the tool directly: schema violations and
// the data-aware rules each come back as an *agents.ArgumentError naming
// the field, every problem at once; good arguments give the region's
// numbers.
func TestForecastValidation(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(sampleDB(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tool, err := newForecastTool(db)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, args string
		want       []string // each problem, in order
	}{
		{"months too many (schema)", `{"from":"2024-01","to":"2025-12","months":24}`, []string{"/months"}},
		{"from not YYYY-MM (schema)", `{"from":"Jan 2024","to":"2025-12","months":3}`, []string{"/from"}},
		{"unknown field (schema)", `{"from":"2024-01","to":"2025-12","months":3,"model":"arima"}`, []string{"model"}},
		{"month 13", `{"from":"2024-13","to":"2025-12","months":3}`, []string{`/from: "2024-13" is not a month`}},
		{"to before from", `{"from":"2025-06","to":"2025-01","months":3}`, []string{"/to: 2025-01 must not come before /from (2025-06)"}},
		{"short history", `{"from":"2025-11","to":"2025-12","months":3}`,
			[]string{"/from: a trend needs at least 3 months of history; 2025-11 to 2025-12 is 2"}},
		{"before the data", `{"from":"2023-06","to":"2025-12","months":3}`,
			[]string{"/from: 2023-06 is before the first month with data (2024-01)"}},
		{"every problem at once", `{"region":"Atlantis","from":"2024-01","to":"2026-03","months":3}`, []string{
			`/region: no region "Atlantis"; the regions are Central, East, North, South, West`,
			"/to: 2026-03 is after the last month with data (2025-12)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tool.Call(t.Context(), json.RawMessage(tc.args))
			var ae *agents.ArgumentError
			if !errors.As(err, &ae) || !errors.Is(err, agents.ErrInvalidArguments) {
				t.Fatalf("error = %v, want an *agents.ArgumentError", err)
			}
			if ae.Tool != toolForecast || len(ae.Problems) != len(tc.want) {
				t.Fatalf("problems = %q, want %d like %q", ae.Problems, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(ae.Problems[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, ae.Problems[i], w)
				}
			}
		})
	}

	r, err := tool.Call(t.Context(), json.RawMessage(`{"region":"north","from":"2025-01","to":"2025-06","months":2}`))
	if err != nil {
		t.Fatal(err)
	}
	f, ok := r.Payload.(forecast)
	if !ok {
		t.Fatalf("payload is %T, want forecast", r.Payload)
	}
	if r.Summary != f.ToolSummary() || !strings.Contains(r.Summary, "(North, EUR), 2025-01 to 2025-06 (6 months)") {
		t.Errorf("summary = %q", r.Summary)
	}
	want := monthlyRevenue(t, "North")
	ys := make([]float64, 6)
	for i, m := range months("2025-01", "2025-06") {
		ys[i] = want[m]
		if !near(f.History[i].Revenue, want[m], 0.01) {
			t.Errorf("North %s = %.2f, want %.2f", m, f.History[i].Revenue, want[m])
		}
	}
	a, b := lineThrough(ys)
	if len(f.Forecast) != 2 || f.Forecast[1].Month != "2025-08" || !near(f.Forecast[1].Revenue, a+b*7, 0.02) {
		t.Errorf("forecast = %+v, want 2025-08 ≈ %.2f", f.Forecast, a+b*7)
	}
}
