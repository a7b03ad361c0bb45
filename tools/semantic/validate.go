package semantic

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// Validate checks the model against the database db describes
// (db.Introspect): every entity's dataset exists, every column a primary
// key, join, measure, filter or dimension names exists in its entity's
// dataset, joined columns have compatible types, sum and avg measures of a
// single column are numeric, time dimensions of a single column are dates
// or timestamps, and every entity is reachable from every other along
// the joins. Each problem is reported, naming the item. On success each
// entity's dataset is resolved to the relation the database reports
// (schema-qualified in PostgreSQL), which the generated SQL then uses;
// call Validate before sharing the model between goroutines.
func (m *Model) Validate(ctx context.Context, db sqldb.DB) error {
	if db == nil {
		return errors.New("semantic: validate: nil database")
	}
	ds, err := db.Introspect(ctx)
	if err != nil {
		return fmt.Errorf("semantic: validate: introspect: %w", err)
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	found := map[string]*domain.Dataset{}
	for i := range m.Entities {
		e := &m.Entities[i]
		d, err := findDataset(ds, e.Dataset)
		if err != nil {
			bad("entity %q: %w", e.Name, err)
			continue
		}
		found[e.Name] = d
		for _, c := range e.PrimaryKey {
			if field(d, c) == nil {
				bad("entity %q: primary key column %q does not exist in %s%s", e.Name, c, d.Name, columnList(d))
			}
		}
	}
	cols := func(what, entity string, names []string) {
		d := found[entity]
		if d == nil {
			return
		}
		for _, c := range names {
			if field(d, c) == nil {
				bad("%s: column %q does not exist in %s (entity %q)%s", what, c, d.Name, entity, columnList(d))
			}
		}
	}
	for i, j := range m.Joins {
		what := fmt.Sprintf("join %d (%s -> %s)", i+1, j.From, j.To)
		cols(what, j.From, j.FromColumns)
		cols(what, j.To, j.ToColumns)
		fd, td := found[j.From], found[j.To]
		if fd == nil || td == nil {
			continue
		}
		for k := range j.FromColumns {
			a, b := field(fd, j.FromColumns[k]), field(td, j.ToColumns[k])
			if a == nil || b == nil {
				continue
			}
			if ca, cb := typeClass(a.Type), typeClass(b.Type); ca != "" && cb != "" && ca != cb {
				bad("%s: %s.%s (%s) and %s.%s (%s) have incompatible types", what, j.From, a.Name, a.Type, j.To, b.Name, b.Type)
			}
		}
	}
	for _, ms := range m.Measures {
		what := fmt.Sprintf("measure %q", ms.Name)
		if ms.expr != nil {
			cols(what, ms.Entity, ms.expr.columns)
			if col, ok := ms.expr.single(); ok && (ms.Agg == AggSum || ms.Agg == AggAvg) && found[ms.Entity] != nil {
				if f := field(found[ms.Entity], col); f != nil && typeClass(f.Type) != "" && typeClass(f.Type) != "number" {
					bad("%s: %s of column %q of type %s: the column is not numeric", what, ms.Agg, col, f.Type)
				}
			}
		}
		if ms.filter != nil {
			cols(what+" filter", ms.Entity, ms.filter.columns)
		}
	}
	for _, d := range m.Dimensions {
		what := fmt.Sprintf("dimension %q", d.Name)
		cols(what, d.Entity, d.expr.columns)
		if col, ok := d.expr.single(); ok && d.Type == DimTime && found[d.Entity] != nil {
			if f := field(found[d.Entity], col); f != nil && typeClass(f.Type) != "" && typeClass(f.Type) != "time" {
				bad("%s: a time dimension needs a date or timestamp column; %q is %s", what, col, f.Type)
			}
		}
	}
	if len(m.Entities) > 1 {
		for _, e := range m.Entities[1:] {
			if _, ok := m.paths[m.Entities[0].Name][e.Name]; !ok {
				bad("entity %q: no chain of joins connects it to entity %q, so their measures and dimensions cannot be combined", e.Name, m.Entities[0].Name)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("semantic: the model does not match the database: %w", errors.Join(errs...))
	}
	for i := range m.Entities {
		m.Entities[i].source = found[m.Entities[i].Name].Source
	}
	return nil
}

// findDataset finds name among ds: by name or source, then
// case-insensitively, then by unqualified name when that is unique.
func findDataset(ds []domain.Dataset, name string) (*domain.Dataset, error) {
	for i := range ds {
		if ds[i].Name == name || ds[i].Source == name {
			return &ds[i], nil
		}
	}
	var matches []*domain.Dataset
	for i := range ds {
		if strings.EqualFold(ds[i].Name, name) || strings.EqualFold(unqualified(ds[i].Source), unqualified(name)) {
			matches = append(matches, &ds[i])
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return nil, fmt.Errorf("dataset %q does not exist in the database: %w", name, domain.ErrNotFound)
	}
	names := make([]string, len(matches))
	for i, d := range matches {
		names[i] = d.Name
	}
	return nil, fmt.Errorf("dataset %q is ambiguous (%s); qualify it with its schema", name, strings.Join(names, ", "))
}

func unqualified(n string) string {
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		return n[i+1:]
	}
	return n
}

func field(d *domain.Dataset, name string) *domain.Field {
	for i := range d.Fields {
		if d.Fields[i].Name == name {
			return &d.Fields[i]
		}
	}
	return nil
}

func columnList(d *domain.Dataset) string {
	n := make([]string, len(d.Fields))
	for i, f := range d.Fields {
		n[i] = f.Name
	}
	return "; its columns: " + strings.Join(n, ", ")
}

// typeClass groups database type names: number, time, text, bool, or ""
// when unknown.
func typeClass(t string) string {
	t = strings.ToLower(t)
	switch {
	case t == "":
		return ""
	case strings.Contains(t, "interval"):
		return ""
	case strings.Contains(t, "int"), strings.Contains(t, "numeric"), strings.Contains(t, "decimal"),
		strings.Contains(t, "real"), strings.Contains(t, "double"), strings.Contains(t, "float"),
		strings.Contains(t, "serial"), strings.Contains(t, "money"):
		return "number"
	case strings.Contains(t, "date"), strings.Contains(t, "time"):
		return "time"
	case strings.Contains(t, "char"), strings.Contains(t, "text"), strings.Contains(t, "clob"), strings.Contains(t, "string"):
		return "text"
	case strings.HasPrefix(t, "bool"):
		return "bool"
	}
	return ""
}
