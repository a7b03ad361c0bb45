package sqldb

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults of SampleValues.
const (
	DefaultMaxDistinct   = 50
	DefaultMaxValueLen   = 64
	DefaultSampleRows    = 10000
	DefaultSampleTimeout = 5 * time.Second
)

// SampleValues configures the bounded sample of distinct values the
// adapters' Introspect collects for low-cardinality text columns
// (domain.Field.Values), so that a question naming a value ("customers in
// the North region") finds the column holding it. The zero value samples
// with the defaults.
//
// The cost is bounded: at most one query per table, over at most
// MaxRows rows, within Timeout; columns the database's statistics already
// describe cost nothing (PostgreSQL pg_stats). Values of sensitive columns
// are never read.
type SampleValues struct {
	// Disable turns sampling off: Introspect then reads no table data
	// for values.
	Disable bool
	// MaxDistinct is the most distinct values a column may have to be
	// sampled (default 50): a column with more gets no Values.
	MaxDistinct int
	// MaxValueLen is the longest value kept, in characters (default 64);
	// longer values are left out (a cut value would not match the
	// database's).
	MaxValueLen int
	// MaxRows bounds the rows read per table (default 10,000): the
	// values are those of a bounded sample, not of the whole table.
	MaxRows int
	// Timeout bounds the sampling query of one table (default 5 s); a
	// table whose query times out gets no Values, and Introspect goes on.
	Timeout time.Duration
	// SensitiveColumns are columns whose values must never be read, as
	// "table.column" (the dataset name as Introspect returns it, then the
	// column: "public.customers.email" in PostgreSQL, "customers.email"
	// in SQLite) or a bare column name matching that column in every
	// table ("email"). Matching ignores case. Such fields get
	// Sensitive = true and no Values.
	SensitiveColumns []string
	// Sensitive, when set, is asked for every column (dataset name as
	// Introspect returns it, column name); true marks it like
	// SensitiveColumns.
	Sensitive func(dataset, column string) bool
}

// WithDefaults returns s with zero fields replaced by the defaults.
func (s SampleValues) WithDefaults() SampleValues {
	if s.MaxDistinct <= 0 {
		s.MaxDistinct = DefaultMaxDistinct
	}
	if s.MaxValueLen <= 0 {
		s.MaxValueLen = DefaultMaxValueLen
	}
	if s.MaxRows <= 0 {
		s.MaxRows = DefaultSampleRows
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultSampleTimeout
	}
	return s
}

// IsSensitive reports whether the host marked column of dataset sensitive
// (SensitiveColumns or the Sensitive function).
func (s SampleValues) IsSensitive(dataset, column string) bool {
	full := strings.ToLower(dataset + "." + column)
	for _, c := range s.SensitiveColumns {
		c = strings.ToLower(strings.TrimSpace(c))
		if c == full || c == strings.ToLower(column) {
			return true
		}
	}
	return s.Sensitive != nil && s.Sensitive(dataset, column)
}

// KeepValues turns the distinct values a sampling query returned (at most
// MaxDistinct+1 of them) into Field.Values: nil when there are more than
// MaxDistinct (the column is not low-cardinality) or none, otherwise the
// values no longer than MaxValueLen characters, sorted byte-wise so the
// result is deterministic whatever the database's collation. rows is how
// many rows the values came from and whole whether those were the whole
// table (or the database's complete statistics): from part of a table, a
// column with more than one distinct value per two rows read looks like a
// key or free text, whose few sampled values say nothing of the others, and
// gets none. s must have its defaults applied.
func (s SampleValues) KeepValues(vals []string, rows int, whole bool) []string {
	if len(vals) == 0 || len(vals) > s.MaxDistinct || (!whole && 2*len(vals) > rows) {
		return nil
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if utf8.RuneCountInString(v) > s.MaxValueLen || strings.TrimSpace(v) == "" {
			continue
		}
		out = append(out, v)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil
	}
	return out
}
