package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// DefaultRotatePageSize is how many data sources Vault.Rotate reads per
// page.
const DefaultRotatePageSize = 100

// rotateAttempts bounds how often Rotate retries one data source whose
// compare-and-swap lost to concurrent updates that kept it under an old
// key.
const rotateAttempts = 3

// Vault stores data sources with their connection settings sealed by a
// Keyring, bound to the owning tenant and data source id, in a
// domain.DataSourceRepository that never sees the plaintext. Open is the
// only place the settings exist in the clear. A Vault is safe for
// concurrent use.
type Vault struct {
	repo     domain.DataSourceRepository
	keys     *Keyring
	pageSize int
}

// NewVault returns a Vault over repo sealing with keys. Give every
// process of a deployment the same keys (ParseKeyring on
// BICHAT_SECRET_KEYS, say); to rotate, put the new key first on every
// process, run Rotate once, and only then drop the old key.
func NewVault(repo domain.DataSourceRepository, keys *Keyring) (*Vault, error) {
	if repo == nil {
		return nil, errors.New("secrets: new vault: repository is nil")
	}
	if keys == nil {
		return nil, errors.New("secrets: new vault: keyring is nil")
	}
	return &Vault{repo: repo, keys: keys, pageSize: DefaultRotatePageSize}, nil
}

// Keyring returns the vault's keyring.
func (v *Vault) Keyring() *Keyring { return v.keys }

// Repository returns the vault's repository, for listing and deleting
// data sources (which needs no key).
func (v *Vault) Repository() domain.DataSourceRepository { return v.repo }

// AAD returns the additional authenticated data a data source's sealed
// config is bound to: its tenant id and id. A sealed config copied into
// another tenant's or another data source's row fails to open
// (ErrDecrypt).
func AAD(tenantID, id string) []byte {
	// Tenant ids are printable ASCII (domain.ValidName): a NUL separates
	// them unambiguously from the id.
	b := make([]byte, 0, len("bichat/datasource\x00")+len(tenantID)+1+len(id))
	b = append(b, "bichat/datasource\x00"...)
	b = append(b, tenantID...)
	b = append(b, 0)
	return append(b, id...)
}

// seal encodes cfg and seals it for (tenantID, id), clearing the
// encoded plaintext afterwards.
func (v *Vault) seal(tenantID, id string, cfg Config) (string, error) {
	if err := cfg.check(); err != nil {
		return "", err
	}
	plain, err := json.Marshal(configWire(cfg))
	if err != nil {
		return "", fmt.Errorf("encode config: %w", err)
	}
	defer clear(plain)
	return v.keys.Seal(plain, AAD(tenantID, id))
}

// Save stores a new data source of tenantID named name (unique in the
// tenant, domain.ValidName) for dialect (domain.DataSourcePostgres or
// domain.DataSourceSQLite) with cfg sealed under the current key, and
// returns it (SealedConfig holds ciphertext only). A taken name yields
// domain.ErrConflict, bad input domain.ErrInvalid.
func (v *Vault) Save(ctx context.Context, tenantID, name, dialect string, cfg Config) (*domain.DataSource, error) {
	const op = "secrets: save data source"
	ds := &domain.DataSource{ID: domain.NewID(), TenantID: tenantID, Name: name, Dialect: dialect, KeyID: v.keys.Current()}
	// Validate before sealing so that bad input reports its fields.
	ds.SealedConfig = "-"
	if err := domain.CheckDataSource(ds); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	sealed, err := v.seal(tenantID, ds.ID, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", op, name, err)
	}
	ds.SealedConfig = sealed
	if err := v.repo.CreateDataSource(ctx, ds); err != nil {
		return nil, fmt.Errorf("%s %q: %w", op, name, err)
	}
	return ds, nil
}

// Update replaces the connection settings of the tenant's data source id
// with cfg, sealed under the current key, and returns the data source.
// It wins over a concurrent Rotate, whose compare-and-swap then fails
// and finds the row already under the current key.
func (v *Vault) Update(ctx context.Context, tenantID, id string, cfg Config) (*domain.DataSource, error) {
	const op = "secrets: update data source"
	ds, err := v.repo.GetDataSource(ctx, tenantID, id)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, id, err)
	}
	sealed, err := v.seal(tenantID, id, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, id, err)
	}
	ds.SealedConfig, ds.KeyID, ds.UpdatedAt = sealed, v.keys.Current(), time.Time{}
	if err := v.repo.UpdateDataSource(ctx, ds); err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, id, err)
	}
	return ds, nil
}

// Load returns the tenant's data source id and its decrypted settings.
// Another tenant's id is domain.ErrNotFound; a sealed config that does
// not open is ErrUnknownKey (its key was removed), ErrDecrypt (wrong
// key bytes, altered, or copied from another row) or ErrMalformed.
// Errors never contain the settings.
func (v *Vault) Load(ctx context.Context, tenantID, id string) (*domain.DataSource, Config, error) {
	const op = "secrets: open data source"
	ds, err := v.repo.GetDataSource(ctx, tenantID, id)
	if err != nil {
		return nil, Config{}, fmt.Errorf("%s %s: %w", op, id, err)
	}
	plain, err := v.keys.Open(ds.SealedConfig, AAD(tenantID, id))
	if err != nil {
		return nil, Config{}, fmt.Errorf("%s %s: %w", op, id, err)
	}
	defer clear(plain)
	var w configWire
	if err := json.Unmarshal(plain, &w); err != nil {
		// The JSON error could quote plaintext: do not wrap it.
		return nil, Config{}, fmt.Errorf("%s %s: the decrypted settings are not a sealed Config: %w", op, id, ErrMalformed)
	}
	return ds, Config(w), nil
}

