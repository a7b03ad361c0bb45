package tools_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/tools"
)

// storeSession creates a session in store and returns a tool-call
// context for it.
func storeSession(t *testing.T, store *memory.Store, tenant string) context.Context {
	t.Helper()
	sess := &domain.Session{ID: domain.NewID(), TenantID: tenant, OwnerID: "alice", Title: "Chat"}
	if err := store.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	return agents.WithCallInfo(t.Context(), agents.CallInfo{TenantID: tenant, SessionID: sess.ID, UserID: "alice"})
}

// sameCell reports whether a cell came back as it went in: same type and
// value, NaN equal to NaN, and times the same instant with the same
// offset.
func sameCell(got, want any) bool {
	switch w := want.(type) {
	case float64:
		g, ok := got.(float64)
		if math.IsNaN(w) {
			return ok && math.IsNaN(g)
		}
		return ok && g == w && math.Signbit(g) == math.Signbit(w)
	case time.Time:
		g, ok := got.(time.Time)
		if !ok || !g.Equal(w) {
			return false
		}
		_, gOff := g.Zone()
		_, wOff := w.Zone()
		if gOff != wOff {
			return false
		}
		if w.Location() == time.UTC {
			return reflect.DeepEqual(g, w)
		}
		return true
	}
	return reflect.DeepEqual(got, want)
}

// TestStoreResultsRoundTripsCells stores a table holding every cell type
// the SQL tools produce, edge values included, and checks each cell comes
// back with its type and value.
func TestStoreResultsRoundTripsCells(t *testing.T) {
	t.Parallel()
	store := memory.New()
	ctx := storeSession(t, store, "acme")
	res := tools.StoreResults(store)

	kolkata := time.FixedZone("IST", 5*3600+1800)
	in := tools.Table{
		Columns: []tools.Column{
			{Name: "i", Type: "int8"}, {Name: "f", Type: "float8"}, {Name: "s", Type: "text"},
			{Name: "b", Type: "bool"}, {Name: "t", Type: "timestamptz"}, {Name: "raw", Type: "bytea"},
			{Name: "mixed"}, {Name: "nulls"},
		},
		Rows: [][]any{
			{int64(0), 0.1, "caf\u00e9 \u2603", true, time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC), []byte{0, 0xff, 'a'}, int64(7), nil},
			{int64(math.MaxInt64), 1e21, "", false, time.Date(2025, 6, 30, 23, 59, 59, 0, kolkata), []byte{}, "seven", nil},
			{int64(math.MinInt64), math.NaN(), "123", nil, time.Time{}, nil, 7.5, nil},
			{int64(-1), math.Inf(1), "2025-01-02T03:04:05Z", true, nil, []byte("\"quoted\""), time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), nil},
			{nil, math.Inf(-1), "null", false, time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), []byte("x"), []byte{1, 2}, nil},
			{int64(1) << 53, math.Copysign(0, -1), "NaN", true, time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), []byte{0xfe}, true, nil},
			{int64(3), 9007199254740993.0, "\x00\n\t", false, time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC), []byte{}, nil, nil},
			{int64(4), 5e-324, "-Inf", true, time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC), []byte{}, math.NaN(), nil},
		},
		Truncated: true,
		SQL:       "select * from sales",
		Datasets:  []string{"sales", "regions"},
	}
	name, err := res.Put(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if name != "result_1" {
		t.Errorf("Put returned %q, want result_1", name)
	}
	got, err := res.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != name || !reflect.DeepEqual(got.Columns, in.Columns) || got.Truncated != in.Truncated ||
		got.SQL != in.SQL || !reflect.DeepEqual(got.Datasets, in.Datasets) {
		t.Errorf("table fields: got %q %+v %t %q %v, want %q %+v %t %q %v",
			got.Name, got.Columns, got.Truncated, got.SQL, got.Datasets, name, in.Columns, in.Truncated, in.SQL, in.Datasets)
	}
	if len(got.Rows) != len(in.Rows) {
		t.Fatalf("%d rows came back, want %d", len(got.Rows), len(in.Rows))
	}
	for r := range in.Rows {
		if len(got.Rows[r]) != len(in.Rows[r]) {
			t.Fatalf("row %d has %d cells, want %d", r, len(got.Rows[r]), len(in.Rows[r]))
		}
		for c, want := range in.Rows[r] {
			if g := got.Rows[r][c]; !sameCell(g, want) {
				t.Errorf("row %d column %s: got %#v (%T), want %#v (%T)", r, in.Columns[c].Name, g, g, want, want)
			}
		}
	}
	// The non-UTC time keeps its offset; the zone's name is not kept.
	if tt := got.Rows[1][4].(time.Time); tt.Format(time.RFC3339Nano) != "2025-06-30T23:59:59+05:30" {
		t.Errorf("time in IST came back as %s", tt.Format(time.RFC3339Nano))
	}
}

