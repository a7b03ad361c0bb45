package secrets_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/secrets"
)

const (
	pgPassword = "Hunter2-sealed-pw"
	pgDSN      = "postgres://alice:" + pgPassword + "@db.example.com:5432/sales?sslmode=require"
)

func memoryRepo() domain.DataSourceRepository { return memory.NewDataSources() }

func mustVault(t testing.TB, repo domain.DataSourceRepository, keys *secrets.Keyring) *secrets.Vault {
	t.Helper()
	v, err := secrets.NewVault(repo, keys)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNewVaultNil(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, "k1", map[string][]byte{"k1": newKey(t)})
	if _, err := secrets.NewVault(nil, k); err == nil {
		t.Error("NewVault(nil repo) succeeded")
	}
	if _, err := secrets.NewVault(memory.NewDataSources(), nil); err == nil {
		t.Error("NewVault(nil keyring) succeeded")
	}
}

func TestVaultMemory(t *testing.T) {
	t.Parallel()
	runVaultTests(t, func(t *testing.T) domain.DataSourceRepository { return memory.NewDataSources() })
}

// runVaultTests runs the Vault's behaviour against repositories that
// newRepo returns, each empty and of its own.
func runVaultTests(t *testing.T, newRepo func(t *testing.T) domain.DataSourceRepository) {
	cases := []struct {
		name string
		fn   func(t *testing.T, repo domain.DataSourceRepository)
	}{
		{"SaveOpen", vaultSaveOpen},
		{"SaveInvalid", vaultSaveInvalid},
		{"CopiedCiphertextDoesNotOpen", vaultCopied},
		{"Update", vaultUpdate},
		{"RotateAll", vaultRotateAll},
		{"RotateContinuesPastFailures", vaultRotateFailures},
		{"RotateLosesToUpdate", vaultRotateLosesToUpdate},
		{"RotateRacesUpdates", vaultRotateRaces},
		{"RotateCancelled", vaultRotateCancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newRepo(t))
		})
	}
}

