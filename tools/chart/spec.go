package chart

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bichat-go/bichat/tools"
)

// Marks draw_chart accepts.
var Marks = []string{"bar", "line", "area", "point", "arc"}

// Limits a chart must respect; beyond them it is unreadable and the model
// is asked to aggregate first.
const (
	maxBarCategories = 100
	maxSeries        = 20
)

// plan is a validated chart: what both the Vega-Lite spec and the PNG
// are drawn from.
type plan struct {
	mark       string
	title      string
	table      tools.Table
	x, y, s    int // column indexes; s is -1 without series
	xt, yt     FieldType
	xTemporal  bool     // x holds times shown as ordinal bands
	seriesVals []string // distinct series values, first appearance order
}

// allMidnight reports whether every time in column c is at midnight.
func (p *plan) allMidnight(c int) bool {
	for _, row := range p.table.Rows {
		if t, ok := row[c].(time.Time); ok && (t.Hour() != 0 || t.Minute() != 0 || t.Second() != 0 || t.Nanosecond() != 0) {
			return false
		}
	}
	return true
}

func (p *plan) col(i int) string { return p.table.Columns[i].Name }

// validate checks the chart against its data and infers the field types.
// Every problem is reported at once, so one repair can fix them all.
func validate(in Input, t tools.Table, maxRows int) (*plan, error) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	p := &plan{mark: in.Type, title: strings.TrimSpace(in.Title), table: t, x: -1, y: -1, s: -1}
	if !slices.Contains(Marks, in.Type) {
		bad("type %q is not one of %s", in.Type, strings.Join(Marks, ", "))
	}
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	avail := strings.Join(quoteAll(names), ", ")
	find := func(role, name string, required bool) int {
		if name == "" {
			if required {
				bad("%s is required: name one of the columns %s", role, avail)
			}
			return -1
		}
		i := t.ColumnIndex(name)
		if i < 0 {
			bad("%s field %q is not a column of %s; columns: %s", role, name, t.Name, avail)
		}
		return i
	}
	p.x = find("x", in.X, true)
	p.y = find("y", in.Y, true)
	p.s = find("series", in.Series, false)
	if len(t.Rows) == 0 {
		bad("%s has no rows; there is nothing to draw", t.Name)
	}
	if maxRows > 0 && len(t.Rows) > maxRows {
		bad("%s has %d rows, more than the %d a chart can show; aggregate in SQL (GROUP BY, date_trunc) or filter first", t.Name, len(t.Rows), maxRows)
	}
	if p.x >= 0 && p.x == p.y {
		bad("x and y are the same column %q; choose a category or time column for x and a number column for y", in.X)
	}
	if p.s >= 0 && (p.s == p.x || p.s == p.y) {
		bad("series %q repeats x or y; series is the column that splits the data into colored groups", in.Series)
	}
	if in.Type == "arc" && p.s >= 0 {
		bad("an arc (pie) chart has no series: x gives the slices and y their sizes")
	}
	if p.x >= 0 {
		p.xt = InferType(&t, p.x)
	}
	if p.y >= 0 {
		p.yt = InferType(&t, p.y)
		if p.yt != Quantitative && in.Type != "point" {
			bad("y field %q is %s, but a %s chart needs numbers on y; choose a numeric column (or aggregate, e.g. COUNT(*))", in.Y, describeType(&t, p.y), in.Type)
		}
	}
	if len(problems) > 0 {
		return nil, &SpecError{Problems: problems}
	}
	if in.Type == "bar" && (p.xt == Quantitative || p.xt == Temporal) {
		// Bars stand on a discrete axis: numbers and dates become ordinal.
		p.xTemporal = p.xt == Temporal
		p.xt = Ordinal
	}
	if in.Type == "bar" || in.Type == "arc" {
		if n := len(distinct(t.Rows, p.x)); n > maxBarCategories {
			bad("x field %q has %d distinct values, more than the %d a %s chart can show; keep the top categories or group the rest", in.X, n, maxBarCategories, in.Type)
		}
	}
	if in.Type == "arc" {
		for r, row := range t.Rows {
			if v, ok := Number(row[p.y]); ok && v < 0 {
				bad("y field %q has a negative value in row %d; pie slices need values ≥ 0", in.Y, r)
				break
			}
		}
	}
	if p.s >= 0 {
		p.seriesVals = distinct(t.Rows, p.s)
		if len(p.seriesVals) > maxSeries {
			bad("series %q has %d distinct values, more than the %d colors a chart can tell apart; filter or group the series", in.Series, len(p.seriesVals), maxSeries)
		}
	}
	if len(problems) > 0 {
		return nil, &SpecError{Problems: problems}
	}
	return p, nil
}