// TestStoreResultsNormalizesOtherTypes checks the documented conversions
// of cells outside the Table convention.
func TestStoreResultsNormalizesOtherTypes(t *testing.T) {
	t.Parallel()
	store := memory.New()
	ctx := storeSession(t, store, "acme")
	res := tools.StoreResults(store)
	type point struct{ X, Y int }
	in := tools.Table{
		Columns: []tools.Column{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"}},
		Rows: [][]any{
			{int(1), int32(-2), uint8(3), float32(0.5), point{1, 2}},
			{uint64(math.MaxUint64), int16(4), uint32(5), float32(-1.25), nil},
		},
	}
	want := [][]any{
		{int64(1), int64(-2), int64(3), 0.5, "{1 2}"},
		{float64(math.MaxUint64), int64(4), int64(5), -1.25, nil},
	}
	if _, err := res.Put(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := res.Get(ctx, "result_1")
	if err != nil {
		t.Fatal(err)
	}
	// Column a mixes int64 and float64 after normalization.
	if !reflect.DeepEqual(got.Rows, want) {
		t.Errorf("rows: got %#v, want %#v", got.Rows, want)
	}
}

// TestStoreResultsPersistAcrossValues checks that results written through
// one StoreResults are read through another over the same repository (a
// resumed run, another process), per session and per tenant.
func TestStoreResultsPersistAcrossValues(t *testing.T) {
	t.Parallel()
	store := memory.NewWithOptions(memory.Options{ResultsPerSession: 2})
	ctx := storeSession(t, store, "acme")
	writer, reader := tools.StoreResults(store), tools.StoreResults(store)
	for i := range 3 {
		name, err := writer.Put(ctx, tools.Table{Columns: []tools.Column{{Name: "i"}}, Rows: [][]any{{int64(i)}}})
		if err != nil {
			t.Fatal(err)
		}
		if want := "result_" + string(rune('1'+i)); name != want {
			t.Errorf("Put %d returned %q, want %q", i, name, want)
		}
	}
	named, err := writer.Put(ctx, tools.Table{Name: "q3", Columns: []tools.Column{{Name: "i"}}, Rows: [][]any{{int64(9)}}})
	if err != nil || named != "q3" {
		t.Fatalf("Put named q3: %q, %v", named, err)
	}
	names, err := reader.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "result_3,q3" {
		t.Errorf("List through another value: %v, want [result_3 q3]", names)
	}
	got, err := reader.Get(ctx, "result_3")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Rows, [][]any{{int64(2)}}) || got.Name != "result_3" {
		t.Errorf("Get result_3: %+v", got)
	}

	_, err = reader.Get(ctx, "result_1")
	if !errors.Is(err, domain.ErrNotFound) || !strings.Contains(err.Error(), "available: [result_3 q3]") {
		t.Errorf("Get of an evicted result: %v, want ErrNotFound listing result_3 and q3", err)
	}

	// Another session of the tenant, and the same session id in another
	// tenant, see none of it.
	other := storeSession(t, store, "acme")
	info, _ := agents.CallInfoFromContext(ctx)
	foreign := agents.WithCallInfo(t.Context(), agents.CallInfo{TenantID: "globex", SessionID: info.SessionID})
	for what, c := range map[string]context.Context{"another session": other, "another tenant": foreign} {
		_, err := reader.Get(c, "result_3")
		if !errors.Is(err, domain.ErrNotFound) || !strings.Contains(err.Error(), "no results yet") {
			t.Errorf("Get from %s: %v, want ErrNotFound saying there are no results yet", what, err)
		}
		names, err := reader.List(c)
		if err != nil || len(names) != 0 {
			t.Errorf("List from %s: %v, %v; want none", what, names, err)
		}
	}
	if _, err := reader.Put(foreign, tools.Table{}); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Put into another tenant's session: %v, want ErrNotFound", err)
	}

	// Deleting the session deletes its results.
	if err := store.DeleteSession(t.Context(), "acme", info.SessionID); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Get(ctx, "q3"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Get after DeleteSession: %v, want ErrNotFound", err)
	}
}

func TestStoreResultsErrors(t *testing.T) {
	t.Parallel()
	store := memory.NewWithOptions(memory.Options{MaxResultBytes: 200})
	ctx := storeSession(t, store, "acme")
	res := tools.StoreResults(store)

	big := tools.Table{Columns: []tools.Column{{Name: "s"}}, Rows: [][]any{{strings.Repeat("x", 300)}}}
	_, err := res.Put(ctx, big)
	if !errors.Is(err, domain.ErrTooLarge) || !strings.Contains(err.Error(), "fetch fewer rows") {
		t.Errorf("Put of a table over the cap: %v, want ErrTooLarge with advice", err)
	}
	if _, err := res.Put(ctx, tools.Table{Name: "bad name"}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("Put with a bad name: %v, want ErrInvalid", err)
	}
	if names, err := res.List(ctx); err != nil || len(names) != 0 {
		t.Errorf("List after rejected puts: %v, %v; want none", names, err)
	}
	for what, c := range map[string]context.Context{
		"no call info": t.Context(),
		"no session":   agents.WithCallInfo(t.Context(), agents.CallInfo{TenantID: "acme"}),
	} {
		if _, err := res.Put(c, tools.Table{}); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Put with %s: %v, want ErrInvalid", what, err)
		}
		if _, err := res.Get(c, "result_1"); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Get with %s: %v, want ErrInvalid", what, err)
		}
		if _, err := res.List(c); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("List with %s: %v, want ErrInvalid", what, err)
		}
	}

	// A stored result that is not a table is reported, not misread.
	info, _ := agents.CallInfoFromContext(ctx)
	for _, data := range []string{`[1,2]`, `{"format":99,"columns":[],"kinds":[],"rows":[]}`, `{"format":1,"columns":[{"name":"i"}],"kinds":["int"],"rows":[["x"]]}`} {
		if _, err := store.PutResult(t.Context(), &domain.StoredResult{TenantID: "acme", SessionID: info.SessionID, Name: "odd", Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
		if _, err := res.Get(ctx, "odd"); err == nil || errors.Is(err, domain.ErrNotFound) {
			t.Errorf("Get of stored data %s: %v, want a decoding error", data, err)
		}
	}
}
