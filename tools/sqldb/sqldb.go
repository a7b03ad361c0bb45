package sqldb

import (
	"context"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
)

// Dialect names reported by DB.Dialect.
const (
	DialectPostgres = "postgres"
	DialectSQLite   = "sqlite"
)

// Defaults of Limits.
const (
	DefaultMaxRows      = 500
	DefaultTimeout      = 30 * time.Second
	DefaultMaxCellBytes = 64 << 10
	DefaultMaxBytes     = 16 << 20
)

// DB is a read-only SQL database the agent can query. Adapters:
// tools/sqldb/postgres (PostgreSQL through pgx, statements checked with the
// real PostgreSQL parser) and tools/sqldb/sqlite (embedded SQLite, no cgo).
// Implementations are safe for concurrent use.
type DB interface {
	// Dialect is DialectPostgres, DialectSQLite or an adapter's own name;
	// the tools use it to write dialect-specific SQL (profiles).
	Dialect() string
	// Introspect lists the tables and views the agent may query, with
	// columns, types, nullability, primary keys, foreign keys (as
	// Relationships), comments (as Descriptions) and row estimates.
	Introspect(ctx context.Context) ([]domain.Dataset, error)
	// Query runs one read-only SELECT within lim and returns at most
	// lim.MaxRows rows. Every statement is checked first; a refused one
	// returns an *Error of kind KindRejected and is never sent to the
	// database. Errors are *Error values classified by Kind.
	Query(ctx context.Context, sql string, lim Limits) (*Result, error)
	// Sample returns up to n rows of the dataset (a name Introspect
	// returned), through the same checks as Query.
	Sample(ctx context.Context, dataset string, n int) (*Result, error)
}

// Limits bound one query. Zero values mean the defaults.
type Limits struct {
	// MaxRows is how many rows are fetched at most (default 500). Rows
	// beyond it are never fetched; Result.Truncated reports that they
	// exist.
	MaxRows int
	// Timeout bounds the statement on the server (default 30 s).
	Timeout time.Duration
	// MaxCellBytes cuts longer text and binary cells (default 64 KiB);
	// Result.CutCells counts them.
	MaxCellBytes int
	// MaxBytes stops fetching once the rows hold this many bytes (default
	// 16 MiB); the result is then Truncated.
	MaxBytes int
	// Tables, when not empty, is the allowlist of relations the statement
	// may read: schema-qualified names ("sales.orders"), or bare names in
	// databases without schemas. Names of common table expressions are
	// not relations and need no entry.
	Tables []string
	// TenantID, when the adapter is configured with a tenant setting, is
	// set for the statement's transaction (for row-level security).
	TenantID string
	// Attributes are the caller's data-scoping attributes ("tenant_id",
	// "user_id", "roles", "region", ...; agents.CallInfo.Attributes in a
	// tool call). An adapter configured to scope data by them hands the
	// mapped ones to the database for the statement alone: PostgreSQL as
	// transaction-local settings that row-level security policies read
	// (tools/sqldb/postgres Options.Settings), SQLite through the
	// bichat_attr SQL function its views call (tools/sqldb/sqlite). Such
	// an adapter refuses a statement when a mapped attribute is missing
	// or empty. Adapters not configured for it ignore them. Not modified
	// by the adapters.
	Attributes map[string]string
}

// WithDefaults returns l with zero fields replaced by the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxRows <= 0 {
		l.MaxRows = DefaultMaxRows
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxCellBytes <= 0 {
		l.MaxCellBytes = DefaultMaxCellBytes
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// Result is what Query fetched.
type Result struct {
	// Columns have the database's type names ("int8", "numeric",
	// "timestamptz", "TEXT").
	Columns []tools.Column
	// Rows hold nil, bool, int64, float64, string, time.Time or []byte
	// values (the tools.Table convention); at most Limits.MaxRows of them.
	Rows [][]any
	// Truncated reports that the statement had more rows than Rows holds
	// (MaxRows or MaxBytes was reached).
	Truncated bool
	// CutCells counts cells shortened to MaxCellBytes.
	CutCells int
	// Duration is the time from sending the statement to the last row.
	Duration time.Duration
	// SQL is the statement as run.
	SQL string
	// Datasets are the relations the statement read, when the adapter
	// knows them (schema-qualified in PostgreSQL).
	Datasets []string
}

// RowCount is the number of rows fetched (shown), len(Rows).
func (r *Result) RowCount() int { return len(r.Rows) }

// Table converts the result to a tools.Table (without a name).
func (r *Result) Table() tools.Table {
	return tools.Table{Columns: r.Columns, Rows: r.Rows, Truncated: r.Truncated, SQL: r.SQL, Datasets: r.Datasets}
}
