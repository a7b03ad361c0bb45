package domaintest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// RunDataSourceTests runs the conformance suite of
// domain.DataSourceRepository against the repositories newRepo returns.
// Like RunRepositoryTests, every subtest calls newRepo once and runs in
// parallel with the others, so newRepo must return a repository over an
// empty store of its own (for a database: a fresh schema, dropped with
// t.Cleanup); ScanDataSources sees every tenant of that store.
//
//	func TestDataSources(t *testing.T) {
//		domaintest.RunDataSourceTests(t, func(t *testing.T) domain.DataSourceRepository {
//			return memory.NewDataSources()
//		})
//	}
//
// The suite requires what the interface documents and these choices:
// ids are scoped by tenant (another tenant may use the same id), names
// are unique per tenant and compared as bytes, times round-trip at
// microsecond precision, and SwapSealedConfig leaves UpdatedAt alone.
func RunDataSourceTests(t *testing.T, newRepo func(t *testing.T) domain.DataSourceRepository) {
	t.Helper()
	if newRepo == nil {
		t.Fatal("domaintest: newRepo is nil")
	}
	cases := []struct {
		name string
		fn   func(t *testing.T, ctx context.Context, r domain.DataSourceRepository)
	}{
		{"CreateGetRoundTrip", dsRoundTrip},
		{"CreateDefaultsTimes", dsDefaults},
		{"CreateInvalid", dsCreateInvalid},
		{"CreateConflicts", dsCreateConflicts},
		{"GetMissing", dsGetMissing},
		{"TenantIsolation", dsIsolation},
		{"ListOrderAndScope", dsList},
		{"Update", dsUpdate},
		{"UpdateConflictsAndMissing", dsUpdateErrors},
		{"Delete", dsDelete},
		{"ScanPagesAllTenants", dsScan},
		{"ScanInvalidLimit", dsScanInvalid},
		{"SwapSealedConfig", dsSwap},
		{"SwapStaleAndMissing", dsSwapErrors},
		{"SwapRacesUpdate", dsSwapRace},
		{"ValuesAreCopies", dsCopies},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t)
			if r == nil {
				t.Fatal("domaintest: newRepo returned nil")
			}
			c.fn(t, t.Context(), r)
		})
	}
}

// newDataSource returns an unsaved data source with every field set.
func newDataSource(tenant, name string, created time.Time) *domain.DataSource {
	id := domain.NewID()
	return &domain.DataSource{
		ID:           id,
		TenantID:     tenant,
		Name:         name,
		Dialect:      domain.DataSourcePostgres,
		SealedConfig: "v1.k1.sealed-" + id,
		KeyID:        "k1",
		CreatedAt:    created,
		UpdatedAt:    created.Add(time.Second),
	}
}

func createDS(t *testing.T, ctx context.Context, r domain.DataSourceRepository, tenant, name string, created time.Time) domain.DataSource {
	t.Helper()
	ds := newDataSource(tenant, name, created)
	in := *ds
	must(t, "CreateDataSource "+name, r.CreateDataSource(ctx, &in))
	return *ds
}

// sameDS compares every field, times as instants.
func sameDS(t *testing.T, what string, got, want domain.DataSource) {
	t.Helper()
	g, w := got, want
	g.CreatedAt, g.UpdatedAt = g.CreatedAt.UTC(), g.UpdatedAt.UTC()
	w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC(), w.UpdatedAt.UTC()
	if g != w {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

func getDS(t *testing.T, ctx context.Context, r domain.DataSourceRepository, tenant, id string) domain.DataSource {
	t.Helper()
	got, err := r.GetDataSource(ctx, tenant, id)
	must(t, "GetDataSource", err)
	return *got
}

func dsRoundTrip(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	want := createDS(t, ctx, r, tenantA, "warehouse", at(0))
	sameDS(t, "GetDataSource after CreateDataSource", getDS(t, ctx, r, tenantA, want.ID), want)

	lite := newDataSource(tenantA, "local", at(time.Minute))
	lite.Dialect = domain.DataSourceSQLite
	in := *lite
	must(t, "CreateDataSource sqlite", r.CreateDataSource(ctx, &in))
	sameDS(t, "GetDataSource sqlite", getDS(t, ctx, r, tenantA, lite.ID), *lite)
}

func dsDefaults(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	before := time.Now().Add(-time.Second)
	ds := newDataSource(tenantA, "defaults", time.Time{})
	ds.UpdatedAt = time.Time{}
	must(t, "CreateDataSource", r.CreateDataSource(ctx, ds))
	if ds.CreatedAt.Before(before) || ds.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("CreatedAt written back = %v, want about now", ds.CreatedAt)
	}
	if !ds.UpdatedAt.Equal(ds.CreatedAt) {
		t.Errorf("UpdatedAt written back = %v, want CreatedAt %v", ds.UpdatedAt, ds.CreatedAt)
	}
	got := getDS(t, ctx, r, tenantA, ds.ID)
	if got.CreatedAt.Sub(ds.CreatedAt).Abs() > time.Millisecond || !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Errorf("stored times = %v / %v, want the written-back %v for both", got.CreatedAt, got.UpdatedAt, ds.CreatedAt)
	}
}

