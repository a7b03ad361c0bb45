package eval

import (
	"strings"
	"testing"
	"time"
)

func tbl(cols string, rows ...[]any) Table {
	var c []string
	if cols != "" {
		c = strings.Split(cols, ",")
	}
	return Table{Columns: c, Rows: rows}
}

func row(v ...any) []any { return v }

func TestCompare(t *testing.T) {
	t.Parallel()
	day := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		gold, got Table
		opts      CompareOptions
		ok        bool
		reason    string // substring of the reason when !ok
	}{
		{name: "identical", gold: tbl("a,b", row(int64(1), "x"), row(int64(2), "y")),
			got: tbl("a,b", row(int64(1), "x"), row(int64(2), "y")), ok: true},
		{name: "unordered rows in any order", gold: tbl("a", row(int64(1)), row(int64(2)), row(int64(3))),
			got: tbl("a", row(int64(3)), row(int64(1)), row(int64(2))), ok: true},
		{name: "ordered rows must keep order", gold: tbl("a", row(int64(1)), row(int64(2))),
			got: tbl("a", row(int64(2)), row(int64(1))), opts: CompareOptions{Ordered: true},
			reason: "order differs: row 1 is (2), want (1)"},
		{name: "ordered wrong values", gold: tbl("a", row(int64(1)), row(int64(2))),
			got: tbl("a", row(int64(1)), row(int64(5))), opts: CompareOptions{Ordered: true},
			reason: "values differ"},
		{name: "ordered and equal", gold: tbl("a,b", row("x", int64(1)), row("y", int64(2))),
			got: tbl("b,a", row(int64(1), "x"), row(int64(2), "y")), opts: CompareOptions{Ordered: true}, ok: true},
		{name: "int equals float within tolerance", gold: tbl("n", row(int64(3))),
			got: tbl("n", row(3.0000000001)), ok: true},
		{name: "float beyond default tolerance", gold: tbl("n", row(100.0)),
			got: tbl("n", row(100.01)), reason: "values differ"},
		{name: "float within configured tolerance", gold: tbl("n", row(100.0)),
			got: tbl("n", row(100.01)), opts: CompareOptions{RelTolerance: 1e-3}, ok: true},
		{name: "absolute tolerance", gold: tbl("n", row(0.0)),
			got: tbl("n", row(0.004)), opts: CompareOptions{AbsTolerance: 0.005}, ok: true},
		{name: "exact when tolerance negative", gold: tbl("n", row(int64(3))),
			got: tbl("n", row(3.0000000001)), opts: CompareOptions{RelTolerance: -1, AbsTolerance: -1}, reason: "values differ"},
		{name: "numeric text equals number", gold: tbl("n", row("12.50")), got: tbl("n", row(12.5)), ok: true},
		{name: "bool equals 1/0", gold: tbl("b", row(true), row(false)), got: tbl("b", row(int64(0)), row(int64(1))), ok: true},
		{name: "permuted columns", gold: tbl("region,revenue,orders", row("North", 10.5, int64(3)), row("South", 7.25, int64(2))),
			got: tbl("orders,region,revenue", row(int64(2), "South", 7.25), row(int64(3), "North", 10.5)), ok: true},
		{name: "renamed columns", gold: tbl("region,total", row("North", int64(3))),
			got: tbl("name,count", row("North", int64(3))), ok: true},
		{name: "columns with equal values need row-consistent mapping",
			gold: tbl("a,b", row(int64(1), int64(2)), row(int64(2), int64(1))),
			got:  tbl("x,y", row(int64(2), int64(1)), row(int64(1), int64(2))), ok: true},
		{name: "columns swapped inconsistently across rows",
			gold: tbl("a,b", row(int64(1), int64(2)), row(int64(3), int64(4))),
			got:  tbl("x,y", row(int64(1), int64(2)), row(int64(4), int64(3))), reason: "values differ"},
		{name: "duplicates count (multiset)", gold: tbl("a", row("x"), row("x"), row("y")),
			got: tbl("a", row("x"), row("y"), row("y")), reason: "values differ"},
		{name: "duplicates in any order", gold: tbl("a", row("x"), row("x"), row("y")),
			got: tbl("a", row("y"), row("x"), row("x")), ok: true},
		{name: "row count", gold: tbl("a", row(int64(1)), row(int64(2)), row(int64(3)), row(int64(4))),
			got: tbl("a", row(int64(1)), row(int64(2)), row(int64(3))), reason: "row count 3, want 4"},
		{name: "column count", gold: tbl("a,b", row(int64(1), int64(2))),
			got: tbl("a,b,c", row(int64(1), int64(2), int64(3))), reason: "column count 3, want 2"},
		{name: "null equals null", gold: tbl("a,b", row(nil, "x")), got: tbl("a,b", row(nil, "x")), ok: true},
		{name: "null is not zero", gold: tbl("a", row(nil)), got: tbl("a", row(int64(0))), reason: "values differ"},
		{name: "null is not empty text", gold: tbl("a", row(nil)), got: tbl("a", row("")), reason: "values differ"},
		{name: "times as instants", gold: tbl("d", row(day)), got: tbl("d", row(day.In(time.FixedZone("CET", 3600)))), ok: true},
		{name: "text is case-sensitive", gold: tbl("a,n", row("North", int64(1))), got: tbl("a,n", row("north", int64(1))),
			reason: `"North" appears nowhere in the answer`},
		{name: "one value", gold: tbl("n", row(int64(1784))), got: tbl("count", row(int64(2364))),
			reason: "values differ: row 1 is (2364), want (1784)"},
		{name: "empty results", gold: tbl("a"), got: tbl("b"), ok: true},
		{name: "empty vs rows", gold: tbl("a"), got: tbl("a", row(int64(1))), reason: "row count 1, want 0"},
		{name: "missing row named", gold: tbl("r,n", row("North", int64(3)), row("South", int64(2))),
			got: tbl("r,n", row("North", int64(3)), row("South", int64(5))), reason: "values differ"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, reason := Compare(c.gold, c.got, c.opts)
			if ok != c.ok {
				t.Fatalf("Compare = %v (%q), want %v", ok, reason, c.ok)
			}
			if ok && reason != "" {
				t.Errorf("reason %q on success", reason)
			}
			if !ok && !strings.Contains(reason, c.reason) {
				t.Errorf("reason %q, want it to contain %q", reason, c.reason)
			}
		})
	}
}

