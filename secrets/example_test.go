package secrets_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/secrets"
)

// Seal under one key, open, then rotate to a new key and retire the old
// one. Real keys come from a secret store (KeyringFromEnv reads
// BICHAT_SECRET_KEYS); these are fixed for the example.
func ExampleKeyring() {
	k1 := bytes.Repeat([]byte{1}, secrets.KeySize)
	k2 := bytes.Repeat([]byte{2}, secrets.KeySize)
	owner := secrets.AAD("acme", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")

	old, _ := secrets.NewKeyring("2026-01", map[string][]byte{"2026-01": k1})
	sealed, _ := old.Seal([]byte("postgres://alice:s3cret@db/sales"), owner)
	id, _ := secrets.KeyID(sealed)
	fmt.Println("sealed under", id)

	plain, _ := old.Open(sealed, owner)
	fmt.Println("opened:", string(plain))
	clear(plain)

	_, err := old.Open(sealed, secrets.AAD("other-tenant", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"))
	fmt.Println("other owner:", errors.Is(err, secrets.ErrDecrypt))

	// The new key goes first; the old one stays until everything is rotated.
	both, _ := secrets.NewKeyring("2026-06", map[string][]byte{"2026-06": k2, "2026-01": k1})
	rotated, changed, _ := both.Rotate(sealed, owner)
	id, _ = secrets.KeyID(rotated)
	fmt.Println("rotated:", changed, "now under", id)

	onlyNew, _ := secrets.NewKeyring("2026-06", map[string][]byte{"2026-06": k2})
	plain, _ = onlyNew.Open(rotated, owner)
	fmt.Println("opened with the new key alone:", string(plain))
	_, err = onlyNew.Open(sealed, owner)
	fmt.Println("the old value:", errors.Is(err, secrets.ErrUnknownKey))
	fmt.Println(onlyNew)
	// Output:
	// sealed under 2026-01
	// opened: postgres://alice:s3cret@db/sales
	// other owner: true
	// rotated: true now under 2026-06
	// opened with the new key alone: postgres://alice:s3cret@db/sales
	// the old value: true
	// secrets.Keyring{current: 2026-06, keys: [2026-06]}
}

// A Vault stores data sources with sealed settings; Open decrypts them
// when connecting, and Rotate moves every tenant's data sources to the
// current key.
func ExampleVault() {
	ctx := context.Background()
	k1 := bytes.Repeat([]byte{1}, secrets.KeySize)
	k2 := bytes.Repeat([]byte{2}, secrets.KeySize)
	repo := memory.NewDataSources() // or a *domain/postgres.Store

	keys, _ := secrets.NewKeyring("k1", map[string][]byte{"k1": k1})
	vault, _ := secrets.NewVault(repo, keys)
	ds, err := vault.Save(ctx, "acme", "warehouse", domain.DataSourcePostgres,
		secrets.Config{DSN: "postgres://alice:s3cret@db.example.com/sales"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ds.Name, ds.Dialect, ds.KeyID)

	cfg, _ := vault.Open(ctx, "acme", ds.ID)
	fmt.Println(cfg) // printing never shows the password

	// Later: a new key, first in the list.
	keys, _ = secrets.NewKeyring("k2", map[string][]byte{"k2": k2, "k1": k1})
	vault, _ = secrets.NewVault(repo, keys)
	res, err := vault.Rotate(ctx)
	fmt.Printf("scanned %d, rotated %d, failed %d, %v\n", res.Scanned, res.Rotated, res.Failed, err)

	_, err = vault.Open(ctx, "globex", ds.ID)
	fmt.Println("another tenant:", errors.Is(err, domain.ErrNotFound))
	// Output:
	// warehouse postgres k1
	// secrets.Config{DSN: postgres://alice:xxxxx@db.example.com/sales}
	// scanned 1, rotated 1, failed 0, <nil>
	// another tenant: true
}

func ExampleParseKeyring() {
	spec := "k2:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=,k1:AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="
	keys, err := secrets.ParseKeyring(spec) // usually secrets.KeyringFromEnv()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(keys.Current(), keys.KeyIDs())

	_, err = secrets.ParseKeyring("k1:c2hvcnQ=")
	fmt.Println(err)
	// Output:
	// k2 [k1 k2]
	// secrets: parse keys: key "k1" is 5 bytes, want exactly 32 (AES-256)
}

func ExampleRedactDSN() {
	fmt.Println(secrets.RedactDSN("postgres://alice:s3cret@db:5432/sales?sslmode=require"))
	fmt.Println(secrets.RedactDSN("host=db user=alice password='s3 cret' dbname=sales"))
	fmt.Println(secrets.RedactDSN("/var/lib/bichat/local.db"))
	// Output:
	// postgres://alice:xxxxx@db:5432/sales?sslmode=require
	// host=db user=alice password=xxxxx dbname=sales
	// /var/lib/bichat/local.db
}
