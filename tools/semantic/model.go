package semantic

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/bichat-go/bichat/domain"
)

// Aggregations a Measure may use.
const (
	AggSum           = "sum"
	AggCount         = "count"
	AggCountDistinct = "count_distinct"
	AggAvg           = "avg"
	AggMin           = "min"
	AggMax           = "max"
)

// Dimension types.
const (
	DimCategorical = "categorical"
	DimTime        = "time"
)

// Time grains of a time dimension, finest first.
const (
	GrainDay     = "day"
	GrainWeek    = "week"
	GrainMonth   = "month"
	GrainQuarter = "quarter"
	GrainYear    = "year"
)

// AllGrains lists the time grains, finest first; a time dimension without
// a grains list accepts all of them.
var AllGrains = []string{GrainDay, GrainWeek, GrainMonth, GrainQuarter, GrainYear}

var aggregations = []string{AggSum, AggCount, AggCountDistinct, AggAvg, AggMin, AggMax}

// Model is a semantic layer: entities (datasets) joined with known
// cardinalities, measures aggregated over one entity's rows, dimensions
// to group and filter by, and the metrics the model may ask for. Build it
// with Load, check it against the database with Validate, turn a Query
// into SQL with SQL and run it with the query_metrics tool (NewTool). A
// Model is immutable after Validate and safe for concurrent use.
type Model struct {
	// Entities are the datasets the model reads.
	Entities []Entity `yaml:"entities"`
	// Joins connect entities, each with its cardinality.
	Joins []Join `yaml:"joins"`
	// Measures are the aggregations metrics are made of.
	Measures []Measure `yaml:"measures"`
	// Dimensions are what results are grouped and filtered by.
	Dimensions []Dimension `yaml:"dimensions"`
	// Metrics are what query_metrics offers the model.
	Metrics []Metric `yaml:"metrics"`

	entities   map[string]*Entity
	measures   map[string]*Measure
	dimensions map[string]*Dimension
	metrics    map[string]*Metric
	paths      map[string]map[string][]edge // from entity, to entity: the joins
}

// Entity is one dataset of the model, with its primary key.
type Entity struct {
	// Name is how measures, dimensions and joins refer to the entity
	// (lower case letters, digits and underscores).
	Name string `yaml:"name"`
	// Dataset is the relation: "orders" or schema-qualified
	// "sales.orders"; default Name. Validate resolves it to the relation
	// the database reports.
	Dataset string `yaml:"dataset"`
	// Description says what a row is (for the host's documentation).
	Description string `yaml:"description"`
	// PrimaryKey are the columns that identify a row (required).
	PrimaryKey []string `yaml:"primary_key"`

	source string // resolved by Validate
}

// Join connects two entities: From.FromColumns = To.ToColumns column by
// column, with the cardinality seen from From (many_to_one: many From rows
// match one To row, as a foreign key from From to To). The reverse
// direction is derived.
type Join struct {
	// From and To are entity names.
	From string `yaml:"from"`
	To   string `yaml:"to"`
	// FromColumns are From's columns, matched with ToColumns in order.
	FromColumns []string `yaml:"from_columns"`
	// ToColumns default to To's primary key.
	ToColumns []string `yaml:"to_columns"`
	// Cardinality is domain.CardinalityOneToOne, CardinalityManyToOne or
	// CardinalityOneToMany (many-to-many needs a bridge entity).
	Cardinality string `yaml:"cardinality"`
}

// Measure is an aggregation over the rows of one entity.
type Measure struct {
	// Name is how metrics refer to the measure.
	Name string `yaml:"name"`
	// Description is shown for metrics without a description of their own.
	Description string `yaml:"description"`
	// Entity is the entity whose rows are aggregated.
	Entity string `yaml:"entity"`
	// Expr is an SQL expression over the entity's columns, named bare
	// ("quantity * unit_price"); see the package documentation for the
	// expression rules. Optional for count (count of rows).
	Expr string `yaml:"expr"`
	// Agg is sum, count, count_distinct, avg, min or max.
	Agg string `yaml:"agg"`
	// Filter is an optional SQL condition over the entity's columns
	// ("status = 'completed'"); only matching rows are aggregated.
	Filter string `yaml:"filter"`

	expr, filter *expr
}

