package kb_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
)

func TestCrypticNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cryptic bool
	}{
		{"cst_cd", true},
		{"t_ord_h", true},
		{"amt1", true},
		{"x_flg", true},
		{"c7", true},
		{"ord_typ", true},
		{"CstNbr", true},
		{"txn_dt", true},
		{"customer_id", false},
		{"order_date", false},
		{"revenue", false},
		{"id", false},
		{"is_new", false},
		{"created_by", false},
		{"qty", false},
		{"address_line2", false},
		{"sales_2024", false},
		{"customerID", false},
		{"OrderDate", false},
		{"ip_address", false},
		{"lat", false},
		{"über_größe", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := domain.Dataset{Name: "sales." + tt.name, Fields: []domain.Field{{Name: tt.name, Type: "text"}}}
			table, fields := kb.Cryptic(d)
			if table != tt.cryptic {
				t.Errorf("Cryptic table %q = %v, want %v", d.Name, table, tt.cryptic)
			}
			if got := len(fields) == 1; got != tt.cryptic {
				t.Errorf("Cryptic fields of %q = %v, want cryptic=%v", tt.name, fields, tt.cryptic)
			}
		})
	}
}

func TestCrypticSkipsDescribed(t *testing.T) {
	t.Parallel()
	d := domain.Dataset{
		Name:        "t_ord_h",
		Description: "Order headers.",
		Fields: []domain.Field{
			{Name: "cst_cd", Type: "text", Description: "Customer code."},
			{Name: "amt1", Type: "numeric"},
			{Name: "order_date", Type: "date"},
			{Name: "x_flg", Type: "bool", Description: "  "},
		},
	}
	table, fields := kb.Cryptic(d)
	if table {
		t.Error("a described table is proposed as cryptic")
	}
	if want := []string{"amt1", "x_flg"}; !slices.Equal(fields, want) {
		t.Errorf("fields = %v, want %v", fields, want)
	}
}

// fakeDescriber answers from a fixed table and counts calls per dataset.
type fakeDescriber struct {
	mu      sync.Mutex
	answers map[string]kb.Description
	calls   map[string]int
	err     error
}

func (f *fakeDescriber) Describe(_ context.Context, d domain.Dataset) (kb.Description, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[d.Name]++
	if f.err != nil {
		return kb.Description{}, f.err
	}
	return f.answers[d.Name], nil
}

func (f *fakeDescriber) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

func describeFixture() []domain.Dataset {
	return []domain.Dataset{
		{Name: "sales.t_ord_h", Source: "sales.t_ord_h", Fields: []domain.Field{
			{Name: "ord_id", Type: "bigint"},
			{Name: "cst_cd", Type: "text"},
			{Name: "amt1", Type: "numeric", Description: "Net amount in EUR (host)."},
		}},
		{Name: "sales.customers", Source: "sales.customers", Fields: []domain.Field{
			{Name: "customer_id", Type: "bigint"}, {Name: "name", Type: "text"},
		}},
		{Name: "sales.x_stock", Source: "sales.x_stock", Description: "Stock levels (host).", Fields: []domain.Field{
			{Name: "sku", Type: "text"}, {Name: "qty_oh", Type: "int"},
		}},
	}
}

func TestProposeAsksOnlyCrypticAndKeepsOnlyMissing(t *testing.T) {
	t.Parallel()
	f := &fakeDescriber{answers: map[string]kb.Description{
		"sales.t_ord_h": {Text: " Order headers. ", Fields: map[string]string{
			"ord_id": "Order number.", "cst_cd": "Customer code.", "amt1": "Amount (model).", "ghost": "Not a column.",
		}},
		"sales.x_stock": {Text: "Stock (model).", Fields: map[string]string{"qty_oh": "Quantity on hand.", "sku": ""}},
	}}
	var cache kb.DescriptionCache
	got, err := kb.Propose(context.Background(), describeFixture(), f, &cache)
	if err != nil {
		t.Fatal(err)
	}
	want := []kb.Description{
		{Dataset: "sales.t_ord_h", Text: "Order headers.", Fields: map[string]string{"ord_id": "Order number.", "cst_cd": "Customer code."}},
		{Dataset: "sales.x_stock", Fields: map[string]string{"qty_oh": "Quantity on hand."}},
	}
	if !equalDescriptions(got, want) {
		t.Fatalf("Propose = %+v\nwant %+v", got, want)
	}
	if f.calls["sales.customers"] != 0 {
		t.Error("the describer was asked about a dataset with plain names")
	}
	if f.calls["sales.t_ord_h"] != 1 || f.calls["sales.x_stock"] != 1 {
		t.Errorf("calls = %v, want one per cryptic dataset", f.calls)
	}
	if cache.Len() != 2 {
		t.Errorf("cache holds %d descriptions, want 2", cache.Len())
	}
}

