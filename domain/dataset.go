package domain

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Dataset describes one table or view the agent may query: what the SQL
// adapters' introspection returns, what the catalog stores and searches,
// and what the agent reads (as YAML, see Dataset.YAML) before writing SQL.
type Dataset struct {
	// Name is the identifier the agent uses, usually the schema-qualified
	// source ("public.orders") or a friendlier alias.
	Name string `json:"name"`
	// Source is the physical relation, schema-qualified where the database
	// has schemas ("sales.orders").
	Source string `json:"source"`
	// Kind is "table", "view" or "materialized_view"; empty when unknown.
	Kind        string  `json:"kind,omitempty"`
	Description string  `json:"description,omitempty"`
	Fields      []Field `json:"fields"`
	// Relationships are the join paths from this dataset to others.
	Relationships []Relationship `json:"relationships,omitempty"`
	// RowEstimate is the database's row estimate; -1 or 0 when unknown.
	RowEstimate int64 `json:"row_estimate,omitempty"`
	// Database names the database (or catalog) the dataset lives in, so a
	// catalog pooling several databases keeps same-named tables apart;
	// empty for a single database.
	Database string `json:"database,omitempty"`
	// Schema is the namespace within the database ("public", "sales");
	// empty in databases without schemas.
	Schema string `json:"schema,omitempty"`
	// Synonyms are other words users say for the dataset ("clients" for
	// customers), searched by the catalog.
	Synonyms []string `json:"synonyms,omitempty"`
}

// Field is one column of a Dataset.
type Field struct {
	Name string `json:"name"`
	// Type is the database type as the database spells it ("numeric(12,2)").
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	PrimaryKey  bool   `json:"primary_key,omitempty"`
	Nullable    bool   `json:"nullable,omitempty"`
	// Synonyms are other words users say for the column, searched by the
	// catalog.
	Synonyms []string `json:"synonyms,omitempty"`
	// Values is a bounded sample of the column's distinct values, collected
	// for low-cardinality text columns, so a question that names a value
	// ("customers in Lyon") finds the column that holds it. Never set for
	// a Sensitive column.
	Values []string `json:"values,omitempty"`
	// Sensitive marks a column whose values must not be sampled, indexed
	// or shown to the model.
	Sensitive bool `json:"sensitive,omitempty"`
}