func dsCreateInvalid(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	cases := []struct {
		name  string
		field string
		edit  func(ds *domain.DataSource)
	}{
		{"id not a UUID", "data_source.id", func(ds *domain.DataSource) { ds.ID = "ds-1" }},
		{"empty tenant", "data_source.tenant_id", func(ds *domain.DataSource) { ds.TenantID = "" }},
		{"tenant with space", "data_source.tenant_id", func(ds *domain.DataSource) { ds.TenantID = "a b" }},
		{"empty name", "data_source.name", func(ds *domain.DataSource) { ds.Name = "" }},
		{"name too long", "data_source.name", func(ds *domain.DataSource) { ds.Name = strings.Repeat("n", 129) }},
		{"unknown dialect", "data_source.dialect", func(ds *domain.DataSource) { ds.Dialect = "mysql" }},
		{"empty sealed config", "data_source.sealed_config", func(ds *domain.DataSource) { ds.SealedConfig = "" }},
		{"sealed config too large", "data_source.sealed_config", func(ds *domain.DataSource) {
			ds.SealedConfig = strings.Repeat("x", domain.MaxSealedConfigLen+1)
		}},
		{"empty key id", "data_source.key_id", func(ds *domain.DataSource) { ds.KeyID = "" }},
	}
	for _, c := range cases {
		ds := newDataSource(tenantA, "bad", at(0))
		c.edit(ds)
		err := r.CreateDataSource(ctx, ds)
		wantErr(t, "CreateDataSource with "+c.name, err, domain.ErrInvalid)
		if fe := domain.FieldErrors(err); len(fe) != 1 || fe[0].Field != c.field {
			t.Errorf("CreateDataSource with %s: field errors %+v, want exactly one naming %s", c.name, fe, c.field)
		}
	}
	wantErr(t, "CreateDataSource(nil)", r.CreateDataSource(ctx, nil), domain.ErrInvalid)
	list, err := r.ListDataSources(ctx, tenantA)
	must(t, "ListDataSources", err)
	if len(list) != 0 {
		t.Errorf("invalid creates stored %d data sources, want none", len(list))
	}
}

func dsCreateConflicts(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	first := createDS(t, ctx, r, tenantA, "warehouse", at(0))

	sameID := newDataSource(tenantA, "other", at(time.Second))
	sameID.ID = first.ID
	wantErr(t, "CreateDataSource with a taken id", r.CreateDataSource(ctx, sameID), domain.ErrConflict)

	sameName := newDataSource(tenantA, "warehouse", at(time.Second))
	wantErr(t, "CreateDataSource with a taken name", r.CreateDataSource(ctx, sameName), domain.ErrConflict)

	sameDS(t, "the first data source after the conflicts", getDS(t, ctx, r, tenantA, first.ID), first)

	// Names and ids are scoped by tenant.
	otherTenant := newDataSource(tenantB, "warehouse", at(time.Second))
	otherTenant.ID = first.ID
	must(t, "CreateDataSource in another tenant with the same id and name", r.CreateDataSource(ctx, otherTenant))
	sameDS(t, "tenant A's data source", getDS(t, ctx, r, tenantA, first.ID), first)
	if got := getDS(t, ctx, r, tenantB, first.ID); got.TenantID != tenantB || got.SealedConfig != otherTenant.SealedConfig {
		t.Errorf("tenant B's data source = %+v, want its own", got)
	}
}

func dsGetMissing(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	_, err := r.GetDataSource(ctx, tenantA, domain.NewID())
	wantErr(t, "GetDataSource of an unknown id", err, domain.ErrNotFound)
	_, err = r.GetDataSource(ctx, "", "")
	wantErr(t, "GetDataSource with empty ids", err, domain.ErrNotFound)
}