// Dimension is something to group or filter by: a column or expression of
// one entity. A time dimension is grouped by a grain (day, week, month,
// quarter, year).
type Dimension struct {
	// Name is how queries refer to the dimension and the result column's
	// name (with "__grain" for a time dimension).
	Name string `yaml:"name"`
	// Description is shown to the model by Describe.
	Description string `yaml:"description"`
	// Entity is the entity the column or expression belongs to.
	Entity string `yaml:"entity"`
	// Column or Expr (exactly one) gives the value.
	Column string `yaml:"column"`
	Expr   string `yaml:"expr"`
	// Type is categorical (default) or time.
	Type string `yaml:"type"`
	// Grains a time dimension offers; default all of AllGrains.
	Grains []string `yaml:"grains"`

	expr *expr
}

// Metric is what the model asks for: one measure, or the ratio of two.
type Metric struct {
	// Name is how the model asks for the metric and the result column's
	// name.
	Name string `yaml:"name"`
	// Description is shown to the model by Describe (default: the
	// measure's).
	Description string `yaml:"description"`
	// Measure names the measure of a simple metric.
	Measure string `yaml:"measure"`
	// Numerator and Denominator name the measures of a ratio metric
	// (instead of Measure); the value is numerator / denominator, NULL
	// when the denominator is 0.
	Numerator   string `yaml:"numerator"`
	Denominator string `yaml:"denominator"`
}

