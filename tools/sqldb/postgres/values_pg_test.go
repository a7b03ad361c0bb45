package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// introspectValues introspects schema as the read-only role with sv and
// lists "table.column=v1|v2" for each field with values, and
// "table.column sensitive" for each sensitive one.
func introspectValues(t *testing.T, schema string, sv sqldb.SampleValues) ([]domain.Dataset, []string) {
	t.Helper()
	db := readDB(t, schema, Options{Schemas: []string{schema}, SampleValues: sv})
	ds, err := db.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		name := strings.TrimPrefix(d.Name, schema+".")
		for _, f := range d.Fields {
			switch {
			case f.Sensitive && len(f.Values) > 0:
				out = append(out, name+"."+f.Name+" sensitive WITH VALUES")
			case f.Sensitive:
				out = append(out, name+"."+f.Name+" sensitive")
			case len(f.Values) > 0:
				out = append(out, name+"."+f.Name+"="+strings.Join(f.Values, "|"))
			}
		}
	}
	slices.Sort(out)
	return ds, out
}

func TestIntrospectSamplesValuesPG(t *testing.T) {
	t.Parallel()
	sample(t, Options{}) // loads the sample schema once
	schema := sampleSchema
	products := "products.name=Almanac|Atlas|Ball|Blanket|Blocks|Charger|Clock|Comic|Cookbook|Doll|Drone|Gloves|Guide|Headphones|Hose|Journal|Kettle|Keyboard|Kite|Lamp|Lantern|Mirror|Monitor|Mouse|Novel|Planter|Poems|Puzzle|Rake|Robot|Router|Rug|Seeds|Shelf|Shovel|Speaker|Sprinkler|Train|Vase|Webcam"
	for _, tc := range []struct {
		name string
		sv   sqldb.SampleValues
		want []string
	}{
		// customers.name and email have far more than 50 distinct values
		// (pg_stats says so: no query reads them); numbers and timestamps
		// are never sampled.
		{"defaults", sqldb.SampleValues{}, []string{
			"orders.status=cancelled|completed|returned",
			"products.category=Books|Electronics|Garden|Home|Toys",
			products,
			"regions.name=Central|East|North|South|West",
		}},
		{"a lower cap", sqldb.SampleValues{MaxDistinct: 4}, []string{
			"orders.status=cancelled|completed|returned",
		}},
		{"sensitive columns", sqldb.SampleValues{SensitiveColumns: []string{schema + ".regions.name", "email"},
			Sensitive: func(d, c string) bool { return d == schema+".orders" && c == "status" }}, []string{
			"customers.email sensitive",
			"orders.status sensitive",
			"products.category=Books|Electronics|Garden|Home|Toys",
			products,
			"regions.name sensitive",
		}},
		{"disabled", sqldb.SampleValues{Disable: true, SensitiveColumns: []string{"email"}}, []string{
			"customers.email sensitive",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, got := introspectValues(t, schema, tc.sv)
			if !slices.Equal(got, tc.want) {
				t.Errorf("values\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestIntrospectDatabaseSchemaCardinalityPG(t *testing.T) {
	t.Parallel()
	sample(t, Options{})
	var dbName string
	if err := admin(t).QueryRow(context.Background(), "SELECT current_database()").Scan(&dbName); err != nil {
		t.Fatal(err)
	}
	ds, _ := introspectValues(t, sampleSchema, sqldb.SampleValues{Disable: true})
	if len(ds) != 5 {
		t.Fatalf("%d datasets", len(ds))
	}
	rels := 0
	for _, d := range ds {
		if d.Database != dbName || d.Schema != sampleSchema {
			t.Errorf("%s: database %q schema %q, want %q %q", d.Name, d.Database, d.Schema, dbName, sampleSchema)
		}
		for _, r := range d.Relationships {
			rels++
			if r.Cardinality != domain.CardinalityManyToOne || r.Inferred || r.Confidence != 0 {
				t.Errorf("%s: %+v", d.Name, r)
			}
		}
	}
	if rels != 4 {
		t.Errorf("%d foreign keys, want 4", rels)
	}
}

// A big table without statistics is read through TABLESAMPLE and a row
// limit: repetitive columns get values, unique ones and sensitive ones
// none; a table with row-level security is never sampled.
func TestIntrospectSamplesBigTablesBoundedPG(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	exec(t,
		"CREATE TABLE "+schema+".events (id int PRIMARY KEY, kind text, note text, secret text, plan varchar(10))",
		"INSERT INTO "+schema+".events SELECT i, 'kind'||(i%4), 'note '||i, 'secret'||(i%2), 'p'||(i%3) FROM generate_series(1, 50000) i",
		"ALTER TABLE "+schema+".events ALTER COLUMN kind SET STATISTICS 0",
		"ALTER TABLE "+schema+".events ALTER COLUMN note SET STATISTICS 0",
		"ANALYZE "+schema+".events",
		"CREATE TABLE "+schema+".tenant_notes (id int PRIMARY KEY, tenant text, body text)",
		"INSERT INTO "+schema+".tenant_notes VALUES (1, 'a', 'hello'), (2, 'b', 'world')",
		"ALTER TABLE "+schema+".tenant_notes ENABLE ROW LEVEL SECURITY",
		"CREATE POLICY p ON "+schema+".tenant_notes USING (true)",
	)
	ds, got := introspectValues(t, schema, sqldb.SampleValues{MaxRows: 100, SensitiveColumns: []string{"secret"}})
	want := []string{
		"events.kind=kind0|kind1|kind2|kind3", // TABLESAMPLE'd query
		"events.plan=p0|p1|p2",                // pg_stats' most common values
		"events.secret sensitive",
	}
	if !slices.Equal(got, want) {
		t.Errorf("values\n got %q\nwant %q", got, want)
	}
	if len(ds) != 2 || ds[0].RowEstimate < 40000 {
		t.Fatalf("datasets %d, row estimate %d", len(ds), ds[0].RowEstimate)
	}
}
