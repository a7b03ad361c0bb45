package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// Options configure a DB. The zero value is usable.
type Options struct {
	// Policy is the statement check (deny list, system catalogs, search
	// path).
	Policy Policy
	// TenantSetting, when set, names a custom setting ("app.tenant_id")
	// that each statement's transaction gets with SET LOCAL semantics
	// (set_config(name, Limits.TenantID, true)) so row-level security
	// policies can read it with current_setting. It must be of the form
	// prefix.name.
	//
	// It is the "tenant_id" entry of Settings in effect, kept for
	// compatibility with one difference: an empty tenant id is set as the empty string
	// (policies comparing with it then match no tenant) where a Settings
	// entry refuses the statement. The value is Limits.TenantID, or
	// Limits.Attributes["tenant_id"] when that is empty. Prefer
	// Settings{"tenant_id": "app.tenant_id"}; when both name the same
	// setting, the Settings rule (refuse when missing) applies.
	TenantSetting string
	// Settings maps data-scoping attributes (sqldb.Limits.Attributes,
	// filled by the data tools from agents.CallInfo.Attributes, which
	// bichat.Config.Attributes derives from the caller's principal) to
	// custom settings, e.g.
	//
	//	{"tenant_id": "app.tenant_id", "user_id": "app.user_id", "region": "app.region"}
	//
	// Before every statement (Query, Sample, the profile and sample tools)
	// each mapped setting is set for the statement's transaction alone,
	// with set_config(setting, value, true) in the same round trip as the
	// other settings; row-level security policies read them with
	// current_setting('app.user_id', true). Values are always sent as
	// bound parameters, never spliced into SQL text.
	//
	// It fails closed: a statement whose call lacks a mapped attribute
	// (or carries it empty) is refused with an error naming the attribute
	// and never reaches the server; so is a value longer than
	// MaxSettingValueBytes, holding a NUL byte or not valid UTF-8. For
	// "tenant_id", Limits.TenantID stands in when the attribute is absent,
	// and a call whose two tenant ids differ is refused.
	//
	// Setting names must look like prefix.name (letters, digits and
	// underscores) and may not be one of PostgreSQL's or a loaded
	// extension's own settings (Open and New ask the server) or start
	// with a reserved prefix (pg_, plpgsql, auto_explain, ...; see
	// Options.Validate); two attributes may not share a setting. The
	// statement check refuses set_config and SET, so the model's SQL
	// cannot change them; only a role without BYPASSRLS (CheckRole) is
	// subject to the policies.
	Settings map[string]string
	// Schemas limits Introspect to these schemas; empty means every schema
	// the user can see except pg_* and information_schema.
	Schemas []string
	// SampleValues configures the bounded sample of distinct values
	// Introspect collects for low-cardinality text and enum columns
	// (domain.Field.Values); the zero value samples with the defaults.
	// Tables with row-level security enabled, views and foreign tables are
	// never sampled.
	SampleValues sqldb.SampleValues
	// AllowPrivilegedRole skips the role check of Open and New (see
	// CheckRole), which otherwise refuses to work as a role that is a
	// superuser, may bypass row-level security, create roles or
	// replicate, is a member of pg_read_server_files,
	// pg_write_server_files, pg_execute_server_program,
	// pg_signal_backend or pg_write_all_data, or may write to (or create
	// in) the schemas the agent reads.
	//
	// The risk: the statement check and the read-only transaction are
	// then the only layers between the model's SQL and everything that
	// role may do. A statement that slips past them (a function missing
	// from a list, a server bug) runs with the role's full power: reading
	// or writing server files, running programs on the server, changing
	// or deleting data, stopping other sessions, ignoring the tenant's
	// row-level security. Set it only for a role that exists for tests or
	// local experiments, never for a role that reaches production data;
	// create a read-only role instead (the package documentation shows
	// how).
	AllowPrivilegedRole bool
}