// IsRatio reports whether the metric is a ratio of two measures.
func (m *Metric) IsRatio() bool { return m.Measure == "" }

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Load parses and checks a YAML model (see the package documentation for
// the format). Unknown keys, duplicate or malformed names, references to
// undefined entities or measures, unknown aggregations, grains and
// cardinalities are errors naming the offending item. Load does not look
// at a database: call Validate for that.
func Load(data []byte) (*Model, error) {
	m := &Model{}
	if err := yaml.Load(data, m, yaml.WithKnownFields()); err != nil {
		return nil, fmt.Errorf("semantic: load: %w", err)
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}

func checkName(what, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%s name %q must be 1-63 lower-case letters, digits and underscores starting with a letter", what, name)
	}
	if strings.Contains(name, "__") {
		return fmt.Errorf("%s name %q may not contain a double underscore (it separates a time dimension from its grain)", what, name)
	}
	return nil
}

// check builds the indexes and checks the model without a database.
func (m *Model) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	m.entities = map[string]*Entity{}
	m.measures = map[string]*Measure{}
	m.dimensions = map[string]*Dimension{}
	m.metrics = map[string]*Metric{}
	if len(m.Entities) == 0 {
		bad("the model has no entities")
	}
	for i := range m.Entities {
		e := &m.Entities[i]
		if err := checkName("entity", e.Name); err != nil {
			bad("entity %d: %w", i+1, err)
			continue
		}
		if m.entities[e.Name] != nil {
			bad("entity %q is defined twice", e.Name)
		}
		m.entities[e.Name] = e
		if e.Dataset == "" {
			e.Dataset = e.Name
		}
		if len(e.PrimaryKey) == 0 {
			bad("entity %q: primary_key is required", e.Name)
		}
		for _, c := range e.PrimaryKey {
			if strings.TrimSpace(c) == "" {
				bad("entity %q: primary_key holds an empty column name", e.Name)
			}
		}
	}
	for i := range m.Joins {
		j := &m.Joins[i]
		label := fmt.Sprintf("join %d (%s -> %s)", i+1, j.From, j.To)
		from, to := m.entities[j.From], m.entities[j.To]
		if from == nil {
			bad("%s: unknown entity %q", label, j.From)
		}
		if to == nil {
			bad("%s: unknown entity %q", label, j.To)
		}
		if j.From == j.To && from != nil {
			bad("%s: an entity cannot join itself", label)
		}
		switch j.Cardinality {
		case domain.CardinalityOneToOne, domain.CardinalityManyToOne, domain.CardinalityOneToMany:
		case domain.CardinalityManyToMany:
			bad("%s: many_to_many cannot be joined without fan-out; model the bridge table as an entity with two many_to_one joins", label)
		default:
			bad("%s: cardinality %q must be one_to_one, many_to_one or one_to_many", label, j.Cardinality)
		}
		if len(j.ToColumns) == 0 && to != nil {
			j.ToColumns = slices.Clone(to.PrimaryKey)
		}
		if len(j.FromColumns) == 0 {
			bad("%s: from_columns is required", label)
		} else if len(j.FromColumns) != len(j.ToColumns) {
			bad("%s: %d from_columns but %d to_columns", label, len(j.FromColumns), len(j.ToColumns))
		}
		for k := range i {
			o := m.Joins[k]
			if (o.From == j.From && o.To == j.To) || (o.From == j.To && o.To == j.From) {
				bad("%s: entities %q and %q are already joined by join %d", label, j.From, j.To, k+1)
			}
		}
	}
	for i := range m.Measures {
		ms := &m.Measures[i]
		if err := checkName("measure", ms.Name); err != nil {
			bad("measure %d: %w", i+1, err)
			continue
		}
		if m.measures[ms.Name] != nil {
			bad("measure %q is defined twice", ms.Name)
		}
		m.measures[ms.Name] = ms
		if m.entities[ms.Entity] == nil {
			bad("measure %q: unknown entity %q", ms.Name, ms.Entity)
		}
		if !slices.Contains(aggregations, ms.Agg) {
			bad("measure %q: agg %q must be one of %s", ms.Name, ms.Agg, strings.Join(aggregations, ", "))
		}
		if strings.TrimSpace(ms.Expr) == "" && ms.Agg != AggCount {
			bad("measure %q: expr is required for agg %s", ms.Name, ms.Agg)
		}
		if strings.TrimSpace(ms.Expr) != "" {
			x, err := parseExpr(ms.Expr)
			if err != nil {
				bad("measure %q: expr: %w", ms.Name, err)
			}
			ms.expr = x
		}
		if strings.TrimSpace(ms.Filter) != "" {
			x, err := parseExpr(ms.Filter)
			if err != nil {
				bad("measure %q: filter: %w", ms.Name, err)
			}
			ms.filter = x
		}
	}
	for i := range m.Dimensions {
		d := &m.Dimensions[i]
		if err := checkName("dimension", d.Name); err != nil {
			bad("dimension %d: %w", i+1, err)
			continue
		}
		if m.dimensions[d.Name] != nil {
			bad("dimension %q is defined twice", d.Name)
		}
		m.dimensions[d.Name] = d
		if m.entities[d.Entity] == nil {
			bad("dimension %q: unknown entity %q", d.Name, d.Entity)
		}
		if d.Type == "" {
			d.Type = DimCategorical
		}
		switch d.Type {
		case DimCategorical:
			if len(d.Grains) > 0 {
				bad("dimension %q: grains are only for time dimensions", d.Name)
			}
		case DimTime:
			if len(d.Grains) == 0 {
				d.Grains = slices.Clone(AllGrains)
			}
			for _, g := range d.Grains {
				if !slices.Contains(AllGrains, g) {
					bad("dimension %q: grain %q must be one of %s", d.Name, g, strings.Join(AllGrains, ", "))
				}
			}
		default:
			bad("dimension %q: type %q must be categorical or time", d.Name, d.Type)
		}
		src := d.Expr
		switch {
		case d.Column != "" && d.Expr != "":
			bad("dimension %q: give column or expr, not both", d.Name)
		case d.Column != "":
			src = sqlQuoteIdent(d.Column)
		case d.Expr == "":
			bad("dimension %q: column or expr is required", d.Name)
			continue
		}
		x, err := parseExpr(src)
		if err != nil {
			bad("dimension %q: %w", d.Name, err)
		}
		d.expr = x
	}
	for i := range m.Metrics {
		mt := &m.Metrics[i]
		if err := checkName("metric", mt.Name); err != nil {
			bad("metric %d: %w", i+1, err)
			continue
		}
		if m.metrics[mt.Name] != nil {
			bad("metric %q is defined twice", mt.Name)
		}
		if m.dimensions[mt.Name] != nil {
			bad("metric %q has the name of a dimension; result columns would clash", mt.Name)
		}
		m.metrics[mt.Name] = mt
		refs := []string{mt.Measure}
		switch {
		case mt.Measure != "" && (mt.Numerator != "" || mt.Denominator != ""):
			bad("metric %q: give measure, or numerator and denominator, not both", mt.Name)
			continue
		case mt.Measure == "":
			if mt.Numerator == "" || mt.Denominator == "" {
				bad("metric %q: give measure, or numerator and denominator", mt.Name)
				continue
			}
			refs = []string{mt.Numerator, mt.Denominator}
		}
		for _, r := range refs {
			if m.measures[r] == nil {
				bad("metric %q: unknown measure %q", mt.Name, r)
			}
		}
	}
	if len(m.Metrics) == 0 {
		bad("the model defines no metrics")
	}
	if len(errs) > 0 {
		return fmt.Errorf("semantic: invalid model: %w", errors.Join(errs...))
	}
	g := m.graph()
	m.paths = make(map[string]map[string][]edge, len(m.Entities))
	for _, e := range m.Entities {
		m.paths[e.Name] = g.paths(e.Name)
	}
	return nil
}

