package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the SQL migrations, one file per version named
// NNNN_description.sql (0001_init.sql, 0002_...), for hosts that apply
// them with their own migration tool. The statements are not qualified
// with a schema: run each file with search_path set to the store's
// schema (SET search_path TO bichat), in version order, each in a
// transaction. Migrate does exactly that and also records the versions
// in the schema's schema_version table.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic("postgres: embedded migrations: " + err.Error()) // cannot happen: the directory is embedded
	}
	return sub
}

// migration is one versioned SQL file.
type migration struct {
	version int
	name    string
	sql     string
}

var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// loadMigrations returns the embedded migrations in version order.
func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q is not named NNNN_description.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: versions must be 1, 2, 3, ... without gaps", m.name)
		}
	}
	return out, nil
}

// LatestVersion is the schema version that Migrate brings a schema to.
func LatestVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// Migrate creates schema (when missing) and applies every migration it
// has not applied yet, so the schema holds the tables of the latest
// version. It is idempotent and safe to run from several processes at
// once: it works in one transaction that first takes a transaction-scoped
// advisory lock derived from the schema name, so concurrent callers
// apply the migrations one after the other and the later ones find
// nothing to do. Applied versions are recorded in the table
// <schema>.schema_version (version, name, applied_at). An empty schema
// means "bichat".
//
// Run it at start-up, before New, with a role that may create the schema
// and tables; the service itself needs only SELECT, INSERT, UPDATE and
// DELETE on them (and USAGE on the schema and its sequences).
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return migrateTo(ctx, pool, schema, 0)
}

// migrateTo applies the migrations up to version target (0: all).
func migrateTo(ctx context.Context, pool *pgxpool.Pool, schema string, target int) error {
	if pool == nil {
		return errors.New("postgres: migrate: pool is nil")
	}
	if schema == "" {
		schema = DefaultSchema
	}
	if err := checkSchema(schema); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	if target > 0 && target < len(ms) {
		ms = ms[:target]
	}
	qs := pgx.Identifier{schema}.Sanitize()
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey(schema)); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+qs); err != nil {
			return fmt.Errorf("create schema %s: %w", schema, err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+qs+`.schema_version (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("create %s.schema_version: %w", schema, err)
		}
		var current int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+qs+".schema_version").Scan(&current); err != nil {
			return fmt.Errorf("read %s.schema_version: %w", schema, err)
		}
		if current > len(ms) && target == 0 {
			return fmt.Errorf("schema %s is at version %d, newer than this SDK's %d: upgrade the SDK", schema, current, len(ms))
		}
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+qs); err != nil {
			return fmt.Errorf("set search_path: %w", err)
		}
		for _, m := range ms {
			if m.version <= current {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("apply %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+qs+".schema_version (version, name) VALUES ($1, $2)",
				m.version, strings.TrimSuffix(m.name, ".sql")); err != nil {
				return fmt.Errorf("record %s: %w", m.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: migrate schema %s: %w", schema, err)
	}
	return nil
}

// SchemaVersion returns the latest migration version applied to schema
// (0 when it has none), for hosts that check the schema at start-up.
func SchemaVersion(ctx context.Context, pool *pgxpool.Pool, schema string) (int, error) {
	if schema == "" {
		schema = DefaultSchema
	}
	if err := checkSchema(schema); err != nil {
		return 0, fmt.Errorf("postgres: schema version: %w", err)
	}
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL",
		pgx.Identifier{schema, "schema_version"}.Sanitize()).Scan(&exists); err != nil {
		return 0, fmt.Errorf("postgres: schema version of %s: %w", schema, err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+pgx.Identifier{schema}.Sanitize()+".schema_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("postgres: schema version of %s: %w", schema, err)
	}
	return v, nil
}

// migrationLockKey is the advisory lock key of schema's migrations.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("bichat/domain/postgres migrate "))
	h.Write([]byte(schema))
	return int64(h.Sum64())
}
