package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/secrets"
)

// OpenDataSource connects to the tenant's stored data source id: it
// decrypts the sealed settings with v (secrets.Vault.Load), the only
// moment the DSN exists in the clear, and passes the DSN to Open with
// opts (so the role check applies as usual). The data source must have
// the dialect domain.DataSourcePostgres.
//
// Errors name the data source by id and never contain the DSN or its
// password: another tenant's id is domain.ErrNotFound, a sealed config
// that does not open is secrets.ErrUnknownKey, secrets.ErrDecrypt or
// secrets.ErrMalformed, and connection failures are Open's (redacted).
func OpenDataSource(ctx context.Context, v *secrets.Vault, tenantID, id string, opts Options) (*DB, error) {
	const op = "postgres: open data source"
	if v == nil {
		return nil, errors.New(op + ": vault is nil")
	}
	ds, cfg, err := v.Load(ctx, tenantID, id)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, id, err)
	}
	if ds.Dialect != domain.DataSourcePostgres {
		return nil, fmt.Errorf("%s %s: the data source's dialect is %q, not %q", op, id, ds.Dialect, domain.DataSourcePostgres)
	}
	// Open's errors never contain the DSN or the password.
	db, err := Open(ctx, cfg.DSN, opts)
	if err != nil {
		return nil, fmt.Errorf("%s %s (%s): %w", op, id, ds.Name, err)
	}
	return db, nil
}
