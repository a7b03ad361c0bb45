package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// toolForecast is the name the model calls the forecast tool by.
const toolForecast = "forecast_revenue"

// minHistory is the fewest months a trend is fitted to.
const minHistory = 3

// monthlyRevenueSQL sums the revenue of completed orders per region and
// month. The region filter is applied in Go, so no argument of the model
// is ever spliced into SQL.
const monthlyRevenueSQL = `SELECT r.name AS region, substr(o.ordered_at, 1, 7) AS month, SUM(i.quantity * i.unit_price) AS revenue
FROM orders o
JOIN customers c ON c.id = o.customer_id
JOIN regions r ON r.id = c.region_id
JOIN order_items i ON i.order_id = o.id
WHERE o.status = 'completed'
GROUP BY r.name, substr(o.ordered_at, 1, 7)
ORDER BY month, region`

// forecastInput are the arguments of forecast_revenue. The jsonschema
// tags become the JSON Schema the model sees and the executor checks
// before the function runs; the rules that need the data (which regions
// and months exist, the order of from and to) are checked by the function.
type forecastInput struct {
	Region string `json:"region,omitempty" jsonschema:"maxLength=64,description=Sales region to forecast (e.g. North); omit for all regions together"`
	From   string `json:"from" jsonschema:"pattern=^[0-9]{4}-[0-9]{2}$,description=First month of history to fit the trend to\\, as YYYY-MM"`
	To     string `json:"to" jsonschema:"pattern=^[0-9]{4}-[0-9]{2}$,description=Last month of history\\, as YYYY-MM; it must have data (forecast months come from months)"`
	Months int    `json:"months" jsonschema:"minimum=1,maximum=12,description=How many months after 'to' to forecast"`
}

// point is one month of a series.
type point struct {
	Month   string  `json:"month"`
	Revenue float64 `json:"revenue"`
	// Trend is the fitted line's value for the month (history only).
	Trend float64 `json:"trend,omitempty"`
}

// forecast is the rich result of forecast_revenue: the whole series and
// the fit, for the host to draw. The model sees only ToolSummary.
type forecast struct {
	Region    string  `json:"region"`
	Currency  string  `json:"currency"`
	From      string  `json:"from"`
	To        string  `json:"to"`
	Slope     float64 `json:"slope"`     // revenue change per month
	Intercept float64 `json:"intercept"` // trend value of the first month
	R2        float64 `json:"r2"`        // share of the variance the line explains
	History   []point `json:"history"`
	Forecast  []point `json:"forecast"`
}

// ToolSummary is what the model reads: the fit and the forecast values,
// not the 24 months of history the host draws.
func (f forecast) ToolSummary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Monthly revenue of completed orders (%s, %s), %s to %s (%d months): linear trend %+.2f per month (R² %.2f); last month %.2f.",
		f.Region, f.Currency, f.From, f.To, len(f.History), f.Slope, f.R2, f.History[len(f.History)-1].Revenue)
	b.WriteString(" Forecast:")
	total := 0.0
	for i, p := range f.Forecast {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s %.2f", p.Month, p.Revenue)
		total += p.Revenue
	}
	fmt.Fprintf(&b, " (total %.2f). The user sees the full series as a chart.", total)
	return b.String()
}

// newForecastTool builds forecast_revenue over db, the sample retail
// database.
func newForecastTool(db sqldb.DB) (agents.Tool, error) {
	return agents.NewTool(toolForecast,
		"Forecasts monthly revenue of completed orders by fitting a linear trend to the months from..to "+
			"(all regions, or one region) and extending it by months. Returns the fit and the forecast values.",
		func(ctx context.Context, in forecastInput) (forecast, error) {
			return runForecast(ctx, db, in)
		},
		agents.WithTimeout(20*time.Second), agents.WithParallel())
}