var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$`)

// MaxSettingValueBytes is the longest attribute value Options.Settings and
// Options.TenantSetting accept; a longer one refuses the statement.
const MaxSettingValueBytes = 1024

// reservedSettingPrefixes are the prefixes (before the dot, compared
// case-insensitively) of settings that belong to PostgreSQL itself, its
// procedural languages or well-known extensions, which a data-scoping
// setting may not take over even when the extension is not loaded yet.
var reservedSettingPrefixes = []string{"pg_*", "plpgsql", "plperl", "plpython*", "pltcl", "auto_explain",
	"pg_stat_statements", "pgaudit", "sepgsql", "postgres_fdw", "dblink", "citus", "timescaledb", "pgrst", "bichat"}

// Validate checks the settings of o without a server: TenantSetting and
// every Settings entry must name a custom setting of the form
// prefix.name, not with a reserved prefix (pg_*, plpgsql, plperl,
// plpython*, pltcl, auto_explain, pg_stat_statements, pgaudit, sepgsql,
// postgres_fdw, dblink, citus, timescaledb, pgrst, bichat), attribute
// names must be non-empty, and no two attributes may share a setting.
// Open and New call it, then ask the server whether a name is one of its
// own (or a loaded extension's) settings.
func (o Options) Validate() error {
	check := func(what, name string) error {
		if !settingName.MatchString(name) {
			return fmt.Errorf("postgres: %s %q must look like prefix.name (e.g. app.user_id): letters, digits and underscores, one dot", what, name)
		}
		prefix := strings.ToLower(name[:strings.IndexByte(name, '.')])
		for _, r := range reservedSettingPrefixes {
			if p, ok := strings.CutSuffix(r, "*"); ok && strings.HasPrefix(prefix, p) || prefix == r {
				return fmt.Errorf("postgres: %s %q uses the reserved prefix %q (PostgreSQL's, an extension's or bichat's own settings); choose your own, e.g. app.%s", what, name, prefix, name[strings.IndexByte(name, '.')+1:])
			}
		}
		return nil
	}
	if o.TenantSetting != "" {
		if err := check("tenant setting", o.TenantSetting); err != nil {
			return err
		}
	}
	owner := map[string]string{} // lower-case setting -> attribute
	for _, attr := range slices.Sorted(maps.Keys(o.Settings)) {
		name := o.Settings[attr]
		if strings.TrimSpace(attr) == "" {
			return fmt.Errorf("postgres: Settings has an empty attribute name (for setting %q)", name)
		}
		if err := check("setting of attribute "+strconv.Quote(attr)+",", name); err != nil {
			return err
		}
		key := strings.ToLower(name)
		if prev, ok := owner[key]; ok {
			return fmt.Errorf("postgres: attributes %q and %q both map to setting %q; each setting takes one attribute", prev, attr, name)
		}
		owner[key] = attr
	}
	if o.TenantSetting != "" {
		if a, ok := owner[strings.ToLower(o.TenantSetting)]; ok && a != "tenant_id" {
			return fmt.Errorf("postgres: TenantSetting %q is also the setting of attribute %q; TenantSetting carries the tenant id", o.TenantSetting, a)
		}
	}
	return nil
}

// scoped is one transaction-local data-scoping setting.
type scoped struct {
	attr, setting string
	// legacy: Options.TenantSetting, set from Limits.TenantID and
	// allowed empty.
	legacy bool
}

// scopes returns the settings of o in a stable order (by setting name).
func (o Options) scopes() []scoped {
	var out []scoped
	seen := map[string]bool{}
	for _, attr := range slices.Sorted(maps.Keys(o.Settings)) {
		out = append(out, scoped{attr: attr, setting: o.Settings[attr]})
		seen[strings.ToLower(o.Settings[attr])] = true
	}
	if o.TenantSetting != "" && !seen[strings.ToLower(o.TenantSetting)] {
		out = append(out, scoped{attr: "tenant_id", setting: o.TenantSetting, legacy: true})
	}
	slices.SortFunc(out, func(a, b scoped) int { return strings.Compare(a.setting, b.setting) })
	return out
}

// scopeValues returns the value of each of db.scopes for lim, or the
// refusal of the statement.
func (db *DB) scopeValues(lim sqldb.Limits) ([]string, error) {
	if len(db.scopes) == 0 {
		return nil, nil
	}
	tenant := lim.Attributes["tenant_id"]
	if lim.TenantID != "" && tenant != "" && lim.TenantID != tenant {
		return nil, sqldb.Rejected("the call carries two different tenant ids (Limits.TenantID and the tenant_id attribute); the statement was not run",
			"the host must give the data tools one tenant per call")
	}
	if tenant == "" {
		tenant = lim.TenantID
	}
	vals := make([]string, len(db.scopes))
	for i, sc := range db.scopes {
		v := lim.Attributes[sc.attr]
		if sc.attr == "tenant_id" {
			v = tenant
		}
		if v == "" && !sc.legacy {
			return nil, sqldb.Rejected(fmt.Sprintf("the data-scoping attribute %q (setting %s) is missing from the call; the statement was not run", sc.attr, sc.setting),
				"the host maps its caller to attributes (bichat.Config.Attributes); without "+sc.attr+" no data is shown")
		}
		switch {
		case len(v) > MaxSettingValueBytes:
			return nil, sqldb.Rejected(fmt.Sprintf("the data-scoping attribute %q is %d bytes long, over the limit of %d; the statement was not run", sc.attr, len(v), MaxSettingValueBytes), "")
		case strings.IndexByte(v, 0) >= 0:
			return nil, sqldb.Rejected(fmt.Sprintf("the data-scoping attribute %q holds a NUL byte; the statement was not run", sc.attr), "")
		case !utf8.ValidString(v):
			return nil, sqldb.Rejected(fmt.Sprintf("the data-scoping attribute %q is not valid UTF-8; the statement was not run", sc.attr), "")
		}
		vals[i] = v
	}
	return vals, nil
}

// checkSettingNames refuses setting names the server knows as its own
// (or a loaded extension's): custom placeholders are not in pg_settings.
func checkSettingNames(ctx context.Context, pool *pgxpool.Pool, scopes []scoped) error {
	if len(scopes) == 0 {
		return nil
	}
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = sc.setting
	}
	rows, err := pool.Query(ctx, "SELECT name FROM pg_settings WHERE lower(name) = ANY(SELECT lower(n) FROM unnest($1::text[]) n) ORDER BY name", names)
	if err != nil {
		return fmt.Errorf("postgres: check the setting names: %w", err)
	}
	known, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("postgres: check the setting names: %w", err)
	}
	if len(known) > 0 {
		return fmt.Errorf("postgres: setting %s is one of the server's own settings (or a loaded extension's), not a custom one; choose your own name, e.g. app.user_id", strings.Join(known, ", "))
	}
	return nil
}

// DB is the PostgreSQL adapter of sqldb.DB.
type DB struct {
	pool    *pgxpool.Pool
	own     bool
	v       *Validator
	opts    Options
	secrets []string
	// scopes are the data-scoping settings; settingsSQL sets them and
	// the fixed settings in one statement.
	scopes      []scoped
	settingsSQL string
	types       sync.Map // uint32 -> string, names of types pgx does not know
}

var _ sqldb.DB = (*DB)(nil)

// Open connects to the database at dsn (a postgres:// URL or key=value
// string) with a pgx pool and checks the role as New does. Errors never
// contain the DSN or the password.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	secrets := []string{dsn}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("postgres: the connection string does not parse; expected postgres://user:password@host:port/database or key=value pairs")
	}
	if cfg.ConnConfig.Password != "" {
		secrets = append(secrets, cfg.ConnConfig.Password)
	}
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "bichat"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %s", sqldb.Redact(err.Error(), secrets...))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s:%d database %s: %s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, sqldb.Redact(errText(err), secrets...))
	}
	db, err := newDB(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	db.own = true
	db.secrets = secrets
	return db, nil
}

// errText is the error's message without pgconn's connection prefix,
// which may name the user.
func errText(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message + " (SQLSTATE " + pe.Code + ")"
	}
	return err.Error()
}

// RoleCheckTimeout bounds the role check New runs (Open uses its own
// context).
const RoleCheckTimeout = 30 * time.Second

// New wraps an existing pool; Close then leaves the pool open. Unless
// opts.AllowPrivilegedRole is set, it first runs CheckRole on the pool
// (bounded by RoleCheckTimeout) and refuses a privileged role with an
// error matching ErrPrivilegedRole.
func New(pool *pgxpool.Pool, opts Options) (*DB, error) {
	ctx, cancel := context.WithTimeout(context.Background(), RoleCheckTimeout)
	defer cancel()
	return newDB(ctx, pool, opts)
}

func newDB(ctx context.Context, pool *pgxpool.Pool, opts Options) (*DB, error) {
	if pool == nil {
		return nil, errors.New("postgres: nil pool")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	db := &DB{pool: pool, v: NewValidator(opts.Policy), opts: opts, scopes: opts.scopes()}
	// Rows come back in the text format (see read); these settings make
	// that text the form the decoders expect, whatever the role's or the
	// database's defaults. $1 and $2 are the timeout and the search path,
	// then a name and a value per data-scoping setting.
	db.settingsSQL = "SELECT set_config('statement_timeout', $1, true), set_config('search_path', $2, true), " +
		"set_config('DateStyle', 'ISO, MDY', true), set_config('IntervalStyle', 'postgres', true), " +
		"set_config('extra_float_digits', '3', true), set_config('bytea_output', 'hex', true)"
	for i := range db.scopes {
		db.settingsSQL += fmt.Sprintf(", set_config($%d, $%d, true)", 3+2*i, 4+2*i)
	}
	if pw := pool.Config().ConnConfig.Password; pw != "" {
		db.secrets = append(db.secrets, pw)
	}
	if err := checkSettingNames(ctx, pool, db.scopes); err != nil {
		return nil, err
	}
	if !opts.AllowPrivilegedRole {
		if err := CheckRole(ctx, pool, opts); err != nil {
			var pr *PrivilegedRoleError
			if errors.As(err, &pr) {
				return nil, err
			}
			return nil, fmt.Errorf("postgres: check the role: %w", db.classify(ctx, err))
		}
	}
	return db, nil
}

// ErrPrivilegedRole is matched (errors.Is) by the error Open, New and
// CheckRole return for a role with more power than reading data needs.
var ErrPrivilegedRole = errors.New("postgres: the database role is privileged")

// PrivilegedRoleError names what CheckRole found. It matches
// ErrPrivilegedRole.
type PrivilegedRoleError struct {
	// Role is the role the pool connects as (current_user).
	Role string
	// Findings are short statements of each privilege found, such as
	// "superuser", "member of pg_read_server_files" or
	// "INSERT, UPDATE, DELETE, TRUNCATE on table sales.orders".
	Findings []string
}

// Error lists the findings and what to do.
func (e *PrivilegedRoleError) Error() string {
	return fmt.Sprintf("postgres: refusing to run the agent's SQL as role %q, which has more than read access: %s. "+
		"Connect as a read-only role (CREATE ROLE ... LOGIN; GRANT USAGE ON SCHEMA ...; GRANT SELECT ON ALL TABLES IN SCHEMA ...; see the package documentation), "+
		"or set Options.AllowPrivilegedRole to accept the risk", e.Role, strings.Join(e.Findings, "; "))
}

// Is reports whether target is ErrPrivilegedRole.
func (e *PrivilegedRoleError) Is(target error) bool { return target == ErrPrivilegedRole }

// privilegedRoles are the predefined roles whose membership (direct or
// inherited) CheckRole refuses, with what each allows.
var privilegedRoles = []struct{ name, why string }{
	{"pg_read_server_files", "reads any file the server can read"},
	{"pg_write_server_files", "writes files on the server"},
	{"pg_execute_server_program", "runs programs on the server"},
	{"pg_signal_backend", "cancels and terminates other sessions"},
	{"pg_write_all_data", "writes every table"},
}

// maxTableFindings is how many writable tables the error names before
// it counts the rest.
const maxTableFindings = 5

// CheckRole inspects the role pool connects as and returns a
// *PrivilegedRoleError (matching ErrPrivilegedRole) naming every finding
// when the role:
//   - is a superuser, or has BYPASSRLS (which defeats the row-level
//     security Options.TenantSetting feeds), CREATEROLE (which before
//     PostgreSQL 16 can grant itself any of the roles below) or
//     REPLICATION;
//   - is a member, directly or through other roles, of
//     pg_read_server_files, pg_write_server_files,
//     pg_execute_server_program, pg_signal_backend or pg_write_all_data;
//   - may CREATE in the database, or in a schema the agent reads;
//   - may INSERT, UPDATE, DELETE or TRUNCATE a table, view or foreign
//     table in those schemas (column-level INSERT and UPDATE grants
//     count).
//
// The schemas the agent reads are opts.Schemas and opts.Policy's search
// path, or, when opts.Schemas is empty (Introspect then lists every
// schema), every schema except pg_* and information_schema. Membership
// in pg_read_all_data, pg_read_all_stats or pg_monitor is not refused:
// they read, and the statement check keeps catalogs and statistics
// functions away from the model. On PostgreSQL 14 and older every role
// may CREATE in schema public until the owner runs REVOKE CREATE ON
// SCHEMA public FROM PUBLIC; the check reports it. It returns nil for a
// read-only role and another error when the check itself fails.
// Privileges granted after the check are not seen: grant a role only
// what it needs.
func CheckRole(ctx context.Context, pool *pgxpool.Pool, opts Options) error {
	const roleQuery = `
