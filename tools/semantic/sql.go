package semantic

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// Filter operators.
const (
	OpEq    = "eq"
	OpNe    = "ne"
	OpLt    = "lt"
	OpLe    = "le"
	OpGt    = "gt"
	OpGe    = "ge"
	OpIn    = "in"
	OpNotIn = "not_in"
)

var opSQL = map[string]string{OpEq: "=", OpNe: "<>", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">="}

// MaxListValues bounds the values of one in / not_in filter.
const MaxListValues = 1000

// Query is what the model asks query_metrics for (and what SQL turns
// into a statement).
type Query struct {
	// Metrics are metric names; each becomes a result column.
	Metrics []string `json:"metrics" jsonschema:"minItems=1,maxItems=20,description=Metric names from the semantic layer."`
	// Dimensions group the result; a time dimension takes a grain after
	// a double underscore ("ordered_at__month"); without one it is
	// grouped by its first (finest) grain. Each becomes a result column
	// named as written.
	Dimensions []string `json:"dimensions,omitempty" jsonschema:"maxItems=10,description=Dimension names to group by; a time dimension takes a grain after two underscores: ordered_at__month (grains: day week month quarter year)."`
	// Filters keep the rows whose dimension compares with the value; all
	// must hold.
	Filters []Filter `json:"filters,omitempty" jsonschema:"maxItems=20,description=Conditions on dimensions; all must hold."`
	// TimeRange keeps rows of a time dimension in [From, To).
	TimeRange *TimeRange `json:"time_range,omitempty" jsonschema:"description=Keep rows whose time dimension is in [from\\, to)."`
	// OrderBy sorts by result columns (metrics or dimensions as asked);
	// by default the result is sorted by its dimensions.
	OrderBy []Order `json:"order_by,omitempty" jsonschema:"maxItems=10,description=Sort by result columns (metric names or dimensions as asked)."`
	// Limit caps the rows (0: the configured maximum).
	Limit int `json:"limit,omitempty" jsonschema:"minimum=0,maximum=100000,description=At most this many rows (0: the default maximum)."`
}

// Filter compares a dimension (without grain) with a value. Value is a
// string, number or boolean; for in and not_in a list of them. Values
// become SQL literals quoted by this package, never SQL text; a time
// dimension's values must be dates or timestamps.
type Filter struct {
	Dimension string `json:"dimension" jsonschema:"minLength=1,description=Dimension name (without grain)."`
	Op        string `json:"op" jsonschema:"enum=eq,enum=ne,enum=lt,enum=le,enum=gt,enum=ge,enum=in,enum=not_in,description=Comparison."`
	Value     any    `json:"value" jsonschema:"description=A string\\, number or boolean; a list of them for in and not_in."`
}

// TimeRange keeps the rows whose time dimension is at or after From and
// before To (either may be empty). Values are dates (2025-01-31) or
// timestamps (2025-01-31 12:00:00, RFC 3339; offsets are converted to
// UTC); they are compared with the column as the database stores it.
type TimeRange struct {
	// Dimension is the time dimension; optional when the model has one.
	Dimension string `json:"dimension,omitempty" jsonschema:"description=The time dimension; optional when the model has only one."`
	From      string `json:"from,omitempty" jsonschema:"description=Inclusive start: YYYY-MM-DD or a timestamp."`
	To        string `json:"to,omitempty" jsonschema:"description=Exclusive end: YYYY-MM-DD or a timestamp."`
}

// Order sorts by one result column; nulls sort last either way.
type Order struct {
	Name string `json:"name" jsonschema:"minLength=1,description=A metric or dimension of the query\\, as written there."`
	Desc bool   `json:"desc,omitempty" jsonschema:"description=Descending."`
}

// edge is one direction of a join.
type edge struct {
	from, to         string
	fromCols, toCols []string
	fanout           bool // one from row may match many to rows
}

type graph map[string][]edge

func (m *Model) graph() graph {
	g := graph{}
	for _, j := range m.Joins {
		g[j.From] = append(g[j.From], edge{from: j.From, to: j.To, fromCols: j.FromColumns, toCols: j.ToColumns, fanout: j.Cardinality == domain.CardinalityOneToMany})
		g[j.To] = append(g[j.To], edge{from: j.To, to: j.From, fromCols: j.ToColumns, toCols: j.FromColumns, fanout: j.Cardinality == domain.CardinalityManyToOne})
	}
	return g
}

