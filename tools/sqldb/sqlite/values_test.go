package sqlite

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// introspectSample introspects the sample database opened with sv.
func introspectSample(t *testing.T, sv sqldb.SampleValues) map[string]domain.Dataset {
	t.Helper()
	sample(t) // creates the file once
	db, err := Open(samplePath, Options{SampleValues: sv})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ds, err := db.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]domain.Dataset{}
	for _, d := range ds {
		out[d.Name] = d
	}
	return out
}

// values lists "table.column=v1|v2" for every field with values or marked
// sensitive ("table.column sensitive").
func values(ds map[string]domain.Dataset) []string {
	var out []string
	for _, d := range ds {
		for _, f := range d.Fields {
			switch {
			case f.Sensitive && len(f.Values) > 0:
				out = append(out, d.Name+"."+f.Name+" sensitive WITH VALUES")
			case f.Sensitive:
				out = append(out, d.Name+"."+f.Name+" sensitive")
			case len(f.Values) > 0:
				out = append(out, d.Name+"."+f.Name+"="+strings.Join(f.Values, "|"))
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestIntrospectSamplesValues(t *testing.T) {
	t.Parallel()
	products := "products.name=Almanac|Atlas|Ball|Blanket|Blocks|Charger|Clock|Comic|Cookbook|Doll|Drone|Gloves|Guide|Headphones|Hose|Journal|Kettle|Keyboard|Kite|Lamp|Lantern|Mirror|Monitor|Mouse|Novel|Planter|Poems|Puzzle|Rake|Robot|Router|Rug|Seeds|Shelf|Shovel|Speaker|Sprinkler|Train|Vase|Webcam"
	for _, tc := range []struct {
		name string
		sv   sqldb.SampleValues
		want []string
	}{
		// customers.name (about 150 distinct) and email (200) are over the
		// cap; integer, real and timestamp columns are never sampled.
		{"defaults", sqldb.SampleValues{}, []string{
			"orders.status=cancelled|completed|returned",
			"products.category=Books|Electronics|Garden|Home|Toys",
			products,
			"regions.name=Central|East|North|South|West",
		}},
		{"a lower cap", sqldb.SampleValues{MaxDistinct: 4}, []string{
			"orders.status=cancelled|completed|returned",
		}},
		{"short values only", sqldb.SampleValues{MaxValueLen: 5}, []string{
			"orders.status=",
		}},
		{"sensitive columns", sqldb.SampleValues{SensitiveColumns: []string{"regions.name", "email"},
			Sensitive: func(d, c string) bool { return d == "orders" && c == "status" }}, []string{
			"customers.email sensitive",
			"orders.status sensitive",
			"products.category=Books|Electronics|Garden|Home|Toys",
			products,
			"regions.name sensitive",
		}},
		{"disabled", sqldb.SampleValues{Disable: true, SensitiveColumns: []string{"email"}}, []string{
			"customers.email sensitive",
		}},
		{"a bounded sample of rows", sqldb.SampleValues{MaxRows: 20, MaxDistinct: 10}, []string{
			// From 20 rows: repetitive columns keep their values; those with
			// a distinct value per row (names, emails) look like keys and get
			// none; regions has 5 rows, all read.
			"orders.status=cancelled|completed|returned",
			"products.category=Books|Electronics|Garden|Home|Toys",
			"regions.name=Central|East|North|South|West",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := values(introspectSample(t, tc.sv))
			want := tc.want
			if tc.name == "short values only" {
				// Every value of up to 5 characters, and no longer one.
				want = []string{"products.category=Books|Home|Toys", "products.name=Atlas|Ball|Clock|Comic|Doll|Drone|Guide|Hose|Kite|Lamp|Mouse|Novel|Poems|Rake|Robot|Rug|Seeds|Shelf|Train|Vase", "regions.name=East|North|South|West"}
			}
			if !slices.Equal(got, want) {
				t.Errorf("values\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestIntrospectSchemaAndCardinality(t *testing.T) {
	t.Parallel()
	ds := introspectSample(t, sqldb.SampleValues{Disable: true})
	for name, d := range ds {
		if d.Schema != "main" || d.Database != "" {
			t.Errorf("%s: database %q schema %q", name, d.Database, d.Schema)
		}
		for _, r := range d.Relationships {
			if r.Cardinality != domain.CardinalityManyToOne || r.Inferred {
				t.Errorf("%s: %+v", name, r)
			}
		}
	}
}

func TestTextAffinity(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string]bool{
		"TEXT": true, "varchar(20)": true, "NATIVE CHARACTER(70)": true, "CLOB": true,
		"INTEGER": false, "CHARINT": false, "REAL": false, "": false, "BLOB": false, "NUMERIC": false, "TIMESTAMP": false,
	} {
		if got := textAffinity(typ); got != want {
			t.Errorf("textAffinity(%q) = %v", typ, got)
		}
	}
}