func vaultSaveOpen(t *testing.T, repo domain.DataSourceRepository) {
	ctx := t.Context()
	v := mustVault(t, repo, mustKeyring(t, "k1", map[string][]byte{"k1": newKey(t)}))
	cfg := secrets.Config{DSN: pgDSN, Extra: map[string]string{"role": "analyst"}}
	ds, err := v.Save(ctx, "acme", "warehouse", domain.DataSourcePostgres, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ds.KeyID != "k1" || !strings.HasPrefix(ds.SealedConfig, "v1.k1.") || strings.Contains(ds.SealedConfig, pgPassword) || !domain.ValidID(ds.ID) {
		t.Errorf("saved %+v: want an id, key k1 and an opaque sealed config", ds)
	}
	stored, err := repo.GetDataSource(ctx, "acme", ds.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.SealedConfig != ds.SealedConfig || stored.Name != "warehouse" || stored.Dialect != "postgres" {
		t.Errorf("stored %+v, want what Save returned", stored)
	}
	got, err := v.Open(ctx, "acme", ds.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.DSN != pgDSN || len(got.Extra) != 1 || got.Extra["role"] != "analyst" {
		t.Errorf("Open returned other settings than saved (%v)", got)
	}
	_, err = v.Open(ctx, "other-tenant", ds.ID)
	if !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Open from another tenant: %v, want ErrNotFound", err)
	}
	_, err = v.Save(ctx, "acme", "warehouse", domain.DataSourcePostgres, cfg)
	if !errors.Is(err, domain.ErrConflict) {
		t.Errorf("Save of a taken name: %v, want ErrConflict", err)
	}
	if err != nil && strings.Contains(err.Error(), pgPassword) {
		t.Errorf("error %q holds the password", err)
	}
}

func vaultSaveInvalid(t *testing.T, repo domain.DataSourceRepository) {
	ctx := t.Context()
	v := mustVault(t, repo, mustKeyring(t, "k1", map[string][]byte{"k1": newKey(t)}))
	good := secrets.Config{DSN: pgDSN}
	cases := []struct {
		name, tenant, dsName, dialect string
		cfg                           secrets.Config
		invalid                       bool
	}{
		{"bad dialect", "acme", "w", "oracle", good, true},
		{"empty name", "acme", "", "postgres", good, true},
		{"name with a space", "acme", "my db", "postgres", good, true},
		{"empty tenant", "", "w", "postgres", good, true},
		{"empty DSN", "acme", "w", "postgres", secrets.Config{DSN: "  "}, false},
		{"empty Extra key", "acme", "w", "postgres", secrets.Config{DSN: pgDSN, Extra: map[string]string{"": "x"}}, false},
	}
	for _, c := range cases {
		_, err := v.Save(ctx, c.tenant, c.dsName, c.dialect, c.cfg)
		if err == nil {
			t.Errorf("%s: Save succeeded", c.name)
			continue
		}
		if c.invalid && !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
		}
		if strings.Contains(err.Error(), pgPassword) {
			t.Errorf("%s: error %q holds the password", c.name, err)
		}
	}
	list, err := repo.ListDataSources(ctx, "acme")
	if err != nil || len(list) != 0 {
		t.Errorf("invalid saves stored %d data sources (%v)", len(list), err)
	}
}

// vaultCopied moves sealed configs between rows, as someone with write
// access to the table might: they must not open anywhere but at home.
func vaultCopied(t *testing.T, repo domain.DataSourceRepository) {
	ctx := t.Context()
	v := mustVault(t, repo, mustKeyring(t, "k1", map[string][]byte{"k1": newKey(t)}))
	a, err := v.Save(ctx, "tenant-a", "warehouse", "postgres", secrets.Config{DSN: pgDSN})
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.Save(ctx, "tenant-b", "warehouse", "postgres", secrets.Config{DSN: "postgres://bob:b@db/b"})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := v.Save(ctx, "tenant-a", "second", "postgres", secrets.Config{DSN: "postgres://carol:c@db/c"})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []*domain.DataSource{b, a2} {
		stolen := *target
		stolen.SealedConfig = a.SealedConfig
		if err := repo.UpdateDataSource(ctx, &stolen); err != nil {
			t.Fatal(err)
		}
		cfg, err := v.Open(ctx, target.TenantID, target.ID)
		if !errors.Is(err, secrets.ErrDecrypt) {
			t.Errorf("Open of tenant %s's %s holding a copied config = %v, %v; want ErrDecrypt", target.TenantID, target.Name, cfg, err)
		}
		if cfg.DSN != "" {
			t.Errorf("Open of a copied config returned a DSN")
		}
	}
	if cfg, err := v.Open(ctx, "tenant-a", a.ID); err != nil || cfg.DSN != pgDSN {
		t.Errorf("Open of the original = %v, %v", cfg, err)
	}
}

func vaultUpdate(t *testing.T, repo domain.DataSourceRepository) {
	ctx := t.Context()
	k1, k2 := newKey(t), newKey(t)
	old := mustVault(t, repo, mustKeyring(t, "k1", map[string][]byte{"k1": k1}))
	ds, err := old.Save(ctx, "acme", "warehouse", "postgres", secrets.Config{DSN: pgDSN})
	if err != nil {
		t.Fatal(err)
	}
	v := mustVault(t, repo, mustKeyring(t, "k2", map[string][]byte{"k2": k2, "k1": k1}))
	upd, err := v.Update(ctx, "acme", ds.ID, secrets.Config{DSN: "postgres://alice:new@db/sales"})
	if err != nil {
		t.Fatal(err)
	}
	if upd.KeyID != "k2" || upd.Name != "warehouse" || !upd.UpdatedAt.After(ds.UpdatedAt) && !upd.UpdatedAt.Equal(ds.UpdatedAt) {
		t.Errorf("Update returned %+v, want key k2 and the same name", upd)
	}
	cfg, err := v.Open(ctx, "acme", ds.ID)
	if err != nil || cfg.DSN != "postgres://alice:new@db/sales" {
		t.Errorf("Open after Update = %v, %v", cfg, err)
	}
	if _, err := v.Update(ctx, "other", ds.ID, secrets.Config{DSN: "x"}); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Update from another tenant: %v, want ErrNotFound", err)
	}
	if _, err := v.Update(ctx, "acme", ds.ID, secrets.Config{}); err == nil {
		t.Error("Update with an empty DSN succeeded")
	}
}

