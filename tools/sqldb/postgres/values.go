package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// relInfo is what value sampling needs to know of one introspected
// relation: its relkind, whether row-level security is enabled, and for
// each field whether it is of a string or enum type.
type relInfo struct {
	kind        string
	rowSecurity bool
	text        []bool
}

// colStats is one pg_stats row.
type colStats struct {
	nDistinct float64
	nullFrac  float64
	mcv       []string
	freqs     []float64
}

// estimate is the estimated number of distinct values, -1 when unknown.
func (s colStats) estimate(rows int64) float64 {
	switch {
	case s.nDistinct > 0:
		return s.nDistinct
	case s.nDistinct < 0 && rows > 0:
		return -s.nDistinct * float64(rows)
	}
	return -1
}

// complete reports whether the most common values are every value ANALYZE
// saw: as many as the distinct estimate, their frequencies adding up to
// the non-null share.
func (s colStats) complete(rows int64) bool {
	est := s.estimate(rows)
	if len(s.mcv) == 0 || est <= 0 || len(s.mcv) != int(math.Round(est)) {
		return false
	}
	sum := s.nullFrac
	for _, f := range s.freqs {
		sum += f
	}
	return sum >= 0.999
}

// sampleValues fills Field.Sensitive and Field.Values of out. Sensitive
// columns are never read. Statistics come first (pg_stats, free): a column
// whose distinct estimate exceeds MaxDistinct is skipped, one whose most
// common values are complete takes them. The other candidate columns of a
// table are read with one bounded query (a row-limited, and for big
// tables TABLESAMPLE'd, subquery) in a READ ONLY transaction with a
// statement timeout; a table whose query times out keeps no values.
func (db *DB) sampleValues(ctx context.Context, out []domain.Dataset, info []relInfo) error {
	sv := db.opts.SampleValues.WithDefaults()
	type cand struct{ ds, field int }
	var (
		cands []cand
		names []string
	)
	for i := range out {
		d := &out[i]
		for j := range d.Fields {
			f := &d.Fields[j]
			if sv.IsSensitive(d.Name, f.Name) {
				f.Sensitive = true
				continue
			}
			if sv.Disable || info[i].rowSecurity || !info[i].text[j] {
				continue
			}
			if k := info[i].kind; k != "r" && k != "p" && k != "m" {
				continue
			}
			cands = append(cands, cand{i, j})
			names = append(names, d.Name+"."+f.Name)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	stats, err := db.columnStats(ctx, names)
	if err != nil {
		return err
	}
	// The columns each table still needs to read.
	pending := map[int][]int{}
	var order []int
	for n, c := range cands {
		d := &out[c.ds]
		st, ok := stats[names[n]]
		if ok {
			est := st.estimate(d.RowEstimate)
			if est > float64(sv.MaxDistinct) {
				continue
			}
			if st.complete(d.RowEstimate) {
				d.Fields[c.field].Values = sv.KeepValues(st.mcv, 0, true)
				continue
			}
		}
		if _, seen := pending[c.ds]; !seen {
			order = append(order, c.ds)
		}
		pending[c.ds] = append(pending[c.ds], c.field)
	}
	for _, i := range order {
		vals, rows, whole, err := db.readValues(ctx, out[i], pending[i], sv)
		if err != nil {
			return err
		}
		for k, j := range pending[i] {
			if vals != nil {
				out[i].Fields[j].Values = sv.KeepValues(vals[k], rows, whole)
			}
		}
	}
	return nil
}

// columnStats reads pg_stats for the "schema.table.column" names. pg_stats
// shows only columns the role may read and hides tables whose row-level
// security is active.
func (db *DB) columnStats(ctx context.Context, names []string) (map[string]colStats, error) {
	const q = `
SELECT schemaname || '.' || tablename || '.' || attname, n_distinct, null_frac,
  most_common_vals::text::text[], most_common_freqs::float8[]
FROM pg_catalog.pg_stats
WHERE schemaname || '.' || tablename || '.' || attname = ANY($1::text[])
ORDER BY inherited`
	rows, err := db.pool.Query(ctx, q, names)
	if err != nil {
		return nil, fmt.Errorf("postgres: introspect: read pg_stats: %w", db.classify(ctx, err))
	}
	defer rows.Close()
	out := map[string]colStats{}
	for rows.Next() {
		var (
			name string
			s    colStats
			nd   float32
			nf   float32
		)
		if err := rows.Scan(&name, &nd, &nf, &s.mcv, &s.freqs); err != nil {
			return nil, fmt.Errorf("postgres: introspect: read pg_stats: %w", db.classify(ctx, err))
		}
		s.nDistinct, s.nullFrac = float64(nd), float64(nf)
		if _, dup := out[name]; !dup { // non-inherited statistics first
			out[name] = s
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: introspect: read pg_stats: %w", db.classify(ctx, err))
	}
	return out, nil
}

// readValues reads the distinct values of the fields (indexes into
// d.Fields) with one bounded query: at most MaxDistinct+1 per column, each
// cut at MaxValueLen+1 characters, from at most MaxRows rows. It returns
// the values, the rows read and whether those were the whole table; nil
// values when the query timed out.
func (db *DB) readValues(ctx context.Context, d domain.Dataset, fields []int, sv sqldb.SampleValues) ([][]string, int, bool, error) {
	var inner, outer strings.Builder
	outer.WriteString("(SELECT count(*) FROM s)")
	for k, j := range fields {
		if k > 0 {
			inner.WriteString(", ")
		}
		outer.WriteString(", ")
		c := "c" + strconv.Itoa(k)
		inner.WriteString(sqldb.QuoteIdent(d.Fields[j].Name) + " AS " + c)
		fmt.Fprintf(&outer, "ARRAY(SELECT DISTINCT left(%s::text, %d) FROM s WHERE %s IS NOT NULL LIMIT %d)", c, sv.MaxValueLen+1, c, sv.MaxDistinct+1)
	}
	table := sqldb.QuoteQualified(d.Source)
	sampled := d.RowEstimate > int64(10*sv.MaxRows)
	query := func(from string) string {
		return "WITH s AS MATERIALIZED (SELECT " + inner.String() + " FROM " + from + " LIMIT " + strconv.Itoa(sv.MaxRows) + ") SELECT " + outer.String()
	}
	var rows int64
	vals := make([][]string, len(fields))
	ptrs := []any{&rows}
	for k := range vals {
		ptrs = append(ptrs, &vals[k])
	}
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// At least 1 ms: 0 would turn the timeout off.
		ms := strconv.FormatInt(max(1, sv.Timeout.Milliseconds()), 10)
		if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true), set_config('search_path', 'pg_catalog', true)", ms); err != nil {
			return err
		}
		if sampled {
			// Read random pages, about twice the rows needed, not the
			// table. SYSTEM sampling picks whole pages, so a small share
			// of a table of few pages can come back (nearly) empty: then
			// the first MaxRows rows are read instead, as bounded.
			pct := math.Max(0.0001, 200*float64(sv.MaxRows)/float64(d.RowEstimate))
			if err := tx.QueryRow(ctx, query(table+" TABLESAMPLE SYSTEM ("+strconv.FormatFloat(pct, 'f', 4, 64)+")")).Scan(ptrs...); err != nil {
				return err
			}
			if rows >= int64(sv.MaxRows)/2 {
				return nil
			}
		}
		return tx.QueryRow(ctx, query(table)).Scan(ptrs...)
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "57014" && ctx.Err() == nil {
		return nil, 0, false, nil // statement timeout: this table keeps no values
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("postgres: introspect: sample the values of %s: %w", d.Name, db.classify(ctx, err))
	}
	return vals, int(rows), !sampled && int(rows) < sv.MaxRows, nil
}
