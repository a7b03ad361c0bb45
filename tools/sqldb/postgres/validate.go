package postgres

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	pgparser "github.com/pganalyze/pg_query_go/v6/parser"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// DefaultDeniedFunctions is the name-pattern deny list this package used
// before the function policy became default-deny.
//
// Deprecated: functions are now refused unless policy.txt (embedded in the
// package) or Policy.AllowFunctions allows them, so this list no longer
// decides anything by default. It is kept so that code which built
// Policy.DeniedFunctions from it still compiles; passing it denies these
// patterns on top of the allowlist, which is harmless. To allow a function
// use Policy.AllowFunctions; to refuse one use Policy.DeniedFunctions.
var DefaultDeniedFunctions = []string{
	"pg_read_file", "pg_read_binary_file", "pg_ls_*", "pg_stat_file", "pg_file_*", "pg_logdir_ls",
	"pg_current_logfile", "pg_relation_filepath", "pg_tablespace_location",
	"lo_*", "loread", "lowrite", "dblink*",
	"*_to_xml*", "ts_stat", "ts_rewrite",
	"pg_terminate_backend", "pg_cancel_backend", "pg_signal_backend", "pg_reload_conf", "pg_rotate_logfile",
	"pg_promote", "pg_switch_wal", "pg_create_*", "pg_drop_replication_slot", "pg_copy_*", "pg_replication_*",
	"pg_logical_*", "pg_wal_replay_*", "pg_backup_*", "pg_start_backup", "pg_stop_backup",
	"pg_log_backend_memory_contexts", "*_reset", "pg_stat_reset*", "pg_import_system_collations", "binary_upgrade_*",
	"set_config", "pg_notify", "pg_advisory_*", "pg_try_advisory_*",
	"nextval", "setval", "currval", "lastval",
	"pg_sleep", "pg_sleep_for", "pg_sleep_until", "sleep", "benchmark", "system",
	"txid_current", "pg_current_xact_id", "pg_export_snapshot",
	"version", "current_setting", "pg_show_all_settings", "pg_show_all_file_settings", "pg_hba_file_rules",
	"pg_ident_file_mappings", "pg_config", "pg_stat_get_activity", "pg_stat_get_backend_*",
	"inet_server_addr", "inet_server_port", "inet_client_addr", "inet_client_port",
	"pg_postmaster_start_time", "pg_conf_load_time", "pg_backend_pid",
	"current_user", "session_user", "user", "current_role", "getpgusername",
	"current_database", "current_catalog", "current_schema", "current_schemas",
}

