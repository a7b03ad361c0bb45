package sqldb_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// counting records the statements an InferJoins run sends.
type counting struct {
	sqldb.DB
	mu    sync.Mutex
	stmts []string
	lims  []sqldb.Limits
}

func (c *counting) Query(ctx context.Context, q string, lim sqldb.Limits) (*sqldb.Result, error) {
	c.mu.Lock()
	c.stmts = append(c.stmts, q)
	c.lims = append(c.lims, lim)
	c.mu.Unlock()
	return c.DB.Query(ctx, q, lim)
}

// joinKey is "from(cols) -> to(cols)".
func joinKey(r domain.Relationship) string {
	return fmt.Sprintf("%s(%s) -> %s(%s)", r.From, strings.Join(r.FromColumns, ","), r.To, strings.Join(r.ToColumns, ","))
}

// precisionRecall compares inferred with declared joins.
func precisionRecall(inferred, declared []domain.Relationship) (p, r float64, extra, missed []string) {
	want := map[string]bool{}
	for _, d := range declared {
		want[joinKey(d)] = true
	}
	got := map[string]bool{}
	hits := 0
	for _, i := range inferred {
		k := joinKey(i)
		got[k] = true
		if want[k] {
			hits++
		} else {
			extra = append(extra, k)
		}
	}
	for k := range want {
		if !got[k] {
			missed = append(missed, k)
		}
	}
	slices.Sort(missed)
	if len(inferred) > 0 {
		p = float64(hits) / float64(len(inferred))
	}
	if len(declared) > 0 {
		r = float64(hits) / float64(len(declared))
	}
	return p, r, extra, missed
}

// withoutJoins returns the datasets with their declared relationships
// removed (and with primary keys dropped too when noKeys), and those
// relationships.
func withoutJoins(ds []domain.Dataset, noKeys bool) ([]domain.Dataset, []domain.Relationship) {
	var declared []domain.Relationship
	out := make([]domain.Dataset, len(ds))
	for i, d := range ds {
		declared = append(declared, d.Relationships...)
		d.Relationships = nil
		d.Fields = slices.Clone(d.Fields)
		if noKeys {
			for j := range d.Fields {
				d.Fields[j].PrimaryKey = false
			}
		}
		out[i] = d
	}
	return out, declared
}

