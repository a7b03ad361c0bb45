package fanout

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bichat-go/bichat/domain"
)

// Warning is one aggregate that a one-to-many join inflates.
type Warning struct {
	// Message says which aggregate double counts and why.
	Message string `json:"message"`
	// Hint says how to rewrite the statement so that it does not.
	Hint string `json:"hint"`
	// Table is the relation whose rows the join repeats: a dataset name,
	// or the name of a CTE or subquery alias.
	Table string `json:"table"`
	// Column is the aggregated column of Table; empty for COUNT(*).
	Column string `json:"column,omitempty"`
	// Aggregate is the aggregate function, lower case ("sum", "count").
	Aggregate string `json:"aggregate"`
	// FannedBy is the "many" side of the join that repeats the rows, and
	// JoinColumns its join columns.
	FannedBy    string   `json:"fanned_by"`
	JoinColumns []string `json:"join_columns,omitempty"`
}

// String renders the warning as one line for a model: the message, then
// the hint.
func (w Warning) String() string { return w.Message + " Fix: " + w.Hint }

// Checker finds fan-out traps in statements against one catalog. Build it
// with New once per catalog and reuse it: it is safe for concurrent use.
type Checker struct {
	tables []table
	// byName maps lower-case names (dataset name, source, schema-qualified
	// and database-qualified forms) to table indexes.
	byName map[string][]int
	// byBare maps lower-case unqualified names to table indexes.
	byBare map[string][]int
}

// table is what the checker knows of one dataset.
type table struct {
	name      string
	cols      map[string]bool // lower-case field names; nil when the dataset lists none
	unique    [][]string      // column sets known to be unique
	nonunique [][]string      // column sets known to repeat (the "many" side of a join)
}

// New indexes the datasets and the join cardinalities. Relationships
// come from rels and from each dataset's own Relationships; only those
// with a Cardinality say anything (a relationship without one is
// ignored), and a dataset's primary key is unique. Relationship ends are
// matched to datasets by name or source, qualified or not.
func New(rels []domain.Relationship, datasets []domain.Dataset) *Checker {
	c := &Checker{byName: make(map[string][]int), byBare: make(map[string][]int)}
	for i, d := range datasets {
		t := table{name: d.Name}
		var pk []string
		for _, f := range d.Fields {
			if t.cols == nil {
				t.cols = make(map[string]bool, len(d.Fields))
			}
			n := strings.ToLower(f.Name)
			t.cols[n] = true
			if f.PrimaryKey {
				pk = append(pk, n)
			}
		}
		if len(pk) > 0 {
			t.unique = append(t.unique, pk)
		}
		c.tables = append(c.tables, t)
		names := []string{d.Name, d.Source}
		for _, n := range []string{d.Name, d.Source} {
			bare := unqualified(n)
			if d.Schema != "" {
				names = append(names, d.Schema+"."+bare)
				if d.Database != "" {
					names = append(names, d.Database+"."+d.Schema+"."+bare)
				}
			} else if d.Database != "" {
				names = append(names, d.Database+"."+bare)
			}
			c.add(c.byBare, bare, i)
		}
		for _, n := range names {
			c.add(c.byName, n, i)
		}
	}
	all := slices.Clone(rels)
	for _, d := range datasets {
		all = append(all, d.Relationships...)
	}
	for _, r := range all {
		from, to := c.lookupName(r.From), c.lookupName(r.To)
		if from < 0 || to < 0 || len(r.FromColumns) == 0 || len(r.FromColumns) != len(r.ToColumns) {
			continue
		}
		fc, tc := lowerAll(r.FromColumns), lowerAll(r.ToColumns)
		switch r.Cardinality {
		case domain.CardinalityManyToOne:
			c.tables[to].unique = append(c.tables[to].unique, tc)
			c.tables[from].nonunique = append(c.tables[from].nonunique, fc)
		case domain.CardinalityOneToMany:
			c.tables[from].unique = append(c.tables[from].unique, fc)
			c.tables[to].nonunique = append(c.tables[to].nonunique, tc)
		case domain.CardinalityOneToOne:
			c.tables[from].unique = append(c.tables[from].unique, fc)
			c.tables[to].unique = append(c.tables[to].unique, tc)
		case domain.CardinalityManyToMany:
			c.tables[from].nonunique = append(c.tables[from].nonunique, fc)
			c.tables[to].nonunique = append(c.tables[to].nonunique, tc)
		}
	}
	return c
}

func (c *Checker) add(m map[string][]int, name string, i int) {
	k := strings.ToLower(name)
	if k == "" || slices.Contains(m[k], i) {
		return
	}
	m[k] = append(m[k], i)
}

// lookupName resolves a relationship end: exact qualified match first,
// then an unambiguous unqualified one; -1 when unknown or ambiguous.
func (c *Checker) lookupName(name string) int {
	k := strings.ToLower(name)
	if ix := c.byName[k]; len(ix) == 1 {
		return ix[0]
	}
	if ix := c.byBare[unqualified(k)]; len(ix) == 1 {
		return ix[0]
	}
	return -1
}

// lookupRange resolves a FROM item [database.][schema.]name.
func (c *Checker) lookupRange(db, schema, name string) int {
	if schema != "" {
		q := schema + "." + name
		if db != "" {
			q = db + "." + q
		}
		if ix := c.byName[strings.ToLower(q)]; len(ix) == 1 {
			return ix[0]
		}
		if db != "" {
			if ix := c.byName[strings.ToLower(schema+"."+name)]; len(ix) == 1 {
				return ix[0]
			}
		}
	}
	if ix := c.byName[strings.ToLower(name)]; len(ix) == 1 {
		return ix[0]
	}
	if ix := c.byBare[strings.ToLower(name)]; len(ix) == 1 {
		return ix[0]
	}
	return -1
}

// Check parses sql once and returns a warning for every aggregate that
// double counts; nil when there is none or sql does not parse.
func Check(sql string, rels []domain.Relationship, datasets []domain.Dataset) []Warning {
	return New(rels, datasets).Check(sql)
}

func unqualified(n string) string {
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		return n[i+1:]
	}
	return n
}

func lowerAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strings.ToLower(v)
	}
	return out
}

// covers reports whether some set in sets is a subset of cols.
func covers(sets [][]string, cols map[string]bool) bool {
	for _, s := range sets {
		if len(s) == 0 {
			return true
		}
		ok := true
		for _, c := range s {
			if !cols[c] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// within reports whether cols (non-empty) is a subset of some set in sets.
func within(sets [][]string, cols map[string]bool) bool {
	if len(cols) == 0 {
		return false
	}
	for _, s := range sets {
		n := 0
		for c := range cols {
			if slices.Contains(s, c) {
				n++
			}
		}
		if n == len(cols) {
			return true
		}
	}
	return false
}

func aggText(fn, qual, col string) string {
	arg := "*"
	if col != "" {
		arg = col
		if qual != "" {
			arg = qual + "." + col
		}
	}
	return fmt.Sprintf("%s(%s)", strings.ToUpper(fn), arg)
}