// runForecast checks the arguments (first the rules that need no data,
// then, after reading the monthly revenue, those that do) and fits the
// trend. Argument problems come back as one *agents.ArgumentError
// listing each, which the executor hands to the model with a request to
// fix the call.
func runForecast(ctx context.Context, db sqldb.DB, in forecastInput) (forecast, error) {
	bad := &agents.ArgumentError{Tool: toolForecast}
	from, errFrom := time.Parse("2006-01", in.From)
	if errFrom != nil {
		bad.Problems = append(bad.Problems, fmt.Sprintf("/from: %q is not a month (want YYYY-MM, month 01 to 12)", in.From))
	}
	to, errTo := time.Parse("2006-01", in.To)
	if errTo != nil {
		bad.Problems = append(bad.Problems, fmt.Sprintf("/to: %q is not a month (want YYYY-MM, month 01 to 12)", in.To))
	}
	if len(bad.Problems) > 0 {
		return forecast{}, bad
	}
	n := monthsBetween(from, to) + 1
	switch {
	case n <= 0:
		bad.Problems = append(bad.Problems, fmt.Sprintf("/to: %s must not come before /from (%s)", in.To, in.From))
	case n < minHistory:
		bad.Problems = append(bad.Problems, fmt.Sprintf("/from: a trend needs at least %d months of history; %s to %s is %d",
			minHistory, in.From, in.To, n))
	}
	// The rules so far need no data: report them without a query.
	if len(bad.Problems) > 0 {
		return forecast{}, bad
	}

	res, err := db.Query(ctx, monthlyRevenueSQL, sqldb.Limits{MaxRows: 10_000})
	if err != nil {
		return forecast{}, fmt.Errorf("read monthly revenue: %w", err)
	}
	if res.Truncated {
		return forecast{}, fmt.Errorf("read monthly revenue: more than %d region-months", len(res.Rows))
	}
	byMonth := map[string]float64{}
	regions := map[string]bool{}
	var first, last string
	for _, row := range res.Rows {
		region, _ := row[0].(string)
		month, _ := row[1].(string)
		revenue, ok := row[2].(float64)
		if region == "" || month == "" || !ok {
			return forecast{}, fmt.Errorf("read monthly revenue: unexpected row %v", row)
		}
		regions[region] = true
		if first == "" || month < first {
			first = month
		}
		last = max(last, month)
		if in.Region == "" || strings.EqualFold(region, in.Region) {
			byMonth[month] += revenue
		}
	}
	if first == "" {
		return forecast{}, fmt.Errorf("read monthly revenue: no completed orders")
	}

	label := "all regions"
	if in.Region != "" {
		names := slices.Sorted(func(yield func(string) bool) {
			for r := range regions {
				if !yield(r) {
					return
				}
			}
		})
		i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, in.Region) })
		if i < 0 {
			bad.Problems = append(bad.Problems, fmt.Sprintf("/region: no region %q; the regions are %s (omit region for all of them)",
				in.Region, strings.Join(names, ", ")))
		} else {
			label = names[i]
		}
	}
	if in.From < first {
		bad.Problems = append(bad.Problems, fmt.Sprintf("/from: %s is before the first month with data (%s)", in.From, first))
	}
	if in.To > last {
		bad.Problems = append(bad.Problems, fmt.Sprintf("/to: %s is after the last month with data (%s); end the history there and use months to look ahead",
			in.To, last))
	}
	if len(bad.Problems) > 0 {
		return forecast{}, bad
	}

	f := forecast{Region: label, Currency: "EUR", From: in.From, To: in.To}
	ys := make([]float64, n)
	for i := range n {
		month := from.AddDate(0, i, 0).Format("2006-01")
		ys[i] = byMonth[month] // a month without completed orders earned nothing
		f.History = append(f.History, point{Month: month, Revenue: round2(ys[i])})
	}
	slope, intercept, r2 := fitLine(ys)
	f.Slope, f.Intercept, f.R2 = round2(slope), round2(intercept), math.Round(r2*1000)/1000
	for i := range f.History {
		f.History[i].Trend = round2(intercept + slope*float64(i))
	}
	for i := range in.Months {
		x := float64(n + i)
		f.Forecast = append(f.Forecast, point{Month: to.AddDate(0, i+1, 0).Format("2006-01"), Revenue: round2(intercept + slope*x)})
	}
	return f, nil
}

// fitLine fits y = intercept + slope·x to ys at x = 0, 1, ... by least
// squares and reports R², the share of the variance of ys the line
// explains (1 when ys is constant).
func fitLine(ys []float64) (slope, intercept, r2 float64) {
	n := float64(len(ys))
	xMean := (n - 1) / 2
	yMean := 0.0
	for _, y := range ys {
		yMean += y
	}
	yMean /= n
	var sxy, sxx float64
	for i, y := range ys {
		dx := float64(i) - xMean
		sxy += dx * (y - yMean)
		sxx += dx * dx
	}
	slope = sxy / sxx
	intercept = yMean - slope*xMean
	var ssRes, ssTot float64
	for i, y := range ys {
		e := y - (intercept + slope*float64(i))
		ssRes += e * e
		ssTot += (y - yMean) * (y - yMean)
	}
	if ssTot == 0 {
		return slope, intercept, 1
	}
	return slope, intercept, 1 - ssRes/ssTot
}

// monthsBetween counts whole months from a to b (negative when b is
// earlier).
func monthsBetween(a, b time.Time) int {
	return (b.Year()-a.Year())*12 + int(b.Month()) - int(a.Month())
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
