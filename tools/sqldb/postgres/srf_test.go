package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/tools/sqldb"
)

func TestFunctionsInFrom(t *testing.T) {
	t.Parallel()
	for sql, want := range map[string][]string{
		"SELECT * FROM generate_series(1, 1e9) LIMIT 10":                                          {"generate_series"},
		"SELECT generate_series(1, 1e9) LIMIT 10":                                                 nil,
		"SELECT * FROM (SELECT generate_series(1, 10) AS n) s":                                    nil,
		"SELECT g FROM generate_series(now() - interval '1 day', now(), interval '1 hour') g":     {"generate_series"},
		"SELECT * FROM t JOIN LATERAL unnest(t.a) u ON true":                                      {"unnest"},
		"SELECT * FROM ROWS FROM (generate_series(1, 3), pg_catalog.unnest(ARRAY[1])) AS x(a, b)": {"generate_series", "unnest"},
		"WITH w AS (SELECT * FROM jsonb_each('{}')) SELECT * FROM w":                              {"jsonb_each"},
		"SELECT (SELECT count(*) FROM generate_series(1, x)) FROM t":                              {"generate_series"},
		"SELECT upper(a) FROM t WHERE b > length(c)":                                              nil,
		"not sql at all": nil,
	} {
		if got := functionsInFrom(sql); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", sql, got, want)
		}
	}
}

// A timeout of a set-returning function in FROM gets a hint that fits it
// (PostgreSQL materialises the function before the first row, so a LIMIT
// does not help); the rewrite the hint proposes runs at once; other
// timeouts keep the LIMIT advice.
func TestTimeoutHintForFunctionInFrom(t *testing.T) {
	t.Parallel()
	db := sample(t, Options{})
	ctx := context.Background()
	lim := sqldb.Limits{Timeout: 300 * time.Millisecond}
	_, err := db.Query(ctx, "SELECT * FROM generate_series(1, 1e9) LIMIT 10", lim)
	if sqldb.KindOf(err) != sqldb.KindTimeout {
		t.Fatalf("want a timeout, got %v", err)
	}
	msg := err.Error()
	for _, w := range []string{"generate_series in FROM", "LIMIT does not shorten it", "bound the function's arguments", "select list"} {
		if !strings.Contains(msg, w) {
			t.Errorf("hint lacks %q: %s", w, msg)
		}
	}
	if strings.Contains(msg, "add a LIMIT") {
		t.Errorf("hint still says add a LIMIT: %s", msg)
	}
	// The rewrite the hint proposes streams.
	res, err := db.Query(ctx, "SELECT * FROM (SELECT generate_series(1, 1e9) AS x) s LIMIT 10", lim)
	if err != nil || len(res.Rows) != 10 {
		t.Fatalf("the proposed rewrite: %v %v", res, err)
	}
	// A slow statement without a function in FROM keeps the usual advice.
	_, err = db.Query(ctx, "SELECT count(*) FROM order_items a, order_items b, order_items c", lim)
	if sqldb.KindOf(err) != sqldb.KindTimeout || !strings.Contains(err.Error(), "add a LIMIT") || strings.Contains(err.Error(), "in FROM") {
		t.Errorf("plain timeout: %v", err)
	}
}