// paths returns, for every entity reachable from root, the joins from
// root to it: the path with the fewest one-to-many steps, then the
// fewest steps; ties are broken the same way every time.
func (g graph) paths(root string) map[string][]edge {
	const fan = 1 << 16
	dist := map[string]int{root: 0}
	path := map[string][]edge{root: nil}
	done := map[string]bool{}
	for {
		cur, best := "", -1
		for n, d := range dist {
			if !done[n] && (best < 0 || d < best || d == best && n < cur) {
				cur, best = n, d
			}
		}
		if best < 0 {
			return path
		}
		done[cur] = true
		for _, e := range g[cur] {
			w := 1
			if e.fanout {
				w = fan
			}
			if d, ok := dist[e.to]; !ok || best+w < d {
				dist[e.to] = best + w
				path[e.to] = append(slices.Clone(path[cur]), e)
			}
		}
	}
}

// dimRef is a dimension as a query uses it.
type dimRef struct {
	dim   *Dimension
	grain string
	out   string // result column name
}

func (m *Model) dimRef(name string, grainOK bool) (dimRef, error) {
	base, grain, hasGrain := strings.Cut(name, "__")
	d := m.dimensions[base]
	if d == nil {
		return dimRef{}, fmt.Errorf("unknown dimension %q; dimensions: %s", base, strings.Join(m.dimensionNames(), ", "))
	}
	if hasGrain {
		if !grainOK {
			return dimRef{}, fmt.Errorf("dimension %q: filters compare the dimension itself; name it without a grain", name)
		}
		if d.Type != DimTime {
			return dimRef{}, fmt.Errorf("dimension %q is categorical and takes no grain", base)
		}
		if !slices.Contains(d.Grains, grain) {
			return dimRef{}, fmt.Errorf("dimension %q has no grain %q; grains: %s", base, grain, strings.Join(d.Grains, ", "))
		}
		return dimRef{dim: d, grain: grain, out: name}, nil
	}
	if d.Type == DimTime && grainOK {
		return dimRef{dim: d, grain: d.Grains[0], out: base + "__" + d.Grains[0]}, nil
	}
	return dimRef{dim: d, out: base}, nil
}

func (m *Model) dimensionNames() []string {
	n := make([]string, len(m.Dimensions))
	for i, d := range m.Dimensions {
		n[i] = d.Name
		if d.Type == DimTime {
			n[i] += "__" + strings.Join(d.Grains, "|")
		}
	}
	return n
}

func (m *Model) metricNames() []string {
	n := make([]string, len(m.Metrics))
	for i, mt := range m.Metrics {
		n[i] = mt.Name
	}
	return n
}

// condition is a WHERE condition on a dimension, rendered per CTE.
type condition struct {
	dim *Dimension
	op  string   // SQL operator or IN / NOT IN / >= and <
	lit []string // rendered literals
}

type dialect struct {
	name string
}

func (d dialect) pg() bool { return d.name == sqldb.DialectPostgres }

// SQL writes the statement that answers q in dialect (sqldb.DialectPostgres
// or sqldb.DialectSQLite). Each measure is aggregated in a common table
// expression of its own, over its entity joined only to the entities its
// dimensions and filters need, grouped by the requested dimensions; the
// per-measure results are then joined on the dimensions. So a measure is
// never repeated by a join to the "many" side of another measure's
// entity. A measure whose dimensions lie across a one-to-many join is
// refused, unless its aggregation ignores repeated rows (count_distinct,
// min, max). Filter values are rendered as quoted literals, checked for
// their dimension's type. Errors name the offending metric, dimension or
// value.
func (m *Model) SQL(dialectName string, q Query) (string, error) {
	s, _, err := m.build(dialectName, q)
	return s, err
}

