package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

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
	TenantSetting string
	// Schemas limits Introspect to these schemas; empty means every schema
	// the user can see except pg_* and information_schema.
	Schemas []string
}

var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$`)

// DB is the PostgreSQL adapter of sqldb.DB.
type DB struct {
	pool    *pgxpool.Pool
	own     bool
	v       *Validator
	opts    Options
	secrets []string
	types   sync.Map // uint32 -> string, names of types pgx does not know
}

var _ sqldb.DB = (*DB)(nil)

// Open connects to the database at dsn (a postgres:// URL or key=value
// string) with a pgx pool. Errors never contain the DSN or the password.
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
	db, err := New(pool, opts)
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

// New wraps an existing pool; Close then leaves the pool open.
func New(pool *pgxpool.Pool, opts Options) (*DB, error) {
	if pool == nil {
		return nil, errors.New("postgres: nil pool")
	}
	if opts.TenantSetting != "" && !settingName.MatchString(opts.TenantSetting) {
		return nil, fmt.Errorf("postgres: tenant setting %q must look like prefix.name (e.g. app.tenant_id)", opts.TenantSetting)
	}
	db := &DB{pool: pool, v: NewValidator(opts.Policy), opts: opts}
	if pw := pool.Config().ConnConfig.Password; pw != "" {
		db.secrets = append(db.secrets, pw)
	}
	return db, nil
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
// transaction with SET LOCAL statement_timeout, search_path and the tenant
// setting, through a cursor from which at most lim.MaxRows+1 rows are
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
		}
		return nil, err
	}
	res.Datasets = st.Relations
	return res, nil
}

// Sample returns up to n rows of dataset (schema.table).
func (db *DB) Sample(ctx context.Context, dataset string, n int) (*sqldb.Result, error) {
	if n <= 0 {
		n = 10
	}
	q := "SELECT * FROM " + sqldb.QuoteQualified(dataset) + " LIMIT " + strconv.Itoa(n)
	return db.Query(ctx, q, sqldb.Limits{MaxRows: n})
}

const (
	cursorName    = "bichat_cursor"
	declarePrefix = "DECLARE " + cursorName + " NO SCROLL CURSOR FOR "
)

func (db *DB) run(ctx context.Context, stmt string, lim sqldb.Limits) (*sqldb.Result, error) {
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
	settings := "SELECT set_config('statement_timeout', $1, true), set_config('search_path', $2, true)"
	params := [][]byte{
		[]byte(strconv.FormatInt(max(lim.Timeout.Milliseconds(), 1), 10)),
		[]byte(strings.Join(append(path, "pg_temp"), ", ")),
	}
	if db.opts.TenantSetting != "" {
		settings += ", set_config($3, $4, true)"
		params = append(params, []byte(db.opts.TenantSetting), []byte(lim.TenantID))
	}
	batch := &pgconn.Batch{}
	batch.ExecParams("BEGIN READ ONLY", nil, nil, nil, nil)
	batch.ExecParams(settings, params, nil, nil, nil)
	batch.ExecParams(declarePrefix+stmt, nil, nil, nil, nil)
	const fetchAt = 3
	batch.ExecParams("FETCH FORWARD "+strconv.Itoa(lim.MaxRows+1)+" FROM "+cursorName, nil, nil, nil, []int16{1})
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

// read fetches the FETCH result into res.
func (db *DB) read(conn *pgx.Conn, rr *pgconn.ResultReader, lim sqldb.Limits, res *sqldb.Result, oids *[]uint32) error {
	rows := pgx.RowsFromResultReader(conn.TypeMap(), rr)
	defer rows.Close()
	fds := rows.FieldDescriptions()
	res.Columns = make([]tools.Column, len(fds))
	// Rows arrive in binary; pgx decodes every type it knows and returns
	// the raw bytes of the others (enums, user-defined types), whose binary
	// form is mostly their text.
	unknown := make([]bool, len(fds))
	for i, fd := range fds {
		res.Columns[i] = tools.Column{Name: fd.Name}
		if t, ok := conn.TypeMap().TypeForOID(fd.DataTypeOID); ok {
			res.Columns[i].Type = t.Name
		} else {
			unknown[i] = true
			*oids = append(*oids, fd.DataTypeOID)
		}
	}
	total := 0
	for rows.Next() {
		if len(res.Rows) == lim.MaxRows || total >= lim.MaxBytes {
			res.Truncated = true
			break
		}
		vals, err := rows.Values()
		if err != nil {
			return err
		}
		row := vals // Values returns a fresh slice per row
		for i, v := range vals {
			if b, ok := v.([]byte); ok && unknown[i] && utf8.Valid(b) && !bytes.ContainsRune(b, 0) {
				v = string(b)
			}
			c, cut, size := sqldb.Cell(pgValue(v), lim.MaxCellBytes)
			row[i] = c
			total += size
			if cut {
				res.CutCells++
			}
		}
		res.Rows = append(res.Rows, row)
	}
	rows.Close()
	return rows.Err()
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
	case pgtype.Interval:
		if !x.Valid {
			return nil
		}
		v, _ := x.Value()
		return v
	case pgtype.Time:
		if !x.Valid {
			return nil
		}
		v, _ := x.Value()
		return v
	case pgtype.Range[any]:
		if !x.Valid {
			return nil
		}
		if x.LowerType == pgtype.Empty {
			return "empty"
		}
		var b strings.Builder
		if x.LowerType == pgtype.Inclusive {
			b.WriteByte('[')
		} else {
			b.WriteByte('(')
		}
		if x.LowerType != pgtype.Unbounded {
			b.WriteString(tools.FormatCell(pgValue(x.Lower)))
		}
		b.WriteByte(',')
		if x.UpperType != pgtype.Unbounded {
			b.WriteString(tools.FormatCell(pgValue(x.Upper)))
		}
		if x.UpperType == pgtype.Inclusive {
			b.WriteByte(']')
		} else {
			b.WriteByte(')')
		}
		return b.String()
	}
	return v
}

// typeName names a type pgx does not know, once per OID.
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
// name, with column types (format_type), nullability, primary keys,
// foreign keys as Relationships, comments as Descriptions and
// pg_class.reltuples as RowEstimate (-1 when never analysed).
func (db *DB) Introspect(ctx context.Context) ([]domain.Dataset, error) {
	const rels = `