// Relationship is a join path: From.FromColumns = To.ToColumns, column by
// column (a foreign key, or a hint written by the host).
type Relationship struct {
	// From and To are dataset names.
	From        string   `json:"from"`
	FromColumns []string `json:"from_columns"`
	To          string   `json:"to"`
	ToColumns   []string `json:"to_columns"`
	Description string   `json:"description,omitempty"`
	// Cardinality is how many To rows one From row matches, when known:
	// CardinalityOneToOne, CardinalityManyToOne (a foreign key from From),
	// CardinalityOneToMany or CardinalityManyToMany.
	Cardinality string `json:"cardinality,omitempty"`
	// Inferred marks a join found by inference (names, types and a value
	// overlap measured on the database) rather than declared; Confidence
	// (0..1) says how sure the inference is.
	Inferred   bool    `json:"inferred,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
}

// Cardinalities of a Relationship.
const (
	CardinalityOneToOne   = "one_to_one"
	CardinalityOneToMany  = "one_to_many"
	CardinalityManyToOne  = "many_to_one"
	CardinalityManyToMany = "many_to_many"
)

// Validate reports a *ValidationError naming each problem: a name and
// source are required, field names must be present and unique, and every
// relationship needs matching, non-empty column lists.
func (d Dataset) Validate() error {
	var errs []FieldError
	if strings.TrimSpace(d.Name) == "" {
		errs = append(errs, FieldError{Field: "name", Reason: "is required"})
	}
	if strings.TrimSpace(d.Source) == "" {
		errs = append(errs, FieldError{Field: "source", Reason: "is required"})
	}
	seen := make(map[string]bool, len(d.Fields))
	for i, f := range d.Fields {
		switch {
		case strings.TrimSpace(f.Name) == "":
			errs = append(errs, FieldError{Field: fmt.Sprintf("fields[%d].name", i), Reason: "is required"})
		case seen[f.Name]:
			errs = append(errs, FieldError{Field: fmt.Sprintf("fields[%d].name", i), Reason: fmt.Sprintf("duplicate field %q", f.Name)})
		}
		seen[f.Name] = true
	}
	for i, r := range d.Relationships {
		if err := r.validate(); err != "" {
			errs = append(errs, FieldError{Field: fmt.Sprintf("relationships[%d]", i), Reason: err})
		}
	}
	if len(errs) > 0 {
		return &ValidationError{Fields: errs}
	}
	return nil
}

func (r Relationship) validate() string {
	switch {
	case r.From == "" || r.To == "":
		return "from and to are required"
	case len(r.FromColumns) == 0 || len(r.FromColumns) != len(r.ToColumns):
		return fmt.Sprintf("needs as many from_columns as to_columns, at least one (got %d and %d)", len(r.FromColumns), len(r.ToColumns))
	}
	return ""
}

// Field returns the field called name and whether it exists.
func (d Dataset) Field(name string) (Field, bool) {
	for _, f := range d.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// YAML renders the definition the agent reads, deterministically (fields,
// relationships, synonyms and values in their given order). Synonyms and
// sampled values are flow sequences on one line each, and appear only when
// set. Example:
//
//	name: sales.orders
//	source: sales.orders
//	kind: table
//	description: One row per order.
//	synonyms: [purchases, sales]
//	row_estimate: 120000
//	fields:
//	  - name: id
//	    type: bigint
//	    primary_key: true
//	  - name: customer_id
//	    type: bigint
//	    description: Buyer.
//	  - name: status
//	    type: text
//	    values: [cancelled, completed, returned]
//	relationships:
//	  - to: sales.customers
//	    on: customer_id = id
func (d Dataset) YAML() string {
	var b strings.Builder
	line := func(indent, key, value string) {
		b.WriteString(indent)
		b.WriteString(key)
		b.WriteString(": ")
		b.WriteString(yamlScalar(value))
		b.WriteByte('\n')
	}
	line("", "name", d.Name)
	line("", "source", d.Source)
	if d.Kind != "" {
		line("", "kind", d.Kind)
	}
	if d.Description != "" {
		line("", "description", d.Description)
	}
	if len(d.Synonyms) > 0 {
		b.WriteString("synonyms: " + yamlFlow(d.Synonyms) + "\n")
	}
	if d.RowEstimate > 0 {
		b.WriteString("row_estimate: " + strconv.FormatInt(d.RowEstimate, 10) + "\n")
	}
	if len(d.Fields) == 0 {
		b.WriteString("fields: []\n")
	} else {
		b.WriteString("fields:\n")
	}
	for _, f := range d.Fields {
		line("  - ", "name", f.Name)
		line("    ", "type", f.Type)
		if f.Description != "" {
			line("    ", "description", f.Description)
		}
		if len(f.Synonyms) > 0 {
			b.WriteString("    synonyms: " + yamlFlow(f.Synonyms) + "\n")
		}
		if len(f.Values) > 0 {
			b.WriteString("    values: " + yamlFlow(f.Values) + "\n")
		}
		if f.PrimaryKey {
			b.WriteString("    primary_key: true\n")
		}
		if f.Nullable {
			b.WriteString("    nullable: true\n")
		}
	}
	if len(d.Relationships) > 0 {
		b.WriteString("relationships:\n")
	}
	for _, r := range d.Relationships {
		line("  - ", "to", r.To)
		if r.From != "" && r.From != d.Name {
			line("    ", "from", r.From)
		}
		line("    ", "on", r.JoinCondition())
		if r.Description != "" {
			line("    ", "description", r.Description)
		}
	}
	return b.String()
}

// JoinCondition renders the column pairs as "a = x AND b = y", the form the
// YAML definition and join hints use.
func (r Relationship) JoinCondition() string {
	parts := make([]string, 0, len(r.FromColumns))
	for i, c := range r.FromColumns {
		to := ""
		if i < len(r.ToColumns) {
			to = r.ToColumns[i]
		}
		parts = append(parts, c+" = "+to)
	}
	return strings.Join(parts, " AND ")
}

var yamlPlain = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_ .,()/+=<>'-]*$`)

// yamlScalar returns s as a YAML scalar: plain when that reads back as the
// same string, double-quoted (JSON escaping, which YAML accepts) otherwise.
func yamlScalar(s string) string {
	if yamlPlain.MatchString(s) && !strings.HasSuffix(s, " ") && !strings.Contains(s, ": ") && !strings.Contains(s, " #") {
		switch strings.ToLower(s) {
		case "true", "false", "yes", "no", "on", "off", "null", "y", "n":
		default:
			return s
		}
	}
	return strconv.Quote(s)
}

// yamlFlow renders ss as a one-line YAML flow sequence: [a, "b, c"].
// Items are plain when that reads back as the same string inside a flow
// sequence, double-quoted otherwise.
func yamlFlow(ss []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		if q := yamlScalar(s); q == s && !strings.ContainsAny(s, ",[]{}") {
			b.WriteString(s)
		} else {
			b.WriteString(strconv.Quote(s))
		}
	}
	b.WriteByte(']')
	return b.String()
}
