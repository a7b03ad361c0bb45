package sqldb

import (
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
)

func TestWordsAndStems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"home_team_id", "home team id"},
		{"HomeTeamID", "home team id"},
		{"Singer_ID", "singer id"},
		{"customerId", "customer id"},
		{"a-b c", "a b c"},
	} {
		if got := strings.Join(words(tc.in), " "); got != tc.want {
			t.Errorf("words(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"public.customers", "customers customer"},
		{"categories", "categories category"},
		{"company", "company companies"},
		{"boxes", "boxes box"},
		{"address", "address addresses"},
		{"Order_Items", "orderitems orderitem"},
		{"staff", "staff staffs"},
	} {
		if got := strings.Join(stems(tc.in), " "); got != tc.want {
			t.Errorf("stems(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCompatibleTypes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"integer", "bigint", true},
		{"INTEGER", "INT", true},
		{"int", "numeric(10,0)", true},
		{"text", "character varying(20)", true},
		{"varchar(10)", "TEXT", true},
		{"uuid", "uuid", true},
		{"integer", "text", false},
		{"uuid", "text", false},
		{"timestamp", "timestamp", false}, // dates are not keys
		{"real", "real", false},           // nor floats
		{"", "integer", false},            // unknown types are not guessed
		{"boolean", "boolean", false},
	} {
		if got := compatible(tc.a, tc.b); got != tc.want {
			t.Errorf("compatible(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestForeignKeyCardinality(t *testing.T) {
	t.Parallel()
	items := domain.Dataset{Fields: []domain.Field{{Name: "order_id", PrimaryKey: true}, {Name: "line", PrimaryKey: true}, {Name: "product_id"}}}
	profile := domain.Dataset{Fields: []domain.Field{{Name: "customer_id", PrimaryKey: true}, {Name: "bio"}}}
	for _, tc := range []struct {
		d    domain.Dataset
		cols []string
		want string
	}{
		{items, []string{"order_id"}, domain.CardinalityManyToOne},
		{items, []string{"product_id"}, domain.CardinalityManyToOne},
		{items, []string{"line", "order_id"}, domain.CardinalityOneToOne},
		{profile, []string{"customer_id"}, domain.CardinalityOneToOne},
		{domain.Dataset{}, []string{"x"}, domain.CardinalityManyToOne},
	} {
		if got := ForeignKeyCardinality(tc.d, tc.cols); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.cols, got, tc.want)
		}
	}
}

func TestJoinCandidatesFromNamesAndTypes(t *testing.T) {
	t.Parallel()
	f := func(name, typ string, pk bool) domain.Field {
		return domain.Field{Name: name, Type: typ, PrimaryKey: pk}
	}
	ds := []domain.Dataset{
		{Name: "s.customers", Fields: []domain.Field{f("id", "integer", true), f("region_id", "integer", false), f("name", "text", false)}},
		{Name: "s.regions", Fields: []domain.Field{f("id", "integer", true), f("name", "text", false)}},
		{Name: "s.orders", Fields: []domain.Field{f("id", "integer", true), f("customer_id", "integer", false), f("status", "text", false)},
			Relationships: []domain.Relationship{{From: "s.orders", FromColumns: []string{"customer_id"}, To: "s.customers", ToColumns: []string{"id"}}}},
		{Name: "s.products", Fields: []domain.Field{f("sku", "text", true), f("category_code", "text", false)}},
		{Name: "s.stock", Fields: []domain.Field{f("sku", "text", false), f("qty", "integer", false)}},
		{Name: "s.categories", Fields: []domain.Field{f("code", "text", false), f("label", "text", false)}},
		{Name: "s.matches", Fields: []domain.Field{f("id", "integer", true), f("HomeCustomerID", "integer", false), f("region_id", "text", false)}},
	}
	var got []string
	for _, c := range joinCandidates(ds) {
		got = append(got, c.child.Name+"."+c.column+"->"+c.parent.Name+"."+c.key)
	}
	want := []string{
		// ScoreEntityKey, by child then column.
		"s.customers.region_id->s.regions.id",
		"s.products.category_code->s.categories.code", // a key word in a table without a primary key
		// ScoreSameKey.
		"s.stock.sku->s.products.sku",
		// ScoreRoleEntityKey.
		"s.matches.HomeCustomerID->s.customers.id",
	}
	// orders.customer_id is declared; matches.region_id is text, regions.id
	// an integer; "id" columns and names like "name" are never candidates.
	if !slices.Equal(got, want) {
		t.Errorf("candidates\n got %q\nwant %q", got, want)
	}
}