func describeType(t *tools.Table, c int) string {
	switch InferType(t, c) {
	case Temporal:
		return "dates"
	case Nominal:
		for _, row := range t.Rows {
			if row[c] != nil {
				return fmt.Sprintf("text (e.g. %q)", tools.FormatCell(row[c]))
			}
		}
		return "empty"
	}
	return "numbers"
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// distinct returns the distinct formatted values of column c in order of
// first appearance (nulls excluded).
func distinct(rows [][]any, c int) []string {
	seen := make(map[string]bool)
	var out []string
	for _, row := range rows {
		if row[c] == nil {
			continue
		}
		k := label(row[c])
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// label is how a value appears on an axis or in a legend.
func label(v any) string {
	if t, ok := v.(time.Time); ok {
		if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
			return t.Format("2006-01-02")
		}
		return t.Format("2006-01-02 15:04")
	}
	return tools.FormatCell(v)
}

// SpecError is a chart that does not fit its data. Its message goes back
// to the model, which may repair the call.
type SpecError struct {
	Problems []string
}

// Error lists the problems.
func (e *SpecError) Error() string {
	return "invalid chart: " + strings.Join(e.Problems, "; ")
}

// escapeField escapes the characters Vega-Lite reads as nested access in
// a field name.
func escapeField(s string) string {
	r := strings.NewReplacer(`\`, `\\`, ".", `\.`, "[", `\[`, "]", `\]`)
	return r.Replace(s)
}

type vlField struct {
	Field    string    `json:"field"`
	Type     FieldType `json:"type"`
	Title    string    `json:"title,omitempty"`
	Sort     any       `json:"sort,omitempty"`
	Stack    *bool     `json:"stack,omitempty"`
	TimeUnit string    `json:"timeUnit,omitempty"`
}

// spec returns the Vega-Lite v5 specification of p, with the data inline.
func (p *plan) spec() (json.RawMessage, error) {
	values := make([]map[string]any, len(p.table.Rows))
	cols := []int{p.x, p.y}
	if p.s >= 0 {
		cols = append(cols, p.s)
	}
	for r, row := range p.table.Rows {
		m := make(map[string]any, len(cols))
		for _, c := range cols {
			m[p.col(c)] = jsonValue(row[c])
		}
		values[r] = m
	}
	x := &vlField{Field: escapeField(p.col(p.x)), Type: p.xt, Title: p.col(p.x)}
	y := &vlField{Field: escapeField(p.col(p.y)), Type: p.yt, Title: p.col(p.y)}
	if p.xt == Nominal {
		x.Sort = distinct(p.table.Rows, p.x) // data order, as in the PNG
	}
	if p.xt == Ordinal && p.xTemporal {
		// Bars over time are discrete bands, labelled as dates.
		x.TimeUnit = "yearmonthdate"
		if !p.allMidnight(p.x) {
			x.TimeUnit = "yearmonthdatehoursminutesseconds"
		}
	}
	if p.yt == Nominal {
		y.Sort = distinct(p.table.Rows, p.y)
	}
	enc := map[string]any{}
	mark := map[string]any{"type": p.mark, "tooltip": true}
	switch p.mark {
	case "arc":
		enc["theta"] = &vlField{Field: y.Field, Type: Quantitative, Title: y.Title}
		enc["color"] = &vlField{Field: x.Field, Type: Nominal, Title: x.Title, Sort: distinct(p.table.Rows, p.x)}
	default:
		enc["x"] = x
		enc["y"] = y
		if p.mark == "area" {
			f := false
			y.Stack = &f // the PNG overlays areas; so does the spec
			mark["opacity"] = 0.35
		}
		if p.mark == "line" {
			mark["point"] = len(p.table.Rows) <= 60
		}
		if p.s >= 0 {
			s := &vlField{Field: escapeField(p.col(p.s)), Type: Nominal, Title: p.col(p.s), Sort: p.seriesVals}
			enc["color"] = s
			if p.mark == "bar" {
				enc["xOffset"] = &vlField{Field: s.Field, Type: Nominal, Sort: p.seriesVals}
			}
		}
	}
	spec := struct {
		Schema   string         `json:"$schema"`
		Title    string         `json:"title,omitempty"`
		Width    string         `json:"width"`
		Data     map[string]any `json:"data"`
		Mark     map[string]any `json:"mark"`
		Encoding map[string]any `json:"encoding"`
	}{
		Schema:   "https://vega.github.io/schema/vega-lite/v5.json",
		Title:    p.title,
		Width:    "container",
		Data:     map[string]any{"values": values},
		Mark:     mark,
		Encoding: enc,
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode Vega-Lite spec: %w", err)
	}
	return b, nil
}

// jsonValue converts a cell to what Vega-Lite reads: times as ISO 8601,
// bytes as base64, non-finite numbers as null.
func jsonValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil
		}
	}
	return v
}