// TestCompareMultisetReasonNamesTheRow checks that a failure names the
// expected row the answer lacks and what it has instead.
func TestCompareMultisetReasonNamesTheRow(t *testing.T) {
	t.Parallel()
	gold := tbl("r,n", row("North", int64(3)), row("South", int64(2)))
	got := tbl("r,n", row("North", int64(3)), row("West", int64(2)))
	ok, reason := Compare(gold, got, CompareOptions{})
	if ok {
		t.Fatal("Compare accepted a wrong row")
	}
	// "South" appears nowhere, so the column check already explains it.
	if !strings.Contains(reason, `"South"`) {
		t.Errorf("reason %q does not name the missing value", reason)
	}
	// Values exist in both, but are paired differently.
	gold = tbl("r,n", row("North", int64(3)), row("South", int64(2)))
	got = tbl("r,n", row("North", int64(2)), row("South", int64(3)))
	ok, reason = Compare(gold, got, CompareOptions{})
	if ok {
		t.Fatal("Compare accepted mismatched pairs")
	}
	want := `values differ: expected row ("North", 3) (row 1 of the sorted gold result) is missing from the answer; the answer has ("North", 2) instead`
	if reason != want {
		t.Errorf("reason\n %q\nwant\n %q", reason, want)
	}
}

// TestCompareMappingCap checks that the mapping search stops at
// MaxMappings: 8 identical columns have 8! mappings, none matching rows.
func TestCompareMappingCap(t *testing.T) {
	t.Parallel()
	const n = 8
	mk := func(flip bool) Table {
		var tb Table
		for i := range n {
			tb.Columns = append(tb.Columns, string(rune('a'+i)))
		}
		for r := range 2 {
			var rw []any
			for c := range n {
				v := int64(r)
				if flip && c == n-1 {
					v = 1 - v // same values, on the other row
				}
				rw = append(rw, v)
			}
			tb.Rows = append(tb.Rows, rw)
		}
		return tb
	}
	ok, reason := Compare(mk(false), mk(true), CompareOptions{MaxMappings: 50})
	if ok || !strings.Contains(reason, "within 50 tries") {
		t.Errorf("Compare = %v, %q; want the cap reason", ok, reason)
	}
}

func TestOrdersRows(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"SELECT a FROM t ORDER BY a":                                              true,
		"select a from t order   by 1 desc limit 3":                               true,
		"SELECT a FROM t\nORDER\n-- comment\nBY a":                                true,
		"SELECT a FROM t":                                                         false,
		"SELECT a FROM (SELECT a FROM t ORDER BY a) s":                            false,
		"WITH s AS (SELECT a FROM t ORDER BY a LIMIT 5) SELECT a FROM s":          false,
		"SELECT string_agg(a, ',' ORDER BY a) FROM t":                             false,
		"SELECT rank() OVER (ORDER BY a) FROM t":                                  false,
		"SELECT 'ORDER BY' AS x FROM t":                                           false,
		`SELECT "order by" FROM t`:                                                false,
		"SELECT a FROM t -- ORDER BY a":                                           false,
		"SELECT a FROM t /* ORDER BY a */":                                        false,
		"SELECT $$ ORDER BY $$ FROM t":                                            false,
		"SELECT $q$ ) ORDER BY ( $q$ FROM t":                                      false,
		"SELECT a FROM t UNION SELECT b FROM u ORDER BY 1":                        true,
		"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a) FROM t":            false,
		"SELECT a FROM t WHERE b = 'it''s ORDER BY' ORDER BY a":                   true,
		"SELECT a AS border, b AS byte FROM t":                                    false,
		"SELECT a FROM t WINDOW w AS (ORDER BY a)":                                false,
		"SELECT [order by] FROM t":                                                false,
		"SELECT count(*) FROM orders o WHERE o.id IN (SELECT 1 ORDER BY 1) ":      false,
		"SELECT a FROM t /* nested /* ORDER BY */ still comment */ WHERE a = 1":   false,
		"SELECT a FROM t /* nested /* x */ still comment */ ORDER BY a":           true,
		"SELECT a, $1 FROM t ORDER BY a":                                          true,
		"select region, revenue from r order by revenue desc, region fetch first": true,
	}
	for sql, want := range cases {
		if got := OrdersRows(sql); got != want {
			t.Errorf("OrdersRows(%q) = %v, want %v", sql, got, want)
		}
	}
}