// Open returns the decrypted settings of the tenant's data source id:
// the only place they exist in the clear. Connect with them and drop
// them; see Load for the errors. Adapters do this for the host
// (tools/sqldb/postgres.OpenDataSource).
func (v *Vault) Open(ctx context.Context, tenantID, id string) (Config, error) {
	_, cfg, err := v.Load(ctx, tenantID, id)
	return cfg, err
}

// RotateResult reports what Rotate did.
type RotateResult struct {
	// Scanned counts the data sources read, of all tenants.
	Scanned int
	// Rotated counts those re-sealed under the current key.
	Rotated int
	// Failed counts those that could not be rotated; Failures says why.
	Failed int
	// Failures names each data source that failed and its error (which
	// never holds a secret).
	Failures []RotateFailure
}

// RotateFailure is one data source Rotate could not re-seal.
type RotateFailure struct {
	TenantID string
	ID       string
	Err      error
}

// Rotate re-seals, under the current key, every data source of every
// tenant sealed under another key, page by page in key order. Each
// re-seal is a compare-and-swap (SwapSealedConfig): when an Update lands
// between the read and the write, the swap fails, Rotate reads the row
// again and finds it under the current key (or retries), so an update is
// never lost. A data source that cannot be rotated (its key was removed
// already, its ciphertext is damaged) does not stop the sweep: it is
// counted in Failed, listed in Failures, and Rotate returns an error
// joining those failures next to the complete result. Run Rotate again
// until it reports nothing to do; drop an old key from the configuration
// only after a Rotate with no failures. An error reading a page stops
// the sweep and is returned with the counts so far, as does the end of
// ctx. A row that processes still sealing under an old key keep
// updating may lose every compare-and-swap attempt; it fails with
// domain.ErrConflict and the next Rotate picks it up.
func (v *Vault) Rotate(ctx context.Context) (RotateResult, error) {
	var res RotateResult
	after := domain.DataSourceKey{}
	for {
		page, err := v.repo.ScanDataSources(ctx, after, v.pageSize)
		if err != nil {
			return res, fmt.Errorf("secrets: rotate: %w", errors.Join(append([]error{err}, failureErrs(res)...)...))
		}
		for i := range page {
			ds := &page[i]
			if err := ctx.Err(); err != nil {
				return res, fmt.Errorf("secrets: rotate: %w", errors.Join(append([]error{err}, failureErrs(res)...)...))
			}
			res.Scanned++
			rotated, err := v.rotateOne(ctx, ds)
			switch {
			case err != nil:
				res.Failed++
				res.Failures = append(res.Failures, RotateFailure{TenantID: ds.TenantID, ID: ds.ID, Err: err})
			case rotated:
				res.Rotated++
			}
		}
		if len(page) < v.pageSize {
			break
		}
		last := page[len(page)-1]
		after = domain.DataSourceKey{TenantID: last.TenantID, ID: last.ID}
	}
	if res.Failed > 0 {
		return res, fmt.Errorf("secrets: rotate: %d of %d data sources failed: %w", res.Failed, res.Scanned, errors.Join(failureErrs(res)...))
	}
	return res, nil
}

func failureErrs(res RotateResult) []error {
	errs := make([]error, len(res.Failures))
	for i, f := range res.Failures {
		errs[i] = fmt.Errorf("tenant %s data source %s: %w", f.TenantID, f.ID, f.Err)
	}
	return errs
}

// rotateOne re-seals ds under the current key unless it is there already,
// retrying on a lost compare-and-swap with the row read again.
func (v *Vault) rotateOne(ctx context.Context, ds *domain.DataSource) (bool, error) {
	for attempt := 1; ; attempt++ {
		sealed, changed, err := v.keys.Rotate(ds.SealedConfig, AAD(ds.TenantID, ds.ID))
		if err != nil {
			return false, err
		}
		if !changed {
			return false, nil
		}
		swap := domain.DataSource{TenantID: ds.TenantID, ID: ds.ID, SealedConfig: sealed, KeyID: v.keys.Current()}
		err = v.repo.SwapSealedConfig(ctx, &swap, ds.SealedConfig)
		if err == nil {
			return true, nil
		}
		if errors.Is(err, domain.ErrNotFound) {
			// Deleted since the page was read: nothing to rotate.
			return false, nil
		}
		if !errors.Is(err, domain.ErrConflict) || attempt == rotateAttempts {
			return false, err
		}
		// Updated since it was read: look again.
		if ds, err = v.repo.GetDataSource(ctx, ds.TenantID, ds.ID); err != nil {
			if errors.Is(err, domain.ErrNotFound) {
				return false, nil
			}
			return false, err
		}
	}
}
