package eval

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// Table is a query result to compare: column names and rows of nil, bool,
// int64, float64, string, time.Time or []byte values (what sqldb.DB
// returns; other integer and float types are accepted too).
type Table struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// TableOf converts a sqldb.Result to a Table.
func TableOf(r *sqldb.Result) Table {
	t := Table{Columns: make([]string, len(r.Columns)), Rows: r.Rows}
	for i, c := range r.Columns {
		t.Columns[i] = c.Name
	}
	return t
}

// CompareOptions tune Compare. The zero value is ready to use.
type CompareOptions struct {
	// Ordered compares rows in order. Set it when the gold query orders
	// its result (OrdersRows reports that); otherwise rows are compared as
	// multisets.
	Ordered bool
	// RelTolerance and AbsTolerance bound the difference of two numbers
	// that count as equal: |a-b| <= AbsTolerance + RelTolerance*max(|a|,|b|).
	// Zero means the defaults (DefaultRelTolerance, DefaultAbsTolerance);
	// a negative value means exactly zero.
	RelTolerance float64
	AbsTolerance float64
	// MaxMappings caps how many column mappings are tried when several
	// columns hold the same values (default 10,000); a comparison that
	// reaches it fails with a reason saying so.
	MaxMappings int
}

// Default tolerances of CompareOptions.
const (
	DefaultRelTolerance = 1e-6
	DefaultAbsTolerance = 1e-9
)

func (o CompareOptions) tolerances() (rel, abs float64) {
	rel, abs = o.RelTolerance, o.AbsTolerance
	switch {
	case rel == 0:
		rel = DefaultRelTolerance
	case rel < 0:
		rel = 0
	}
	switch {
	case abs == 0:
		abs = DefaultAbsTolerance
	case abs < 0:
		abs = 0
	}
	return rel, abs
}

// Compare decides whether got (the agent's result) answers like gold (the
// verified query's result), by execution:
//
//   - column names and column order are ignored: gold's columns must map
//     one to one onto got's, each onto a column holding the same values;
//   - rows are compared as a multiset (duplicates count), in order only
//     when opts.Ordered;
//   - numbers are equal within the tolerances, whatever their type (an
//     integer 3 equals a float 3.0000000001); booleans count as 1 and 0,
//     numeric text ("12.50") as its number, times as instants;
//   - NULL equals only NULL.
//
// When they differ, reason says how: "column count 3, want 2", "row count
// 3, want 4", "values differ: ...", "order differs: ...".
func Compare(gold, got Table, opts CompareOptions) (ok bool, reason string) {
	if w, g := width(gold), width(got); w != g {
		return false, fmt.Sprintf("column count %d, want %d", g, w)
	}
	if len(got.Rows) != len(gold.Rows) {
		return false, fmt.Sprintf("row count %d, want %d", len(got.Rows), len(gold.Rows))
	}
	rel, abs := opts.tolerances()
	c := comparer{rel: rel, abs: abs}
	gv, av := normalize(gold), normalize(got)
	n := width(gold)
	if n == 0 || len(gv) == 0 {
		return true, ""
	}
	// Candidate columns of got for each gold column: same sorted values.
	gcols, acols := columns(gv, n), columns(av, n)
	for _, col := range gcols {
		slices.SortFunc(col, c.order)
	}
	for _, col := range acols {
		slices.SortFunc(col, c.order)
	}
	cand := make([][]int, n)
	for i := range n {
		for j := range n {
			if c.sameValues(gcols[i], acols[j]) {
				cand[i] = append(cand[i], j)
			}
		}
		if len(cand[i]) == 0 && n == 1 {
			// One column: the row-level reason names both values.
			m := mapper{c: c, gold: gv, got: av, ordered: opts.Ordered, perm: []int{0}}
			_, reason := m.rowsMatch()
			return false, reason
		}
		if len(cand[i]) == 0 {
			return false, fmt.Sprintf("values differ: no column of the answer holds the values of column %d (%s)%s",
				i+1, colName(gold, i), c.columnHint(gcols[i], acols))
		}
	}
	// Try mappings, most constrained gold column first.
	seq := make([]int, n)
	for i := range seq {
		seq[i] = i
	}
	slices.SortStableFunc(seq, func(a, b int) int { return cmp.Compare(len(cand[a]), len(cand[b])) })
	max := opts.MaxMappings
	if max <= 0 {
		max = 10_000
	}
	m := mapper{c: c, gold: gv, got: av, cand: cand, seq: seq, ordered: opts.Ordered, max: max,
		perm: make([]int, n), used: make([]bool, n)}
	if m.search(0) {
		return true, ""
	}
	if m.tried >= max {
		return false, fmt.Sprintf("values differ: no column mapping found within %d tries", max)
	}
	if m.firstReason == "" {
		return false, "values differ: no one-to-one column mapping"
	}
	return false, m.firstReason
}