func dsIsolation(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	a := createDS(t, ctx, r, tenantA, "warehouse", at(0))

	_, err := r.GetDataSource(ctx, tenantB, a.ID)
	wantErr(t, "GetDataSource from another tenant", err, domain.ErrNotFound)

	upd := a
	upd.TenantID = tenantB
	upd.Name = "stolen"
	upd.SealedConfig = "v1.k1.other"
	wantErr(t, "UpdateDataSource from another tenant", r.UpdateDataSource(ctx, &upd), domain.ErrNotFound)

	swap := a
	swap.TenantID = tenantB
	swap.SealedConfig = "v1.k2.other"
	swap.KeyID = "k2"
	wantErr(t, "SwapSealedConfig from another tenant", r.SwapSealedConfig(ctx, &swap, a.SealedConfig), domain.ErrNotFound)

	wantErr(t, "DeleteDataSource from another tenant", r.DeleteDataSource(ctx, tenantB, a.ID), domain.ErrNotFound)

	list, err := r.ListDataSources(ctx, tenantB)
	must(t, "ListDataSources of another tenant", err)
	if len(list) != 0 {
		t.Errorf("ListDataSources(tenant B) = %d data sources, want none", len(list))
	}
	sameDS(t, "tenant A's data source after tenant B's attempts", getDS(t, ctx, r, tenantA, a.ID), a)
}

func dsList(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	empty, err := r.ListDataSources(ctx, tenantA)
	must(t, "ListDataSources of an empty tenant", err)
	if empty == nil || len(empty) != 0 {
		t.Errorf("ListDataSources of an empty tenant = %#v, want an empty, non-nil slice", empty)
	}
	// Byte order: upper case sorts before lower case, "b" before "b_2".
	var want []domain.DataSource
	for i, name := range []string{"b_2", "a", "B", "b"} {
		want = append(want, createDS(t, ctx, r, tenantA, name, at(time.Duration(i)*time.Second)))
	}
	createDS(t, ctx, r, tenantB, "a-other-tenant", at(0))
	slices.SortFunc(want, func(x, y domain.DataSource) int { return strings.Compare(x.Name, y.Name) })
	got, err := r.ListDataSources(ctx, tenantA)
	must(t, "ListDataSources", err)
	if len(got) != len(want) {
		t.Fatalf("ListDataSources = %d data sources, want %d", len(got), len(want))
	}
	for i := range want {
		sameDS(t, fmt.Sprintf("ListDataSources[%d]", i), got[i], want[i])
	}
}

func dsUpdate(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	ds := createDS(t, ctx, r, tenantA, "warehouse", at(0))
	upd := ds
	upd.Name = "renamed"
	upd.Dialect = domain.DataSourceSQLite
	upd.SealedConfig = "v1.k2.new"
	upd.KeyID = "k2"
	upd.UpdatedAt = at(time.Hour)
	upd.CreatedAt = at(48 * time.Hour) // ignored: CreatedAt never changes
	in := upd
	must(t, "UpdateDataSource", r.UpdateDataSource(ctx, &in))
	upd.CreatedAt = ds.CreatedAt
	sameDS(t, "GetDataSource after UpdateDataSource", getDS(t, ctx, r, tenantA, ds.ID), upd)

	// The old name is free again, the new one taken.
	createDS(t, ctx, r, tenantA, "warehouse", at(0))

	// A zero UpdatedAt becomes the current time, written back.
	before := time.Now().Add(-time.Second)
	again := getDS(t, ctx, r, tenantA, ds.ID)
	again.UpdatedAt = time.Time{}
	again.SealedConfig = "v1.k2.newer"
	must(t, "UpdateDataSource with a zero UpdatedAt", r.UpdateDataSource(ctx, &again))
	if again.UpdatedAt.Before(before) || again.UpdatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("UpdatedAt written back = %v, want about now", again.UpdatedAt)
	}
	if got := getDS(t, ctx, r, tenantA, ds.ID); got.UpdatedAt.Sub(again.UpdatedAt).Abs() > time.Millisecond || got.SealedConfig != "v1.k2.newer" {
		t.Errorf("stored after the second update = %+v, want UpdatedAt %v and the newer config", got, again.UpdatedAt)
	}
}

