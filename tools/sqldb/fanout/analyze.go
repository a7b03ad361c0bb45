//go:build cgo

package fanout

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Check parses sql with the PostgreSQL parser (which also reads the
// common SQLite subset) and returns a warning for every aggregate that a
// one-to-many join inflates, in statement order; nil when there is none
// or when sql does not parse (the guard never blocks a statement).
func (c *Checker) Check(sql string) []Warning {
	tree, err := pg_query.Parse(sql)
	if err != nil {
		return nil
	}
	a := &analyzer{c: c, seen: map[string]bool{}}
	for _, raw := range tree.GetStmts() {
		if sel := raw.GetStmt().GetSelectStmt(); sel != nil {
			a.analyze(sel, nil)
		}
	}
	return a.warnings
}

// aggregates that a repeated row inflates; MIN, MAX, BOOL_AND and the
// like are not in it, and any DISTINCT aggregate is left alone.
var inflating = map[string]bool{
	"sum": true, "avg": true, "count": true, "total": true,
	"stddev": true, "stddev_pop": true, "stddev_samp": true,
	"variance": true, "var_pop": true, "var_samp": true,
}

type analyzer struct {
	c        *Checker
	warnings []Warning
	seen     map[string]bool
	depth    int
}

// derived is what a CTE or subquery exposes: its output columns and the
// column sets known to be unique or repeated in it.
type derived struct {
	cols      []string
	colsKnown bool
	unique    [][]string
	nonunique [][]string
}

type env struct {
	ctes   map[string]*derived
	parent *env
}

func (e *env) cte(name string) (*derived, bool) {
	for ; e != nil; e = e.parent {
		if d, ok := e.ctes[name]; ok {
			return d, true
		}
	}
	return nil, false
}

// rel is one FROM item of a query level.
type rel struct {
	ref       string          // lower-case name column references use
	name      string          // display name: dataset name or alias
	cols      map[string]bool // nil when unknown
	unique    [][]string
	nonunique [][]string
	bound     map[string]bool // columns fixed to a constant at this level
}

// edge is the equality join between rels a < b at one level.
type edge struct {
	acols, bcols map[string]bool
}

type level struct {
	rels  []*rel
	edges map[[2]int]*edge
	quals []*pg_query.Node // join conditions, scanned for subqueries
}

// fan is how a rel's rows get repeated: x is repeated by the one-to-many
// join to y on ycols.
type fan struct {
	x, y  int
	ycols []string
}

func (a *analyzer) analyze(sel *pg_query.SelectStmt, parent *env) *derived {
	if sel == nil || a.depth > 64 {
		return nil
	}
	a.depth++
	defer func() { a.depth-- }()

	e := parent
	if w := sel.GetWithClause(); w != nil && len(w.GetCtes()) > 0 {
		e = &env{ctes: map[string]*derived{}, parent: parent}
		for _, n := range w.GetCtes() {
			cte := n.GetCommonTableExpr()
			if cte == nil {
				continue
			}
			name := strings.ToLower(cte.GetCtename())
			e.ctes[name] = nil // a recursive reference is an unknown relation
			d := a.analyze(cte.GetCtequery().GetSelectStmt(), e)
			e.ctes[name] = rename(d, cte.GetAliascolnames())
		}
	}
	if sel.GetOp() != pg_query.SetOperation_SETOP_NONE {
		l := a.analyze(sel.GetLarg(), e)
		a.analyze(sel.GetRarg(), e)
		if l == nil {
			return nil
		}
		return &derived{cols: l.cols, colsKnown: l.colsKnown}
	}
	if len(sel.GetValuesLists()) > 0 {
		return nil
	}

	lv := &level{edges: map[[2]int]*edge{}}
	for _, n := range sel.GetFromClause() {
		a.fromItem(n, lv, e)
	}
	a.conjuncts(sel.GetWhereClause(), lv)

	fans := make([]*fan, len(lv.rels))
	for i := range lv.rels {
		fans[i] = lv.fanOf(i)
	}

	// Subqueries in expressions are levels of their own.
	exprs := slices.Concat(sel.GetTargetList(), sel.GetGroupClause(), sel.GetSortClause(), lv.quals)
	exprs = append(exprs, sel.GetWhereClause(), sel.GetHavingClause())
	for _, n := range exprs {
		walk(n, func(n *pg_query.Node) bool {
			if sl := n.GetSubLink(); sl != nil {
				a.analyze(sl.GetSubselect().GetSelectStmt(), e)
				return false
			}
			return true
		})
	}

	hasAgg := false
	for _, n := range slices.Concat(sel.GetTargetList(), sel.GetSortClause(), []*pg_query.Node{sel.GetHavingClause()}) {
		walk(n, func(n *pg_query.Node) bool {
			if n.GetSubLink() != nil {
				return false
			}
			fc := n.GetFuncCall()
			if fc == nil {
				return true
			}
			fn := funcName(fc)
			if fc.GetOver() == nil && (inflating[fn] || fn == "min" || fn == "max") {
				hasAgg = true
			}
			if inflating[fn] && !fc.GetAggDistinct() && !fc.GetAggWithinGroup() {
				a.aggregate(fn, fc, lv, fans)
			}
			return true
		})
	}
	return a.output(sel, lv, fans, hasAgg)
}

// aggregate warns when every column the aggregate reads belongs to a rel
// the joins repeat (COUNT(*): when every rel is repeated).
func (a *analyzer) aggregate(fn string, fc *pg_query.FuncCall, lv *level, fans []*fan) {
	if fc.GetAggStar() {
		if len(lv.rels) < 2 {
			return
		}
		for _, f := range fans {
			if f == nil {
				return
			}
		}
		a.warn(fn, lv, 0, "", "", fans[0], true)
		return
	}
	first, firstCol, firstQual := -1, "", ""
	ok := true
	for _, arg := range fc.GetArgs() {
		walk(arg, func(n *pg_query.Node) bool {
			if !ok || n.GetSubLink() != nil {
				return false
			}
			cr := n.GetColumnRef()
			if cr == nil {
				return true
			}
			ri, col, qual, found := lv.resolve(cr)
			if !found || fans[ri] == nil {
				ok = false // unknown, or read at a grain the joins keep
				return false
			}
			if first < 0 {
				first, firstCol, firstQual = ri, col, qual
			}
			return false
		})
	}
	if ok && first >= 0 {
		a.warn(fn, lv, first, firstCol, firstQual, fans[first], false)
	}
}

func (a *analyzer) warn(fn string, lv *level, ri int, col, qual string, f *fan, star bool) {
	t, x, y := lv.rels[ri], lv.rels[f.x], lv.rels[f.y]
	agg := aggText(fn, qual, col)
	if star {
		agg = aggText(fn, "", "")
	}
	key := agg + "\x00" + t.name
	if a.seen[key] {
		return
	}
	a.seen[key] = true
	joinCols := strings.Join(f.ycols, ", ")
	var msg string
	if star {
		msg = fmt.Sprintf("%s double counts: every table in the FROM is repeated by a one-to-many join (each %s row once per matching %s row, joined on %s.%s), so no row of the result stands for one row of any table.",
			agg, x.name, y.name, y.name, joinCols)
	} else {
		msg = fmt.Sprintf("%s double counts: the one-to-many join to %s (on %s.%s) repeats each %s row once per matching %s row, so the %s over %s is inflated.",
			agg, y.name, y.name, joinCols, x.name, y.name, strings.ToUpper(fn), t.name)
	}
	var hint string
	key1 := ""
	for _, u := range t.unique {
		if len(u) == 1 {
			key1 = u[0]
			break
		}
	}
	ref := t.ref
	if qual != "" {
		ref = qual
	}
	switch {
	case fn == "count" && key1 != "" && !star:
		hint = fmt.Sprintf("to count %s rows use COUNT(DISTINCT %s.%s); to aggregate %s, do it first in a subquery or CTE grouped by %s and join that.", t.name, ref, key1, y.name, joinCols)
	case fn == "count":
		hint = fmt.Sprintf("count distinct keys (COUNT(DISTINCT <key of the table you count>)), or aggregate %s first in a subquery or CTE grouped by %s and join that.", y.name, joinCols)
	default:
		hint = fmt.Sprintf("aggregate %s first in a subquery or CTE grouped by %s (one row per %s row) and join that, or compute %s from %s alone in its own subquery before joining; SUM(DISTINCT ...) is no fix (it drops equal values).",
			y.name, joinCols, x.name, agg, t.name)
	}
	a.warnings = append(a.warnings, Warning{
		Message: msg, Hint: hint, Table: t.name, Column: col, Aggregate: fn,
		FannedBy: y.name, JoinColumns: f.ycols,
	})
}

// fromItem adds the relations of one FROM item to lv and returns their
// indexes.
func (a *analyzer) fromItem(n *pg_query.Node, lv *level, e *env) []int {
	add := func(r *rel) []int {
		lv.rels = append(lv.rels, r)
		return []int{len(lv.rels) - 1}
	}
	switch {
	case n.GetRangeVar() != nil:
		rv := n.GetRangeVar()
		name := strings.ToLower(rv.GetRelname())
		ref := name
		if al := rv.GetAlias().GetAliasname(); al != "" {
			ref = strings.ToLower(al)
		}
		if rv.GetSchemaname() == "" {
			if d, ok := e.cte(name); ok {
				return add(fromDerived(ref, rv.GetRelname(), d, rv.GetAlias().GetColnames()))
			}
		}
		if ti := a.c.lookupRange(rv.GetCatalogname(), rv.GetSchemaname(), rv.GetRelname()); ti >= 0 {
			t := a.c.tables[ti]
			r := &rel{ref: ref, name: t.name, cols: t.cols, unique: t.unique, nonunique: t.nonunique}
			if cn := rv.GetAlias().GetColnames(); len(cn) > 0 {
				r.cols, r.unique, r.nonunique = nil, nil, nil // renamed columns: unknown
			}
			return add(r)
		}
		return add(&rel{ref: ref, name: rv.GetRelname()})
	case n.GetRangeSubselect() != nil:
		rs := n.GetRangeSubselect()
		d := a.analyze(rs.GetSubquery().GetSelectStmt(), e)
		al := rs.GetAlias().GetAliasname()
		return add(fromDerived(strings.ToLower(al), al, d, rs.GetAlias().GetColnames()))
	case n.GetJoinExpr() != nil:
		j := n.GetJoinExpr()
		l := a.fromItem(j.GetLarg(), lv, e)
		r := a.fromItem(j.GetRarg(), lv, e)
		var using []string
		for _, u := range j.GetUsingClause() {
			using = append(using, strings.ToLower(u.GetString_().GetSval()))
		}
		if j.GetIsNatural() {
			using = naturalCols(lv, l, r)
		}
		for _, col := range using {
			li, ri := lv.owner(l, col), lv.owner(r, col)
			if li >= 0 && ri >= 0 {
				lv.addEq(li, col, ri, col)
			}
		}
		if q := j.GetQuals(); q != nil {
			lv.quals = append(lv.quals, q)
			a.conjuncts(q, lv)
		}
		// A join alias (JOIN ... AS j) hides its columns behind j, which
		// this analysis does not follow: references through it stay
		// unresolved, so they never warn.
		return append(l, r...)
	default:
		ref := ""
		if rf := n.GetRangeFunction(); rf != nil {
			ref = strings.ToLower(rf.GetAlias().GetAliasname())
		}
		return add(&rel{ref: ref, name: ref})
	}
}

func naturalCols(lv *level, l, r []int) []string {
	var out []string
	for _, li := range l {
		for c := range lv.rels[li].cols {
			for _, ri := range r {
				if lv.rels[ri].cols[c] && !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// owner is the first rel among idx that has col.
func (lv *level) owner(idx []int, col string) int {
	for _, i := range idx {
		if lv.rels[i].cols[col] {
			return i
		}
	}
	if len(idx) == 1 {
		return idx[0]
	}
	return -1
}

// conjuncts records the equalities of an AND tree: column = column joins
// two rels, column = constant binds a column.
func (a *analyzer) conjuncts(n *pg_query.Node, lv *level) {
	if n == nil {
		return
	}
	if b := n.GetBoolExpr(); b != nil {
		if b.GetBoolop() == pg_query.BoolExprType_AND_EXPR {
			for _, x := range b.GetArgs() {
				a.conjuncts(x, lv)
			}
		}
		return
	}
	ex := n.GetAExpr()
	if ex == nil || ex.GetKind() != pg_query.A_Expr_Kind_AEXPR_OP || len(ex.GetName()) != 1 || ex.GetName()[0].GetString_().GetSval() != "=" {
		return
	}
	l, r := ex.GetLexpr(), ex.GetRexpr()
	lc, rc := l.GetColumnRef(), r.GetColumnRef()
	switch {
	case lc != nil && rc != nil:
		li, lcol, _, lok := lv.resolve(lc)
		ri, rcol, _, rok := lv.resolve(rc)
		if lok && rok && li != ri && lcol != "*" && rcol != "*" {
			lv.addEq(li, lcol, ri, rcol)
		}
	case lc != nil && constant(r):
		lv.bind(lc)
	case rc != nil && constant(l):
		lv.bind(rc)
	}
}

func constant(n *pg_query.Node) bool {
	for n.GetTypeCast() != nil {
		n = n.GetTypeCast().GetArg()
	}
	return n.GetAConst() != nil || n.GetParamRef() != nil
}

func (lv *level) bind(cr *pg_query.ColumnRef) {
	if ri, col, _, ok := lv.resolve(cr); ok && col != "*" {
		r := lv.rels[ri]
		if r.bound == nil {
			r.bound = map[string]bool{}
		}
		r.bound[col] = true
	}
}

func (lv *level) addEq(i int, icol string, j int, jcol string) {
	if i > j {
		i, j, icol, jcol = j, i, jcol, icol
	}
	k := [2]int{i, j}
	ed := lv.edges[k]
	if ed == nil {
		ed = &edge{acols: map[string]bool{}, bcols: map[string]bool{}}
		lv.edges[k] = ed
	}
	ed.acols[icol] = true
	ed.bcols[jcol] = true
}

// cols returns the join columns of side to in the edge between from and to.
func (lv *level) joinCols(from, to int) (map[string]bool, bool) {
	if from < to {
		ed, ok := lv.edges[[2]int{from, to}]
		if !ok {
			return nil, false
		}
		return ed.bcols, true
	}
	ed, ok := lv.edges[[2]int{to, from}]
	if !ok {
		return nil, false
	}
	return ed.acols, true
}

// repeats reports whether joining y on ycols repeats rows of the other
// side: ycols are known to repeat in y and not known to be unique there
// (with y's constant-bound columns).
func (lv *level) repeats(y int, ycols map[string]bool) bool {
	r := lv.rels[y]
	with := ycols
	if len(r.bound) > 0 {
		with = make(map[string]bool, len(ycols)+len(r.bound))
		for c := range ycols {
			with[c] = true
		}
		for c := range r.bound {
			with[c] = true
		}
	}
	return !covers(r.unique, with) && within(r.nonunique, ycols)
}

// fanOf walks the join graph away from rel t (breadth first) and returns
// the first one-to-many step it crosses, or nil when t's rows are not
// repeated.
func (lv *level) fanOf(t int) *fan {
	visited := make([]bool, len(lv.rels))
	visited[t] = true
	queue := []int{t}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for y := range lv.rels {
			if visited[y] {
				continue
			}
			ycols, ok := lv.joinCols(x, y)
			if !ok {
				continue
			}
			if lv.repeats(y, ycols) {
				cols := make([]string, 0, len(ycols))
				for c := range ycols {
					cols = append(cols, c)
				}
				sort.Strings(cols)
				return &fan{x: x, y: y, ycols: cols}
			}
			visited[y] = true
			queue = append(queue, y)
		}
	}
	return nil
}

// resolve finds the rel and column a reference names; col is "*" for
// alias.*; qual is the qualifier as written.
func (lv *level) resolve(cr *pg_query.ColumnRef) (ri int, col, qual string, ok bool) {
	f := cr.GetFields()
	if len(f) == 0 {
		return -1, "", "", false
	}
	last := f[len(f)-1]
	if last.GetAStar() != nil {
		col = "*"
	} else {
		col = strings.ToLower(last.GetString_().GetSval())
	}
	if len(f) == 1 {
		if col == "*" {
			return -1, "", "", false
		}
		found, unknown := -1, 0
		for i, r := range lv.rels {
			switch {
			case r.cols == nil:
				unknown++
			case r.cols[col]:
				if found >= 0 {
					return -1, "", "", false
				}
				found = i
			}
		}
		if found >= 0 && unknown == 0 {
			return found, col, "", true
		}
		if found < 0 && unknown == 1 && len(lv.rels) == 1 {
			return 0, col, "", true
		}
		return -1, "", "", false
	}
	qual = f[len(f)-2].GetString_().GetSval()
	q := strings.ToLower(qual)
	found := -1
	for i, r := range lv.rels {
		if r.ref == q {
			if found >= 0 {
				return -1, "", "", false
			}
			found = i
		}
	}
	if found < 0 {
		return -1, "", "", false
	}
	return found, col, qual, true
}

// output describes the level as a relation for the level above.
func (a *analyzer) output(sel *pg_query.SelectStmt, lv *level, fans []*fan, hasAgg bool) *derived {
	type src struct {
		ri  int
		col string
	}
	d := &derived{colsKnown: true}
	var srcs []src
	for _, n := range sel.GetTargetList() {
		rt := n.GetResTarget()
		if rt == nil {
			continue
		}
		cr := rt.GetVal().GetColumnRef()
		if cr != nil {
			if f := cr.GetFields(); len(f) > 0 && f[len(f)-1].GetAStar() != nil {
				var idx []int
				if len(f) == 1 {
					for i := range lv.rels {
						idx = append(idx, i)
					}
				} else if ri, _, _, ok := lv.resolve(cr); ok {
					idx = []int{ri}
				} else {
					d.colsKnown = false
				}
				for _, i := range idx {
					if lv.rels[i].cols == nil {
						d.colsKnown = false
						continue
					}
					cols := make([]string, 0, len(lv.rels[i].cols))
					for c := range lv.rels[i].cols {
						cols = append(cols, c)
					}
					sort.Strings(cols)
					for _, c := range cols {
						d.cols = append(d.cols, c)
						srcs = append(srcs, src{i, c})
					}
				}
				continue
			}
		}
		name := strings.ToLower(rt.GetName())
		s := src{ri: -1}
		if cr != nil {
			if ri, col, _, ok := lv.resolve(cr); ok {
				s = src{ri, col}
			}
			if name == "" {
				f := cr.GetFields()
				name = strings.ToLower(f[len(f)-1].GetString_().GetSval())
			}
		}
		if name == "" {
			if fc := rt.GetVal().GetFuncCall(); fc != nil {
				name = funcName(fc)
			} else {
				name = "?column?"
			}
		}
		d.cols = append(d.cols, name)
		srcs = append(srcs, s)
	}
	outOf := func(ri int, col string) string {
		for i, s := range srcs {
			if s.ri == ri && s.col == col {
				return d.cols[i]
			}
		}
		return ""
	}
	distinct := len(sel.GetDistinctClause()) > 0
	plainDistinct := distinct && len(sel.GetDistinctClause()) == 1 && sel.GetDistinctClause()[0].GetNode() == nil
	switch {
	case len(sel.GetGroupClause()) > 0:
		var set []string
		for _, g := range sel.GetGroupClause() {
			name := ""
			if cr := g.GetColumnRef(); cr != nil {
				if ri, col, _, ok := lv.resolve(cr); ok {
					name = outOf(ri, col)
				} else if f := cr.GetFields(); len(f) == 1 {
					if n := strings.ToLower(f[0].GetString_().GetSval()); slices.Contains(d.cols, n) {
						name = n
					}
				}
			} else if ac := g.GetAConst(); ac != nil && ac.GetIval() != nil {
				if i := int(ac.GetIval().GetIval()); i >= 1 && i <= len(d.cols) {
					name = d.cols[i-1]
				}
			}
			if name == "" {
				set = nil
				break
			}
			set = append(set, name)
		}
		if set != nil {
			d.unique = append(d.unique, set)
		}
	case hasAgg:
		d.unique = append(d.unique, []string{}) // one row
	case !distinct:
		for ri, r := range lv.rels {
			mapSet := func(s []string) []string {
				out := make([]string, len(s))
				for i, c := range s {
					if out[i] = outOf(ri, c); out[i] == "" {
						return nil
					}
				}
				return out
			}
			for _, s := range r.nonunique {
				if m := mapSet(s); m != nil {
					d.nonunique = append(d.nonunique, m)
				}
			}
			if fans[ri] == nil {
				for _, s := range r.unique {
					if m := mapSet(s); m != nil {
						d.unique = append(d.unique, m)
					}
				}
			}
		}
	}
	if plainDistinct && d.colsKnown {
		d.unique = append(d.unique, slices.Clone(d.cols))
	}
	return d
}

// rename applies a column alias list to a derived relation.
func rename(d *derived, names []*pg_query.Node) *derived {
	if d == nil || len(names) == 0 {
		return d
	}
	if !d.colsKnown || len(names) > len(d.cols) {
		return &derived{}
	}
	m := map[string]string{}
	out := &derived{cols: slices.Clone(d.cols), colsKnown: true}
	for i, n := range names {
		nn := strings.ToLower(n.GetString_().GetSval())
		m[d.cols[i]] = nn
		out.cols[i] = nn
	}
	mapSets := func(sets [][]string) [][]string {
		var res [][]string
		for _, s := range sets {
			ms := make([]string, len(s))
			for i, c := range s {
				if v, ok := m[c]; ok {
					ms[i] = v
				} else {
					ms[i] = c
				}
			}
			res = append(res, ms)
		}
		return res
	}
	out.unique, out.nonunique = mapSets(d.unique), mapSets(d.nonunique)
	return out
}

func fromDerived(ref, name string, d *derived, colnames []*pg_query.Node) *rel {
	d = rename(d, colnames)
	r := &rel{ref: ref, name: name}
	if d == nil {
		return r
	}
	if d.colsKnown {
		r.cols = make(map[string]bool, len(d.cols))
		for _, c := range d.cols {
			r.cols[c] = true
		}
	}
	r.unique, r.nonunique = d.unique, d.nonunique
	return r
}

func funcName(fc *pg_query.FuncCall) string {
	n := fc.GetFuncname()
	if len(n) == 0 {
		return ""
	}
	return strings.ToLower(n[len(n)-1].GetString_().GetSval())
}

// walk calls fn on n and, while fn returns true, on every node below it.
func walk(n *pg_query.Node, fn func(*pg_query.Node) bool) {
	if n == nil || n.GetNode() == nil || !fn(n) {
		return
	}
	walkMsg(n.ProtoReflect(), fn)
}

func walkMsg(m protoreflect.Message, fn func(*pg_query.Node) bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := range l.Len() {
				walkChild(l.Get(i).Message(), fn)
			}
			return true
		}
		walkChild(v.Message(), fn)
		return true
	})
}

func walkChild(m protoreflect.Message, fn func(*pg_query.Node) bool) {
	if n, ok := m.Interface().(*pg_query.Node); ok {
		walk(n, fn)
		return
	}
	walkMsg(m, fn)
}