func TestProposeCacheHitsDoNotAskAgain(t *testing.T) {
	t.Parallel()
	f := &fakeDescriber{answers: map[string]kb.Description{
		"sales.t_ord_h": {Text: "Order headers.", Fields: map[string]string{"cst_cd": "Customer code."}},
	}}
	var cache kb.DescriptionCache
	ds := describeFixture()[:1]
	// The same schema twice in one call is asked once.
	first, err := kb.Propose(context.Background(), append(slices.Clone(ds), ds[0]), f, &cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || f.total() != 1 {
		t.Fatalf("got %d proposals after %d calls, want 2 after 1", len(first), f.total())
	}
	// Editing documentation keeps the fingerprint: a cache hit.
	ds[0].Fields[0].Description = "Order id (host)."
	second, err := kb.Propose(context.Background(), ds, f, &cache)
	if err != nil {
		t.Fatal(err)
	}
	if f.total() != 1 {
		t.Fatalf("a cached dataset was described again (%d calls)", f.total())
	}
	if !equalDescriptions(second, first[:1]) {
		t.Errorf("cached proposal = %+v, want %+v", second, first[:1])
	}
	// Changing a column type changes the fingerprint: asked again.
	ds[0].Fields[1].Type = "varchar(12)"
	if _, err := kb.Propose(context.Background(), ds, f, &cache); err != nil {
		t.Fatal(err)
	}
	if f.total() != 2 {
		t.Errorf("a changed schema was not described again (%d calls)", f.total())
	}
}

func TestProposeErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("model unavailable")
	if _, err := kb.Propose(context.Background(), describeFixture(), nil, nil); err == nil || !strings.Contains(err.Error(), "nil Describer") {
		t.Errorf("nil describer: err = %v", err)
	}
	f := &fakeDescriber{err: boom}
	_, err := kb.Propose(context.Background(), describeFixture(), f, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `"sales.t_ord_h"`) {
		t.Errorf("describer error: err = %v, want it wrapped and naming the dataset", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f = &fakeDescriber{}
	if _, err := kb.Propose(ctx, describeFixture(), f, nil); !errors.Is(err, context.Canceled) || f.total() != 0 {
		t.Errorf("cancelled context: err = %v after %d calls", err, f.total())
	}
}

func TestApplyNeverOverwrites(t *testing.T) {
	t.Parallel()
	ds := describeFixture()
	before := describeFixture()
	got := kb.Apply(ds, []kb.Description{
		{Dataset: "sales.t_ord_h", Text: "Order headers.", Fields: map[string]string{
			"cst_cd": "Customer code.", "amt1": "Overwritten?", "ghost": "x", "ord_id": " ",
		}},
		{Dataset: "sales.x_stock", Text: "Overwritten?", Fields: map[string]string{"qty_oh": "Quantity on hand."}},
		{Dataset: "sales.unknown", Text: "ignored"},
	})
	if len(got) != len(ds) {
		t.Fatalf("Apply returned %d datasets, want %d", len(got), len(ds))
	}
	checks := []struct{ what, got, want string }{
		{"t_ord_h description", got[0].Description, "Order headers."},
		{"ord_id (blank proposal)", got[0].Fields[0].Description, ""},
		{"cst_cd", got[0].Fields[1].Description, "Customer code."},
		{"amt1 (host's)", got[0].Fields[2].Description, "Net amount in EUR (host)."},
		{"customers untouched", got[1].Description, ""},
		{"x_stock description (host's)", got[2].Description, "Stock levels (host)."},
		{"qty_oh", got[2].Fields[1].Description, "Quantity on hand."},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	for i := range ds {
		if ds[i].Description != before[i].Description {
			t.Errorf("Apply modified the description of its input dataset %s", ds[i].Name)
		}
		for j := range ds[i].Fields {
			if ds[i].Fields[j].Description != before[i].Fields[j].Description {
				t.Errorf("Apply modified input column %s.%s", ds[i].Name, ds[i].Fields[j].Name)
			}
		}
	}
}

func TestDescriptionFingerprintMatchesRecipes(t *testing.T) {
	t.Parallel()
	for _, d := range describeFixture() {
		d.Relationships = []domain.Relationship{{FromColumns: []string{"cst_cd"}, To: "sales.customers", ToColumns: []string{"customer_id"}}}
		if got, want := kb.DescriptionFingerprint(d), recipes.Fingerprint([]domain.Dataset{d}); got != want {
			t.Errorf("%s: DescriptionFingerprint = %s, recipes.Fingerprint = %s", d.Name, got, want)
		}
	}
	a := describeFixture()[0]
	b := describeFixture()[0]
	slices.Reverse(b.Fields)
	b.Description = "documented"
	if kb.DescriptionFingerprint(a) != kb.DescriptionFingerprint(b) {
		t.Error("field order or a description changed the fingerprint")
	}
	b.Fields[0].Name = "amt2"
	if kb.DescriptionFingerprint(a) == kb.DescriptionFingerprint(b) {
		t.Error("renaming a column kept the fingerprint")
	}
}

func TestDescriptionCacheCopies(t *testing.T) {
	t.Parallel()
	var c kb.DescriptionCache
	if _, ok := c.Get("nope"); ok {
		t.Fatal("empty cache reported a hit")
	}
	in := kb.Description{Dataset: "d", Fields: map[string]string{"a": "A"}}
	c.Put("fp", in)
	in.Fields["a"] = "changed"
	got, ok := c.Get("fp")
	if !ok || got.Fields["a"] != "A" {
		t.Fatalf("Get = %+v, %v: the cache must keep its own copy", got, ok)
	}
	got.Fields["a"] = "changed again"
	if again, _ := c.Get("fp"); again.Fields["a"] != "A" {
		t.Error("mutating a returned description changed the cache")
	}
}

func equalDescriptions(a, b []kb.Description) bool {
	return slices.EqualFunc(a, b, func(x, y kb.Description) bool {
		return x.Dataset == y.Dataset && x.Text == y.Text && maps.Equal(x.Fields, y.Fields)
	})
}

func BenchmarkCryptic(b *testing.B) {
	d := domain.Dataset{Name: "sales.t_ord_h"}
	for _, n := range []string{"ord_id", "cst_cd", "customer_id", "order_date", "amt1", "x_flg", "revenue", "created_by", "address_line2", "qty_oh"} {
		d.Fields = append(d.Fields, domain.Field{Name: n, Type: "text"})
	}
	b.ReportAllocs()
	for b.Loop() {
		if table, fields := kb.Cryptic(d); !table || len(fields) != 5 {
			b.Fatalf("Cryptic = %v, %v", table, fields)
		}
	}
}
