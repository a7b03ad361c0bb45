package postgres

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// datasetsDir is where the third-party corpora live (never in the repo).
func datasetsDir(t testing.TB, sub string) string {
	t.Helper()
	dir := os.Getenv("BICHAT_DATASETS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "shared", "datasets")
	}
	p := filepath.Join(dir, sub)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("dataset %s is missing (%v); set BICHAT_DATASETS to the shared datasets directory", sub, err)
		}
		t.Skipf("dataset %s is missing (%v); set BICHAT_DATASETS to run this test", sub, err)
	}
	return p
}

var psqlVar = regexp.MustCompile(`(?m)^\\.*$`)

// regressStatements splits every pg-regress script with the parser (psql
// meta-commands removed) and returns how many statements parse and those
// of them that are one statement with a SELECT at the root.
func regressStatements(t testing.TB) (selects []string, parsed, files int) {
	dir := datasetsDir(t, "pg-regress/sql")
	paths, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no pg-regress scripts in %s: %v", dir, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		src := psqlVar.ReplaceAllString(string(b), "")
		parts, err := pg_query.SplitWithParser(src, true)
		if err != nil {
			// Scripts with deliberate syntax errors: fall back to the
			// scanner, and keep the pieces that parse on their own.
			parts, err = pg_query.SplitWithScanner(src, true)
			if err != nil {
				continue
			}
		}
		files++
		for _, s := range parts {
			tree, err := pg_query.Parse(s)
			if err != nil || strings.TrimSpace(s) == "" {
				continue
			}
			parsed++
			if len(tree.Stmts) == 1 && tree.Stmts[0].Stmt.GetSelectStmt() != nil {
				selects = append(selects, s)
			}
		}
	}
	return selects, parsed, files
}

// oracle decides independently of the validator (walking the JSON form of
// the parse tree, not the protobuf one) whether a statement is a plain
// read-only SELECT under v's function, operator and type policy: "" when
// it is, else the reason.
func oracle(t testing.TB, v *Validator, sql string) string {
	js, err := pg_query.ParseToJSON(sql)
	if err != nil {
		return "parse"
	}
	var tree struct {
		Stmts []struct {
			Stmt map[string]any `json:"stmt"`
		} `json:"stmts"`
	}
	if err := json.Unmarshal([]byte(js), &tree); err != nil {
		t.Fatal(err)
	}
	if len(tree.Stmts) != 1 {
		return "statements"
	}
	if _, ok := tree.Stmts[0].Stmt["SelectStmt"]; !ok {
		return "not select"
	}
	reason := ""
	var walk func(any)
	walk = func(n any) {
		if reason != "" {
			return
		}
		switch x := n.(type) {
		case map[string]any:
			for k, val := range x {
				switch {
				case k == "intoClause":
					reason = "into"
				case k == "lockingClause":
					reason = "locking"
				case strings.HasSuffix(k, "Stmt") && k != "SelectStmt":
					reason = "modifying " + k
				case k == "FuncCall":
					fc := val.(map[string]any)
					schema, name := jsonName(fc["funcname"])
					args, _ := fc["args"].([]any)
					variadic, _ := fc["func_variadic"].(bool)
					if ok, _ := v.funcVerdict(schema, name, len(args), variadic); !ok {
						reason = "function " + name
					}
				case k == "SQLValueFunction":
					op, _ := val.(map[string]any)["op"].(string)
					name := strings.ToLower(strings.TrimPrefix(op, "SVFOP_"))
					name = strings.TrimSuffix(name, "_n") // CURRENT_TIME(3)
					if v.Denied(name) {
						reason = "function " + name
					}
				case k == "A_Expr":
					kind, _ := val.(map[string]any)["kind"].(string)
					if !strings.Contains(kind, "BETWEEN") {
						if ok, _ := v.opVerdict(jsonName(val.(map[string]any)["name"])); !ok {
							reason = "operator"
						}
					}
				case k == "SubLink" || k == "SortBy":
					for _, f := range []string{"operName", "useOp"} {
						if names, ok := val.(map[string]any)[f]; ok {
							if ok, _ := v.opVerdict(jsonName(names)); !ok {
								reason = "operator"
							}
						}
					}
				case k == "typeName" || k == "TypeName":
					if names, ok := val.(map[string]any)["names"]; ok {
						if ok, _ := v.typeVerdict(jsonName(names)); !ok {
							reason = "type"
						}
					}
				case k == "RangeTableSample":
					if _, m := jsonName(val.(map[string]any)["method"]); m != "system" && m != "bernoulli" {
						reason = "tablesample"
					}
				case k == "RangeVar":
					rv := val.(map[string]any)
					if c, _ := rv["catalogname"].(string); c != "" {
						reason = "catalog"
					}
				}
				walk(val)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(tree.Stmts[0].Stmt)
	return reason
}

// TestBenignCorpus: every SELECT in PostgreSQL's own regression suite that
// the oracle finds free of refused functions, operators and cast types,
// INTO, locking and
// data-modifying parts must be accepted (system catalogs allowed, as the
// suite reads them constantly), and nothing else may be.
func TestBenignCorpus(t *testing.T) {
	t.Parallel()
	stmts, parsed, files := regressStatements(t)
	v := NewValidator(Policy{AllowSystemCatalogs: true})
	def := NewValidator(Policy{})
	var clean, accepted, acceptedDefault int
	selects := len(stmts)
	excluded := map[string]int{}
	for _, s := range stmts {
		why := oracle(t, v, s)
		_, err := v.Validate(s, nil)
		if why == "" {
			clean++
			if err != nil {
				t.Errorf("benign SELECT rejected: %v\n%s", err, s)
			} else {
				accepted++
			}
		} else {
			excluded[strings.Fields(why)[0]]++
			if err == nil {
				t.Errorf("SELECT with %s accepted:\n%s", why, s)
			}
		}
		if _, err := def.Validate(s, nil); err == nil {
			acceptedDefault++
		}
	}
	keys := make([]string, 0, len(excluded))
	for k := range excluded {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ex []string
	for _, k := range keys {
		ex = append(ex, k+"="+itoa(excluded[k]))
	}
	t.Logf("pg-regress: %d files, %d statements, %d SELECT statements; %d free of denied features, %d accepted (%s excluded: %s); with the default policy (no system catalogs) %d accepted",
		files, parsed, selects, clean, accepted, itoa(selects-clean), strings.Join(ex, " "), acceptedDefault)
	if selects < 1000 {
		t.Errorf("only %d SELECT statements found; the corpus did not split", selects)
	}
}

// jsonName reads a name list of the JSON parse tree as schema and name.
func jsonName(list any) (schema, name string) {
	names, _ := list.([]any)
	var parts []string
	for _, n := range names {
		s, _ := n.(map[string]any)["String"].(map[string]any)["sval"].(string)
		parts = append(parts, s)
	}
	switch len(parts) {
	case 0:
		return "", ""
	case 1:
		return "", parts[0]
	}
	return parts[len(parts)-2], parts[len(parts)-1]
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
