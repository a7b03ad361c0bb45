package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// DefaultDeniedFunctions are refused by the authorizer: extension loading,
// file access and SQLite's own build and version information. Entries
// ending in "*" match a prefix.
var DefaultDeniedFunctions = []string{"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile", "sqlite_*"}

// DefaultMaxConns is how many connections a DB keeps open by default.
const DefaultMaxConns = 8

// Options configure a DB.
type Options struct {
	// DeniedFunctions replaces DefaultDeniedFunctions when non-nil.
	DeniedFunctions []string
	// Attributes are the data-scoping attributes the database's views
	// read with bichat_attr (see the package documentation): a statement
	// whose call (sqldb.Limits.Attributes) lacks one of them, or carries
	// it empty, is refused before it runs. bichat_attr itself fails a
	// statement that asks for a missing attribute either way.
	Attributes []string
	// MaxConns bounds the connections Query uses at once (default
	// DefaultMaxConns). They stay open: each costs a function
	// registration for the life of the process.
	MaxConns int
	// SampleValues configures the bounded sample of distinct values
	// Introspect collects for text columns of tables (domain.Field.Values);
	// the zero value samples with the defaults. Views are never sampled.
	SampleValues sqldb.SampleValues
}

// DB is the SQLite adapter of sqldb.DB: the file is opened read-only
// (mode=ro) with query_only on every connection, statements must pass
// CheckStatement, and an SQLite authorizer allows only SELECT, reads of
// ordinary tables (those of Limits.Tables when given) and functions not on
// the deny list. Timeouts cancel the statement through the context.
type DB struct {
	q, meta  *sql.DB
	deny     []string
	path     string
	required []string
	slots    *sync.Map // driver.Conn -> *attrSlot
	sample   sqldb.SampleValues
}

var _ sqldb.DB = (*DB)(nil)

