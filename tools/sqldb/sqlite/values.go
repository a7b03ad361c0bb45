package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// textAffinity reports whether a declared column type has SQLite's TEXT
// affinity (it contains CHAR, CLOB or TEXT, and not INT).
func textAffinity(typ string) bool {
	t := strings.ToUpper(typ)
	if strings.Contains(t, "INT") {
		return false
	}
	return strings.Contains(t, "CHAR") || strings.Contains(t, "CLOB") || strings.Contains(t, "TEXT")
}

// sampleValues fills Field.Sensitive and Field.Values of out: for each
// table, one bounded query reads the distinct values of its non-sensitive
// text columns from at most MaxRows rows, at most MaxDistinct+1 per column
// (see SampleValues.KeepValues for what is kept).
// Sensitive columns are never read. A table whose query times out keeps
// no values.
func (db *DB) sampleValues(ctx context.Context, out []domain.Dataset) error {
	sv := db.sample.WithDefaults()
	for i := range out {
		d := &out[i]
		var cols []int
		for j := range d.Fields {
			f := &d.Fields[j]
			if sv.IsSensitive(d.Name, f.Name) {
				f.Sensitive = true
				continue
			}
			if !sv.Disable && d.Kind == "table" && textAffinity(f.Type) {
				cols = append(cols, j)
			}
		}
		if len(cols) == 0 {
			continue
		}
		vals, rows, err := db.readValues(ctx, d, cols, sv)
		if err != nil {
			return err
		}
		for k, j := range cols {
			if vals != nil {
				d.Fields[j].Values = sv.KeepValues(vals[k], rows, rows < sv.MaxRows)
			}
		}
	}
	return nil
}

// readValues runs the one bounded query of a table and returns the
// values of each column and the rows read; nil values mean it timed out.
func (db *DB) readValues(ctx context.Context, d *domain.Dataset, cols []int, sv sqldb.SampleValues) ([][]string, int, error) {
	var inner, outer strings.Builder
	outer.WriteString("(SELECT count(*) FROM s)")
	for k, j := range cols {
		if k > 0 {
			inner.WriteString(", ")
		}
		outer.WriteString(", ")
		c := "c" + strconv.Itoa(k)
		inner.WriteString(sqldb.QuoteIdent(d.Fields[j].Name) + " AS " + c)
		fmt.Fprintf(&outer, "(SELECT json_group_array(v) FROM (SELECT DISTINCT substr(CAST(%s AS TEXT), 1, %d) AS v FROM s WHERE %s IS NOT NULL LIMIT %d))",
			c, sv.MaxValueLen+1, c, sv.MaxDistinct+1)
	}
	q := "WITH s AS MATERIALIZED (SELECT " + inner.String() + " FROM " + sqldb.QuoteIdent(d.Source) + " LIMIT " + strconv.Itoa(sv.MaxRows) + ") SELECT " + outer.String()
	var rows int
	raw := make([]sql.NullString, len(cols))
	ptrs := []any{&rows}
	for k := range raw {
		ptrs = append(ptrs, &raw[k])
	}
	qctx, cancel := context.WithTimeout(ctx, sv.Timeout)
	defer cancel()
	if err := db.meta.QueryRowContext(qctx, q).Scan(ptrs...); err != nil {
		if ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
			return nil, 0, nil
		}
		return nil, 0, fmt.Errorf("sqlite: introspect: sample the values of %s: %w", d.Name, classify(ctx, err, ""))
	}
	vals := make([][]string, len(cols))
	for k, r := range raw {
		if !r.Valid {
			continue
		}
		if err := json.Unmarshal([]byte(r.String), &vals[k]); err != nil {
			return nil, 0, fmt.Errorf("sqlite: introspect: sample the values of %s: %w", d.Name, err)
		}
	}
	return vals, rows, nil
}