func dsUpdateErrors(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	a := createDS(t, ctx, r, tenantA, "a", at(0))
	b := createDS(t, ctx, r, tenantA, "b", at(time.Second))

	taken := b
	taken.Name = "a"
	wantErr(t, "UpdateDataSource to a taken name", r.UpdateDataSource(ctx, &taken), domain.ErrConflict)
	sameDS(t, "b after the conflicting update", getDS(t, ctx, r, tenantA, b.ID), b)
	sameDS(t, "a after the conflicting update", getDS(t, ctx, r, tenantA, a.ID), a)

	missing := *newDataSource(tenantA, "c", at(0))
	wantErr(t, "UpdateDataSource of an unknown id", r.UpdateDataSource(ctx, &missing), domain.ErrNotFound)

	bad := a
	bad.Dialect = ""
	wantErr(t, "UpdateDataSource without a dialect", r.UpdateDataSource(ctx, &bad), domain.ErrInvalid)
	wantErr(t, "UpdateDataSource(nil)", r.UpdateDataSource(ctx, nil), domain.ErrInvalid)
	sameDS(t, "a after the invalid updates", getDS(t, ctx, r, tenantA, a.ID), a)
}

func dsDelete(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	a := createDS(t, ctx, r, tenantA, "a", at(0))
	keep := createDS(t, ctx, r, tenantA, "keep", at(0))
	must(t, "DeleteDataSource", r.DeleteDataSource(ctx, tenantA, a.ID))
	_, err := r.GetDataSource(ctx, tenantA, a.ID)
	wantErr(t, "GetDataSource after DeleteDataSource", err, domain.ErrNotFound)
	wantErr(t, "DeleteDataSource again", r.DeleteDataSource(ctx, tenantA, a.ID), domain.ErrNotFound)
	sameDS(t, "the other data source", getDS(t, ctx, r, tenantA, keep.ID), keep)
	// The name is free again.
	createDS(t, ctx, r, tenantA, "a", at(0))
}