// Policy configures the statement check. The zero value is the safe
// default: only the functions, operators and cast target types that the
// embedded policy.txt allows, no system catalogs, search_path public.
//
// The function policy is default-deny. policy.txt lists every function of
// PostgreSQL 15 (and what 16 and 17 add) with its family: aggregates,
// window, math, string, date/time, formatting, json/jsonb, array, range,
// network, full-text search without query text, geometric, uuid, xml
// values, ... are allowed; functions that run a query given as text
// (ts_rewrite(query, text), ts_stat, query_to_xml, cursor_to_xml), read a
// table named by an argument (table_to_xml), open connections, touch
// files or large objects, take locks, use sequences, read or change
// settings, read or reset statistics, control replication, signal or
// describe backends or read the catalogs are denied with a reason that
// the error names. Operators are allowed by name when every
// implementation of that name is an allowed function; casts and column
// definition lists by their target type (reg* types such as regclass,
// whose input looks objects up by name, are denied). A function, operator
// or type that is not listed is refused.
//
// Migrating from the deny-list policy: DeniedFunctions used to replace
// the default deny list and now adds to the default-deny policy, so an
// empty or replacing list no longer allows anything; a host that relied
// on that to call a function (its own, or one policy.txt denies) lists it
// in AllowFunctions instead.
type Policy struct {
	// AllowFunctions extends the allowlist with the host's own functions:
	// "name" allows an unqualified or any schema-qualified call of that
	// name, "schema.name" only calls qualified with that schema (calls
	// qualified with a schema other than pg_catalog always need an entry
	// here). A name policy.txt denies is allowed when listed here: the
	// host takes responsibility for it.
	AllowFunctions []string
	// DeniedFunctions refuses these function names on top of the
	// allowlist (it wins over AllowFunctions). Entries are lower-case names
	// compared without schema; a trailing "*" matches a prefix, a leading
	// "*" a suffix, both a substring.
	DeniedFunctions []string
	// AllowOperators extends the operator allowlist with the host's own
	// operators ("&&&" or "schema.&&&"), e.g. an extension's.
	AllowOperators []string
	// AllowTypes extends the cast target types with the host's own types
	// ("order_status" or "sales.order_status"): enums, domains, composite
	// types. Allow a domain only when its CHECK constraints call nothing
	// a query must not call.
	AllowTypes []string
	// AllowSystemCatalogs allows reading relations in pg_catalog,
	// information_schema and the other pg_* schemas (and unqualified pg_*
	// names, which PostgreSQL resolves in pg_catalog first). They are
	// refused by default: they describe roles, settings, other sessions'
	// queries and the server, and introspection already gives the agent
	// the schema it needs. It does not allow catalog functions or reg*
	// casts; list those in AllowFunctions and AllowTypes.
	AllowSystemCatalogs bool
	// SearchPath resolves unqualified relation names for the allowlist
	// (default ["public"]); the adapter also runs each statement with
	// exactly this search_path. An unqualified name resolves to the first
	// schema; relations in the other schemas must be qualified to pass an
	// allowlist.
	SearchPath []string
}

// Validator checks statements against a Policy. It is safe for concurrent
// use.
type Validator struct {
	exact      map[string]bool
	prefixes   []string
	suffixes   []string
	contains   []string
	allowFn    map[string]bool
	allowOp    map[string]bool
	allowType  map[string]bool
	catalogs   bool
	searchPath []string
}

// NewValidator compiles p.
func NewValidator(p Policy) *Validator {
	v := &Validator{exact: make(map[string]bool), catalogs: p.AllowSystemCatalogs, searchPath: p.SearchPath,
		allowFn: lowerSet(p.AllowFunctions), allowOp: lowerSet(p.AllowOperators), allowType: lowerSet(p.AllowTypes)}
	if len(v.searchPath) == 0 {
		v.searchPath = []string{"public"}
	}
	for _, d := range p.DeniedFunctions {
		d = strings.ToLower(strings.TrimSpace(d))
		switch {
		case d == "":
		case strings.HasPrefix(d, "*") && strings.HasSuffix(d, "*") && len(d) > 2:
			v.contains = append(v.contains, d[1:len(d)-1])
		case strings.HasSuffix(d, "*"):
			v.prefixes = append(v.prefixes, d[:len(d)-1])
		case strings.HasPrefix(d, "*"):
			v.suffixes = append(v.suffixes, d[1:])
		default:
			v.exact[d] = true
		}
	}
	return v
}

func lowerSet(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			m[n] = true
		}
	}
	return m
}

// SearchPath returns the schemas unqualified names resolve against.
func (v *Validator) SearchPath() []string { return slices.Clone(v.searchPath) }

// Denied reports whether an unqualified call of the function name is
// refused: it is not allowed by policy.txt or Policy.AllowFunctions, or
// Policy.DeniedFunctions matches it. A name policy.txt allows only with
// some argument counts (ts_rewrite) counts as denied.
func (v *Validator) Denied(name string) bool {
	ok, _ := v.funcVerdict("", name, -1, false)
	return !ok
}

// hostDenied reports whether Policy.DeniedFunctions matches name.
func (v *Validator) hostDenied(name string) bool {
	if v.exact[name] {
		return true
	}
	for _, p := range v.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, s := range v.suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	for _, c := range v.contains {
		if strings.Contains(name, c) {
			return true
		}
	}
	return false
}