// Open opens the SQLite database file at path read-only.
func Open(path string, opts Options) (*DB, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=ro&_pragma=query_only(1)&_pragma=busy_timeout(5000)"
	for _, a := range opts.Attributes {
		if strings.TrimSpace(a) == "" {
			return nil, errors.New("sqlite: Options.Attributes holds an empty attribute name")
		}
	}
	slots := &sync.Map{}
	q := sql.OpenDB(&connector{dsn: dsn, slots: slots})
	maxConns := opts.MaxConns
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	q.SetMaxOpenConns(maxConns)
	q.SetMaxIdleConns(maxConns)
	// The views may call bichat_attr; introspection needs it defined.
	meta := sql.OpenDB(&connector{dsn: dsn, slots: &sync.Map{}})
	meta.SetMaxOpenConns(1)
	if err := meta.Ping(); err != nil {
		q.Close()
		meta.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	deny := opts.DeniedFunctions
	if deny == nil {
		deny = DefaultDeniedFunctions
	}
	return &DB{q: q, meta: meta, deny: deny, path: path, required: opts.Attributes, slots: slots, sample: opts.SampleValues}, nil
}

// Close closes the database.
func (db *DB) Close() error { return errors.Join(db.q.Close(), db.meta.Close()) }

// Dialect returns sqldb.DialectSQLite.
func (db *DB) Dialect() string { return sqldb.DialectSQLite }

func (db *DB) denied(fn string) bool {
	fn = strings.ToLower(fn)
	for _, d := range db.deny {
		if p, ok := strings.CutSuffix(d, "*"); ok {
			if strings.HasPrefix(fn, p) {
				return true
			}
		} else if fn == d {
			return true
		}
	}
	return false
}

// authState records, for one statement, the first refusal and the
// datasets read.
type authState struct {
	mu   sync.Mutex
	why  string
	read map[string]bool
}

// authorizer returns the engine-level policy for one statement. views are
// the database's real views: SQLite passes the innermost view or CTE
// name as the last argument, and only a real view may stand in for the
// tables it reads.
func (db *DB) authorizer(allow, views map[string]bool, st *authState) msqlite.AuthorizerFn {
	deny := func(reason string) msqlite.AuthorizerReturnCode {
		st.mu.Lock()
		if st.why == "" {
			st.why = reason
		}
		st.mu.Unlock()
		return msqlite.AuthorizerDeny
	}
	return func(action msqlite.AuthorizerActionCode, arg1, arg2, database, view string) msqlite.AuthorizerReturnCode {
		switch action {
		case msqlite.AuthSelect, msqlite.AuthRecursive:
			return msqlite.AuthorizerOK
		case msqlite.AuthRead:
			table := strings.ToLower(arg1)
			if database != "" && database != "main" {
				return deny(fmt.Sprintf("database %s is not available", database))
			}
			if strings.HasPrefix(table, "sqlite_") || strings.HasPrefix(table, "pragma_") {
				return deny(fmt.Sprintf("system table %s is not available", arg1))
			}
			realView := view != "" && views[strings.ToLower(view)]
			if allow != nil && !allow[table] && (!realView || !allow[strings.ToLower(view)]) {
				return deny(fmt.Sprintf("relation %s is not in the allowed datasets", arg1))
			}
			name := arg1
			if realView {
				name = view
			}
			st.mu.Lock()
			st.read[name] = true
			st.mu.Unlock()
			return msqlite.AuthorizerOK
		case msqlite.AuthFunction:
			if db.denied(arg2) {
				return deny(fmt.Sprintf("function %s is not allowed", arg2))
			}
			return msqlite.AuthorizerOK
		case msqlite.AuthPragma:
			return deny("PRAGMA is not allowed")
		case msqlite.AuthAttach, msqlite.AuthDetach:
			return deny("ATTACH and DETACH are not allowed")
		}
		return deny("only read-only SELECT statements can run")
	}
}

// Query checks sql (CheckStatement), then runs it with the authorizer,
// reading at most lim.MaxRows rows from the row stream.
func (db *DB) Query(ctx context.Context, query string, lim sqldb.Limits) (*sqldb.Result, error) {
	lim = lim.WithDefaults()
	stmt, err := CheckStatement(query)
	if err != nil {
		return nil, err
	}
	var allow map[string]bool
	if len(lim.Tables) > 0 {
		allow = make(map[string]bool, len(lim.Tables))
		for _, t := range lim.Tables {
			t = strings.ToLower(strings.TrimSpace(t))
			t = strings.TrimPrefix(t, "main.")
			allow[t] = true
		}
	}
	if err := db.checkAttributes(lim); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	conn, err := db.q.Conn(ctx)
	if err != nil {
		return nil, classify(ctx, err, "")
	}
	defer conn.Close()
	views, err := db.views(ctx)
	if err != nil {
		return nil, err
	}
	if v := cteShadowing(stmt, views); v != "" {
		return nil, sqldb.Rejected(fmt.Sprintf("the statement defines a common table expression named %s, like a view of the database", v),
			"give the common table expression another name")
	}
	st := &authState{read: map[string]bool{}}
	if err := setAuthorizer(conn, db.authorizer(allow, views, st)); err != nil {
		return nil, err
	}
	// Leave a deny-all authorizer on the pooled connection.
	defer setAuthorizer(conn, func(msqlite.AuthorizerActionCode, string, string, string, string) msqlite.AuthorizerReturnCode {
		return msqlite.AuthorizerDeny
	})
	// The statement's attributes, for bichat_attr on this connection
	// alone, until the statement is done.
	var unbind func()
	if err := conn.Raw(func(dc any) error {
		var err error
		unbind, err = db.bindAttributes(dc, lim.Attributes)
		return err
	}); err != nil {
		return nil, err
	}
	defer unbind()
	start := time.Now()
	rows, err := conn.QueryContext(ctx, stmt)
	if err != nil {
		st.mu.Lock()
		defer st.mu.Unlock()
		return nil, classify(ctx, err, st.why)
	}
	defer rows.Close()
	res := &sqldb.Result{SQL: stmt}
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, classify(ctx, err, "")
	}
	res.Columns = make([]tools.Column, len(cts))
	for i, ct := range cts {
		res.Columns[i] = tools.Column{Name: ct.Name(), Type: ct.DatabaseTypeName()}
	}
	vals := make([]any, len(cts))
	ptrs := make([]any, len(cts))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	total := 0
	for rows.Next() {
		if len(res.Rows) == lim.MaxRows || total >= lim.MaxBytes {
			res.Truncated = true
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, classify(ctx, err, "")
		}
		row := make([]any, len(vals))
		for i, v := range vals {
			c, cut, size := sqldb.Cell(v, lim.MaxCellBytes)
			row[i] = c
			total += size
			if cut {
				res.CutCells++
			}
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(ctx, err, "")
	}
	res.Duration = time.Since(start)
	st.mu.Lock()
	for name := range st.read {
		res.Datasets = append(res.Datasets, name)
	}
	st.mu.Unlock()
	slices.Sort(res.Datasets)
	// Expressions have no declared type; name the storage class seen.
	for i := range res.Columns {
		if res.Columns[i].Type != "" {
			continue
		}
		for _, r := range res.Rows {
			if t := storageClass(r[i]); t != "" {
				res.Columns[i].Type = t
				break
			}
		}
	}
	return res, nil
}

func (db *DB) views(ctx context.Context) (map[string]bool, error) {
	rows, err := db.meta.QueryContext(ctx, "SELECT lower(name) FROM sqlite_schema WHERE type = 'view'")
	if err != nil {
		return nil, classify(ctx, err, "")
	}
	defer rows.Close()
	views := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, classify(ctx, err, "")
		}
		views[n] = true
	}
	return views, rows.Err()
}

