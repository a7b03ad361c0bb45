package secrets_test

import (
	"bytes"
	"testing"

	"github.com/bichat-go/bichat/secrets"
)

// benchPlain is the size of a typical sealed Config: a DSN with a few
// extra settings, as JSON.
var benchPlain = bytes.Repeat([]byte("x"), 256)

func BenchmarkSeal(b *testing.B) {
	k := mustKeyring(b, "k1", map[string][]byte{"k1": newKey(b)})
	aad := secrets.AAD("acme", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
	b.SetBytes(int64(len(benchPlain)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Seal(benchPlain, aad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	k := mustKeyring(b, "k1", map[string][]byte{"k1": newKey(b)})
	aad := secrets.AAD("acme", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
	sealed := mustSeal(b, k, benchPlain, aad)
	b.SetBytes(int64(len(benchPlain)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Open(sealed, aad); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVaultOpen is the whole path of a connect: read the row
// (in memory here), open, decode the JSON.
func BenchmarkVaultOpen(b *testing.B) {
	v := mustVault(b, memoryRepo(), mustKeyring(b, "k1", map[string][]byte{"k1": newKey(b)}))
	ds, err := v.Save(b.Context(), "acme", "warehouse", "postgres", secrets.Config{DSN: pgDSN})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Open(b.Context(), "acme", ds.ID); err != nil {
			b.Fatal(err)
		}
	}
}