// funcVerdict decides a call of schema.name with nargs arguments (-1:
// unknown); when it is refused, why says so for the error message.
func (v *Validator) funcVerdict(schema, name string, nargs int, variadic bool) (ok bool, why string) {
	schema, name = strings.ToLower(schema), strings.ToLower(name)
	if v.hostDenied(name) {
		return false, "denied by the host's policy"
	}
	if v.allowFn[name] || schema != "" && v.allowFn[schema+"."+name] {
		return true, ""
	}
	if schema != "" && schema != "pg_catalog" {
		return false, "not on the list of allowed functions"
	}
	if byArgs, ok := builtins.arity[name]; ok {
		r, found := byArgs[nargs]
		switch {
		case variadic:
			return false, "not allowed with VARIADIC arguments"
		case !found && nargs < 0:
			return false, "allowed only with some argument counts"
		case !found:
			return false, fmt.Sprintf("not allowed with %d arguments", nargs)
		case !r.allow:
			return false, r.describe()
		}
		return true, ""
	}
	r, found := builtins.funcs[name]
	switch {
	case !found:
		return false, "not on the list of allowed functions"
	case !r.allow:
		return false, r.describe()
	}
	return true, ""
}

// opVerdict decides an operator (schema may be empty).
func (v *Validator) opVerdict(schema, op string) (ok bool, why string) {
	schema = strings.ToLower(schema)
	if v.allowOp[op] || schema != "" && v.allowOp[schema+"."+op] {
		return true, ""
	}
	if schema != "" && schema != "pg_catalog" {
		return false, "not on the list of allowed operators"
	}
	r, found := builtins.ops[op]
	switch {
	case !found:
		return false, "not on the list of allowed operators"
	case !r.allow:
		return false, r.describe()
	}
	return true, ""
}

// typeVerdict decides a cast target or column definition type.
func (v *Validator) typeVerdict(schema, name string) (ok bool, why string) {
	schema, name = strings.ToLower(schema), strings.ToLower(name)
	if v.allowType[name] || schema != "" && v.allowType[schema+"."+name] {
		return true, ""
	}
	if schema != "" && schema != "pg_catalog" {
		return false, "not on the list of allowed types"
	}
	r, found := builtins.types[name]
	if !found && strings.HasPrefix(name, "_") {
		// _int4 is the array type of int4.
		r, found = builtins.types[name[1:]]
	}
	switch {
	case !found:
		return false, "not on the list of allowed types"
	case !r.allow:
		return false, r.describe()
	}
	return true, ""
}

// Statement is a statement that passed the check.
type Statement struct {
	// SQL is the statement's text without a trailing semicolon or
	// anything after it.
	SQL string
	// Relations are the relations it reads, schema-qualified as resolved
	// against the search path, sorted and without duplicates.
	Relations []string
}

