package secrets_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/secrets"
)

// newKey returns a fresh random 32-byte key.
func newKey(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, secrets.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func mustKeyring(t testing.TB, current string, keys map[string][]byte) *secrets.Keyring {
	t.Helper()
	k, err := secrets.NewKeyring(current, keys)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	return k
}

func mustSeal(t testing.TB, k *secrets.Keyring, plain, aad []byte) string {
	t.Helper()
	s, err := k.Seal(plain, aad)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return s
}

var sealedRE = regexp.MustCompile(`^v1\.([A-Za-z0-9._-]{1,64})\.([A-Za-z0-9_-]+)$`)

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, "k.1_a-B", map[string][]byte{"k.1_a-B": newKey(t), "old": newKey(t)})
	cases := []struct {
		name       string
		plain, aad []byte
	}{
		{"empty plaintext", nil, []byte("owner")},
		{"one byte", []byte{0}, []byte("owner")},
		{"text without aad", []byte("postgres://u:p@h/db"), nil},
		{"binary with long aad", bytes.Repeat([]byte{0xff, 0x00, 0x7f}, 1000), bytes.Repeat([]byte("a"), 5000)},
		{"largest plaintext", bytes.Repeat([]byte("x"), secrets.MaxPlaintextSize), []byte("owner")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sealed := mustSeal(t, k, c.plain, c.aad)
			m := sealedRE.FindStringSubmatch(sealed)
			if m == nil || m[1] != "k.1_a-B" {
				t.Fatalf("sealed %.60q... is not v1.<current key id>.<base64url>", sealed)
			}
			raw, err := base64.RawURLEncoding.DecodeString(m[2])
			if err != nil || len(raw) != secrets.NonceSize+len(c.plain)+16 {
				t.Fatalf("payload decodes to %d bytes (%v), want nonce+plaintext+tag = %d", len(raw), err, secrets.NonceSize+len(c.plain)+16)
			}
			if len(c.plain) > 8 && bytes.Contains(raw, c.plain[:8]) {
				t.Error("the payload holds the plaintext")
			}
			if id, err := secrets.KeyID(sealed); err != nil || id != "k.1_a-B" {
				t.Errorf("KeyID = %q, %v; want k.1_a-B", id, err)
			}
			got, err := k.Open(sealed, c.aad)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !bytes.Equal(got, c.plain) {
				t.Errorf("Open returned %d bytes that differ from the %d sealed", len(got), len(c.plain))
			}
		})
	}
	_, err := k.Seal(make([]byte, secrets.MaxPlaintextSize+1), nil)
	if err == nil {
		t.Error("Seal of a plaintext over MaxPlaintextSize succeeded")
	}
}

func TestOpenWrongKeySameID(t *testing.T) {
	t.Parallel()
	a := mustKeyring(t, "k1", map[string][]byte{"k1": newKey(t)})
	b := mustKeyring(t, "k1", map[string][]byte{"k1": newKey(t)})
	sealed := mustSeal(t, a, []byte("secret"), []byte("owner"))
	got, err := b.Open(sealed, []byte("owner"))
	if !errors.Is(err, secrets.ErrDecrypt) || got != nil {
		t.Errorf("Open under other bytes with the same id = %q, %v; want nil, ErrDecrypt", got, err)
	}
}

func TestOpenUnknownKey(t *testing.T) {
	t.Parallel()
	a := mustKeyring(t, "k1", map[string][]byte{"k1": newKey(t)})
	b := mustKeyring(t, "k2", map[string][]byte{"k2": newKey(t)})
	sealed := mustSeal(t, a, []byte("secret"), nil)
	got, err := b.Open(sealed, nil)
	if !errors.Is(err, secrets.ErrUnknownKey) || got != nil {
		t.Errorf("Open with a keyring lacking k1 = %q, %v; want nil, ErrUnknownKey", got, err)
	}
	if err != nil && !strings.Contains(err.Error(), `"k1"`) {
		t.Errorf("error %q does not name the missing key id", err)
	}
}

func TestOpenWrongAAD(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, "k1", map[string][]byte{"k1": newKey(t)})
	sealed := mustSeal(t, k, []byte("dsn"), secrets.AAD("tenant-a", "ds-1"))
	for _, aad := range [][]byte{
		secrets.AAD("tenant-b", "ds-1"),
		secrets.AAD("tenant-a", "ds-2"),
		secrets.AAD("tenant-a", "ds-1x"),
		secrets.AAD("tenant-", "ads-1"),
		nil,
	} {
		got, err := k.Open(sealed, aad)
		if !errors.Is(err, secrets.ErrDecrypt) || got != nil {
			t.Errorf("Open with aad %q = %q, %v; want nil, ErrDecrypt", aad, got, err)
		}
	}
	if _, err := k.Open(sealed, secrets.AAD("tenant-a", "ds-1")); err != nil {
		t.Errorf("Open with the right aad: %v", err)
	}
}