// build returns the statement and the datasets it reads.
func (m *Model) build(dialectName string, q Query) (string, []string, error) {
	fail := func(err error) (string, []string, error) { return "", nil, fmt.Errorf("semantic: query: %w", err) }
	dl := dialect{name: dialectName}
	if dialectName != sqldb.DialectPostgres && dialectName != sqldb.DialectSQLite {
		return fail(fmt.Errorf("dialect %q is not supported (want %s or %s)", dialectName, sqldb.DialectPostgres, sqldb.DialectSQLite))
	}
	if len(q.Metrics) == 0 {
		return fail(fmt.Errorf("name at least one metric; metrics: %s", strings.Join(m.metricNames(), ", ")))
	}
	if q.Limit < 0 {
		return fail(fmt.Errorf("limit %d is negative", q.Limit))
	}
	var (
		metrics  []*Metric
		measures []*Measure
		outs     = map[string]bool{}
	)
	for _, name := range q.Metrics {
		mt := m.metrics[name]
		if mt == nil {
			return fail(fmt.Errorf("unknown metric %q; metrics: %s", name, strings.Join(m.metricNames(), ", ")))
		}
		if outs[name] {
			return fail(fmt.Errorf("metric %q is asked twice", name))
		}
		outs[name] = true
		metrics = append(metrics, mt)
		for _, ref := range []string{mt.Measure, mt.Numerator, mt.Denominator} {
			if ref != "" && !slices.Contains(measures, m.measures[ref]) {
				measures = append(measures, m.measures[ref])
			}
		}
	}
	var dims []dimRef
	for _, name := range q.Dimensions {
		r, err := m.dimRef(name, true)
		if err != nil {
			return fail(err)
		}
		if outs[r.out] {
			return fail(fmt.Errorf("dimension %q is asked twice", r.out))
		}
		outs[r.out] = true
		dims = append(dims, r)
	}
	var conds []condition
	for i, f := range q.Filters {
		c, err := m.filterCondition(dl, f)
		if err != nil {
			return fail(fmt.Errorf("filter %d: %w", i+1, err))
		}
		conds = append(conds, c...)
	}
	if q.TimeRange != nil {
		c, err := m.timeRange(dl, *q.TimeRange)
		if err != nil {
			return fail(err)
		}
		conds = append(conds, c...)
	}
	var order []Order
	for _, o := range q.OrderBy {
		if !outs[o.Name] {
			return fail(fmt.Errorf("order by %q: not a column of this query; order by one of its metrics or dimensions as asked", o.Name))
		}
		order = append(order, o)
	}
	for _, d := range dims {
		if !slices.ContainsFunc(order, func(o Order) bool { return o.Name == d.out }) {
			order = append(order, Order{Name: d.out})
		}
	}

	var b strings.Builder
	b.Grow(1024 * len(measures))
	var datasets []string
	b.WriteString("WITH ")
	for i, ms := range measures {
		if i > 0 {
			b.WriteString(",\n")
		}
		read, err := m.measureCTE(&b, dl, i, ms, dims, conds)
		if err != nil {
			return fail(err)
		}
		for _, r := range read {
			if !slices.Contains(datasets, r) {
				datasets = append(datasets, r)
			}
		}
	}
	from := cte(0)
	if len(measures) > 1 && len(dims) > 0 {
		from = `"sem_keys"`
		b.WriteString(",\n\"sem_keys\" AS (")
		for i := range measures {
			if i > 0 {
				b.WriteString(" UNION ")
			}
			b.WriteString("SELECT ")
			for k := range dims {
				if k > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, `"d%d"`, k)
			}
			b.WriteString(" FROM " + cte(i))
		}
		b.WriteString(")")
	}
	b.WriteString("\nSELECT ")
	for k, d := range dims {
		fmt.Fprintf(&b, `%s."d%d" AS %s, `, from, k, sqlQuoteIdent(d.out))
	}
	val := func(ms *Measure) string {
		v := cte(slices.Index(measures, ms)) + `."v"`
		if ms.Agg == AggCount || ms.Agg == AggCountDistinct {
			v = "COALESCE(" + v + ", 0)"
		}
		return v
	}
	for i, mt := range metrics {
		if i > 0 {
			b.WriteString(", ")
		}
		if mt.IsRatio() {
			typ := "REAL"
			if dl.pg() {
				typ = "DOUBLE PRECISION"
			}
			fmt.Fprintf(&b, "CAST(%s AS %s) / NULLIF(%s, 0)", val(m.measures[mt.Numerator]), typ, val(m.measures[mt.Denominator]))
		} else {
			b.WriteString(val(m.measures[mt.Measure]))
		}
		b.WriteString(" AS " + sqlQuoteIdent(mt.Name))
	}
	b.WriteString("\nFROM " + from)
	for i := range measures {
		if from == cte(i) {
			continue
		}
		if len(dims) == 0 {
			b.WriteString(" CROSS JOIN " + cte(i))
			continue
		}
		b.WriteString("\nLEFT JOIN " + cte(i) + " ON ")
		for k := range dims {
			if k > 0 {
				b.WriteString(" AND ")
			}
			same := " IS "
			if dl.pg() {
				same = " IS NOT DISTINCT FROM "
			}
			fmt.Fprintf(&b, `%s."d%d"%s%s."d%d"`, from, k, same, cte(i), k)
		}
	}
	if len(order) > 0 {
		b.WriteString("\nORDER BY ")
		for i, o := range order {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(sqlQuoteIdent(o.Name))
			if o.Desc {
				b.WriteString(" DESC")
			}
			b.WriteString(" NULLS LAST")
		}
	}
	if q.Limit > 0 {
		b.WriteString("\nLIMIT " + strconv.Itoa(q.Limit))
	}
	return b.String(), datasets, nil
}