// Validate parses sql with the PostgreSQL parser and accepts exactly one
// statement whose root is a SELECT (plain, WITH, set operations, VALUES)
// that contains no data-modifying statement, no SELECT INTO, no locking
// clause, no system catalog (unless allowed), and only functions,
// operators and cast types the policy allows (policy.txt plus the
// Policy's additions, minus Policy.DeniedFunctions).
// When tables is not empty, every relation read must be in it
// (schema-qualified; bare entries are taken to be in the first schema of
// the search path). The error is an *sqldb.Error of kind
// sqldb.KindRejected, or of kind sqldb.KindSyntax when sql does not parse,
// with Position (1-based, in characters) and the statement's line with a
// caret under it in Message.
func (v *Validator) Validate(sql string, tables []string) (*Statement, error) {
	tree, err := pg_query.Parse(sql)
	if err != nil {
		return nil, syntaxError(sql, err)
	}
	switch len(tree.Stmts) {
	case 0:
		return nil, sqldb.Rejected("the statement is empty", "send one SELECT statement")
	case 1:
	default:
		return nil, sqldb.Rejected(fmt.Sprintf("%d statements were sent; only one is allowed", len(tree.Stmts)), "send a single SELECT statement without semicolons between statements")
	}
	raw := tree.Stmts[0]
	sel := raw.GetStmt().GetSelectStmt()
	if sel == nil {
		return nil, sqldb.Rejected(fmt.Sprintf("%s statements are not allowed", stmtName(raw.GetStmt())), "only read-only SELECT statements (including WITH and VALUES) can run")
	}
	w := walker{v: v}
	if len(tables) > 0 {
		w.allow = make(map[string]bool, len(tables))
		for _, t := range tables {
			w.allow[v.qualify(t)] = true
		}
	}
	if err := w.message(sel.ProtoReflect(), nil); err != nil {
		return nil, err
	}
	text := sql
	start := int(raw.StmtLocation)
	if start >= 0 && start <= len(sql) {
		end := len(sql)
		if raw.StmtLen > 0 && start+int(raw.StmtLen) <= len(sql) {
			end = start + int(raw.StmtLen)
		}
		text = sql[start:end]
	}
	rels := make([]string, 0, len(w.rels))
	for r := range w.rels {
		rels = append(rels, r)
	}
	slices.Sort(rels)
	return &Statement{SQL: strings.TrimSpace(text), Relations: rels}, nil
}

// qualify turns an allowlist entry into schema.name.
func (v *Validator) qualify(t string) string {
	t = strings.TrimSpace(t)
	if strings.Contains(t, ".") {
		return t
	}
	return v.searchPath[0] + "." + t
}

func stmtName(n *pg_query.Node) string {
	if n == nil || n.Node == nil {
		return "empty"
	}
	name := fmt.Sprintf("%T", n.Node) // *pg_query.Node_InsertStmt
	name = strings.TrimPrefix(name, "*pg_query.Node_")
	name = strings.TrimSuffix(name, "Stmt")
	if name == "" {
		return "these"
	}
	return strings.ToUpper(splitCamel(name))
}