SELECT r.rolname::text, r.rolsuper, r.rolbypassrls, r.rolcreaterole, r.rolreplication,
  ARRAY(SELECT p FROM unnest($1::text[]) p
        WHERE EXISTS (SELECT 1 FROM pg_roles x WHERE x.rolname = p) AND pg_has_role(r.oid, p, 'MEMBER')
        ORDER BY array_position($1::text[], p)),
  has_database_privilege(current_database(), 'CREATE')
FROM pg_roles r WHERE r.rolname = current_user`
	names := make([]string, len(privilegedRoles))
	for i, r := range privilegedRoles {
		names[i] = r.name
	}
	var (
		role                                      string
		super, bypassRLS, createRole, replication bool
		members                                   []string
		createDB                                  bool
	)
	if err := pool.QueryRow(ctx, roleQuery, names).Scan(&role, &super, &bypassRLS, &createRole, &replication, &members, &createDB); err != nil {
		return fmt.Errorf("postgres: check role: read its attributes: %w", err)
	}
	var findings []string
	if super {
		findings = append(findings, "superuser (may do anything, including reading files and running programs on the server)")
	}
	if bypassRLS {
		findings = append(findings, "BYPASSRLS (row-level security, and so the tenant setting, does not apply)")
	}
	if createRole {
		findings = append(findings, "CREATEROLE (may create roles and, before PostgreSQL 16, grant itself pg_execute_server_program)")
	}
	if replication {
		findings = append(findings, "REPLICATION (may stream every table's changes)")
	}
	for _, m := range members {
		for _, r := range privilegedRoles {
			if r.name == m {
				findings = append(findings, "member of "+m+" ("+r.why+")")
			}
		}
	}
	if createDB {
		findings = append(findings, "CREATE on the database (may create schemas)")
	}

	// The schemas in reach and what the role may write there.
	var schemas []string
	if len(opts.Schemas) > 0 {
		schemas = append(slices.Clone(opts.Schemas), NewValidator(opts.Policy).SearchPath()...)
	}
	if schemas == nil {
		schemas = []string{}
	}
	const writeQuery = `