func dsScan(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	none, err := r.ScanDataSources(ctx, domain.DataSourceKey{}, 10)
	must(t, "ScanDataSources of an empty store", err)
	if len(none) != 0 {
		t.Errorf("ScanDataSources of an empty store = %d, want 0", len(none))
	}
	var want []domain.DataSourceKey
	for _, tenant := range []string{"t-b", "T-a", "t-a", "t-a0"} {
		for i := range 4 {
			ds := createDS(t, ctx, r, tenant, fmt.Sprintf("ds%d", i), at(0))
			want = append(want, domain.DataSourceKey{TenantID: ds.TenantID, ID: ds.ID})
		}
	}
	slices.SortFunc(want, func(a, b domain.DataSourceKey) int {
		if c := strings.Compare(a.TenantID, b.TenantID); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, limit := range []int{1, 3, 16, 100} {
		var got []domain.DataSourceKey
		after := domain.DataSourceKey{}
		for pages := 0; ; pages++ {
			if pages > len(want)+1 {
				t.Fatalf("limit %d: the scan does not end", limit)
			}
			page, err := r.ScanDataSources(ctx, after, limit)
			must(t, "ScanDataSources", err)
			if len(page) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(page))
			}
			for _, ds := range page {
				if ds.SealedConfig == "" || ds.KeyID == "" || ds.Name == "" {
					t.Errorf("limit %d: scanned data source without its fields: %+v", limit, ds)
				}
				got = append(got, domain.DataSourceKey{TenantID: ds.TenantID, ID: ds.ID})
			}
			if len(page) < limit {
				break
			}
			after = got[len(got)-1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: scanned\n%v\nwant (tenant, id byte order)\n%v", limit, got, want)
		}
	}
}

func dsScanInvalid(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	for _, limit := range []int{0, -1, domain.MaxDataSourceScan + 1} {
		_, err := r.ScanDataSources(ctx, domain.DataSourceKey{}, limit)
		wantErr(t, fmt.Sprintf("ScanDataSources(limit %d)", limit), err, domain.ErrInvalid)
	}
}

func dsSwap(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	ds := createDS(t, ctx, r, tenantA, "warehouse", at(0))
	swap := domain.DataSource{TenantID: tenantA, ID: ds.ID, SealedConfig: "v1.k2.rotated", KeyID: "k2"}
	must(t, "SwapSealedConfig", r.SwapSealedConfig(ctx, &swap, ds.SealedConfig))
	want := ds
	want.SealedConfig, want.KeyID = "v1.k2.rotated", "k2"
	sameDS(t, "GetDataSource after SwapSealedConfig (only the config and key id change)", getDS(t, ctx, r, tenantA, ds.ID), want)
}

func dsSwapErrors(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	ds := createDS(t, ctx, r, tenantA, "warehouse", at(0))
	stale := domain.DataSource{TenantID: tenantA, ID: ds.ID, SealedConfig: "v1.k2.rotated", KeyID: "k2"}
	wantErr(t, "SwapSealedConfig with a stale expectation", r.SwapSealedConfig(ctx, &stale, "v1.k1.not-what-is-stored"), domain.ErrConflict)
	sameDS(t, "GetDataSource after the stale swap", getDS(t, ctx, r, tenantA, ds.ID), ds)

	missing := domain.DataSource{TenantID: tenantA, ID: domain.NewID(), SealedConfig: "v1.k2.x", KeyID: "k2"}
	wantErr(t, "SwapSealedConfig of an unknown id", r.SwapSealedConfig(ctx, &missing, "v1.k1.x"), domain.ErrNotFound)

	invalid := []struct {
		name     string
		ds       *domain.DataSource
		expected string
	}{
		{"nil", nil, "x"},
		{"no expectation", &domain.DataSource{TenantID: tenantA, ID: ds.ID, SealedConfig: "v1.k2.x", KeyID: "k2"}, ""},
		{"no new config", &domain.DataSource{TenantID: tenantA, ID: ds.ID, KeyID: "k2"}, ds.SealedConfig},
		{"no key id", &domain.DataSource{TenantID: tenantA, ID: ds.ID, SealedConfig: "v1.k2.x"}, ds.SealedConfig},
		{"no tenant", &domain.DataSource{ID: ds.ID, SealedConfig: "v1.k2.x", KeyID: "k2"}, ds.SealedConfig},
	}
	for _, c := range invalid {
		wantErr(t, "SwapSealedConfig with "+c.name, r.SwapSealedConfig(ctx, c.ds, c.expected), domain.ErrInvalid)
	}
	sameDS(t, "GetDataSource after the invalid swaps", getDS(t, ctx, r, tenantA, ds.ID), ds)
}

// dsSwapRace races swaps that expect the originally read config against
// updates: whatever the interleaving, the last update survives unless a
// swap ran before it, and a swap never lands on top of an update.
func dsSwapRace(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	const rounds = 20
	for round := range rounds {
		ds := createDS(t, ctx, r, tenantA, fmt.Sprintf("race%d", round), at(0))
		var swapErr, updErr error
		upd := ds
		upd.SealedConfig = fmt.Sprintf("v1.k2.update-%d", round)
		upd.KeyID = "k2"
		swap := domain.DataSource{TenantID: tenantA, ID: ds.ID, SealedConfig: fmt.Sprintf("v1.k2.rotated-%d", round), KeyID: "k2"}
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; swapErr = r.SwapSealedConfig(ctx, &swap, ds.SealedConfig) })
		wg.Go(func() { <-start; updErr = r.UpdateDataSource(ctx, &upd) })
		close(start)
		wg.Wait()
		must(t, "UpdateDataSource", updErr)
		got := getDS(t, ctx, r, tenantA, ds.ID)
		switch {
		case swapErr == nil:
			// The swap ran first; the update came after it and won.
			if got.SealedConfig != upd.SealedConfig {
				t.Errorf("round %d: swap then update left %q, want the update's %q", round, got.SealedConfig, upd.SealedConfig)
			}
		case errors.Is(swapErr, domain.ErrConflict):
			if got.SealedConfig != upd.SealedConfig {
				t.Errorf("round %d: update then failed swap left %q, want the update's %q", round, got.SealedConfig, upd.SealedConfig)
			}
		default:
			t.Errorf("round %d: SwapSealedConfig: %v, want nil or ErrConflict", round, swapErr)
		}
	}
}

func dsCopies(t *testing.T, ctx context.Context, r domain.DataSourceRepository) {
	ds := newDataSource(tenantA, "warehouse", at(0))
	in := *ds
	must(t, "CreateDataSource", r.CreateDataSource(ctx, &in))
	in.Name, in.SealedConfig = "changed-after-create", "v1.k9.changed"
	got, err := r.GetDataSource(ctx, tenantA, ds.ID)
	must(t, "GetDataSource", err)
	got.SealedConfig = "v1.k9.changed-after-get"
	list, err := r.ListDataSources(ctx, tenantA)
	must(t, "ListDataSources", err)
	list[0].Name = "changed-after-list"
	sameDS(t, "stored data source after the caller changed its values", getDS(t, ctx, r, tenantA, ds.ID), *ds)
}