// seedUnderK1 saves n data sources spread over tenants with a k1-only
// vault and returns their DSNs by (tenant, id).
func seedUnderK1(t *testing.T, repo domain.DataSourceRepository, k1 []byte, n int) map[domain.DataSourceKey]string {
	t.Helper()
	v := mustVault(t, repo, mustKeyring(t, "k1", map[string][]byte{"k1": k1}))
	want := make(map[domain.DataSourceKey]string, n)
	for i := range n {
		tenant := fmt.Sprintf("tenant-%d", i%7)
		dsn := fmt.Sprintf("postgres://user%d:pw%d@db/sales", i, i)
		ds, err := v.Save(t.Context(), tenant, fmt.Sprintf("ds-%d", i), "postgres", secrets.Config{DSN: dsn})
		if err != nil {
			t.Fatal(err)
		}
		want[domain.DataSourceKey{TenantID: tenant, ID: ds.ID}] = dsn
	}
	return want
}

// checkAll opens every data source of want with v and compares DSNs and
// key ids.
func checkAll(t *testing.T, repo domain.DataSourceRepository, v *secrets.Vault, want map[domain.DataSourceKey]string, keyID string) {
	t.Helper()
	for key, dsn := range want {
		ds, cfg, err := v.Load(t.Context(), key.TenantID, key.ID)
		if err != nil {
			t.Errorf("Load %v: %v", key, err)
			continue
		}
		if cfg.DSN != dsn {
			t.Errorf("Load %v: other settings than saved", key)
		}
		if id, _ := secrets.KeyID(ds.SealedConfig); ds.KeyID != keyID || id != keyID {
			t.Errorf("%v: key id column %q, sealed under %q; want %q", key, ds.KeyID, id, keyID)
		}
	}
}

func vaultRotateAll(t *testing.T, repo domain.DataSourceRepository) {
	ctx := t.Context()
	k1, k2 := newKey(t), newKey(t)
	want := seedUnderK1(t, repo, k1, 40)
	v := mustVault(t, repo, mustKeyring(t, "k2", map[string][]byte{"k2": k2, "k1": k1}))
	secrets.SetRotatePageSize(v, 7) // 40 rows: six pages, the last short
	res, err := v.Rotate(ctx)
	if err != nil || res.Scanned != 40 || res.Rotated != 40 || res.Failed != 0 || len(res.Failures) != 0 {
		t.Fatalf("Rotate = %+v, %v; want 40 scanned and rotated", res, err)
	}
	onlyK2 := mustVault(t, repo, mustKeyring(t, "k2", map[string][]byte{"k2": k2}))
	checkAll(t, repo, onlyK2, want, "k2")

	res, err = v.Rotate(ctx)
	if err != nil || res.Scanned != 40 || res.Rotated != 0 || res.Failed != 0 {
		t.Errorf("second Rotate = %+v, %v; want 40 scanned, nothing to do", res, err)
	}
	// A page size that divides the row count exactly ends too.
	secrets.SetRotatePageSize(v, 8)
	if res, err := v.Rotate(ctx); err != nil || res.Scanned != 40 {
		t.Errorf("Rotate with pages of 8 = %+v, %v", res, err)
	}
}