func width(t Table) int {
	if len(t.Columns) > 0 || len(t.Rows) == 0 {
		return len(t.Columns)
	}
	return len(t.Rows[0])
}

func colName(t Table, i int) string {
	if i < len(t.Columns) && t.Columns[i] != "" {
		return strconv.Quote(t.Columns[i])
	}
	return "unnamed"
}

// value is a normalized cell: kind orders kinds, num holds numbers, str
// text.
type value struct {
	kind kind
	num  float64
	str  string
}

type kind uint8

const (
	kNull kind = iota
	kNum
	kText
)

func (v value) String() string {
	switch v.kind {
	case kNull:
		return "NULL"
	case kNum:
		return strconv.FormatFloat(v.num, 'g', -1, 64)
	}
	return strconv.Quote(v.str)
}

func norm(x any) value {
	switch v := x.(type) {
	case nil:
		return value{kind: kNull}
	case bool:
		if v {
			return value{kind: kNum, num: 1}
		}
		return value{kind: kNum, num: 0}
	case int, int8, int16, int32, int64:
		return value{kind: kNum, num: float64(reflect.ValueOf(v).Int())}
	case uint, uint8, uint16, uint32, uint64:
		return value{kind: kNum, num: float64(reflect.ValueOf(v).Uint())}
	case float32, float64:
		return value{kind: kNum, num: reflect.ValueOf(v).Float()}
	case time.Time:
		return value{kind: kText, str: v.UTC().Format(time.RFC3339Nano)}
	case []byte:
		return textValue(string(v))
	case string:
		return textValue(v)
	}
	return textValue(fmt.Sprint(x))
}

// textValue reads numeric text ("12.50", "-3") as its number: a
// PostgreSQL numeric rendered as text equals the same number.
func textValue(s string) value {
	t := strings.TrimSpace(s)
	if t != "" && (t[0] == '-' || t[0] == '+' || t[0] == '.' || unicode.IsDigit(rune(t[0]))) {
		if f, err := strconv.ParseFloat(t, 64); err == nil && !math.IsInf(f, 0) {
			return value{kind: kNum, num: f}
		}
	}
	return value{kind: kText, str: s}
}

func normalize(t Table) [][]value {
	out := make([][]value, len(t.Rows))
	for i, r := range t.Rows {
		out[i] = make([]value, len(r))
		for j, x := range r {
			out[i][j] = norm(x)
		}
	}
	return out
}

func columns(rows [][]value, n int) [][]value {
	cols := make([][]value, n)
	for j := range n {
		cols[j] = make([]value, len(rows))
		for i, r := range rows {
			if j < len(r) {
				cols[j][i] = r[j]
			}
		}
	}
	return cols
}

type comparer struct{ rel, abs float64 }