WITH scope AS (
  SELECT n.oid, n.nspname FROM pg_namespace n
  WHERE cardinality($1::text[]) = 0 AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
     OR n.nspname = ANY($1::text[]))
SELECT 'schema', quote_ident(s.nspname), ARRAY['CREATE']
FROM scope s WHERE has_schema_privilege(s.oid, 'CREATE')
UNION ALL
SELECT * FROM (
  SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' ELSE 'table' END,
    quote_ident(s.nspname) || '.' || quote_ident(c.relname),
    ARRAY(SELECT p FROM unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) p
          WHERE has_table_privilege(c.oid, p) OR p IN ('INSERT', 'UPDATE') AND has_any_column_privilege(c.oid, p)) AS privs
  FROM pg_class c JOIN scope s ON s.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  ORDER BY 2) t
WHERE cardinality(t.privs) > 0`
	rows, err := pool.Query(ctx, writeQuery, schemas)
	if err != nil {
		return fmt.Errorf("postgres: check role: read its write privileges: %w", err)
	}
	tables := 0
	for rows.Next() {
		var (
			kind, name string
			privs      []string
		)
		if err := rows.Scan(&kind, &name, &privs); err != nil {
			rows.Close()
			return fmt.Errorf("postgres: check role: read its write privileges: %w", err)
		}
		if kind != "schema" {
			tables++
			if tables > maxTableFindings {
				continue
			}
		}
		findings = append(findings, strings.Join(privs, ", ")+" on "+kind+" "+name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: check role: read its write privileges: %w", err)
	}
	if tables > maxTableFindings {
		findings = append(findings, fmt.Sprintf("and write privileges on %d more tables", tables-maxTableFindings))
	}
	if len(findings) == 0 {
		return nil
	}
	return &PrivilegedRoleError{Role: role, Findings: findings}
}

// Close closes the pool if Open created it.
func (db *DB) Close() {
	if db.own {
		db.pool.Close()
	}
}

// Pool returns the underlying pool (for setup code of the host; statements
// sent through it bypass every check).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Validator returns the statement check the DB applies.
func (db *DB) Validator() *Validator { return db.v }

// Dialect returns sqldb.DialectPostgres.
func (db *DB) Dialect() string { return sqldb.DialectPostgres }

// Query checks sql (see Validator.Validate), then runs it in a READ ONLY
// transaction with SET LOCAL statement_timeout, search_path, the tenant
// setting and the data-scoping settings (Options.Settings, from
// lim.Attributes; a missing one refuses the statement), through a cursor from which at most lim.MaxRows+1 rows are
// fetched, and always rolls back. Everything is sent in one round trip.
func (db *DB) Query(ctx context.Context, sql string, lim sqldb.Limits) (*sqldb.Result, error) {
	lim = lim.WithDefaults()
	st, err := db.v.Validate(sql, lim.Tables)
	if err != nil {
		return nil, err
	}
	res, err := db.run(ctx, st.SQL, lim)
	if err != nil {
		var e *sqldb.Error
		if errors.As(err, &e) && e.Position > 0 {
			// Point into the statement as sent, not the DECLARE around it.
			e.Position -= len(declarePrefix)
			if i := strings.Index(sql, st.SQL); i > 0 && e.Position > 0 {
				e.Position += utf8.RuneCountInString(sql[:i])
			}
			e.Position = max(e.Position, 0)
			if !db.holdsSecret(sql) {
				e.Locate(sql)
			}
		}
		if errors.As(err, &e) && e.Kind == sqldb.KindTimeout {
			if fns := functionsInFrom(st.SQL); len(fns) > 0 {
				e.Hint = srfTimeoutHint(fns)
			}
		}
		return nil, err
	}
	res.Datasets = st.Relations
	return res, nil
}

// holdsSecret reports whether s contains the password or the DSN (an
// excerpt of it would show them).
func (db *DB) holdsSecret(s string) bool {
	return sqldb.Redact(s, db.secrets...) != s
}

// functionsInFrom returns the names of the functions stmt calls in a FROM
// clause (anywhere: joins, subqueries, CTEs), in order of appearance and
// without duplicates; nil when it calls none or does not parse.
func functionsInFrom(stmt string) []string {
	tree, err := pg_query.Parse(stmt)
	if err != nil {
		return nil
	}
	var names []string
	var walk func(m protoreflect.Message, inFrom bool)
	walk = func(m protoreflect.Message, inFrom bool) {
		if fc, ok := m.Interface().(*pg_query.FuncCall); ok && inFrom {
			if n := len(fc.Funcname); n > 0 {
				if name := fc.Funcname[n-1].GetString_().GetSval(); name != "" && !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
		_, isRangeFunction := m.Interface().(*pg_query.RangeFunction)
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			// A RangeFunction's functions are what FROM calls; their
			// arguments (and the column definitions) are not.
			child := isRangeFunction && fd.Name() == "functions"
			switch {
			case fd.IsList() && fd.Message() != nil:
				l := v.List()
				for i := range l.Len() {
					walk(l.Get(i).Message(), child || inFrom && !isFuncCall(m))
				}
			case fd.Message() != nil && !fd.IsMap():
				walk(v.Message(), child || inFrom && !isFuncCall(m))
			}
			return true
		})
	}
	for _, raw := range tree.Stmts {
		walk(raw.ProtoReflect(), false)
	}
	return names
}

func isFuncCall(m protoreflect.Message) bool {
	_, ok := m.Interface().(*pg_query.FuncCall)
	return ok
}

// srfTimeoutHint is the repair hint for a timeout of a statement that
// calls fns in FROM.
func srfTimeoutHint(fns []string) string {
	fn := fns[0]
	what := fn + " in FROM"
	if len(fns) > 1 {
		what = strings.Join(fns, ", ") + " in FROM"
	}
	return "the query ran past the time limit and was cancelled. It calls " + what +
		", and PostgreSQL computes a function in FROM in full before the first row comes back, so a LIMIT does not shorten it: " +
		"bound the function's arguments to the rows you need (a shorter series, a narrower date range), " +
		"or call it in the select list, where its rows stream and a LIMIT stops it early: " +
		"SELECT * FROM (SELECT " + fn + "(...) AS x) s LIMIT 10"
}

// Sample returns up to n rows of dataset (schema.table). The tenant and
// the data-scoping attributes are those of the tool call ctx carries
// (agents.CallInfo); without them a DB with Options.Settings refuses.
func (db *DB) Sample(ctx context.Context, dataset string, n int) (*sqldb.Result, error) {
	if n <= 0 {
		n = 10
	}
	lim := sqldb.Limits{MaxRows: n}
	if info, ok := agents.CallInfoFromContext(ctx); ok {
		lim.TenantID, lim.Attributes = info.TenantID, info.Attributes
	}
	q := "SELECT * FROM " + sqldb.QuoteQualified(dataset) + " LIMIT " + strconv.Itoa(n)
	return db.Query(ctx, q, lim)
}

const (
	cursorName    = "bichat_cursor"
	declarePrefix = "DECLARE " + cursorName + " NO SCROLL CURSOR FOR "
)

func (db *DB) run(ctx context.Context, stmt string, lim sqldb.Limits) (*sqldb.Result, error) {
	// Refused before a connection is taken: nothing reaches the server.
	scopeVals, err := db.scopeValues(lim)
	if err != nil {
		return nil, err
	}
	// The server enforces the timeout; the client waits a little longer
	// so that the server's cancellation, not ours, ends a slow statement.
	cctx, cancel := context.WithTimeout(ctx, lim.Timeout+2*time.Second)
	defer cancel()
	conn, err := db.pool.Acquire(cctx)
	if err != nil {
		return nil, db.classify(ctx, err)
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()

	// One round trip: BEGIN READ ONLY; the transaction-local settings in
	// one statement; the cursor; the fetch; ROLLBACK.
	path := make([]string, 0, len(db.v.searchPath)+1)
	for _, s := range db.v.searchPath {
		path = append(path, sqldb.QuoteIdent(s))
	}
	params := make([][]byte, 2, 2+2*len(scopeVals))
	params[0] = []byte(strconv.FormatInt(max(lim.Timeout.Milliseconds(), 1), 10))
	params[1] = []byte(strings.Join(append(path, "pg_temp"), ", "))
	for i, v := range scopeVals {
		params = append(params, []byte(db.scopes[i].setting), []byte(v))
	}
	batch := &pgconn.Batch{}
	batch.ExecParams("BEGIN READ ONLY", nil, nil, nil, nil)
	batch.ExecParams(db.settingsSQL, params, nil, nil, nil)
	batch.ExecParams(declarePrefix+stmt, nil, nil, nil, nil)
	const fetchAt = 3
	// Result format text for every column: the FETCH is bound before its
	// column types are known, and every type, including the ones pgx has
	// no Go mapping for, has a text form.
	batch.ExecParams("FETCH FORWARD "+strconv.Itoa(lim.MaxRows+1)+" FROM "+cursorName, nil, nil, nil, nil)
	batch.ExecParams("ROLLBACK", nil, nil, nil, nil)

	start := time.Now()
	res := &sqldb.Result{SQL: stmt}
	mrr := pc.ExecBatch(cctx, batch)
	var (
		firstErr    error
		unknownOIDs []uint32
	)
	for i := 0; mrr.NextResult(); i++ {
		rr := mrr.ResultReader()
		if i != fetchAt {
			if _, err := rr.Close(); err != nil && firstErr == nil {
				firstErr = err
			}
			continue
		}
		if err := db.read(conn.Conn(), rr, lim, res, &unknownOIDs); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	res.Duration = time.Since(start)
	if err := mrr.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	if pc.TxStatus() != 'I' && !pc.IsClosed() {
		// The batch stopped at an error before its ROLLBACK.
		_ = pc.Exec(context.WithoutCancel(cctx), "ROLLBACK").Close()
	}
	if firstErr != nil {
		return nil, db.classify(ctx, firstErr)
	}
	if len(unknownOIDs) > 0 {
		for i, c := range res.Columns {
			if c.Type == "" && len(unknownOIDs) > 0 {
				res.Columns[i].Type = db.typeName(cctx, conn.Conn(), unknownOIDs[0])
				unknownOIDs = unknownOIDs[1:]
			}
		}
	}
	return res, nil
}

// read fetches the FETCH result into res. Every column arrives in the
// text format; decoderFor turns the text of the types with a Go mapping
// into typed values and keeps every other type's text as it is.
func (db *DB) read(conn *pgx.Conn, rr *pgconn.ResultReader, lim sqldb.Limits, res *sqldb.Result, oids *[]uint32) error {
	m := conn.TypeMap()
	fds := rr.FieldDescriptions()
	res.Columns = make([]tools.Column, len(fds))
	decode := make([]decoder, len(fds))
	for i, fd := range fds {
		res.Columns[i] = tools.Column{Name: fd.Name}
		if t, ok := m.TypeForOID(fd.DataTypeOID); ok {
			res.Columns[i].Type = t.Name
		} else {
			*oids = append(*oids, fd.DataTypeOID)
		}
		decode[i] = decoderFor(m, fd.DataTypeOID, fd.Format)
	}
	total := 0
	for rr.NextRow() {
		if len(res.Rows) == lim.MaxRows || total >= lim.MaxBytes {
			res.Truncated = true
			break
		}
		raw := rr.Values()
		row := make([]any, len(raw))
		for i, b := range raw {
			var v any
			if b != nil {
				var err error
				if v, err = decode[i](b); err != nil {
					return fmt.Errorf("decode column %s: %w", fds[i].Name, err)
				}
			}
			c, cut, size := sqldb.Cell(v, lim.MaxCellBytes)
			row[i] = c
			total += size
			if cut {
				res.CutCells++
			}
		}
		res.Rows = append(res.Rows, row)
	}
	_, err := rr.Close()
	return err
}

// decoder turns one non-NULL cell's wire bytes into a Go value.
type decoder func(raw []byte) (any, error)

// pgxDecoded are the types (and arrays of them) whose pgx value has a
// plain form in the tools.Table convention: time.Time for dates and
// timestamps, []byte for bytea, JSON text for json, jsonb and arrays.
var pgxDecoded = map[uint32]bool{
	pgtype.DateOID: true, pgtype.TimestampOID: true, pgtype.TimestamptzOID: true, pgtype.ByteaOID: true,
	pgtype.JSONOID: true, pgtype.JSONBOID: true,
	pgtype.BoolArrayOID: true, pgtype.Int2ArrayOID: true, pgtype.Int4ArrayOID: true, pgtype.Int8ArrayOID: true,
	pgtype.Float4ArrayOID: true, pgtype.Float8ArrayOID: true, pgtype.NumericArrayOID: true,
	pgtype.TextArrayOID: true, pgtype.VarcharArrayOID: true, pgtype.BPCharArrayOID: true, pgtype.NameArrayOID: true,
	pgtype.DateArrayOID: true, pgtype.TimestampArrayOID: true, pgtype.TimestamptzArrayOID: true,
	pgtype.JSONArrayOID: true, pgtype.JSONBArrayOID: true, pgtype.UUIDArrayOID: true,
}

// decoderFor returns how a column of type oid becomes a Go value:
// booleans, integers and floating-point numbers (numeric included) are
// parsed; text types are strings; the types in pgxDecoded go through
// pgx's codec; every other type, known to pgx or not (tsvector,
// intervals, ranges, geometric and network types, enums, composites,
// money, xml, arrays of these), is the server's own text form.
func decoderFor(m *pgtype.Map, oid uint32, format int16) decoder {
	if format != pgx.TextFormatCode {
		// Not sent by run; kept correct should a caller bind binary.
		t, ok := m.TypeForOID(oid)
		if !ok {
			return func(raw []byte) (any, error) { return append([]byte(nil), raw...), nil }
		}
		return func(raw []byte) (any, error) {
			v, err := t.Codec.DecodeValue(m, oid, format, raw)
			return pgValue(v), err
		}
	}
	switch oid {
	case pgtype.BoolOID:
		return func(raw []byte) (any, error) { return len(raw) > 0 && raw[0] == 't', nil }
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.OIDOID:
		return func(raw []byte) (any, error) { return strconv.ParseInt(string(raw), 10, 64) }
	case pgtype.Float4OID, pgtype.Float8OID, pgtype.NumericOID:
		// ParseFloat rounds the decimal text correctly and reads NaN and
		// ±Infinity; a numeric beyond float64 becomes ±Inf.
		return func(raw []byte) (any, error) {
			f, err := strconv.ParseFloat(string(raw), 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return nil, err
			}
			return f, nil
		}
	}
	if t, ok := m.TypeForOID(oid); ok && pgxDecoded[oid] {
		return func(raw []byte) (any, error) {
			v, err := t.Codec.DecodeValue(m, oid, pgx.TextFormatCode, raw)
			return pgValue(v), err
		}
	}
	return func(raw []byte) (any, error) { return string(raw), nil }
}

// pgValue converts pgx's own types to plain Go values.
func pgValue(v any) any {
	switch x := v.(type) {
	case pgtype.Numeric:
		if !x.Valid {
			return nil
		}
		if x.NaN {
			return math.NaN()
		}
		if f, ok := fastFloat(x); ok {
			return f
		}
		f, err := x.Float64Value()
		if err != nil || !f.Valid {
			return nil
		}
		return f.Float64
	case pgtype.InfinityModifier:
		return x.String()
	}
	return v
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat converts numerics whose digits and exponent are exact in
// float64: one correctly rounded multiplication or division gives the same
// float64 as parsing the decimal text, without math/big.
func fastFloat(n pgtype.Numeric) (float64, bool) {
	if n.InfinityModifier != pgtype.Finite || n.Int == nil || !n.Int.IsInt64() || n.Exp < -22 || n.Exp > 22 {
		return 0, false
	}
	i := n.Int.Int64()
	if i > 1<<53 || i < -(1<<53) {
		return 0, false
	}
	if n.Exp < 0 {
		return float64(i) / pow10[-n.Exp], true
	}
	return float64(i) * pow10[n.Exp], true
}

// typeName names a type pgx does not know, once per OID.
func (db *DB) typeName(ctx context.Context, conn *pgx.Conn, oid uint32) string {
	if n, ok := db.types.Load(oid); ok {
		return n.(string)
	}
	var name string
	if err := conn.QueryRow(ctx, "SELECT format_type($1::oid, NULL)", oid).Scan(&name); err != nil {
		return ""
	}
	db.types.Store(oid, name)
	return name
}

// classify turns any error into an *sqldb.Error without secrets.
func (db *DB) classify(ctx context.Context, err error) error {
	var se *sqldb.Error
	if errors.As(err, &se) {
		return se
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		kind, hint := sqldb.ClassifySQLState(pe.Code, pe.Message)
		if pe.Code == "57014" && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			kind, hint = sqldb.KindOther, "the request was cancelled"
		}
		msg := pe.Message
		if pe.Detail != "" {
			msg += " (" + pe.Detail + ")"
		}
		return &sqldb.Error{Kind: kind, Code: pe.Code, Message: sqldb.Redact(msg, db.secrets...), Hint: hint, Position: int(pe.Position)}
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return &sqldb.Error{Kind: sqldb.KindTimeout, Message: "the query did not finish in time", Hint: "filter earlier, aggregate, or add a LIMIT"}
	}
	if errors.Is(err, context.Canceled) {
		return &sqldb.Error{Kind: sqldb.KindOther, Message: "the request was cancelled"}
	}
	return &sqldb.Error{Kind: sqldb.KindOther, Message: sqldb.Redact(errText(err), db.secrets...)}
}

// Introspect lists the tables, views, materialized views and foreign
// tables the user may SELECT from, in the configured schemas, sorted by
// name, with the database (current_database()) and schema, column types
// (format_type), nullability, primary keys, foreign keys as Relationships
// (Cardinality many_to_one, or one_to_one when the referencing columns
// are the table's primary key), comments (COMMENT ON) as Descriptions,
// pg_class.reltuples as RowEstimate (-1 when never analysed), and, unless
// Options.SampleValues.Disable is set, a bounded sample of distinct
// values for low-cardinality text columns (see Options.SampleValues).
func (db *DB) Introspect(ctx context.Context) ([]domain.Dataset, error) {
	const rels = `