func cte(i int) string { return `"sem_m` + strconv.Itoa(i) + `"` }

// measureCTE writes one measure's common table expression and returns the
// relations it reads.
func (m *Model) measureCTE(b *strings.Builder, dl dialect, i int, ms *Measure, dims []dimRef, conds []condition) ([]string, error) {
	need := []string{ms.Entity}
	reason := map[string]string{}
	for _, d := range dims {
		if !slices.Contains(need, d.dim.Entity) {
			need = append(need, d.dim.Entity)
			reason[d.dim.Entity] = d.dim.Name
		}
	}
	for _, c := range conds {
		if !slices.Contains(need, c.dim.Entity) {
			need = append(need, c.dim.Entity)
			reason[c.dim.Entity] = c.dim.Name
		}
	}
	paths := m.paths[ms.Entity]
	alias := map[string]string{ms.Entity: "t0"}
	var joins []edge
	for _, ent := range need[1:] {
		p, ok := paths[ent]
		if !ok {
			return nil, fmt.Errorf("measure %q (of %s) cannot be combined with dimension %q: no chain of joins connects %s to %s", ms.Name, ms.Entity, reason[ent], ms.Entity, ent)
		}
		for _, e := range p {
			if e.fanout && ms.Agg != AggCountDistinct && ms.Agg != AggMin && ms.Agg != AggMax {
				return nil, fmt.Errorf("measure %q (%s over %s) cannot be broken down or filtered by dimension %q: the way from %s to %s crosses the one-to-many join %s -> %s, which would count each %s row several times; choose a dimension of %s or of an entity it joins many-to-one",
					ms.Name, ms.Agg, ms.Entity, reason[ent], ms.Entity, ent, e.from, e.to, ms.Entity, ms.Entity)
			}
			if _, ok := alias[e.to]; !ok {
				alias[e.to] = "t" + strconv.Itoa(len(alias))
				joins = append(joins, e)
			}
		}
	}
	var read []string
	fmt.Fprintf(b, "%s AS (SELECT ", cte(i))
	for k, d := range dims {
		b.WriteString(dl.dimension(d, alias[d.dim.Entity]))
		fmt.Fprintf(b, ` AS "d%d", `, k)
	}
	switch {
	case ms.expr == nil:
		b.WriteString("COUNT(*)")
	case ms.Agg == AggCountDistinct:
		b.WriteString("COUNT(DISTINCT ")
		ms.expr.render(b, "t0")
		b.WriteString(")")
	default:
		b.WriteString(strings.ToUpper(ms.Agg) + "(")
		ms.expr.render(b, "t0")
		b.WriteString(")")
	}
	b.WriteString(` AS "v" FROM ` + m.relation(ms.Entity) + " t0")
	read = append(read, m.relationName(ms.Entity))
	for _, e := range joins {
		rel := m.relation(e.to)
		read = append(read, m.relationName(e.to))
		fmt.Fprintf(b, " LEFT JOIN %s %s ON ", rel, alias[e.to])
		for k := range e.fromCols {
			if k > 0 {
				b.WriteString(" AND ")
			}
			fmt.Fprintf(b, "%s.%s = %s.%s", alias[e.from], sqlQuoteIdent(e.fromCols[k]), alias[e.to], sqlQuoteIdent(e.toCols[k]))
		}
	}
	var where []string
	if ms.filter != nil {
		var f strings.Builder
		f.WriteString("(")
		ms.filter.render(&f, "t0")
		f.WriteString(")")
		where = append(where, f.String())
	}
	for _, c := range conds {
		where = append(where, dl.condition(c, alias[c.dim.Entity]))
	}
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	if len(dims) > 0 {
		b.WriteString(" GROUP BY ")
		for k := range dims {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(k + 1))
		}
	}
	b.WriteString(")")
	return read, nil
}

