package sqldb

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSampleValuesDefaultsAndSensitivity(t *testing.T) {
	t.Parallel()
	d := SampleValues{}.WithDefaults()
	if d.MaxDistinct != DefaultMaxDistinct || d.MaxValueLen != DefaultMaxValueLen || d.MaxRows != DefaultSampleRows || d.Timeout != DefaultSampleTimeout {
		t.Errorf("defaults %+v", d)
	}
	if s := (SampleValues{MaxDistinct: 3, Timeout: time.Second}).WithDefaults(); s.MaxDistinct != 3 || s.Timeout != time.Second {
		t.Errorf("set fields replaced: %+v", s)
	}
	sv := SampleValues{
		SensitiveColumns: []string{"public.customers.Email", " phone "},
		Sensitive:        func(dataset, column string) bool { return strings.HasSuffix(column, "_secret") },
	}
	for _, tc := range []struct {
		dataset, column string
		want            bool
	}{
		{"public.customers", "email", true},     // qualified, case-insensitive
		{"public.suppliers", "email", false},    // another table's email
		{"public.suppliers", "PHONE", true},     // bare name: every table
		{"public.orders", "api_secret", true},   // the function
		{"public.orders", "status", false},      // nothing marks it
		{"customers", "email", false},           // not the same dataset name
		{"public.customers", "email_ok", false}, // no prefix matching
	} {
		if got := sv.IsSensitive(tc.dataset, tc.column); got != tc.want {
			t.Errorf("IsSensitive(%s, %s) = %v, want %v", tc.dataset, tc.column, got, tc.want)
		}
	}
}

func TestKeepValues(t *testing.T) {
	t.Parallel()
	sv := SampleValues{MaxDistinct: 3, MaxValueLen: 5}.WithDefaults()
	for _, tc := range []struct {
		name string
		in   []string
		rows int
		part bool
		want []string
	}{
		{"sorted byte-wise", []string{"b", "B", "a"}, 10, false, []string{"B", "a", "b"}},
		{"over the cap: none", []string{"a", "b", "c", "d"}, 10, false, nil},
		{"long values left out", []string{"short", "longer", "Müllr"}, 10, false, []string{"Müllr", "short"}},
		{"blank values left out", []string{" ", "", "x"}, 10, false, []string{"x"}},
		{"only long values: none", []string{"toolong"}, 10, false, nil},
		{"empty", nil, 0, false, nil},
		{"duplicates merged", []string{"x", "x"}, 10, false, []string{"x"}},
		{"part of a table, repetitive", []string{"a", "b"}, 4, true, []string{"a", "b"}},
		{"part of a table, key-like", []string{"a", "b", "c"}, 4, true, nil},
		{"a whole table, key-like", []string{"a", "b", "c"}, 3, false, []string{"a", "b", "c"}},
	} {
		if got := sv.KeepValues(tc.in, tc.rows, !tc.part); !slices.Equal(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("%s: KeepValues(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}
