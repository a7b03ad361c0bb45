package secrets_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/bichat-go/bichat/secrets"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.CloseSharedPool()
	os.Exit(code)
}

// pgStore returns a domain/postgres store over a fresh, migrated schema
// of the test server, dropped when t ends.
func pgStore(t *testing.T) *postgres.Store {
	t.Helper()
	p := pgtest.SharedPool(t, 16)
	schema := pgtest.Schema(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := postgres.Migrate(ctx, p, schema); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	s, err := postgres.New(p, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestVaultPostgres(t *testing.T) {
	pgtest.SharedPool(t, 16)
	runVaultTests(t, func(t *testing.T) domain.DataSourceRepository { return pgStore(t) })
}

// TestPostgresRowHoldsNoPlaintext reads the datasources table directly,
// every column as text: neither the DSN nor its password nor an Extra
// value is there.
func TestPostgresRowHoldsNoPlaintext(t *testing.T) {
	t.Parallel()
	s := pgStore(t)
	ctx := t.Context()
	v := mustVault(t, s, mustKeyring(t, "k1", map[string][]byte{"k1": newKey(t)}))
	ds, err := v.Save(ctx, "acme", "warehouse", domain.DataSourcePostgres,
		secrets.Config{DSN: pgDSN, Extra: map[string]string{"sslkey": "ExtraSecretPEM"}})
	if err != nil {
		t.Fatal(err)
	}
	var row string
	err = pgtest.SharedPool(t, 16).QueryRow(ctx, "SELECT row_to_json(d)::text FROM "+
		pgx.Identifier{s.Schema(), "datasources"}.Sanitize()+" d WHERE id = $1", ds.ID).Scan(&row)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{pgDSN, pgPassword, "alice:", "ExtraSecretPEM", "sslkey"} {
		if strings.Contains(row, secret) {
			t.Errorf("the stored row holds %q: %s", secret, row)
		}
	}
	if !strings.Contains(row, ds.SealedConfig) || !strings.Contains(row, `"key_id":"k1"`) {
		t.Errorf("the stored row %s does not hold the sealed config and key id", row)
	}
	if cfg, err := v.Open(ctx, "acme", ds.ID); err != nil || cfg.DSN != pgDSN {
		t.Errorf("Open = %v, %v", cfg, err)
	}
}
