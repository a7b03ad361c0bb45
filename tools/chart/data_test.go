package chart_test

import (
	"testing"
	"time"

	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/chart"
)

// TestDataRefDates: a stored result whose dates are ISO strings (SQLite
// keeps dates as TEXT) reads as dates, and the stored rows stay strings.
func TestDataRefDates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chart.Config{})
	f.results.Put(f.ctx, tools.Table{Name: "days", Columns: []tools.Column{{Name: "day", Type: "TEXT"}, {Name: "code"}, {Name: "n"}},
		Rows: [][]any{{"2024-05-01", "2024-05-01x", int64(1)}, {nil, "a", int64(2)}, {"2024-05-03 10:00:00", "b", 3.5}}})
	tab, err := chart.Data{Ref: "days"}.Table(f.ctx, f.results, "data")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := tab.Rows[0][0].(time.Time); !ok || !got.Equal(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("day = %#v, want a time", tab.Rows[0][0])
	}
	if _, ok := tab.Rows[2][0].(time.Time); !ok {
		t.Errorf("timestamp = %#v, want a time", tab.Rows[2][0])
	}
	if tab.Rows[0][1] != "2024-05-01x" || tab.Rows[1][0] != nil {
		t.Errorf("other cells changed: %v", tab.Rows)
	}
	for i, typ := range []chart.FieldType{chart.Temporal, chart.Nominal, chart.Quantitative} {
		if got := chart.InferType(&tab, i); got != typ {
			t.Errorf("column %d type %s, want %s", i, got, typ)
		}
	}
	stored, _ := f.results.Get(f.ctx, "days")
	if _, ok := stored.Rows[0][0].(string); !ok {
		t.Errorf("the stored result was modified: %#v", stored.Rows[0][0])
	}
}

func TestParseDate(t *testing.T) {
	t.Parallel()
	for in, ok := range map[string]bool{
		"2024-01-31": true, "2024-01-31T12:00:00Z": true, "2024-01-31T12:00:00.5+02:00": true,
		"2024-01-31 12:00:00": true, "2024-01-31T12:00:00": true,
		"2024-01": false, "31/01/2024": false, "2024-13-01": false, "hello": false, "": false, "20240131": false,
	} {
		if _, got := chart.ParseDate(in); got != ok {
			t.Errorf("ParseDate(%q) = %v, want %v", in, got, ok)
		}
	}
}