func vaultRotateFailures(t *testing.T, repo domain.DataSourceRepository) {
	ctx := t.Context()
	k0, k1, k2 := newKey(t), newKey(t), newKey(t)
	want := seedUnderK1(t, repo, k1, 10)
	// One row under a key nobody has any more, one damaged.
	lost := mustVault(t, repo, mustKeyring(t, "k0", map[string][]byte{"k0": k0}))
	lostDS, err := lost.Save(ctx, "tenant-x", "lost", "postgres", secrets.Config{DSN: "postgres://x:x@db/x"})
	if err != nil {
		t.Fatal(err)
	}
	k1v := mustVault(t, repo, mustKeyring(t, "k1", map[string][]byte{"k1": k1}))
	damaged, err := k1v.Save(ctx, "tenant-0", "damaged", "postgres", secrets.Config{DSN: "postgres://d:d@db/d"})
	if err != nil {
		t.Fatal(err)
	}
	bad := *damaged
	bad.SealedConfig = flipLastByte(t, bad.SealedConfig)
	if err := repo.UpdateDataSource(ctx, &bad); err != nil {
		t.Fatal(err)
	}

	v := mustVault(t, repo, mustKeyring(t, "k2", map[string][]byte{"k2": k2, "k1": k1}))
	secrets.SetRotatePageSize(v, 3)
	res, err := v.Rotate(ctx)
	if res.Scanned != 12 || res.Rotated != 10 || res.Failed != 2 || len(res.Failures) != 2 {
		t.Fatalf("Rotate = %+v; want 12 scanned, 10 rotated, 2 failed", res)
	}
	if err == nil || !errors.Is(err, secrets.ErrUnknownKey) || !errors.Is(err, secrets.ErrDecrypt) {
		t.Errorf("Rotate error %v: want one joining ErrUnknownKey and ErrDecrypt", err)
	}
	failed := map[string]error{}
	for _, f := range res.Failures {
		failed[f.ID] = f.Err
	}
	if !errors.Is(failed[lostDS.ID], secrets.ErrUnknownKey) || !errors.Is(failed[damaged.ID], secrets.ErrDecrypt) {
		t.Errorf("failures %v: want the lost row with ErrUnknownKey and the damaged one with ErrDecrypt", failed)
	}
	if err != nil && (!strings.Contains(err.Error(), lostDS.ID) || !strings.Contains(err.Error(), damaged.ID)) {
		t.Errorf("Rotate error %q does not name the failed data sources", err)
	}
	onlyK2 := mustVault(t, repo, mustKeyring(t, "k2", map[string][]byte{"k2": k2}))
	checkAll(t, repo, onlyK2, want, "k2")
	// The failed rows are left as they were.
	if got, _ := repo.GetDataSource(ctx, "tenant-0", damaged.ID); got == nil || got.SealedConfig != bad.SealedConfig {
		t.Error("the damaged row changed")
	}
}

// flipLastByte returns sealed with the last byte of its payload (the
// tag) altered: well-formed, but not authentic.
func flipLastByte(t *testing.T, sealed string) string {
	t.Helper()
	dot := strings.LastIndexByte(sealed, '.')
	raw, err := base64.RawURLEncoding.DecodeString(sealed[dot+1:])
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 0x01
	return sealed[:dot+1] + base64.RawURLEncoding.EncodeToString(raw)
}

// interceptRepo runs before once, just before the first SwapSealedConfig.
type interceptRepo struct {
	domain.DataSourceRepository
	once   sync.Once
	before func()
	swaps  int
	mu     sync.Mutex
}

func (r *interceptRepo) SwapSealedConfig(ctx context.Context, ds *domain.DataSource, expected string) error {
	r.once.Do(r.before)
	r.mu.Lock()
	r.swaps++
	r.mu.Unlock()
	return r.DataSourceRepository.SwapSealedConfig(ctx, ds, expected)
}

