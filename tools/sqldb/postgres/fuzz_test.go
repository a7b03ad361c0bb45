package postgres

import (
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// FuzzValidate: whatever the validator accepts parses as exactly one
// read-only SELECT, both as returned and wrapped in the DECLARE ... CURSOR
// FOR the adapter sends, and the independent oracle finds nothing denied
// in it. Run with: go test -fuzz=FuzzValidate ./tools/sqldb/postgres/
func FuzzValidate(f *testing.F) {
	for _, s := range ownAttacks {
		f.Add(s)
	}
	for _, s := range []string{
		"SELECT 1",
		"WITH t AS (SELECT 1 AS a) SELECT a FROM t",
		"SELECT $x$;$x$ AS s -- ;",
		"VALUES (1), (2) ORDER BY 1",
		"SELECT * FROM a JOIN b USING (id) WHERE x IN (SELECT y FROM c)",
		"(SELECT 1) UNION (SELECT 2)",
		"SELECT 1 /* ; DELETE */",
	} {
		f.Add(s)
	}
	v := NewValidator(Policy{})
	f.Fuzz(func(t *testing.T, sql string) {
		st, err := v.Validate(sql, nil)
		if err != nil {
			return
		}
		tree, err := pg_query.Parse(st.SQL)
		if err != nil {
			t.Fatalf("accepted statement does not parse: %q: %v", st.SQL, err)
		}
		if len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetSelectStmt() == nil {
			t.Fatalf("accepted %q is not exactly one SELECT: %v", st.SQL, tree.Stmts)
		}
		if why := oracle(t, v, st.SQL); why != "" {
			t.Fatalf("accepted %q contains %s", st.SQL, why)
		}
		if why := oracle(t, v, sql); why != "" {
			t.Fatalf("accepted input %q contains %s", sql, why)
		}
		decl, err := pg_query.Parse(declarePrefix + st.SQL)
		if err != nil {
			t.Fatalf("DECLARE of accepted %q does not parse: %v", st.SQL, err)
		}
		if len(decl.Stmts) != 1 || decl.Stmts[0].Stmt.GetDeclareCursorStmt().GetQuery().GetSelectStmt() == nil {
			t.Fatalf("DECLARE of accepted %q is not one cursor over a SELECT", st.SQL)
		}
	})
}
