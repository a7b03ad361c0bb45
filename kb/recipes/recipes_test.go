package recipes_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/bichat-go/bichat/kb/recipes/recipestest"
)

// scopeA is the scope the tests of this package save in. The behaviour
// every recipes.Store shares is tested by package recipestest, which
// recipestest/memory_test.go runs against recipes.Memory.
var scopeA = kb.Scope{TenantID: "tenant-a", Ontology: "sales"}

// The datasets and helpers of the shared suite.
var (
	orders    = recipestest.Orders
	customers = recipestest.Customers
	products  = recipestest.Products
	save      = recipestest.Save
	questions = recipestest.Questions
)

func TestFingerprint(t *testing.T) {
	t.Parallel()
	base := recipes.Fingerprint([]domain.Dataset{orders(), customers()})
	if len(base) != 64 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Fatalf("fingerprint %q is not lower-case hex SHA-256", base)
	}
	cases := []struct {
		name   string
		edit   func(o, c *domain.Dataset)
		change bool
	}{
		{"field order", func(o, c *domain.Dataset) { slices.Reverse(o.Fields) }, false},
		{"descriptions, kind, keys, estimates", func(o, c *domain.Dataset) {
			o.Description = "changed"
			o.Kind = "view"
			o.RowEstimate = 99
			o.Fields[0].PrimaryKey = false
			o.Fields[1].Description = "the buyer"
			o.Fields[1].Nullable = true
		}, false},
		{"type spelling", func(o, c *domain.Dataset) { o.Fields[0].Type = " BIGINT " }, false},
		{"implicit relationship from", func(o, c *domain.Dataset) { o.Relationships[0].From = "" }, false},
		{"duplicate relationship", func(o, c *domain.Dataset) { o.Relationships = append(o.Relationships, o.Relationships[0]) }, false},
		{"column renamed", func(o, c *domain.Dataset) { o.Fields[2].Name = "amount" }, true},
		{"type changed", func(o, c *domain.Dataset) { o.Fields[2].Type = "double precision" }, true},
		{"column added", func(o, c *domain.Dataset) { c.Fields = append(c.Fields, domain.Field{Name: "tier", Type: "text"}) }, true},
		{"source moved", func(o, c *domain.Dataset) { c.Source = "crm.customers" }, true},
		{"relationship changed", func(o, c *domain.Dataset) { o.Relationships[0].ToColumns = []string{"customer_key"} }, true},
		{"relationship added", func(o, c *domain.Dataset) {
			c.Relationships = []domain.Relationship{{FromColumns: []string{"id"}, To: "sales.orders", ToColumns: []string{"customer_id"}}}
		}, true},
		{"dataset renamed", func(o, c *domain.Dataset) { c.Name = "sales.clients" }, true},
	}
	for _, tc := range cases {
		o, c := orders(), customers()
		tc.edit(&o, &c)
		got := recipes.Fingerprint([]domain.Dataset{c, o}) // order of datasets never matters
		if changed := got != base; changed != tc.change {
			t.Errorf("%s: fingerprint changed = %v, want %v\n%s", tc.name, changed, tc.change, recipes.CanonicalSchema([]domain.Dataset{c, o}))
		}
	}
	// The canonical form, spelled out.
	want := `{"version":"bichat-recipe-schema/v1","datasets":[` +
		`{"name":"sales.customers","source":"sales.customers","fields":[["id","bigint"],["name","text"],["region","text"]],"relationships":[]},` +
		`{"name":"sales.orders","source":"sales.orders","fields":[["created_at","timestamptz"],["customer_id","bigint"],["id","bigint"],["total","numeric(12,2)"]],` +
		`"relationships":[{"from":"sales.orders","from_columns":["customer_id"],"to":"sales.customers","to_columns":["id"]}]}]}`
	if got := string(recipes.CanonicalSchema([]domain.Dataset{orders(), customers()})); got != want {
		t.Errorf("canonical schema:\n got %s\nwant %s", got, want)
	}
	// Names cannot run into each other.
	a := recipes.Fingerprint([]domain.Dataset{{Name: "ab", Source: "c"}})
	b := recipes.Fingerprint([]domain.Dataset{{Name: "a", Source: "bc"}})
	if a == b {
		t.Error("ambiguous canonical form")
	}
}