func splitCamel(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// scope is a linked list of visible CTE names.
type scope struct {
	names  []string
	parent *scope
}

func (s *scope) has(name string) bool {
	for ; s != nil; s = s.parent {
		if slices.Contains(s.names, name) {
			return true
		}
	}
	return false
}

type walker struct {
	v     *Validator
	allow map[string]bool
	rels  map[string]bool
}

// sqlValueNames names the SQL keywords that are functions (CURRENT_USER,
// LOCALTIMESTAMP(3), ...) as policy.txt lists them.
var sqlValueNames = map[pg_query.SQLValueFunctionOp]string{
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_DATE:        "current_date",
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME:        "current_time",
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N:      "current_time",
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP:   "current_timestamp",
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N: "current_timestamp",
	pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME:           "localtime",
	pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME_N:         "localtime",
	pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP:      "localtimestamp",
	pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:    "localtimestamp",
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:        "current_role",
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_USER:        "current_user",
	pg_query.SQLValueFunctionOp_SVFOP_USER:                "user",
	pg_query.SQLValueFunctionOp_SVFOP_SESSION_USER:        "session_user",
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:     "current_catalog",
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:      "current_schema",
}

// tableSampleMethods are the built-in TABLESAMPLE methods; others (an
// extension's) need Policy.AllowFunctions.
var tableSampleMethods = map[string]bool{"system": true, "bernoulli": true}

const funcHint = "use only ordinary functions on the data (aggregates, window functions, math, text, date/time, formatting, JSON, arrays, ranges); functions that run SQL from text or reach files, the server, sessions or catalogs are refused"

// qualifiedName splits a parser name list into schema and name.
func qualifiedName(names []*pg_query.Node) (schema, name string) {
	switch k := len(names); {
	case k == 0:
		return "", ""
	case k == 1:
		return "", names[0].GetString_().GetSval()
	default:
		return names[k-2].GetString_().GetSval(), names[k-1].GetString_().GetSval()
	}
}

func display(schema, name string) string {
	if schema == "" {
		return name
	}
	return schema + "." + name
}

// operator checks an operator name list (A_Expr, SubLink, ORDER BY USING).
func (w *walker) operator(names []*pg_query.Node) error {
	schema, op := qualifiedName(names)
	if ok, why := w.v.opVerdict(schema, op); !ok {
		return sqldb.Rejected(fmt.Sprintf("operator %s is not allowed (%s)", display(schema, op), why), "use the ordinary comparison, arithmetic, text, pattern, JSON, array and range operators")
	}
	return nil
}

// message checks one node and recurses into its fields.
func (w *walker) message(m protoreflect.Message, sc *scope) error {
	switch n := m.Interface().(type) {
	case *pg_query.SelectStmt:
		if n.IntoClause != nil {
			return sqldb.Rejected("SELECT INTO creates a table and is not allowed", "remove the INTO clause")
		}
		if len(n.LockingClause) > 0 {
			return sqldb.Rejected("locking clauses (FOR UPDATE, FOR SHARE, ...) are not allowed", "remove the FOR UPDATE/FOR SHARE clause")
		}
		if n.WithClause != nil {
			return w.with(m, n, sc)
		}
	case *pg_query.FuncCall:
		schema, name := qualifiedName(n.Funcname)
		if ok, why := w.v.funcVerdict(schema, name, len(n.Args), n.FuncVariadic); !ok {
			return sqldb.Rejected(fmt.Sprintf("function %s is not allowed (%s)", display(schema, name), why), funcHint)
		}
	case *pg_query.SQLValueFunction:
		name := sqlValueNames[n.Op]
		if ok, why := w.v.funcVerdict("", name, 0, false); !ok || name == "" {
			return sqldb.Rejected(fmt.Sprintf("%s is not allowed (%s)", strings.ToUpper(name), why), "session and server information is not available to queries")
		}
	case *pg_query.A_Expr:
		switch n.Kind {
		case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN,
			pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM:
			// Named "BETWEEN"...; PostgreSQL rewrites it to >= and <=.
		default:
			if err := w.operator(n.Name); err != nil {
				return err
			}
		}
	case *pg_query.SubLink:
		if len(n.OperName) > 0 {
			if err := w.operator(n.OperName); err != nil {
				return err
			}
		}
	case *pg_query.SortBy:
		if len(n.UseOp) > 0 {
			if err := w.operator(n.UseOp); err != nil {
				return err
			}
		}
	case *pg_query.TypeName:
		if n.PctType {
			return sqldb.Rejected("%TYPE references are not allowed", "cast to a type by name")
		}
		if len(n.Names) > 0 {
			schema, name := qualifiedName(n.Names)
			if ok, why := w.v.typeVerdict(schema, name); !ok {
				return sqldb.Rejected(fmt.Sprintf("type %s is not allowed here (%s)", display(schema, name), why), "cast to ordinary data types (numbers, text, dates, timestamps, intervals, boolean, json, uuid, arrays of them)")
			}
		}
	case *pg_query.RangeTableSample:
		schema, name := qualifiedName(n.Method)
		lname := strings.ToLower(name)
		builtin := (schema == "" || schema == "pg_catalog") && tableSampleMethods[lname]
		hostAllowed := w.v.allowFn[lname] || schema != "" && w.v.allowFn[strings.ToLower(schema)+"."+lname]
		if w.v.hostDenied(lname) || !builtin && !hostAllowed {
			return sqldb.Rejected(fmt.Sprintf("TABLESAMPLE method %s is not allowed", display(schema, name)), "use TABLESAMPLE SYSTEM or BERNOULLI")
		}
	case *pg_query.RangeVar:
		if err := w.relation(n, sc); err != nil {
			return err
		}
	case *pg_query.RawStmt:
	default:
		if name := m.Descriptor().Name(); strings.HasSuffix(string(name), "Stmt") {
			return sqldb.Rejected(fmt.Sprintf("%s statements are not allowed, not even inside WITH", strings.ToUpper(splitCamel(strings.TrimSuffix(string(name), "Stmt")))), "only read-only SELECT statements can run")
		}
	}
	return w.fields(m, sc, "")
}

// fields recurses into every set message field of m except skip.
func (w *walker) fields(m protoreflect.Message, sc *scope, skip protoreflect.Name) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind || fd.Name() == skip {
			return true
		}
		if fd.IsList() {
			l := val.List()
			for i := 0; i < l.Len(); i++ {
				if err = w.node(l.Get(i).Message(), sc); err != nil {
					return false
				}
			}
			return true
		}
		err = w.node(val.Message(), sc)
		return err == nil
	})
	return err
}

