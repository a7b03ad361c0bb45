package postgres

import (
	"fmt"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// DefaultDeniedFunctions is the deny list used when Policy.DeniedFunctions
// is nil. A statement that calls any of these anywhere (select list, FROM,
// WHERE, ORDER BY, subqueries, lateral joins, CTEs) is rejected. Entries are
// lower-case names; a trailing "*" matches a prefix and a leading "*" a
// suffix. Names are compared without their schema, so pg_catalog.pg_sleep
// and "pg_sleep" are the same function.
//
// The families:
//   - files and server access: pg_read_file, pg_read_binary_file, pg_ls_dir
//     and the other pg_ls_* listings, pg_stat_file, adminpack's pg_file_*,
//     pg_logdir_ls, pg_current_logfile, pg_relation_filepath,
//     pg_tablespace_location, large objects (lo_*, loread, lowrite), dblink*;
//   - SQL run from a string (which would escape this check): query_to_xml
//     and the other *_to_xml* dumps, ts_stat;
//   - administration: pg_terminate_backend, pg_cancel_backend,
//     pg_signal_backend, pg_reload_conf, pg_rotate_logfile, pg_promote,
//     pg_switch_wal, pg_create_* (restore points, replication slots),
//     pg_drop_replication_slot, pg_copy_*, pg_replication_*, pg_logical_*,
//     pg_wal_replay_*, pg_backup_*, pg_start_backup, pg_stop_backup,
//     pg_log_backend_memory_contexts, *_reset (statistics resets),
//     pg_import_system_collations, binary_upgrade_*, set_config, pg_notify,
//     pg_advisory_* and pg_try_advisory_* locks;
//   - sequences: nextval, setval, currval, lastval;
//   - sleeping: pg_sleep, pg_sleep_for, pg_sleep_until, and the names
//     time-based and shell attacks use on other databases (sleep,
//     benchmark, system), in case an extension or a user defined them;
//   - transaction ids that assign one: txid_current, pg_current_xact_id,
//     pg_export_snapshot;
//   - server and session information an analysis never needs: version,
//     current_setting, pg_show_all_settings, pg_show_all_file_settings,
//     pg_hba_file_rules, pg_ident_file_mappings, pg_config,
//     pg_stat_get_activity, pg_stat_get_backend_*, inet_server_addr,
//     inet_server_port, inet_client_addr, inet_client_port,
//     pg_postmaster_start_time, pg_conf_load_time, pg_backend_pid,
//     current_user, session_user, user, current_role, getpgusername,
//     current_database, current_catalog, current_schema, current_schemas.
//
// Functions reached through operators, casts or views are not visible to
// the parser; the read-only transaction, the statement timeout and the
// database user's privileges are the layers behind this one.
var DefaultDeniedFunctions = []string{
	// files and server access
	"pg_read_file", "pg_read_binary_file", "pg_ls_*", "pg_stat_file", "pg_file_*", "pg_logdir_ls",
	"pg_current_logfile", "pg_relation_filepath", "pg_tablespace_location",
	"lo_*", "loread", "lowrite", "dblink*",
	// SQL from a string
	"*_to_xml*", "ts_stat",
	// administration
	"pg_terminate_backend", "pg_cancel_backend", "pg_signal_backend", "pg_reload_conf", "pg_rotate_logfile",
	"pg_promote", "pg_switch_wal", "pg_create_*", "pg_drop_replication_slot", "pg_copy_*", "pg_replication_*",
	"pg_logical_*", "pg_wal_replay_*", "pg_backup_*", "pg_start_backup", "pg_stop_backup",
	"pg_log_backend_memory_contexts", "*_reset", "pg_import_system_collations", "binary_upgrade_*",
	"set_config", "pg_notify", "pg_advisory_*", "pg_try_advisory_*",
	// sequences
	"nextval", "setval", "currval", "lastval",
	// sleeping (and other databases' sleep and shell functions, should a
	// extension or a user define them here)
	"pg_sleep", "pg_sleep_for", "pg_sleep_until", "sleep", "benchmark", "system",
	// transaction ids
	"txid_current", "pg_current_xact_id", "pg_export_snapshot",
	// server and session information
	"version", "current_setting", "pg_show_all_settings", "pg_show_all_file_settings", "pg_hba_file_rules",
	"pg_ident_file_mappings", "pg_config", "pg_stat_get_activity", "pg_stat_get_backend_*",
	"inet_server_addr", "inet_server_port", "inet_client_addr", "inet_client_port",
	"pg_postmaster_start_time", "pg_conf_load_time", "pg_backend_pid",
	"current_user", "session_user", "user", "current_role", "getpgusername",
	"current_database", "current_catalog", "current_schema", "current_schemas",
}

// Policy configures the statement check. The zero value is the safe
// default: DefaultDeniedFunctions, no system catalogs, search_path public.
type Policy struct {
	// DeniedFunctions replaces DefaultDeniedFunctions when non-nil (use
	// an empty, non-nil slice to deny nothing). Extend the default with
	// append(slices.Clone(DefaultDeniedFunctions), "my_func").
	DeniedFunctions []string
	// AllowSystemCatalogs allows reading relations in pg_catalog,
	// information_schema and the other pg_* schemas (and unqualified pg_*
	// names, which PostgreSQL resolves in pg_catalog first). They are
	// refused by default: they describe roles, settings, other sessions'
	// queries and the server, and introspection already gives the agent
	// the schema it needs.
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
	catalogs   bool
	searchPath []string
}

// NewValidator compiles p.
func NewValidator(p Policy) *Validator {
	deny := p.DeniedFunctions
	if deny == nil {
		deny = DefaultDeniedFunctions
	}
	v := &Validator{exact: make(map[string]bool), catalogs: p.AllowSystemCatalogs, searchPath: p.SearchPath}
	if len(v.searchPath) == 0 {
		v.searchPath = []string{"public"}
	}
	for _, d := range deny {
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

// SearchPath returns the schemas unqualified names resolve against.
func (v *Validator) SearchPath() []string { return slices.Clone(v.searchPath) }

// Denied reports whether the function called name (without schema) is on
// the deny list.
func (v *Validator) Denied(name string) bool {
	name = strings.ToLower(name)
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
// clause, no denied function and no system catalog (unless allowed).
// When tables is not empty, every relation read must be in it
// (schema-qualified; bare entries are taken to be in the first schema of
// the search path). The error is an *sqldb.Error of kind
// sqldb.KindRejected, or of kind sqldb.KindSyntax when sql does not parse.
func (v *Validator) Validate(sql string, tables []string) (*Statement, error) {
	tree, err := pg_query.Parse(sql)
	if err != nil {
		msg := err.Error()
		return nil, &sqldb.Error{Kind: sqldb.KindSyntax, Message: msg, Hint: "fix the SQL syntax; the database is PostgreSQL"}
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

var sqlValueNames = map[pg_query.SQLValueFunctionOp]string{
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:    "current_role",
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_USER:    "current_user",
	pg_query.SQLValueFunctionOp_SVFOP_USER:            "user",
	pg_query.SQLValueFunctionOp_SVFOP_SESSION_USER:    "session_user",
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG: "current_catalog",
	pg_query.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:  "current_schema",
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
		name := ""
		if k := len(n.Funcname); k > 0 {
			name = n.Funcname[k-1].GetString_().GetSval()
		}
		if w.v.Denied(name) {
			return sqldb.Rejected(fmt.Sprintf("function %s is not allowed", name), "use only ordinary functions on the data; file, network, administration, sleep, sequence, lock and server-information functions are refused")
		}
	case *pg_query.SQLValueFunction:
		if name, ok := sqlValueNames[n.Op]; ok && w.v.Denied(name) {
			return sqldb.Rejected(fmt.Sprintf("%s is not allowed", strings.ToUpper(name)), "session and server information is not available to queries")
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
