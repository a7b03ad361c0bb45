package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

// The retail sample with its foreign keys dropped in the database: the
// inferred joins are the declared ones, with nothing between unrelated id
// columns.
func TestInferJoinsWithoutForeignKeysPG(t *testing.T) {
	t.Parallel()
	sample(t, Options{})
	declaredDB := readDB(t, sampleSchema, Options{Schemas: []string{sampleSchema}, SampleValues: sqldb.SampleValues{Disable: true}})
	withFKs, err := declaredDB.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	schema := newSchema(t)
	if err := sampledata.Load(context.Background(), "postgres", sampledata.Options{Schema: schema}, func(ctx context.Context, s string) error {
		_, err := admin(t).Exec(ctx, s)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	exec(t, `DO $$ DECLARE c record; BEGIN
		FOR c IN SELECT conrelid::regclass AS rel, conname FROM pg_constraint WHERE contype = 'f' AND connamespace = '`+schema+`'::regnamespace LOOP
			EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.rel, c.conname);
		END LOOP; END $$`)
	db := readDB(t, schema, Options{Schemas: []string{schema}, SampleValues: sqldb.SampleValues{Disable: true}})
	ds, err := db.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, d := range withFKs {
		for _, r := range d.Relationships {
			want[strings.ReplaceAll(joinLine(r), sampleSchema+".", "")] = true
		}
	}
	if len(want) != 4 {
		t.Fatalf("the sample declares %d foreign keys, want 4", len(want))
	}
	for _, d := range ds {
		if len(d.Relationships) != 0 {
			t.Fatalf("%s still has foreign keys: %+v", d.Name, d.Relationships)
		}
	}
	for _, noKeys := range []bool{false, true} {
		input := ds
		if noKeys {
			input = nil
			for _, d := range ds {
				d.Fields = slices.Clone(d.Fields)
				for j := range d.Fields {
					d.Fields[j].PrimaryKey = false
				}
				input = append(input, d)
			}
		}
		got, err := sqldb.InferJoins(context.Background(), db, input, sqldb.InferOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hits := 0
		for _, r := range got {
			l := strings.ReplaceAll(joinLine(r), schema+".", "")
			if want[l] {
				hits++
			} else {
				t.Errorf("primary keys dropped %v: unexpected join %s", noKeys, l)
			}
			if !r.Inferred || r.Confidence != 1 || r.Cardinality != domain.CardinalityManyToOne {
				t.Errorf("%s: %+v", l, r)
			}
		}
		precision, recall := 0.0, float64(hits)/float64(len(want))
		if len(got) > 0 {
			precision = float64(hits) / float64(len(got))
		}
		t.Logf("PostgreSQL sample without foreign keys, primary keys dropped %v: precision %.2f recall %.2f", noKeys, precision, recall)
		if recall != 1 {
			t.Errorf("primary keys dropped %v: recall %.2f", noKeys, recall)
		}
	}
}

func joinLine(r domain.Relationship) string {
	return fmt.Sprintf("%s(%s) -> %s(%s)", r.From, strings.Join(r.FromColumns, ","), r.To, strings.Join(r.ToColumns, ","))
}