// node unwraps pg_query.Node oneofs before checking.
func (w *walker) node(m protoreflect.Message, sc *scope) error {
	if n, ok := m.Interface().(*pg_query.Node); ok {
		if n.Node == nil {
			return nil
		}
		// The oneof holds exactly one message; Range visits it.
		return w.fields(m, sc, "")
	}
	return w.message(m, sc)
}

// with checks a SELECT with a WITH clause: each CTE sees the earlier ones
// (all of them when RECURSIVE), the main query sees all.
func (w *walker) with(m protoreflect.Message, sel *pg_query.SelectStmt, sc *scope) error {
	ctes := sel.WithClause.Ctes
	names := make([]string, 0, len(ctes))
	for _, c := range ctes {
		names = append(names, c.GetCommonTableExpr().GetCtename())
	}
	for i, c := range ctes {
		cte := c.GetCommonTableExpr()
		if cte == nil {
			continue
		}
		visible := names[:i]
		if sel.WithClause.Recursive {
			visible = names
		}
		if err := w.fields(cte.ProtoReflect(), &scope{names: visible, parent: sc}, ""); err != nil {
			return err
		}
	}
	return w.fields(m, &scope{names: names, parent: sc}, "with_clause")
}

func (w *walker) relation(r *pg_query.RangeVar, sc *scope) error {
	schema, name := r.Schemaname, r.Relname
	if r.Catalogname != "" {
		return sqldb.Rejected(fmt.Sprintf("relation %s.%s.%s names another database", r.Catalogname, schema, name), "use schema.table names of this database")
	}
	if schema == "" && sc.has(name) {
		return nil // a CTE
	}
	if schema == "" {
		if strings.HasPrefix(name, "pg_") {
			schema = "pg_catalog"
		} else {
			schema = w.v.searchPath[0]
		}
	}
	full := schema + "." + name
	if !w.v.catalogs && (schema == "information_schema" || strings.HasPrefix(schema, "pg_")) {
		return sqldb.Rejected(fmt.Sprintf("system catalog %s is not available", full), "query the datasets you were given; describe_table shows their columns")
	}
	if w.allow != nil && !w.allow[full] {
		return sqldb.Rejected(fmt.Sprintf("relation %s is not in the allowed datasets", full), "use only the allowed datasets, schema-qualified")
	}
	if w.rels == nil {
		w.rels = make(map[string]bool)
	}
	w.rels[full] = true
	return nil
}

// syntaxError turns a parser error into a KindSyntax error that points at
// the parser's position, with the statement's line and a caret under it,
// the way psql shows the server's errors.
func syntaxError(sql string, err error) *sqldb.Error {
	e := &sqldb.Error{Kind: sqldb.KindSyntax, Message: err.Error(), Hint: "fix the SQL syntax near the marked position; the database is PostgreSQL"}
	var pe *pgparser.Error
	if errors.As(err, &pe) {
		e.Message = pe.Message
		if pe.Cursorpos > 0 {
			e.Position = pe.Cursorpos
			e.Locate(sql)
		}
	}
	return e
}