SELECT c.oid, n.nspname, c.relname, c.relkind::text, coalesce(obj_description(c.oid, 'pg_class'), ''), c.reltuples::bigint,
  c.relrowsecurity, current_database()
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
  AND has_table_privilege(c.oid, 'SELECT')
  AND (cardinality($1::text[]) = 0 AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
       OR n.nspname = ANY($1::text[]))
ORDER BY n.nspname, c.relname`
	schemas := db.opts.Schemas
	if schemas == nil {
		schemas = []string{}
	}
	rows, err := db.pool.Query(ctx, rels, schemas)
	if err != nil {
		return nil, db.classify(ctx, err)
	}
	var (
		out  []domain.Dataset
		oids []uint32
		byID = map[uint32]int{}
		// info holds what sampling needs to know of each dataset.
		info []relInfo
	)
	for rows.Next() {
		var (
			oid                         uint32
			schema, name, kind, d, dbNm string
			est                         int64
			rls                         bool
		)
		if err := rows.Scan(&oid, &schema, &name, &kind, &d, &est, &rls, &dbNm); err != nil {
			rows.Close()
			return nil, db.classify(ctx, err)
		}
		ds := domain.Dataset{Name: schema + "." + name, Source: schema + "." + name, Description: d, RowEstimate: est,
			Database: dbNm, Schema: schema}
		switch kind {
		case "v":
			ds.Kind = "view"
			ds.RowEstimate = 0
		case "m":
			ds.Kind = "materialized_view"
		default:
			ds.Kind = "table"
		}
		byID[oid] = len(out)
		oids = append(oids, oid)
		out = append(out, ds)
		info = append(info, relInfo{kind: kind, rowSecurity: rls})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, db.classify(ctx, err)
	}
	if len(out) == 0 {
		return out, nil
	}
	const cols = `
SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, coalesce(col_description(a.attrelid, a.attnum), ''),
  coalesce((SELECT t.typcategory::text FROM pg_type t WHERE t.oid = a.atttypid), '')
FROM pg_attribute a
WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum`
	rows, err = db.pool.Query(ctx, cols, oids)
	if err != nil {
		return nil, db.classify(ctx, err)
	}
	for rows.Next() {
		var (
			oid               uint32
			name, typ, d, cat string
			nullable          bool
		)
		if err := rows.Scan(&oid, &name, &typ, &nullable, &d, &cat); err != nil {
			rows.Close()
			return nil, db.classify(ctx, err)
		}
		i := byID[oid]
		out[i].Fields = append(out[i].Fields, domain.Field{Name: name, Type: typ, Nullable: nullable, Description: d})
		// String and enum types are the ones whose values are sampled.
		info[i].text = append(info[i].text, cat == "S" || cat == "E")
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, db.classify(ctx, err)
	}
	const cons = `
SELECT con.conrelid, con.contype::text,
  ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY k(n, i)
        JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.i),
  coalesce((SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = con.confrelid), ''),
  ARRAY(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY k(n, i)
        JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.i),
  coalesce(obj_description(con.oid, 'pg_constraint'), '')
FROM pg_constraint con
WHERE con.conrelid = ANY($1::oid[]) AND con.contype IN ('p', 'f')
ORDER BY con.conrelid, con.contype DESC, con.conname`
	rows, err = db.pool.Query(ctx, cons, oids)
	if err != nil {
		return nil, db.classify(ctx, err)
	}
	for rows.Next() {
		var (
			oid          uint32
			typ, to, d   string
			from, toCols []string
		)
		if err := rows.Scan(&oid, &typ, &from, &to, &toCols, &d); err != nil {
			rows.Close()
			return nil, db.classify(ctx, err)
		}
		i := byID[oid]
		switch typ {
		case "p":
			for j, f := range out[i].Fields {
				for _, c := range from {
					if f.Name == c {
						out[i].Fields[j].PrimaryKey = true
					}
				}
			}
		case "f":
			// Primary keys come first (ORDER BY contype DESC), so the
			// referencing columns can be compared with the key here.
			out[i].Relationships = append(out[i].Relationships, domain.Relationship{
				From: out[i].Name, FromColumns: from, To: to, ToColumns: toCols, Description: d,
				Cardinality: sqldb.ForeignKeyCardinality(out[i], from),
			})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, db.classify(ctx, err)
	}
	if err := db.sampleValues(ctx, out, info); err != nil {
		return nil, err
	}
	return out, nil
}
