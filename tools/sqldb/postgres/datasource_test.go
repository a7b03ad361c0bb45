package postgres

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/secrets"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// dsVault is a vault over an in-memory repository with one fixed key.
func dsVault(t *testing.T, current string, key byte) *secrets.Vault {
	t.Helper()
	return dsVaultOn(t, memory.NewDataSources(), current, key)
}

func dsVaultOn(t *testing.T, repo domain.DataSourceRepository, current string, key byte) *secrets.Vault {
	t.Helper()
	k, err := secrets.NewKeyring(current, map[string][]byte{current: bytes.Repeat([]byte{key}, secrets.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	v, err := secrets.NewVault(repo, k)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// passwordOf returns the password in a DSN made by roleDSN.
func passwordOf(t *testing.T, dsn string) string {
	t.Helper()
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			return p
		}
	}
	_, p, ok := strings.Cut(dsn, " password=")
	if !ok {
		t.Fatal("no password in the role's DSN")
	}
	return p
}

// OpenDataSource decrypts a stored data source and connects with it, as
// a read-only role, to the real test server.
func TestOpenDataSource(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	role, dsn := newRole(t, "bichat_ds_", "NOSUPERUSER NOCREATEDB NOCREATEROLE")
	exec(t,
		"ALTER ROLE "+role+" SET default_transaction_read_only = on",
		"CREATE TABLE "+schema+".kpis (name text, value int)",
		"INSERT INTO "+schema+".kpis VALUES ('orders', 42)",
		"GRANT USAGE ON SCHEMA "+schema+" TO "+role,
		"GRANT SELECT ON ALL TABLES IN SCHEMA "+schema+" TO "+role,
	)
	ctx := context.Background()
	v := dsVault(t, "k1", 1)
	ds, err := v.Save(ctx, "acme", "warehouse", domain.DataSourcePostgres, secrets.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ds.SealedConfig, passwordOf(t, dsn)) {
		t.Fatal("the sealed config holds the password")
	}
	opts := Options{Schemas: []string{schema}, Policy: Policy{SearchPath: []string{schema}}}
	db, err := OpenDataSource(ctx, v, "acme", ds.ID, opts)
	if err != nil {
		t.Fatalf("OpenDataSource: %v", err)
	}
	defer db.Close()
	res, err := db.Query(ctx, "SELECT name, value FROM kpis", sqldb.Limits{})
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != "orders" || res.Rows[0][1] != int64(42) {
		t.Fatalf("query through the data source = %v, %v", res, err)
	}
	var who string
	if err := db.Pool().QueryRow(ctx, "SELECT current_user").Scan(&who); err != nil || who != role {
		t.Errorf("connected as %q (%v), want the stored role %q", who, err, role)
	}
}

// Every way OpenDataSource fails names the problem and never the DSN or
// its password.
func TestOpenDataSourceErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dsn := newRole(t, "bichat_dse_", "NOSUPERUSER NOCREATEDB NOCREATEROLE")
	password := passwordOf(t, dsn)
	wrongPassword := strings.Replace(dsn, password, "Wrong-"+password[:4]+"-pw", 1)
	_, privilegedDSN := newRole(t, "bichat_dsp_", "NOSUPERUSER CREATEROLE")

	repo := memory.NewDataSources()
	v := dsVaultOn(t, repo, "k1", 1)
	save := func(name, dialect, dsn string) string {
		t.Helper()
		ds, err := v.Save(ctx, "acme", name, dialect, secrets.Config{DSN: dsn})
		if err != nil {
			t.Fatal(err)
		}
		return ds.ID
	}
	good := save("good", domain.DataSourcePostgres, dsn)
	lite := save("lite", domain.DataSourceSQLite, dsn)
	wrong := save("wrong-password", domain.DataSourcePostgres, wrongPassword)
	garbled := save("garbled", domain.DataSourcePostgres, "postgres://user:"+password+"@host:notaport/db")
	privileged := save("privileged", domain.DataSourcePostgres, privilegedDSN)
	// Sealed under a key this vault no longer has.
	retired := dsVaultOn(t, repo, "k0", 9)
	retiredID := func() string {
		ds, err := retired.Save(ctx, "acme", "retired", domain.DataSourcePostgres, secrets.Config{DSN: dsn})
		if err != nil {
			t.Fatal(err)
		}
		return ds.ID
	}()

	cases := []struct {
		name   string
		vault  *secrets.Vault
		tenant string
		id     string
		is     error
		says   string
	}{
		{"nil vault", nil, "acme", good, nil, "vault is nil"},
		{"another tenant", v, "globex", good, domain.ErrNotFound, "not found"},
		{"unknown id", v, "acme", domain.NewID(), domain.ErrNotFound, "not found"},
		{"sqlite data source", v, "acme", lite, nil, `dialect is "sqlite"`},
		{"wrong password", v, "acme", wrong, nil, "password authentication failed"},
		{"unparsable DSN", v, "acme", garbled, nil, "does not parse"},
		{"privileged role", v, "acme", privileged, ErrPrivilegedRole, "CREATEROLE"},
		{"retired key", v, "acme", retiredID, secrets.ErrUnknownKey, `key "k0"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, err := OpenDataSource(ctx, c.vault, c.tenant, c.id, Options{})
			if err == nil {
				db.Close()
				t.Fatal("OpenDataSource succeeded")
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v, want one matching %v", err, c.is)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %q does not say %q", err, c.says)
			}
			for _, secret := range []string{dsn, password, wrongPassword, privilegedDSN, passwordOf(t, privilegedDSN), "Wrong-"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q holds a secret", err)
				}
			}
		})
	}
}
