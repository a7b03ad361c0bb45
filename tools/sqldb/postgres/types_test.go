package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// Types without a plain Go mapping come back as the server's text form,
// never as raw bytes or a printed Go struct.
func TestQueryTypesWithoutGoMappingComeBackAsText(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	exec(t,
		"CREATE TYPE "+schema+".mood AS ENUM ('sad', 'happy')",
		"CREATE TYPE "+schema+".pair AS (n int, label text)",
	)
	// Each column: name, type, a literal, and the text the server gives
	// for it (checked against the server's own ::text below, so a wrong
	// expectation here fails too).
	cols := []struct{ name, typ, lit, want string }{
		{"tsv", "tsvector", "'fat cats ate fat rats'", "'ate' 'cats' 'fat' 'rats'"},
		{"tsq", "tsquery", "'fat & (rat | cat)'", "'fat' & ( 'rat' | 'cat' )"},
		{"lsn", "pg_lsn", "'16/B374D848'", "16/B374D848"},
		{"txs", "txid_snapshot", "'10:20:10,14,15'", "10:20:10,14,15"},
		{"snap", "pg_snapshot", "'10:20:10,14,15'", "10:20:10,14,15"},
		{"mac8", "macaddr8", "'08:00:2b:01:02:03:04:05'", "08:00:2b:01:02:03:04:05"},
		{"mac", "macaddr", "'08:00:2b:01:02:03'", "08:00:2b:01:02:03"},
		{"varbit", "bit varying(8)", "B'10101'", "10101"},
		{"fixbit", "bit(4)", "B'1001'", "1001"},
		{"cash", "money", "12.5", ""},
		{"doc", "xml", "'<a x=\"1\">b</a>'", `<a x="1">b</a>`},
		{"r", "int4range", "'[1,5)'", "[1,5)"},
		{"mr", "int4multirange", "'{[1,3), [7,9)}'", "{[1,3),[7,9)}"},
		{"dr", "daterange", "'[2024-01-01,2024-02-01)'", "[2024-01-01,2024-02-01)"},
		{"pt", "point", "'(1.5,2)'", "(1.5,2)"},
		{"bx", "box", "'((0,0),(2,3))'", "(2,3),(0,0)"},
		{"poly", "polygon", "'((0,0),(1,1),(1,0))'", "((0,0),(1,1),(1,0))"},
		{"circ", "circle", "'<(1,1),2>'", "<(1,1),2>"},
		{"ival", "interval", "'1 day 02:00:03.5'", "1 day 02:00:03.5"},
		{"net", "cidr", "'10.1.0.0/16'", "10.1.0.0/16"},
		{"host", "inet", "'192.168.0.1/24'", "192.168.0.1/24"},
		{"t", "time", "'12:34:56.789'", "12:34:56.789"},
		{"ttz", "timetz", "'12:34:56+02'", "12:34:56+02"},
		{"mood", schema + ".mood", "'happy'", "happy"},
		{"pr", schema + ".pair", "ROW(1, 'a b')", `(1,"a b")`},
		{"tsvs", "tsvector[]", "ARRAY['a b'::tsvector, 'c']", `{"'a' 'b'",'c'}`},
		{"nets", "inet[]", "'{10.0.0.1,::1}'", "{10.0.0.1,::1}"},
		{"moods", schema + ".mood[]", "'{sad,happy}'", "{sad,happy}"},
		{"prs", schema + ".pair[]", "ARRAY[ROW(1, 'x'), ROW(2, NULL)]::" + schema + ".pair[]", `{"(1,x)","(2,)"}`},
		{"pts", "point[]", "ARRAY['(1,2)'::point]", `{"(1,2)"}`},
		{"rs", "int4range[]", "ARRAY['[1,2)'::int4range]", `{"[1,2)"}`},
		{"ivals", "interval[]", "ARRAY['1 hour'::interval]", `{01:00:00}`},
		{"cashes", "money[]", "ARRAY[1::money]", ""},
	}
	var defs, lits, texts []string
	for _, c := range cols {
		defs = append(defs, c.name+" "+c.typ)
		lits = append(lits, c.lit)
		texts = append(texts, c.name+"::text")
	}
	exec(t,
		"CREATE TABLE "+schema+".types ("+strings.Join(defs, ", ")+")",
		"INSERT INTO "+schema+".types VALUES ("+strings.Join(lits, ", ")+")",
		"INSERT INTO "+schema+".types DEFAULT VALUES", // NULLs stay nil
	)
	db := readDB(t, schema, Options{})
	ctx := context.Background()
	res, err := db.Query(ctx, "SELECT * FROM types ORDER BY tsv NULLS LAST", sqldb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// The server's own text, through a plain pgx query.
	row := admin(t).QueryRow(ctx, "SELECT "+strings.Join(texts, ", ")+" FROM "+schema+".types WHERE tsv IS NOT NULL")
	vals := make([]*string, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := row.Scan(dest...); err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || len(res.Rows[0]) != len(cols) {
		t.Fatalf("rows %v", res.Rows)
	}
	for i, c := range cols {
		got := res.Rows[0][i]
		s, ok := got.(string)
		if !ok {
			t.Errorf("%s (%s): %T %v, want its text", c.name, c.typ, got, got)
			continue
		}
		if vals[i] == nil || s != *vals[i] {
			t.Errorf("%s (%s): %q, server text %v", c.name, c.typ, s, vals[i])
		}
		if c.want != "" && s != c.want {
			t.Errorf("%s (%s): %q, want %q", c.name, c.typ, s, c.want)
		}
		if res.Rows[1][i] != nil {
			t.Errorf("%s NULL came back as %#v", c.name, res.Rows[1][i])
		}
		if res.Columns[i].Type == "" {
			t.Errorf("%s: no column type for %s", c.name, c.typ)
		}
	}
}

// Types with a Go mapping keep it through the text format: exact
// numerics, NaN and infinities, dates and timestamps, bytea, JSON and
// arrays.
func TestQueryTypedValuesThroughText(t *testing.T) {
	t.Parallel()
	db := sample(t, Options{})
	res, err := db.Query(context.Background(), `SELECT 0.1::numeric, 0.1::float4, 'NaN'::numeric, '-Infinity'::float8, 123456789012::int8, 2::int2,
		true, false, 'x'::char(3), 'a'::name, DATE '2024-02-29', TIMESTAMP '2024-01-02 03:04:05.123456',
		TIMESTAMPTZ '2024-01-02 03:04:05+02', 'infinity'::date, '\xdeadbeef'::bytea, '{"b": 1, "a": [true]}'::json,
		ARRAY[1.5, 2]::numeric[], ARRAY['2024-01-01'::date], 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid,
		1e400::numeric`, sqldb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%#v", res.Rows[0][:10])
	want := `[]interface {}{0.1, 0.1, NaN, -Inf, 123456789012, 2, true, false, "x  ", "a"}`
	if got != want {
		t.Errorf("scalars\n got %s\nwant %s", got, want)
	}
	r := res.Rows[0]
	for i, w := range map[int]string{10: "2024-02-29T00:00:00Z", 11: "2024-01-02T03:04:05.123456Z", 12: "2024-01-02T01:04:05Z"} {
		if ts, ok := r[i].(time.Time); !ok || ts.UTC().Format(time.RFC3339Nano) != w {
			t.Errorf("column %d: %T %v, want the time %s", i, r[i], r[i], w)
		}
	}
	if b, ok := r[14].([]byte); !ok || fmt.Sprintf("%x", b) != "deadbeef" {
		t.Errorf("bytea %T %v", r[14], r[14])
	}
	for i, w := range map[int]string{13: "infinity", 15: `{"a":[true],"b":1}`, 16: `[1.5,2]`, 18: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"} {
		if r[i] != w {
			t.Errorf("column %d: %#v, want %q", i, r[i], w)
		}
	}
	if s, ok := r[17].(string); !ok || !strings.HasPrefix(s, `["2024-01-01T00:00:00`) {
		t.Errorf("date array %#v", r[17])
	}
	if f, ok := r[19].(float64); !ok || f <= 1e308 {
		t.Errorf("huge numeric %#v", r[19])
	}
}