func storageClass(v any) string {
	switch v.(type) {
	case int64, bool:
		return "INTEGER"
	case float64:
		return "REAL"
	case string:
		return "TEXT"
	case []byte:
		return "BLOB"
	case time.Time:
		return "TIMESTAMP"
	}
	return ""
}

func setAuthorizer(conn *sql.Conn, fn msqlite.AuthorizerFn) error {
	return conn.Raw(func(dc any) error {
		r, ok := dc.(msqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("sqlite: the driver does not support an authorizer")
		}
		return r.RegisterAuthorizer(fn)
	})
}

func classify(ctx context.Context, err error, why string) error {
	var se *sqldb.Error
	if errors.As(err, &se) {
		return se
	}
	msg := err.Error()
	if i := strings.Index(msg, attrMarker); i >= 0 {
		m := strings.TrimSuffix(msg[i:], " (1)")
		return sqldb.Rejected(m+"; the statement was refused", "the host maps its caller to attributes (bichat.Config.Attributes); without them the scoped views show no data")
	}
	if why != "" {
		return sqldb.Rejected(why, "only read-only SELECT statements over the allowed datasets can run")
	}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &sqldb.Error{Kind: sqldb.KindTimeout, Message: "the query did not finish in time and was interrupted", Hint: "filter earlier, aggregate, or add a LIMIT"}
	}
	kind, hint := sqldb.ClassifySQLite(msg)
	return &sqldb.Error{Kind: kind, Message: msg, Hint: hint}
}

// Sample returns up to n rows of dataset. The data-scoping attributes are
// those of the tool call ctx carries (agents.CallInfo.Attributes).
func (db *DB) Sample(ctx context.Context, dataset string, n int) (*sqldb.Result, error) {
	if n <= 0 {
		n = 10
	}
	lim := sqldb.Limits{MaxRows: n}
	if info, ok := agents.CallInfoFromContext(ctx); ok {
		lim.TenantID, lim.Attributes = info.TenantID, info.Attributes
	}
	return db.Query(ctx, fmt.Sprintf("SELECT * FROM %s LIMIT %d", sqldb.QuoteIdent(dataset), n), lim)
}