SELECT c.oid, n.nspname, c.relname, c.relkind::text, coalesce(obj_description(c.oid, 'pg_class'), ''), c.reltuples::bigint
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
	)
	for rows.Next() {
		var (
			oid                   uint32
			schema, name, kind, d string
			est                   int64
		)
		if err := rows.Scan(&oid, &schema, &name, &kind, &d, &est); err != nil {
			rows.Close()
			return nil, db.classify(ctx, err)
		}
		ds := domain.Dataset{Name: schema + "." + name, Source: schema + "." + name, Description: d, RowEstimate: est}
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
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, db.classify(ctx, err)
	}
	if len(out) == 0 {
		return out, nil
	}
	const cols = `
SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, coalesce(col_description(a.attrelid, a.attnum), '')
FROM pg_attribute a
WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum`
	rows, err = db.pool.Query(ctx, cols, oids)
	if err != nil {
		return nil, db.classify(ctx, err)
	}
	for rows.Next() {
		var (
			oid          uint32
			name, typ, d string
			nullable     bool
		)
		if err := rows.Scan(&oid, &name, &typ, &nullable, &d); err != nil {
			rows.Close()
			return nil, db.classify(ctx, err)
		}
		i := byID[oid]
		out[i].Fields = append(out[i].Fields, domain.Field{Name: name, Type: typ, Nullable: nullable, Description: d})
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
			out[i].Relationships = append(out[i].Relationships, domain.Relationship{
				From: out[i].Name, FromColumns: from, To: to, ToColumns: toCols, Description: d,
			})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, db.classify(ctx, err)
	}
	return out, nil
}