func (c comparer) equal(a, b value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kNull:
		return true
	case kNum:
		if a.num == b.num || (math.IsNaN(a.num) && math.IsNaN(b.num)) {
			return true
		}
		return math.Abs(a.num-b.num) <= c.abs+c.rel*math.Max(math.Abs(a.num), math.Abs(b.num))
	}
	return a.str == b.str
}

// order is a total order on values: NULL, numbers, text.
func (c comparer) order(a, b value) int {
	if a.kind != b.kind {
		return cmp.Compare(a.kind, b.kind)
	}
	switch a.kind {
	case kNum:
		return cmp.Compare(a.num, b.num)
	case kText:
		return strings.Compare(a.str, b.str)
	}
	return 0
}

func (c comparer) sameValues(a, b []value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !c.equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// columnHint names the first value of the gold column that no answer
// column holds, to make a failure actionable.
func (c comparer) columnHint(gcol []value, acols [][]value) string {
	for _, v := range gcol {
		found := false
		for _, ac := range acols {
			for _, w := range ac {
				if c.equal(v, w) {
					found = true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			return fmt.Sprintf(": %s appears nowhere in the answer", v)
		}
	}
	return ""
}

// mapper searches for a column mapping under which the rows match.
type mapper struct {
	c           comparer
	gold, got   [][]value
	cand        [][]int
	seq         []int
	ordered     bool
	max, tried  int
	perm        []int // gold column -> got column
	used        []bool
	firstReason string
}

func (m *mapper) search(k int) bool {
	if m.tried >= m.max {
		return false
	}
	if k == len(m.seq) {
		m.tried++
		ok, reason := m.rowsMatch()
		if !ok && m.firstReason == "" {
			m.firstReason = reason
		}
		return ok
	}
	g := m.seq[k]
	for _, a := range m.cand[g] {
		if m.used[a] {
			continue
		}
		m.used[a], m.perm[g] = true, a
		if m.search(k + 1) {
			return true
		}
		m.used[a] = false
	}
	return false
}

func (m *mapper) project(r []value) []value {
	out := make([]value, len(m.perm))
	for g, a := range m.perm {
		out[g] = r[a]
	}
	return out
}

func (m *mapper) rowCmp(a, b []value) int {
	for i := range a {
		if d := m.c.order(a[i], b[i]); d != 0 {
			return d
		}
	}
	return 0
}

func (m *mapper) rowEqual(a, b []value) bool {
	for i := range a {
		if !m.c.equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func (m *mapper) rowsMatch() (bool, string) {
	got := make([][]value, len(m.got))
	for i, r := range m.got {
		got[i] = m.project(r)
	}
	if m.ordered {
		for i := range m.gold {
			if !m.rowEqual(m.gold[i], got[i]) {
				if m.sameMultiset(got) {
					return false, fmt.Sprintf("order differs: row %d is %s, want %s", i+1, rowString(got[i]), rowString(m.gold[i]))
				}
				return false, fmt.Sprintf("values differ: row %d is %s, want %s", i+1, rowString(got[i]), rowString(m.gold[i]))
			}
		}
		return true, ""
	}
	return m.multisetReason(got)
}

func (m *mapper) sorted(got [][]value) (g, a [][]value) {
	g = slices.Clone(m.gold)
	a = slices.Clone(got)
	slices.SortFunc(g, m.rowCmp)
	slices.SortFunc(a, m.rowCmp)
	return g, a
}

func (m *mapper) sameMultiset(got [][]value) bool {
	ok, _ := m.multisetReason(got)
	return ok
}

// multisetReason compares rows as multisets: both sides sorted, then
// pairwise within tolerance, falling back to a matching search when
// values within tolerance sorted differently.
func (m *mapper) multisetReason(got [][]value) (bool, string) {
	g, a := m.sorted(got)
	pairwise := true
	for i := range g {
		if !m.rowEqual(g[i], a[i]) {
			pairwise = false
			break
		}
	}
	if pairwise {
		return true, ""
	}
	if len(g) == 1 {
		return false, fmt.Sprintf("values differ: row 1 is %s, want %s", rowString(a[0]), rowString(g[0]))
	}
	// Greedy matching with tolerance: each gold row takes the first
	// unused equal answer row.
	used := make([]bool, len(a))
	for i, gr := range g {
		found := false
		for j, ar := range a {
			if !used[j] && m.rowEqual(gr, ar) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			extra := ""
			for j, ar := range a {
				if !used[j] && !slices.ContainsFunc(g, func(x []value) bool { return m.rowEqual(x, ar) }) {
					extra = fmt.Sprintf("; the answer has %s instead", rowString(ar))
					break
				}
			}
			return false, fmt.Sprintf("values differ: expected row %s (row %d of the sorted gold result) is missing from the answer%s",
				rowString(gr), i+1, extra)
		}
	}
	return true, ""
}

func rowString(r []value) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = v.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// OrdersRows reports whether a SQL statement orders its result: an ORDER
// BY at the top level of the statement, outside parentheses (subqueries,
// common table expressions, window definitions and aggregate arguments
// are skipped), string literals, quoted identifiers, dollar-quoted strings
// and comments. A gold query that orders is compared in order.
func OrdersRows(sql string) bool {
	toks := topLevelWords(sql)
	for i := 0; i+1 < len(toks); i++ {
		if toks[i] == "order" && toks[i+1] == "by" {
			return true
		}
	}
	return false
}

// topLevelWords returns the lower-cased keywords and identifiers of sql at
// parenthesis depth 0.
func topLevelWords(sql string) []string {
	var words []string
	depth := 0
	r := []rune(sql)
	for i := 0; i < len(r); {
		ch := r[i]
		switch {
		case ch == '-' && i+1 < len(r) && r[i+1] == '-':
			for i < len(r) && r[i] != '\n' {
				i++
			}
		case ch == '/' && i+1 < len(r) && r[i+1] == '*':
			nest := 0
			for i < len(r) {
				if r[i] == '/' && i+1 < len(r) && r[i+1] == '*' {
					nest++
					i += 2
					continue
				}
				if r[i] == '*' && i+1 < len(r) && r[i+1] == '/' {
					nest--
					i += 2
					if nest == 0 {
						break
					}
					continue
				}
				i++
			}
		case ch == '\'' || ch == '"' || ch == '`':
			i++
			for i < len(r) {
				if r[i] == ch {
					if i+1 < len(r) && r[i+1] == ch { // doubled quote
						i += 2
						continue
					}
					break
				}
				if ch == '\'' && r[i] == '\\' && i+1 < len(r) { // E'' escapes
					i += 2
					continue
				}
				i++
			}
			i++
		case ch == '[': // SQLite [identifier]
			for i < len(r) && r[i] != ']' {
				i++
			}
			i++
		case ch == '$':
			// Dollar quote $tag$...$tag$ (a $1 parameter is skipped).
			j := i + 1
			for j < len(r) && (unicode.IsLetter(r[j]) || r[j] == '_' || (j > i+1 && unicode.IsDigit(r[j]))) {
				j++
			}
			if j < len(r) && r[j] == '$' {
				tag := string(r[i : j+1])
				end := strings.Index(string(r[j+1:]), tag)
				if end < 0 {
					return words
				}
				i = j + 1 + len([]rune(string(r[j+1:])[:end])) + len([]rune(tag))
				continue
			}
			i = j
		case ch == '(':
			depth++
			i++
		case ch == ')':
			depth--
			i++
		case unicode.IsLetter(ch) || ch == '_':
			j := i
			for j < len(r) && (unicode.IsLetter(r[j]) || unicode.IsDigit(r[j]) || r[j] == '_' || r[j] == '$') {
				j++
			}
			if depth == 0 {
				words = append(words, strings.ToLower(string(r[i:j])))
			}
			i = j
		default:
			i++
		}
	}
	return words
}