// Relationships returns the model's joins as domain relationships (both
// directions, From and To being the entities' datasets as written), for
// the catalog's join hints and fan-out checks.
func (m *Model) Relationships() []domain.Relationship {
	out := make([]domain.Relationship, 0, 2*len(m.Joins))
	for _, j := range m.Joins {
		from, to := m.entities[j.From], m.entities[j.To]
		out = append(out,
			domain.Relationship{From: from.Dataset, FromColumns: slices.Clone(j.FromColumns), To: to.Dataset, ToColumns: slices.Clone(j.ToColumns), Cardinality: j.Cardinality},
			domain.Relationship{From: to.Dataset, FromColumns: slices.Clone(j.ToColumns), To: from.Dataset, ToColumns: slices.Clone(j.FromColumns), Cardinality: reverse(j.Cardinality)},
		)
	}
	return out
}

func reverse(card string) string {
	switch card {
	case domain.CardinalityManyToOne:
		return domain.CardinalityOneToMany
	case domain.CardinalityOneToMany:
		return domain.CardinalityManyToOne
	}
	return card
}

// Describe renders the metrics and dimensions as a compact text block for
// the model's context: one line each, in definition order, so the same
// model always renders the same bytes.
func (m *Model) Describe() string {
	var b strings.Builder
	b.WriteString("Semantic layer: ask query_metrics for these metrics, grouped and filtered by these dimensions; it writes the joins so nothing double counts.\nMetrics:\n")
	for _, mt := range m.Metrics {
		b.WriteString("- " + mt.Name)
		if mt.IsRatio() {
			b.WriteString(" (ratio " + mt.Numerator + " / " + mt.Denominator + ")")
		} else {
			ms := m.measures[mt.Measure]
			b.WriteString(" (" + ms.Agg + " of " + ms.Entity + ")")
		}
		if d := firstNonEmpty(mt.Description, m.measureDescription(mt)); d != "" {
			b.WriteString(": " + oneLine(d))
		}
		b.WriteByte('\n')
	}
	b.WriteString("Dimensions:\n")
	for _, d := range m.Dimensions {
		b.WriteString("- " + d.Name + " (" + d.Type)
		if d.Type == DimTime {
			b.WriteString("; grains " + strings.Join(d.Grains, ", ") + "; ask as " + d.Name + "__" + d.Grains[0])
		}
		b.WriteString(")")
		if d.Description != "" {
			b.WriteString(": " + oneLine(d.Description))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (m *Model) measureDescription(mt Metric) string {
	if mt.IsRatio() {
		return ""
	}
	return m.measures[mt.Measure].Description
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
