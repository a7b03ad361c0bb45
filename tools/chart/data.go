package chart

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bichat-go/bichat/tools"
)

// Data is the data a chart, a sheet or a report table is made from:
// either Ref, the name of an earlier result (query_database keeps its
// results under names like "result_1"), or Columns and Rows given inline.
// export_excel and export_pdf use the same shape.
type Data struct {
	Ref     string   `json:"ref,omitempty" jsonschema:"description=Name of an earlier result\\, e.g. result_1 from query_database. Give either ref or columns and rows."`
	Columns []string `json:"columns,omitempty" jsonschema:"description=Inline data: the column names."`
	Rows    [][]any  `json:"rows,omitempty" jsonschema:"description=Inline data: one array of values per row\\, in the order of columns. Values are numbers\\, strings\\, booleans or null; dates as ISO 8601 strings (2024-01-31 or 2024-01-31T12:00:00Z)."`
}

// Table resolves d: the named result from results, or the inline rows as
// a Table named "inline". field names d in error messages ("data",
// "sheets[1].data"). String columns whose values are all ISO 8601 dates or
// timestamps become time.Time columns (in a copy: a stored result is
// never modified). Errors are written for
// the model: they say what is wrong and what to give instead.
func (d Data) Table(ctx context.Context, results tools.Results, field string) (tools.Table, error) {
	inline := len(d.Columns) > 0 || len(d.Rows) > 0
	switch {
	case d.Ref != "" && inline:
		return tools.Table{}, fmt.Errorf("%s: give either ref (an earlier result) or columns and rows, not both", field)
	case d.Ref != "":
		if results == nil {
			return tools.Table{}, fmt.Errorf("%s: this host keeps no earlier results; give the data inline as columns and rows", field)
		}
		t, err := results.Get(ctx, d.Ref)
		if err != nil {
			return tools.Table{}, fmt.Errorf("%s.ref: %w", field, err)
		}
		if t.Name == "" {
			t.Name = d.Ref
		}
		if err := checkTable(&t, field); err != nil {
			return tools.Table{}, err
		}
		parseDateColumns(&t)
		return t, nil
	case !inline:
		return tools.Table{}, fmt.Errorf("%s: no data: give ref (the name of an earlier result) or columns and rows", field)
	}
	t := tools.Table{Name: "inline", Columns: make([]tools.Column, len(d.Columns))}
	for i, c := range d.Columns {
		t.Columns[i] = tools.Column{Name: c}
	}
	if err := checkTable(&t, field); err != nil {
		return tools.Table{}, err
	}
	t.Rows = make([][]any, len(d.Rows))
	for r, row := range d.Rows {
		if len(row) != len(d.Columns) {
			return tools.Table{}, fmt.Errorf("%s.rows[%d] has %d values for %d columns", field, r, len(row), len(d.Columns))
		}
		out := make([]any, len(row))
		for c, v := range row {
			switch x := v.(type) {
			case nil, bool, string:
				out[c] = x
			case float64:
				if math.IsNaN(x) || math.IsInf(x, 0) {
					out[c] = nil
				} else {
					out[c] = x
				}
			case int:
				out[c] = int64(x)
			case int64:
				out[c] = x
			default:
				return tools.Table{}, fmt.Errorf("%s.rows[%d][%d] (column %q) is %s; values must be numbers, strings, booleans or null", field, r, c, d.Columns[c], jsonKind(v))
			}
		}
		t.Rows[r] = out
	}
	parseDateColumns(&t)
	return t, nil
}

func checkTable(t *tools.Table, field string) error {
	if len(t.Columns) == 0 {
		return fmt.Errorf("%s has no columns", field)
	}
	seen := make(map[string]bool, len(t.Columns))
	for i, c := range t.Columns {
		if strings.TrimSpace(c.Name) == "" {
			return fmt.Errorf("%s: column %d has no name", field, i)
		}
		if seen[c.Name] {
			return fmt.Errorf("%s: column %q appears twice; column names must be unique", field, c.Name)
		}
		seen[c.Name] = true
	}
	for r, row := range t.Rows {
		if len(row) != len(t.Columns) {
			return fmt.Errorf("%s: row %d has %d values for %d columns", field, r, len(row), len(t.Columns))
		}
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}

var dateLayouts = []string{"2006-01-02", time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04:05Z07:00"}

// ParseDate parses the ISO 8601 forms inline data may use for dates and
// timestamps.
func ParseDate(s string) (time.Time, bool) {
	if len(s) < 10 || len(s) > 40 || s[4] != '-' {
		return time.Time{}, false
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseDateColumns turns string columns made only of ISO 8601 dates or
// timestamps (SQLite's dates, dates given inline) into time.Time columns.
// The rows are copied first when a column changes, so a table shared
// with a Results store is never modified.
func parseDateColumns(t *tools.Table) {
	var cols []int
	for c := range t.Columns {
		n := 0
		all := true
		for _, row := range t.Rows {
			if row[c] == nil {
				continue
			}
			s, ok := row[c].(string)
			if !ok {
				all = false
				break
			}
			if _, ok := ParseDate(s); !ok {
				all = false
				break
			}
			n++
		}
		if all && n > 0 {
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		return
	}
	rows := make([][]any, len(t.Rows))
	for r, row := range t.Rows {
		row = slices.Clone(row)
		for _, c := range cols {
			if s, ok := row[c].(string); ok {
				row[c], _ = ParseDate(s)
			}
		}
		rows[r] = row
	}
	t.Rows = rows
}

// FieldType is a Vega-Lite encoding type.
type FieldType string

// The Vega-Lite field types draw_chart infers.
const (
	Quantitative FieldType = "quantitative"
	Temporal     FieldType = "temporal"
	Nominal      FieldType = "nominal"
	Ordinal      FieldType = "ordinal"
)

// InferType returns the type of column c of t: quantitative when every
// non-null value is a number, temporal when every one is a time, nominal
// otherwise (also for an all-null column).
func InferType(t *tools.Table, c int) FieldType {
	num, tm, other := 0, 0, 0
	for _, row := range t.Rows {
		switch row[c].(type) {
		case nil:
		case int64, float64, int, int32, float32:
			num++
		case time.Time:
			tm++
		default:
			other++
		}
	}
	switch {
	case other == 0 && tm == 0 && num > 0:
		return Quantitative
	case other == 0 && num == 0 && tm > 0:
		return Temporal
	}
	return Nominal
}

// Number returns v as a float64 when it is a number.
func Number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case float32:
		return float64(x), true
	}
	return 0, false
}