// Introspect lists tables and views (not sqlite_* tables) with Schema
// "main" (Database stays empty: a host pooling several files sets it),
// descriptions from the comments of CREATE TABLE statements (a comment on
// the line of the opening parenthesis describes the table, one at the end
// of a column's line or on the lines before it describes the column),
// declared column types, NOT NULL, primary keys, foreign keys as
// Relationships (Cardinality many_to_one, or one_to_one when the
// referencing columns are the table's primary key), exact row counts as
// RowEstimate for tables, and, unless Options.SampleValues.Disable is set,
// a bounded sample of distinct values for the text columns of tables
// (see Options.SampleValues).
func (db *DB) Introspect(ctx context.Context) ([]domain.Dataset, error) {
	rows, err := db.meta.QueryContext(ctx, `SELECT name, type, coalesce(sql, '') FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, classify(ctx, err, "")
	}
	var (
		out      []domain.Dataset
		comments []map[string]string
	)
	for rows.Next() {
		var name, typ, ddl string
		if err := rows.Scan(&name, &typ, &ddl); err != nil {
			rows.Close()
			return nil, classify(ctx, err, "")
		}
		d := domain.Dataset{Name: name, Source: name, Kind: typ, Schema: "main"}
		var cols map[string]string
		if typ == "table" {
			d.Description, cols = ddlComments(ddl)
		}
		out = append(out, d)
		comments = append(comments, cols)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, classify(ctx, err, "")
	}
	for i := range out {
		d := &out[i]
		cols, err := db.meta.QueryContext(ctx, `SELECT name, type, "notnull", pk FROM pragma_table_info(?) ORDER BY cid`, d.Name)
		if err != nil {
			return nil, classify(ctx, err, "")
		}
		for cols.Next() {
			var (
				name, typ   string
				notNull, pk int
			)
			if err := cols.Scan(&name, &typ, &notNull, &pk); err != nil {
				cols.Close()
				return nil, classify(ctx, err, "")
			}
			d.Fields = append(d.Fields, domain.Field{Name: name, Type: typ, Nullable: notNull == 0 && pk == 0, PrimaryKey: pk > 0,
				Description: comments[i][strings.ToLower(name)]})
		}
		cols.Close()
		fks, err := db.meta.QueryContext(ctx, `SELECT id, "table", "from", coalesce("to", '') FROM pragma_foreign_key_list(?) ORDER BY id, seq`, d.Name)
		if err != nil {
			return nil, classify(ctx, err, "")
		}
		last := -1
		for fks.Next() {
			var (
				id           int
				to, from, tc string
			)
			if err := fks.Scan(&id, &to, &from, &tc); err != nil {
				fks.Close()
				return nil, classify(ctx, err, "")
			}
			if id != last {
				d.Relationships = append(d.Relationships, domain.Relationship{From: d.Name, To: to})
				last = id
			}
			r := &d.Relationships[len(d.Relationships)-1]
			r.FromColumns = append(r.FromColumns, from)
			r.ToColumns = append(r.ToColumns, tc)
		}
		fks.Close()
		for j := range d.Relationships {
			d.Relationships[j].Cardinality = sqldb.ForeignKeyCardinality(*d, d.Relationships[j].FromColumns)
		}
		if d.Kind == "table" {
			if err := db.meta.QueryRowContext(ctx, "SELECT count(*) FROM "+sqldb.QuoteIdent(d.Name)).Scan(&d.RowEstimate); err != nil {
				return nil, classify(ctx, err, "")
			}
		}
	}
	if err := db.sampleValues(ctx, out); err != nil {
		return nil, err
	}
	// Foreign keys without target columns point at the target's key.
	for i := range out {
		for j := range out[i].Relationships {
			r := &out[i].Relationships[j]
			for k, c := range r.ToColumns {
				if c != "" {
					continue
				}
				for _, t := range out {
					if t.Name == r.To {
						var pks []string
						for _, f := range t.Fields {
							if f.PrimaryKey {
								pks = append(pks, f.Name)
							}
						}
						if k < len(pks) {
							r.ToColumns[k] = pks[k]
						}
					}
				}
			}
		}
	}
	return out, nil
}