// TestTamper alters sealed values in every way we can think of: each
// must fail, and nothing may ever come back but the original plaintext.
func TestTamper(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	// "twin" holds the same bytes as k1 under another id: the key id is
	// authenticated, so relabelling a value does not open it.
	k := mustKeyring(t, "k1", map[string][]byte{"k1": key, "k2": newKey(t), "twin": key})
	plain := []byte(`{"dsn":"postgres://alice:s3cret@db/sales"}`)
	aad := []byte("tenant\x00id")
	sealed := mustSeal(t, k, plain, aad)
	payload := strings.TrimPrefix(sealed, "v1.k1.")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}

	try := func(what, s string, want ...error) {
		t.Helper()
		got, err := k.Open(s, aad)
		if err == nil {
			if bytes.Equal(got, plain) {
				t.Errorf("%s: opened (to the original plaintext), want an error", what)
			} else {
				t.Errorf("%s: opened to a WRONG plaintext %q", what, got)
			}
			return
		}
		if got != nil {
			t.Errorf("%s: returned bytes with the error %v", what, err)
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), payload) {
			t.Errorf("%s: the error %q holds the plaintext or the sealed value", what, err)
		}
		for _, w := range want {
			if errors.Is(err, w) {
				return
			}
		}
		if len(want) > 0 {
			t.Errorf("%s: error %v, want one of %v", what, err, want)
		}
	}

	// Every byte of nonce, ciphertext and tag, each bit pattern.
	for i := range raw {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(raw)
			b[i] ^= mask
			try(fmt.Sprintf("payload byte %d ^ %#x", i, mask), "v1.k1."+base64.RawURLEncoding.EncodeToString(b), secrets.ErrDecrypt)
		}
	}
	// Every character of the sealed string, replaced by others.
	for i := range sealed {
		for _, c := range []byte{'A', '_', '.', '0', '=', '!'} {
			if sealed[i] == c {
				continue
			}
			s := sealed[:i] + string(c) + sealed[i+1:]
			try(fmt.Sprintf("character %d -> %q", i, c), s, secrets.ErrDecrypt, secrets.ErrMalformed, secrets.ErrUnknownKey)
		}
	}
	// Truncated at every length, extended in several ways.
	for n := range len(sealed) {
		try(fmt.Sprintf("truncated to %d", n), sealed[:n], secrets.ErrDecrypt, secrets.ErrMalformed, secrets.ErrUnknownKey)
	}
	for _, ext := range []string{"A", "AA", "AAA", "AAAA", "=", "==", ".", "\n", " "} {
		try("extended by "+fmt.Sprintf("%q", ext), sealed+ext, secrets.ErrDecrypt, secrets.ErrMalformed)
	}
	try("payload bytes appended", "v1.k1."+base64.RawURLEncoding.EncodeToString(append(bytes.Clone(raw), 0)), secrets.ErrDecrypt)
	try("payload cut by one byte", "v1.k1."+base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1]), secrets.ErrDecrypt)
	try("payload too short for nonce and tag", "v1.k1."+base64.RawURLEncoding.EncodeToString(raw[:27]), secrets.ErrMalformed)

	malformed := map[string]string{
		"standard base64 alphabet": "v1.k1." + strings.NewReplacer("-", "+", "_", "/").Replace(payload) + "+/",
		"padded base64":            "v1.k1." + base64.URLEncoding.EncodeToString(raw),
		"other version":            "v2.k1." + payload,
		"no version":               "k1." + payload,
		"upper-case version":       "V1.k1." + payload,
		"empty key id":             "v1.." + payload,
		"key id with a space":      "v1.k 1." + payload,
		"key id too long":          "v1." + strings.Repeat("k", 65) + "." + payload,
		"no key id":                "v1." + payload,
		"empty":                    "",
		"huge":                     "v1.k1." + strings.Repeat("A", 1<<20),
	}
	for what, s := range malformed {
		try(what, s, secrets.ErrMalformed)
	}
	try("relabelled to another key", "v1.k2."+payload, secrets.ErrDecrypt)
	try("relabelled to a twin key with the same bytes", "v1.twin."+payload, secrets.ErrDecrypt)
	try("relabelled to an unknown key", "v1.k3."+payload, secrets.ErrUnknownKey)

	// The untouched value still opens: the checks above failed for the
	// changes, not for the value.
	if got, err := k.Open(sealed, aad); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("Open of the untouched value = %q, %v", got, err)
	}
}