// relation is the quoted relation of an entity: the one Validate
// resolved, else the dataset as written.
func (m *Model) relation(entity string) string {
	return sqldb.QuoteQualified(m.relationName(entity))
}

// relationName is the unquoted relation of an entity.
func (m *Model) relationName(entity string) string {
	if e := m.entities[entity]; e.source != "" {
		return e.source
	}
	return m.entities[entity].Dataset
}

// dimension renders a dimension's value, truncated to its grain.
func (dl dialect) dimension(d dimRef, alias string) string {
	var b strings.Builder
	d.dim.expr.render(&b, alias)
	x := b.String()
	if d.grain == "" {
		return x
	}
	if dl.pg() {
		return "CAST(date_trunc('" + d.grain + "', " + x + ") AS date)"
	}
	switch d.grain {
	case GrainDay:
		return "date(" + x + ")"
	case GrainWeek:
		return "date(" + x + ", 'weekday 0', '-6 days')"
	case GrainMonth:
		return "strftime('%Y-%m-01', " + x + ")"
	case GrainQuarter:
		return "printf('%04d-%02d-01', CAST(strftime('%Y', " + x + ") AS INTEGER), (CAST(strftime('%m', " + x + ") AS INTEGER) - 1) / 3 * 3 + 1)"
	}
	return "strftime('%Y-01-01', " + x + ")"
}

func (dl dialect) condition(c condition, alias string) string {
	var b strings.Builder
	c.dim.expr.render(&b, alias)
	x := b.String()
	if c.dim.Type == DimTime && !dl.pg() {
		x = "datetime(" + x + ")"
	}
	switch c.op {
	case "IN", "NOT IN":
		return "(" + x + " " + c.op + " (" + strings.Join(c.lit, ", ") + "))"
	}
	return "(" + x + " " + c.op + " " + c.lit[0] + ")"
}

func (m *Model) filterCondition(dl dialect, f Filter) ([]condition, error) {
	r, err := m.dimRef(f.Dimension, false)
	if err != nil {
		return nil, err
	}
	c := condition{dim: r.dim}
	switch f.Op {
	case OpIn, OpNotIn:
		c.op = "IN"
		if f.Op == OpNotIn {
			c.op = "NOT IN"
		}
		list, ok := f.Value.([]any)
		if !ok {
			if s, isStrings := f.Value.([]string); isStrings {
				for _, v := range s {
					list = append(list, v)
				}
			} else {
				return nil, fmt.Errorf("dimension %q %s: the value must be a list", f.Dimension, f.Op)
			}
		}
		if len(list) == 0 || len(list) > MaxListValues {
			return nil, fmt.Errorf("dimension %q %s: the list must hold 1 to %d values, not %d", f.Dimension, f.Op, MaxListValues, len(list))
		}
		for _, v := range list {
			l, err := dl.literal(r.dim, v)
			if err != nil {
				return nil, fmt.Errorf("dimension %q: %w", f.Dimension, err)
			}
			c.lit = append(c.lit, l)
		}
	default:
		op, ok := opSQL[f.Op]
		if !ok {
			return nil, fmt.Errorf("dimension %q: operator %q must be one of eq, ne, lt, le, gt, ge, in, not_in", f.Dimension, f.Op)
		}
		c.op = op
		l, err := dl.literal(r.dim, f.Value)
		if err != nil {
			return nil, fmt.Errorf("dimension %q: %w", f.Dimension, err)
		}
		c.lit = []string{l}
	}
	return []condition{c}, nil
}

