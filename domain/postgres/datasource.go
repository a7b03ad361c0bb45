package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/bichat-go/bichat/domain"
	"github.com/jackc/pgx/v5"
)

// Store implements domain.DataSourceRepository on the table datasources
// (migration 0005).
var _ domain.DataSourceRepository = (*Store)(nil)

const dataSourceCols = `id, tenant_id, name, dialect, sealed_config, key_id, created_at, updated_at`

func scanDataSource(row pgx.Row) (domain.DataSource, error) {
	var d domain.DataSource
	err := row.Scan(&d.ID, &d.TenantID, &d.Name, &d.Dialect, &d.SealedConfig, &d.KeyID, &d.CreatedAt, &d.UpdatedAt)
	return d, err
}

// CreateDataSource implements domain.DataSourceRepository. Input is
// checked by domain.CheckDataSource; defaults match domain/memory (a
// zero CreatedAt becomes the current time, a zero UpdatedAt CreatedAt,
// written back). A taken id or name in the tenant yields
// domain.ErrConflict.
func (s *Store) CreateDataSource(ctx context.Context, ds *domain.DataSource) error {
	const op = "create data source"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckDataSource(ds); err != nil {
		return wrap(op, err)
	}
	created, updated := ds.CreatedAt, ds.UpdatedAt
	if created.IsZero() {
		created = now()
	}
	if updated.IsZero() {
		updated = created
	}
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {S}.datasources (`+dataSourceCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`),
		ds.ID, ds.TenantID, ds.Name, ds.Dialect, ds.SealedConfig, ds.KeyID, created, updated)
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, ds.ID, classify(err))
	}
	ds.CreatedAt, ds.UpdatedAt = created, updated
	return nil
}

// GetDataSource implements domain.DataSourceRepository.
func (s *Store) GetDataSource(ctx context.Context, tenantID, id string) (*domain.DataSource, error) {
	const op = "get data source"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	d, err := scanDataSource(s.pool.QueryRow(ctx, s.sql(`SELECT `+dataSourceCols+`
		FROM {S}.datasources WHERE tenant_id = $1 AND id = $2`), tenantID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: %s %s: %w", op, id, domain.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: %s %s: %w", op, id, err)
	}
	return &d, nil
}

// ListDataSources implements domain.DataSourceRepository.
func (s *Store) ListDataSources(ctx context.Context, tenantID string) ([]domain.DataSource, error) {
	const op = "list data sources"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+dataSourceCols+`
		FROM {S}.datasources WHERE tenant_id = $1 ORDER BY name, id`), tenantID)
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := collect(rows, scanDataSource)
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// UpdateDataSource implements domain.DataSourceRepository.
func (s *Store) UpdateDataSource(ctx context.Context, ds *domain.DataSource) error {
	const op = "update data source"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckDataSource(ds); err != nil {
		return wrap(op, err)
	}
	updated := ds.UpdatedAt
	if updated.IsZero() {
		updated = now()
	}
	tag, err := s.pool.Exec(ctx, s.sql(`UPDATE {S}.datasources
		SET name = $3, dialect = $4, sealed_config = $5, key_id = $6, updated_at = $7
		WHERE tenant_id = $1 AND id = $2`),
		ds.TenantID, ds.ID, ds.Name, ds.Dialect, ds.SealedConfig, ds.KeyID, updated)
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, ds.ID, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s %s: %w", op, ds.ID, domain.ErrNotFound)
	}
	ds.UpdatedAt = updated
	return nil
}

// DeleteDataSource implements domain.DataSourceRepository.
func (s *Store) DeleteDataSource(ctx context.Context, tenantID, id string) error {
	const op = "delete data source"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {S}.datasources WHERE tenant_id = $1 AND id = $2`), tenantID, id)
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s %s: %w", op, id, domain.ErrNotFound)
	}
	return nil
}

// ScanDataSources implements domain.DataSourceRepository with keyset
// paging on the primary key (byte order: the key columns use the "C"
// collation).
func (s *Store) ScanDataSources(ctx context.Context, after domain.DataSourceKey, limit int) ([]domain.DataSource, error) {
	const op = "scan data sources"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	if err := domain.CheckScanDataSources(limit); err != nil {
		return nil, wrap(op, err)
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT `+dataSourceCols+`
		FROM {S}.datasources WHERE (tenant_id, id) > ($1, $2)
		ORDER BY tenant_id, id LIMIT $3`), after.TenantID, after.ID, limit)
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := collect(rows, scanDataSource)
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// SwapSealedConfig implements domain.DataSourceRepository in one
// conditional UPDATE, atomic against a concurrent UpdateDataSource.
func (s *Store) SwapSealedConfig(ctx context.Context, ds *domain.DataSource, expected string) error {
	const op = "swap sealed config"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckSwapSealedConfig(ds, expected); err != nil {
		return wrap(op, err)
	}
	// One statement tells a stale expectation from a missing row: the
	// UPDATE re-checks its condition on the newest version of the row
	// (so a concurrent UpdateDataSource makes it match nothing), while
	// the EXISTS reads the statement's snapshot.
	var swapped, exists bool
	err := s.pool.QueryRow(ctx, s.sql(`WITH u AS (
			UPDATE {S}.datasources SET sealed_config = $4, key_id = $5
			WHERE tenant_id = $1 AND id = $2 AND sealed_config = $3
			RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM u),
		       EXISTS (SELECT 1 FROM {S}.datasources WHERE tenant_id = $1 AND id = $2)`),
		ds.TenantID, ds.ID, expected, ds.SealedConfig, ds.KeyID).Scan(&swapped, &exists)
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, ds.ID, err)
	}
	switch {
	case swapped:
		return nil
	case !exists:
		return fmt.Errorf("postgres: %s %s: %w", op, ds.ID, domain.ErrNotFound)
	default:
		return fmt.Errorf("postgres: %s %s: the sealed config changed since it was read: %w", op, ds.ID, domain.ErrConflict)
	}
}