func TestNonceUniqueness(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, "k1", map[string][]byte{"k1": newKey(t)})
	const n = 20000
	seen := make(map[string]bool, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range n / 8 {
				s := mustSeal(t, k, []byte("same plaintext every time"), []byte("same owner"))
				raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, "v1.k1."))
				if err != nil {
					t.Error(err)
					return
				}
				nonce := string(raw[:secrets.NonceSize])
				mu.Lock()
				dup := seen[nonce]
				seen[nonce] = true
				mu.Unlock()
				if dup {
					t.Errorf("nonce %x repeated", nonce)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct nonces over %d seals", len(seen), n)
	}
}

func TestNewKeyringErrors(t *testing.T) {
	t.Parallel()
	good := newKey(t)
	cases := []struct {
		name    string
		current string
		keys    map[string][]byte
		says    string
	}{
		{"no keys", "k1", nil, "no keys"},
		{"short key", "k1", map[string][]byte{"k1": good[:31]}, "31 bytes"},
		{"long key", "k1", map[string][]byte{"k1": append(bytes.Clone(good), 1)}, "33 bytes"},
		{"empty id", "", map[string][]byte{"": good}, "key id"},
		{"id with a colon", "a:b", map[string][]byte{"a:b": good}, "key id"},
		{"id with a slash", "a/b", map[string][]byte{"a/b": good}, "key id"},
		{"id of 65 characters", strings.Repeat("k", 65), map[string][]byte{strings.Repeat("k", 65): good}, "key id"},
		{"current missing", "k2", map[string][]byte{"k1": good}, `current key "k2"`},
	}
	for _, c := range cases {
		_, err := secrets.NewKeyring(c.current, c.keys)
		if err == nil {
			t.Errorf("%s: NewKeyring succeeded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.says)
		}
		for _, enc := range []string{base64.StdEncoding.EncodeToString(good[:16]), hex.EncodeToString(good[:16]), string(good[:16])} {
			if strings.Contains(err.Error(), enc) {
				t.Errorf("%s: error %q holds key material", c.name, err)
			}
		}
	}
	long := strings.Repeat("k", 64)
	k := mustKeyring(t, long, map[string][]byte{long: good})
	if got, err := k.Open(mustSeal(t, k, []byte("x"), nil), nil); err != nil || string(got) != "x" {
		t.Errorf("a 64-character key id: Open = %q, %v", got, err)
	}
}

// TestKeyringCopiesKeys: clearing the caller's key after NewKeyring does
// not affect the keyring.
func TestKeyringCopiesKeys(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	k := mustKeyring(t, "k1", map[string][]byte{"k1": key})
	sealed := mustSeal(t, k, []byte("x"), nil)
	clear(key)
	if got, err := k.Open(sealed, nil); err != nil || string(got) != "x" {
		t.Errorf("Open after the caller cleared its key = %q, %v", got, err)
	}
}

func TestKeyringPrintsNoKeys(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	k := mustKeyring(t, "k2", map[string][]byte{"k2": key, "k1": newKey(t)})
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{k, *k} {
			out := fmt.Sprintf(format, v)
			if out != "secrets.Keyring{current: k2, keys: [k1 k2]}" {
				t.Errorf("Sprintf(%s, %T) = %q", format, v, out)
			}
		}
	}
	if got := k.KeyIDs(); fmt.Sprint(got) != "[k1 k2]" || k.Current() != "k2" {
		t.Errorf("KeyIDs = %v, Current = %q", got, k.Current())
	}
}

func TestKeyringRotate(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t), newKey(t)
	old := mustKeyring(t, "k1", map[string][]byte{"k1": k1})
	both := mustKeyring(t, "k2", map[string][]byte{"k2": k2, "k1": k1})
	onlyNew := mustKeyring(t, "k2", map[string][]byte{"k2": k2})
	aad := []byte("owner")
	sealed := mustSeal(t, old, []byte("settings"), aad)

	rotated, changed, err := both.Rotate(sealed, aad)
	if err != nil || !changed {
		t.Fatalf("Rotate = %v, %v; want a change", changed, err)
	}
	if id, _ := secrets.KeyID(rotated); id != "k2" {
		t.Errorf("rotated key id = %q, want k2", id)
	}
	if got, err := onlyNew.Open(rotated, aad); err != nil || string(got) != "settings" {
		t.Errorf("Open of the rotated value with only k2 = %q, %v", got, err)
	}
	again, changed, err := both.Rotate(rotated, aad)
	if err != nil || changed || again != rotated {
		t.Errorf("Rotate of a current value = changed %v, same %v, %v; want it unchanged", changed, again == rotated, err)
	}
	if _, _, err := both.Rotate(sealed, []byte("other owner")); !errors.Is(err, secrets.ErrDecrypt) {
		t.Errorf("Rotate with the wrong aad: %v, want ErrDecrypt", err)
	}
	if _, _, err := onlyNew.Rotate(sealed, aad); !errors.Is(err, secrets.ErrUnknownKey) {
		t.Errorf("Rotate of a value under a removed key: %v, want ErrUnknownKey", err)
	}
	if _, _, err := both.Rotate("garbage", aad); !errors.Is(err, secrets.ErrMalformed) {
		t.Errorf("Rotate of garbage: %v, want ErrMalformed", err)
	}
}