func sampleSQLite(t testing.TB) *sqlite.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "retail.db")
	if err := sampledata.CreateSQLite(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestInferJoinsRecoversTheSampleForeignKeys(t *testing.T) {
	t.Parallel()
	db := sampleSQLite(t)
	ds, err := db.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, noKeys := range []bool{false, true} {
		t.Run(fmt.Sprintf("primary keys dropped %v", noKeys), func(t *testing.T) {
			t.Parallel()
			bare, declared := withoutJoins(ds, noKeys)
			if len(declared) != 4 {
				t.Fatalf("the sample declares %d foreign keys, want 4", len(declared))
			}
			c := &counting{DB: db}
			got, err := sqldb.InferJoins(context.Background(), c, bare, sqldb.InferOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p, r, extra, missed := precisionRecall(got, declared)
			t.Logf("SQLite sample, primary keys dropped %v: precision %.2f recall %.2f (%d joins, %d probes)", noKeys, p, r, len(got), len(c.stmts))
			if p != 1 || r != 1 {
				t.Errorf("precision %.2f recall %.2f; extra %q, missed %q", p, r, extra, missed)
			}
			for _, j := range got {
				if !j.Inferred || j.Confidence != 1 || j.Cardinality != domain.CardinalityManyToOne {
					t.Errorf("%s: %+v", joinKey(j), j)
				}
			}
			// Every probe named its tables (the allowlist) and read one row.
			for i, lim := range c.lims {
				if len(lim.Tables) == 0 || lim.MaxRows != 1 || lim.Timeout != sqldb.DefaultInferTimeout {
					t.Errorf("probe %q ran with %+v", c.stmts[i], lim)
				}
			}
		})
	}
}

// fixture builds an SQLite database from statements and opens it read-only.
func fixture(t testing.TB, stmts ...string) *sqlite.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.db")
	w, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := w.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	w.Close()
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// series is "VALUES (a), (a+1), ... (b)" rows for an INSERT.
func series(a, b int, row func(i int) string) string {
	var rows []string
	for i := a; i <= b; i++ {
		rows = append(rows, "("+row(i)+")")
	}
	return strings.Join(rows, ", ")
}

func TestInferJoinsNamesTypesAndOverlap(t *testing.T) {
	t.Parallel()
	itoa := func(i int) string { return fmt.Sprint(i) }
	db := fixture(t,
		"CREATE TABLE teams (id INTEGER PRIMARY KEY, name TEXT)",
		"INSERT INTO teams VALUES "+series(1, 8, func(i int) string { return fmt.Sprintf("%d, 'team %d'", i, i) }),
		"CREATE TABLE team_profiles (team_id INTEGER PRIMARY KEY, motto TEXT)",
		"INSERT INTO team_profiles VALUES "+series(1, 8, func(i int) string { return fmt.Sprintf("%d, 'go'", i) }),
		"CREATE TABLE countries (code TEXT, name TEXT)", // no primary key, unique codes
		"INSERT INTO countries VALUES ('FR', 'France'), ('DE', 'Germany'), ('IT', 'Italy')",
		"CREATE TABLE venues (id INTEGER PRIMARY KEY, country_code TEXT)",
		"INSERT INTO venues VALUES (1, 'FR'), (2, 'DE'), (3, 'IT'), (4, 'FR')",
		"CREATE TABLE referees (id INTEGER PRIMARY KEY)",
		"INSERT INTO referees VALUES "+series(1, 10, itoa),
		"CREATE TABLE matches (id INTEGER PRIMARY KEY, home_team_id INTEGER, away_team_id INTEGER, venue_id INTEGER, batch_id INTEGER, referee_id INTEGER)",
		// referee_id: 6 of 10 values exist in referees; batch_id has no table.
		"INSERT INTO matches VALUES "+series(1, 40, func(i int) string {
			return fmt.Sprintf("%d, %d, %d, %d, %d, %d", i, 1+i%8, 1+(i+3)%8, 1+i%4, 1+i%4, 5+i%10)
		}),
		"CREATE TABLE items (sku TEXT PRIMARY KEY, label TEXT)",
		"INSERT INTO items VALUES ('A1', 'a'), ('B2', 'b'), ('C3', 'c')",
		"CREATE TABLE stock (sku TEXT, qty INTEGER)",
		"INSERT INTO stock VALUES ('A1', 3), ('B2', 0), ('A1', 7)",
		"CREATE TABLE shifts (id INTEGER, label TEXT)", // no key, duplicate ids
		"INSERT INTO shifts VALUES (1, 'a'), (1, 'b'), (2, 'c')",
		"CREATE TABLE assignments (shift_id INTEGER, who TEXT)",
		"INSERT INTO assignments VALUES (1, 'x'), (2, 'y')",
		"CREATE TABLE tickets (id INTEGER PRIMARY KEY, team_id TEXT)", // text against an integer key
		"INSERT INTO tickets VALUES (1, '1'), (2, '2')",
	)
	ds, err := db.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts sqldb.InferOptions
		want []string // joinKey and confidence
	}{
		{"defaults", sqldb.InferOptions{}, []string{
			"matches(away_team_id) -> teams(id) 0.92 many_to_one",
			"matches(home_team_id) -> teams(id) 0.92 many_to_one",
			"matches(venue_id) -> venues(id) 1.00 many_to_one",
			"stock(sku) -> items(sku) 0.95 many_to_one",
			"team_profiles(team_id) -> teams(id) 1.00 one_to_one",
			"venues(country_code) -> countries(code) 1.00 many_to_one",
		}},
		{"a stricter minimum drops role-named joins", sqldb.InferOptions{MinConfidence: 0.96}, []string{
			"matches(venue_id) -> venues(id) 1.00 many_to_one",
			"team_profiles(team_id) -> teams(id) 1.00 one_to_one",
			"venues(country_code) -> countries(code) 1.00 many_to_one",
		}},
		{"a partial overlap is its share", sqldb.InferOptions{MinConfidence: 0.5}, []string{
			"matches(away_team_id) -> teams(id) 0.92 many_to_one",
			"matches(home_team_id) -> teams(id) 0.92 many_to_one",
			"matches(referee_id) -> referees(id) 0.60 many_to_one",
			"matches(venue_id) -> venues(id) 1.00 many_to_one",
			"stock(sku) -> items(sku) 0.95 many_to_one",
			"team_profiles(team_id) -> teams(id) 1.00 one_to_one",
			"venues(country_code) -> countries(code) 1.00 many_to_one",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := sqldb.InferJoins(context.Background(), db, ds, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, r := range got {
				lines = append(lines, fmt.Sprintf("%s %.2f %s", joinKey(r), r.Confidence, r.Cardinality))
			}
			if !slices.Equal(lines, tc.want) {
				t.Errorf("joins\n got %q\nwant %q", lines, tc.want)
			}
		})
	}
}

func TestInferJoinsBoundsItsCost(t *testing.T) {
	t.Parallel()
	db := sampleSQLite(t)
	ds, err := db.Introspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bare, _ := withoutJoins(ds, false)
	for _, max := range []int{1, 2, 3} {
		c := &counting{DB: db}
		got, err := sqldb.InferJoins(context.Background(), c, bare, sqldb.InferOptions{MaxCandidates: max, SampleSize: 50})
		if err != nil {
			t.Fatal(err)
		}
		// Declared primary keys need no uniqueness check: one probe each.
		if len(c.stmts) != max || len(got) != max {
			t.Errorf("MaxCandidates %d: %d probes, %d joins", max, len(c.stmts), len(got))
		}
		for _, s := range c.stmts {
			if !strings.Contains(s, "LIMIT 50)") {
				t.Errorf("probe without the sample bound: %s", s)
			}
		}
	}
	if _, err := sqldb.InferJoins(context.Background(), db, bare, sqldb.InferOptions{MinConfidence: 1.5}); err == nil || !strings.Contains(err.Error(), "MinConfidence") {
		t.Errorf("MinConfidence 1.5: %v", err)
	}
	if _, err := sqldb.InferJoins(context.Background(), nil, bare, sqldb.InferOptions{}); err == nil {
		t.Error("a nil DB is accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sqldb.InferJoins(ctx, db, bare, sqldb.InferOptions{}); err == nil {
		t.Error("a cancelled context is not reported")
	}
}
