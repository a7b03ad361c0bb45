package domain

import (
	"context"
	"time"
)

// Dialects of a DataSource: the database kinds bichat has adapters for.
const (
	DataSourcePostgres = "postgres"
	DataSourceSQLite   = "sqlite"
)

// Limits of the data-source repositories.
const (
	// MaxDataSourceScan is the largest page DataSourceRepository.ScanDataSources
	// returns in one call.
	MaxDataSourceScan = 1000
	// MaxSealedConfigLen bounds DataSource.SealedConfig (1 MiB). A sealed
	// connection setting is a few hundred bytes; the bound stops a bug or
	// an attacker from filling the table.
	MaxSealedConfigLen = 1 << 20
)

// DataSource is a database a tenant's agent may query: its connection
// settings, sealed (encrypted and authenticated) by package secrets.
// The repository stores SealedConfig as opaque text and never sees the
// plaintext; only secrets.Vault.Open decrypts it, when connecting.
type DataSource struct {
	// ID is the data source's id, a UUID (see NewID). Ids are scoped by
	// tenant.
	ID string `json:"id"`
	// TenantID is the owning tenant, a host-supplied name (ValidName).
	TenantID string `json:"tenant_id"`
	// Name is the tenant's name for it ("warehouse"), unique within the
	// tenant: 1 to 128 printable ASCII characters without spaces
	// (ValidName).
	Name string `json:"name"`
	// Dialect is DataSourcePostgres or DataSourceSQLite.
	Dialect string `json:"dialect"`
	// SealedConfig is the connection settings as sealed by
	// secrets.Keyring ("v1.<key id>.<ciphertext>"), bound to TenantID and
	// ID: copied to another row it does not open. It is left out of
	// JSON: API clients have no use for ciphertext.
	SealedConfig string `json:"-"`
	// KeyID is the id of the key SealedConfig is sealed under, kept in a
	// column of its own so that operators can see what a key rotation
	// still has to do.
	KeyID string `json:"key_id"`
	// CreatedAt and UpdatedAt are set by the repository when zero.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// DataSourceKey identifies a data source across tenants. It is the
// position of DataSourceRepository.ScanDataSources, which orders data
// sources by TenantID, then ID, comparing bytes.
type DataSourceKey struct {
	TenantID string
	ID       string
}

// DataSourceRepository persists data sources. Like every repository it
// scopes each call by tenant: another tenant's id is ErrNotFound. The
// exception is ScanDataSources, the sweep a key rotation runs across all
// tenants.
//
// Values passed in may be modified by the caller afterwards and values
// returned are the caller's: implementations copy both ways.
type DataSourceRepository interface {
	// CreateDataSource stores ds. Input is checked by CheckDataSource.
	// A zero CreatedAt becomes the current time and a zero UpdatedAt
	// becomes CreatedAt, both written back to ds. An id already used in
	// the tenant, or a name the tenant already has, yields ErrConflict.
	CreateDataSource(ctx context.Context, ds *DataSource) error
	// GetDataSource returns the tenant's data source id, or ErrNotFound.
	GetDataSource(ctx context.Context, tenantID, id string) (*DataSource, error)
	// ListDataSources returns the tenant's data sources ordered by Name
	// (bytes), never nil.
	ListDataSources(ctx context.Context, tenantID string) ([]DataSource, error)
	// UpdateDataSource replaces the Name, Dialect, SealedConfig, KeyID and
	// UpdatedAt of the tenant's data source ds.ID (a zero UpdatedAt
	// becomes the current time, written back). Input is checked by
	// CheckDataSource. A name another data source of the tenant has
	// yields ErrConflict, a missing data source ErrNotFound.
	UpdateDataSource(ctx context.Context, ds *DataSource) error
	// DeleteDataSource removes the tenant's data source id, or returns
	// ErrNotFound.
	DeleteDataSource(ctx context.Context, tenantID, id string) error
	// ScanDataSources returns at most limit (1 to MaxDataSourceScan) data
	// sources of all tenants whose key sorts after after (the zero key:
	// from the start), ordered by TenantID, then ID, comparing bytes.
	// Pass the key of the last one returned to get the next page; a
	// short page is the last. Rows created or deleted during a scan may
	// or may not be seen; every row that exists throughout is returned
	// exactly once.
	ScanDataSources(ctx context.Context, after DataSourceKey, limit int) ([]DataSource, error)
	// SwapSealedConfig replaces the stored SealedConfig and KeyID of the
	// data source (ds.TenantID, ds.ID) with ds.SealedConfig and ds.KeyID,
	// but only while the stored SealedConfig still equals expected: a
	// compare-and-swap, so a key rotation that read a row before an
	// UpdateDataSource never overwrites the update. A mismatch yields
	// ErrConflict, a missing data source ErrNotFound; input is checked
	// by CheckSwapSealedConfig. UpdatedAt and the other fields are left
	// as they are: re-encrypting under another key does not change the
	// settings.
	SwapSealedConfig(ctx context.Context, ds *DataSource, expected string) error
}

// CheckDataSource validates the input of
// DataSourceRepository.CreateDataSource and UpdateDataSource: ds is
// required, ds.ID must pass ValidID, TenantID and Name must pass
// ValidName, Dialect must be DataSourcePostgres or DataSourceSQLite, and
// SealedConfig (at most MaxSealedConfigLen bytes) and KeyID must be set.
func CheckDataSource(ds *DataSource) error {
	if ds == nil {
		return Invalid("data_source", "is required")
	}
	var ve ValidationError
	if !ValidID(ds.ID) {
		ve.Add("data_source.id", "must be a UUID")
	}
	if !ValidName(ds.TenantID) {
		ve.Add("data_source.tenant_id", "must be 1 to 128 printable ASCII characters without spaces")
	}
	if !ValidName(ds.Name) {
		ve.Add("data_source.name", "must be 1 to 128 printable ASCII characters without spaces")
	}
	if ds.Dialect != DataSourcePostgres && ds.Dialect != DataSourceSQLite {
		ve.Add("data_source.dialect", `must be "postgres" or "sqlite"`)
	}
	checkSealed(&ve, ds)
	return ve.Err()
}

// CheckSwapSealedConfig validates the input of
// DataSourceRepository.SwapSealedConfig: ds is required, its TenantID
// and ID must be set, its SealedConfig (at most MaxSealedConfigLen bytes)
// and KeyID set, and expected non-empty.
func CheckSwapSealedConfig(ds *DataSource, expected string) error {
	if ds == nil {
		return Invalid("data_source", "is required")
	}
	var ve ValidationError
	if ds.TenantID == "" {
		ve.Add("data_source.tenant_id", "is required")
	}
	if ds.ID == "" {
		ve.Add("data_source.id", "is required")
	}
	checkSealed(&ve, ds)
	if expected == "" {
		ve.Add("expected", "is required")
	}
	return ve.Err()
}

// CheckScanDataSources validates the limit of
// DataSourceRepository.ScanDataSources: 1 to MaxDataSourceScan.
func CheckScanDataSources(limit int) error {
	if limit < 1 || limit > MaxDataSourceScan {
		return Invalid("limit", "must be between 1 and 1000")
	}
	return nil
}

func checkSealed(ve *ValidationError, ds *DataSource) {
	switch {
	case ds.SealedConfig == "":
		ve.Add("data_source.sealed_config", "is required")
	case len(ds.SealedConfig) > MaxSealedConfigLen:
		ve.Add("data_source.sealed_config", "must be at most 1 MiB")
	}
	if ds.KeyID == "" {
		ve.Add("data_source.key_id", "is required")
	}
}
