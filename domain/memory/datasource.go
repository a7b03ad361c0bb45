package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/bichat-go/bichat/domain"
)

// DataSources is an in-memory domain.DataSourceRepository, separate from
// Store: create it with NewDataSources. It is safe for concurrent use;
// every call takes one mutex, so SwapSealedConfig is atomic with respect
// to UpdateDataSource. Values are copied in and out.
type DataSources struct {
	mu    sync.RWMutex
	byKey map[domain.DataSourceKey]*domain.DataSource
	// names maps (tenant, name) to the id holding the name.
	names map[dsName]string
}

type dsName struct{ tenantID, name string }

var _ domain.DataSourceRepository = (*DataSources)(nil)

// NewDataSources returns an empty repository of data sources.
func NewDataSources() *DataSources {
	return &DataSources{
		byKey: make(map[domain.DataSourceKey]*domain.DataSource),
		names: make(map[dsName]string),
	}
}

// CreateDataSource implements domain.DataSourceRepository. Input is
// checked by domain.CheckDataSource; ids are scoped by tenant.
func (r *DataSources) CreateDataSource(ctx context.Context, ds *domain.DataSource) error {
	const op = "create data source"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckDataSource(ds); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := domain.DataSourceKey{TenantID: ds.TenantID, ID: ds.ID}
	if _, ok := r.byKey[key]; ok {
		return fmt.Errorf("memory: %s %s: id taken: %w", op, ds.ID, domain.ErrConflict)
	}
	if _, ok := r.names[dsName{ds.TenantID, ds.Name}]; ok {
		return fmt.Errorf("memory: %s %s: name %q taken: %w", op, ds.ID, ds.Name, domain.ErrConflict)
	}
	if ds.CreatedAt.IsZero() {
		ds.CreatedAt = now()
	}
	if ds.UpdatedAt.IsZero() {
		ds.UpdatedAt = ds.CreatedAt
	}
	c := *ds
	r.byKey[key] = &c
	r.names[dsName{c.TenantID, c.Name}] = c.ID
	return nil
}

// GetDataSource implements domain.DataSourceRepository.
func (r *DataSources) GetDataSource(ctx context.Context, tenantID, id string) (*domain.DataSource, error) {
	const op = "get data source"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	ds, ok := r.byKey[domain.DataSourceKey{TenantID: tenantID, ID: id}]
	if !ok {
		return nil, fmt.Errorf("memory: %s %s: %w", op, id, domain.ErrNotFound)
	}
	c := *ds
	return &c, nil
}

// ListDataSources implements domain.DataSourceRepository.
func (r *DataSources) ListDataSources(ctx context.Context, tenantID string) ([]domain.DataSource, error) {
	const op = "list data sources"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	r.mu.RLock()
	out := []domain.DataSource{}
	for key, ds := range r.byKey {
		if key.TenantID == tenantID {
			out = append(out, *ds)
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b domain.DataSource) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// UpdateDataSource implements domain.DataSourceRepository.
func (r *DataSources) UpdateDataSource(ctx context.Context, ds *domain.DataSource) error {
	const op = "update data source"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckDataSource(ds); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := domain.DataSourceKey{TenantID: ds.TenantID, ID: ds.ID}
	cur, ok := r.byKey[key]
	if !ok {
		return fmt.Errorf("memory: %s %s: %w", op, ds.ID, domain.ErrNotFound)
	}
	if holder, taken := r.names[dsName{ds.TenantID, ds.Name}]; taken && holder != ds.ID {
		return fmt.Errorf("memory: %s %s: name %q taken: %w", op, ds.ID, ds.Name, domain.ErrConflict)
	}
	if ds.UpdatedAt.IsZero() {
		ds.UpdatedAt = now()
	}
	delete(r.names, dsName{cur.TenantID, cur.Name})
	cur.Name, cur.Dialect, cur.SealedConfig, cur.KeyID, cur.UpdatedAt = ds.Name, ds.Dialect, ds.SealedConfig, ds.KeyID, ds.UpdatedAt
	r.names[dsName{cur.TenantID, cur.Name}] = cur.ID
	return nil
}

// DeleteDataSource implements domain.DataSourceRepository.
func (r *DataSources) DeleteDataSource(ctx context.Context, tenantID, id string) error {
	const op = "delete data source"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := domain.DataSourceKey{TenantID: tenantID, ID: id}
	cur, ok := r.byKey[key]
	if !ok {
		return fmt.Errorf("memory: %s %s: %w", op, id, domain.ErrNotFound)
	}
	delete(r.names, dsName{cur.TenantID, cur.Name})
	delete(r.byKey, key)
	return nil
}

// ScanDataSources implements domain.DataSourceRepository. It sorts the
// keys on every call: fine for the sizes an in-memory store holds.
func (r *DataSources) ScanDataSources(ctx context.Context, after domain.DataSourceKey, limit int) ([]domain.DataSource, error) {
	const op = "scan data sources"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	if err := domain.CheckScanDataSources(limit); err != nil {
		return nil, fmt.Errorf("memory: %s: %w", op, err)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	keys := make([]domain.DataSourceKey, 0, len(r.byKey))
	for key := range r.byKey {
		if compareKeys(key, after) > 0 {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, compareKeys)
	if len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]domain.DataSource, len(keys))
	for i, key := range keys {
		out[i] = *r.byKey[key]
	}
	return out, nil
}

func compareKeys(a, b domain.DataSourceKey) int {
	return cmp.Or(cmp.Compare(a.TenantID, b.TenantID), cmp.Compare(a.ID, b.ID))
}

// SwapSealedConfig implements domain.DataSourceRepository.
func (r *DataSources) SwapSealedConfig(ctx context.Context, ds *domain.DataSource, expected string) error {
	const op = "swap sealed config"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckSwapSealedConfig(ds, expected); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, ok := r.byKey[domain.DataSourceKey{TenantID: ds.TenantID, ID: ds.ID}]
	if !ok {
		return fmt.Errorf("memory: %s %s: %w", op, ds.ID, domain.ErrNotFound)
	}
	if cur.SealedConfig != expected {
		return fmt.Errorf("memory: %s %s: the sealed config changed since it was read: %w", op, ds.ID, domain.ErrConflict)
	}
	cur.SealedConfig, cur.KeyID = ds.SealedConfig, ds.KeyID
	return nil
}