func TestKeyIDMalformed(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "v1", "v1.", "v1.k1", "v2.k1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "v1.k!.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		if _, err := secrets.KeyID(s); !errors.Is(err, secrets.ErrMalformed) {
			t.Errorf("KeyID(%q): %v, want ErrMalformed", s, err)
		}
	}
}

func TestConcurrentSealOpen(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, "k1", map[string][]byte{"k1": newKey(t)})
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 200 {
				plain := fmt.Appendf(nil, "worker %d value %d", w, i)
				aad := fmt.Appendf(nil, "%d", w)
				s, err := k.Seal(plain, aad)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := k.Open(s, aad)
				if err != nil || !bytes.Equal(got, plain) {
					t.Errorf("worker %d: Open = %q, %v", w, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t), newKey(t)
	spec := " k2:" + base64.StdEncoding.EncodeToString(k2) + " , k1 : " + base64.RawURLEncoding.EncodeToString(k1) + " "
	keys, first, err := secrets.ParseKeys(spec)
	if err != nil {
		t.Fatal(err)
	}
	if first != "k2" || len(keys) != 2 || !bytes.Equal(keys["k1"], k1) || !bytes.Equal(keys["k2"], k2) {
		t.Errorf("ParseKeys = first %q, %d keys; want k2 first and both keys", first, len(keys))
	}
	ring, err := secrets.ParseKeyring(spec)
	if err != nil || ring.Current() != "k2" {
		t.Fatalf("ParseKeyring: current %v, %v; want k2", ring, err)
	}
	// A value sealed by the keyring ParseKeys described opens with a
	// keyring built from the same bytes.
	direct := mustKeyring(t, "k2", map[string][]byte{"k2": k2})
	if got, err := direct.Open(mustSeal(t, ring, []byte("v"), nil), nil); err != nil || string(got) != "v" {
		t.Errorf("cross-open = %q, %v", got, err)
	}

	good := base64.StdEncoding.EncodeToString(k1)
	bad := []struct{ name, spec, says string }{
		{"empty", "", "empty"},
		{"blank", "   ", "empty"},
		{"no colon", "k1" + good, "no ':'"},
		{"empty entry", "k1:" + good + ",,k2:" + good, "entry 2 is empty"},
		{"trailing comma", "k1:" + good + ",", "entry 2 is empty"},
		{"bad id", "k 1:" + good, "key id"},
		{"duplicate id", "k1:" + good + ",k1:" + good, "twice"},
		{"not base64", "k1:" + good[:20] + "!!" + good[22:], `key "k1" is not base64`},
		{"16-byte key", "k1:" + base64.StdEncoding.EncodeToString(k1[:16]), "16 bytes"},
	}
	for _, c := range bad {
		_, _, err := secrets.ParseKeys(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.says)
			continue
		}
		if strings.Contains(err.Error(), good[:12]) || strings.Contains(err.Error(), good[22:34]) {
			t.Errorf("%s: error %q holds key material", c.name, err)
		}
	}
}

func TestKeyringFromEnv(t *testing.T) {
	t.Setenv(secrets.KeysEnv, "")
	if _, err := secrets.KeyringFromEnv(); err == nil || !strings.Contains(err.Error(), secrets.KeysEnv) {
		t.Errorf("unset: %v, want an error naming %s", err, secrets.KeysEnv)
	}
	t.Setenv(secrets.KeysEnv, "new:"+base64.StdEncoding.EncodeToString(newKey(t))+",old:"+base64.StdEncoding.EncodeToString(newKey(t)))
	k, err := secrets.KeyringFromEnv()
	if err != nil || k.Current() != "new" || len(k.KeyIDs()) != 2 {
		t.Errorf("KeyringFromEnv = %v, %v; want current new and two keys", k, err)
	}
}

func TestZeroKeyring(t *testing.T) {
	t.Parallel()
	var k secrets.Keyring
	if _, err := k.Seal([]byte("x"), nil); err == nil {
		t.Error("Seal with a zero Keyring succeeded")
	}
	if _, err := k.Open("v1.k1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", nil); err == nil {
		t.Error("Open with a zero Keyring succeeded")
	}
}