// vaultRotateLosesToUpdate updates a row between Rotate's read and its
// compare-and-swap, from a process with the new key and from one still
// on the old key: the update survives both times.
func vaultRotateLosesToUpdate(t *testing.T, repo domain.DataSourceRepository) {
	ctx := t.Context()
	k1, k2 := newKey(t), newKey(t)
	oldV := mustVault(t, repo, mustKeyring(t, "k1", map[string][]byte{"k1": k1}))
	newV := mustVault(t, repo, mustKeyring(t, "k2", map[string][]byte{"k2": k2, "k1": k1}))
	for _, c := range []struct {
		name        string
		updater     *secrets.Vault
		wantRotated int
		wantSwaps   int
	}{
		// The update seals under k2: the retry finds nothing to do.
		{"update under the new key", newV, 0, 1},
		// The update seals under k1: the retry rotates the update.
		{"update under the old key", oldV, 1, 2},
	} {
		ds, err := oldV.Save(ctx, "acme", "race-"+strings.ReplaceAll(c.name, " ", "-"), "postgres", secrets.Config{DSN: "postgres://a:before@db/x"})
		if err != nil {
			t.Fatal(err)
		}
		updated := "postgres://a:updated-" + c.updater.Keyring().Current() + "@db/x"
		r := &interceptRepo{DataSourceRepository: repo}
		r.before = func() {
			if _, err := c.updater.Update(ctx, "acme", ds.ID, secrets.Config{DSN: updated}); err != nil {
				t.Errorf("%s: Update: %v", c.name, err)
			}
		}
		v := mustVault(t, r, newV.Keyring())
		res, err := v.Rotate(ctx)
		if err != nil || res.Rotated != c.wantRotated || r.swaps != c.wantSwaps {
			t.Errorf("%s: Rotate = %+v, %v after %d swaps; want %d rotated after %d swaps", c.name, res, err, r.swaps, c.wantRotated, c.wantSwaps)
		}
		got, cfg, err := newV.Load(ctx, "acme", ds.ID)
		if err != nil || cfg.DSN != updated {
			t.Errorf("%s: after the race the row opens to %v, %v; want the update", c.name, cfg, err)
		}
		if got != nil && got.KeyID != "k2" {
			t.Errorf("%s: key id %q after the rotation, want k2", c.name, got.KeyID)
		}
		// Clean up for the next case: rotate everything.
		if _, err := newV.Rotate(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// vaultRotateRaces runs Rotate while writers keep updating the rows
// (some through a process still on the old key): every row ends with
// its last update and, after a final Rotate, under the new key.
func vaultRotateRaces(t *testing.T, repo domain.DataSourceRepository) {
	ctx := t.Context()
	k1, k2 := newKey(t), newKey(t)
	seeded := seedUnderK1(t, repo, k1, 12)
	oldV := mustVault(t, repo, mustKeyring(t, "k1", map[string][]byte{"k1": k1}))
	newV := mustVault(t, repo, mustKeyring(t, "k2", map[string][]byte{"k2": k2, "k1": k1}))
	secrets.SetRotatePageSize(newV, 5)
	keys := make([]domain.DataSourceKey, 0, len(seeded))
	for k := range seeded {
		keys = append(keys, k)
	}
	last := make([]string, len(keys))
	var wg sync.WaitGroup
	for w, key := range keys {
		wg.Go(func() {
			for i := range 8 {
				updater := newV
				if (w+i)%2 == 0 {
					updater = oldV
				}
				dsn := fmt.Sprintf("postgres://u:w%d-i%d@db/x", w, i)
				if _, err := updater.Update(ctx, key.TenantID, key.ID, secrets.Config{DSN: dsn}); err != nil {
					t.Errorf("Update: %v", err)
					return
				}
				last[w] = dsn
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			// A row that old-key writers keep changing may lose every
			// compare-and-swap attempt: reported as a conflict (run
			// Rotate again), never as anything else.
			res, err := newV.Rotate(ctx)
			if err != nil && len(res.Failures) == 0 {
				t.Errorf("concurrent Rotate = %+v, %v", res, err)
			}
			for _, f := range res.Failures {
				if !errors.Is(f.Err, domain.ErrConflict) {
					t.Errorf("concurrent Rotate failure %v, want only conflicts", f.Err)
				}
			}
		})
	}
	wg.Wait()
	if res, err := newV.Rotate(ctx); err != nil || res.Failed != 0 {
		t.Fatalf("final Rotate = %+v, %v", res, err)
	}
	want := make(map[domain.DataSourceKey]string, len(keys))
	for w, key := range keys {
		want[key] = last[w]
	}
	checkAll(t, repo, mustVault(t, repo, mustKeyring(t, "k2", map[string][]byte{"k2": k2})), want, "k2")
}

func vaultRotateCancelled(t *testing.T, repo domain.DataSourceRepository) {
	k1, k2 := newKey(t), newKey(t)
	seedUnderK1(t, repo, k1, 3)
	v := mustVault(t, repo, mustKeyring(t, "k2", map[string][]byte{"k2": k2, "k1": k1}))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err := v.Rotate(ctx)
	if !errors.Is(err, context.Canceled) || res.Rotated != 0 {
		t.Errorf("Rotate with a cancelled context = %+v, %v; want context.Canceled and nothing rotated", res, err)
	}
}