func (m *Model) timeRange(dl dialect, tr TimeRange) ([]condition, error) {
	var d *Dimension
	if tr.Dimension == "" {
		for i := range m.Dimensions {
			if m.Dimensions[i].Type == DimTime {
				if d != nil {
					return nil, errors.New("time_range: the model has several time dimensions; name one")
				}
				d = &m.Dimensions[i]
			}
		}
		if d == nil {
			return nil, errors.New("time_range: the model has no time dimension")
		}
	} else {
		r, err := m.dimRef(tr.Dimension, false)
		if err != nil {
			return nil, fmt.Errorf("time_range: %w", err)
		}
		if r.dim.Type != DimTime {
			return nil, fmt.Errorf("time_range: dimension %q is not a time dimension", tr.Dimension)
		}
		d = r.dim
	}
	var out []condition
	var from, to time.Time
	for _, b := range []struct {
		v, op string
		t     *time.Time
	}{{tr.From, ">=", &from}, {tr.To, "<", &to}} {
		if b.v == "" {
			continue
		}
		t, err := parseTime(b.v)
		if err != nil {
			return nil, fmt.Errorf("time_range: %w", err)
		}
		*b.t = t
		out = append(out, condition{dim: d, op: b.op, lit: []string{dl.timeLiteral(t)}})
	}
	if tr.From != "" && tr.To != "" && !from.Before(to) {
		return nil, fmt.Errorf("time_range: from %s is not before to %s", tr.From, tr.To)
	}
	return out, nil
}

var timeLayouts = []string{"2006-01-02", "2006-01-02 15:04:05", "2006-01-02T15:04:05", time.RFC3339Nano}

func parseTime(s string) (time.Time, error) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, strings.TrimSpace(s)); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date (YYYY-MM-DD) or timestamp (YYYY-MM-DD HH:MM:SS or RFC 3339)", s)
}

func (dl dialect) timeLiteral(t time.Time) string {
	s := "'" + t.Format("2006-01-02 15:04:05") + "'"
	if dl.pg() {
		return s
	}
	return "datetime(" + s + ")"
}

// literal renders v as an SQL literal fit for dimension d: strings are
// quoted with quotes doubled (in PostgreSQL, a string holding a backslash
// becomes an escape string literal (E'...') with backslashes doubled too, so it reads the
// same whatever standard_conforming_strings says), numbers are
// re-formatted from their value, booleans are TRUE or FALSE; a time
// dimension takes dates and timestamps only.
func (dl dialect) literal(d *Dimension, v any) (string, error) {
	if d.Type == DimTime {
		switch x := v.(type) {
		case string:
			t, err := parseTime(x)
			if err != nil {
				return "", err
			}
			return dl.timeLiteral(t), nil
		case time.Time:
			return dl.timeLiteral(x.UTC()), nil
		}
		return "", fmt.Errorf("a time dimension compares with a date or timestamp string, not %T", v)
	}
	switch x := v.(type) {
	case string:
		return dl.quote(x)
	case bool:
		if x {
			return "TRUE", nil
		}
		return "FALSE", nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("the number %v cannot be compared", x)
		}
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return strconv.FormatInt(int64(x), 10), nil
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case nil:
		return "", errors.New("null cannot be compared; filter on a value")
	}
	return "", fmt.Errorf("value of type %T: want a string, number or boolean", v)
}

// quote renders s as a string literal.
func (dl dialect) quote(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", errors.New("the string is not valid UTF-8")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", errors.New("the string holds a NUL byte")
	}
	q := strings.ReplaceAll(s, "'", "''")
	if dl.pg() && strings.Contains(s, `\`) {
		return "E'" + strings.ReplaceAll(q, `\`, `\\`) + "'", nil
	}
	return "'" + q + "'", nil
}
