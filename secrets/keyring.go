package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinel errors of Keyring.Open, Rotate and KeyID; test with errors.Is.
var (
	// ErrUnknownKey reports a sealed value whose key id the keyring does
	// not hold: the key was retired too early, or the keyring is not the
	// one the value was sealed with.
	ErrUnknownKey = errors.New("unknown key")
	// ErrDecrypt reports that authentication failed: the key with that id
	// is not the one that sealed the value (same id, other bytes), the
	// ciphertext was altered, or the additional data (the owner the value
	// is bound to) differs. AES-GCM cannot tell these apart, by design:
	// all it knows is that the tag does not match.
	ErrDecrypt = errors.New("decryption failed: wrong key, altered ciphertext or wrong owner")
	// ErrMalformed reports a value that is not a sealed value of this
	// package at all: wrong version, bad key id, bad base64, too short
	// or too long.
	ErrMalformed = errors.New("malformed sealed value")
)

// Format constants.
const (
	// KeySize is the size of every key: 32 bytes, AES-256.
	KeySize = 32
	// NonceSize is the size of the random nonce of each sealed value.
	NonceSize = 12
	// MaxPlaintextSize is the largest plaintext Seal accepts (256 KiB).
	MaxPlaintextSize = 256 << 10
	// version is the prefix of the sealed format.
	version = "v1"
	// tagSize is the GCM authentication tag's size.
	tagSize = 16
)

// maxSealedLen is the length of the sealed form of MaxPlaintextSize
// bytes under the longest key id.
var maxSealedLen = len(version) + 1 + 64 + 1 + base64.RawURLEncoding.EncodedLen(NonceSize+MaxPlaintextSize+tagSize)

var b64 = base64.RawURLEncoding.Strict()

// Keyring seals and opens values with AES-256-GCM under a set of keys
// named by id, one of them current. Seal always uses the current key;
// Open uses the key the value names, so values sealed under an older key
// keep opening until they are rotated (Rotate, Vault.Rotate) and the old
// key is removed from the configuration.
//
// A Keyring is immutable and safe for concurrent use. Create one with
// NewKeyring or ParseKeyring; the zero value holds no key and refuses to
// seal or open. It keeps only the AES key schedules, not
// the key bytes given to it; printing it (String, GoString, %v) shows the
// key ids only.
type Keyring struct {
	current string
	keys    map[string]*keyEntry
	ids     []string // sorted
}

type keyEntry struct {
	aead cipher.AEAD
}

// NewKeyring returns a keyring holding keys (id → 32-byte key) whose
// current key, the one Seal uses, is current. Key ids are 1 to 64
// characters from A-Z, a-z, 0-9, '.', '_' and '-'; choose ids that tell
// keys apart in the operator's records ("2026-01", "k2"). The key bytes
// are copied into AES key schedules: the caller may (and should) clear
// its slices afterwards. Errors name the offending key id, never a key.
func NewKeyring(current string, keys map[string][]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("secrets: new keyring: no keys given")
	}
	k := &Keyring{current: current, keys: make(map[string]*keyEntry, len(keys))}
	for id, key := range keys {
		if err := checkKeyID(id); err != nil {
			return nil, fmt.Errorf("secrets: new keyring: %w", err)
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("secrets: new keyring: key %q is %d bytes, want exactly %d (AES-256)", id, len(key), KeySize)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("secrets: new keyring: key %q: %w", id, err)
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("secrets: new keyring: key %q: %w", id, err)
		}
		k.keys[id] = &keyEntry{aead: aead}
		k.ids = append(k.ids, id)
	}
	if _, ok := k.keys[current]; !ok {
		return nil, fmt.Errorf("secrets: new keyring: the current key %q is not among the keys %s", current, strings.Join(sortedIDs(keys), ", "))
	}
	slices.Sort(k.ids)
	return k, nil
}

func sortedIDs(keys map[string][]byte) []string {
	ids := make([]string, 0, len(keys))
	for id := range keys {
		ids = append(ids, fmt.Sprintf("%q", id))
	}
	slices.Sort(ids)
	return ids
}

// checkKeyID reports an error unless id is 1 to 64 characters of
// [A-Za-z0-9._-].
func checkKeyID(id string) error {
	if !validKeyID(id) {
		return fmt.Errorf("key id %q: must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' or '-'", id)
	}
	return nil
}

func validKeyID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Current returns the id of the key Seal uses.
func (k *Keyring) Current() string { return k.current }

// KeyIDs returns the ids of the keys the keyring holds, sorted.
func (k *Keyring) KeyIDs() []string { return slices.Clone(k.ids) }

// String shows the key ids, never key material.
func (k Keyring) String() string {
	return fmt.Sprintf("secrets.Keyring{current: %s, keys: [%s]}", k.current, strings.Join(k.ids, " "))
}

// GoString is String, so %#v shows no key material either.
func (k Keyring) GoString() string { return k.String() }

// Seal encrypts and authenticates plaintext under the current key with a
// fresh random 12-byte nonce and returns "v1.<key id>.<base64url(nonce ‖
// ciphertext ‖ tag)>" (unpadded base64url, so the value is safe in URLs,
// file names and SQL text). aad, the additional authenticated data, is
// not stored but must be given again to Open: pass what identifies the
// value's owner (the Vault passes tenant id and data source id), so a
// value copied to another owner does not open. The key id and version
// are authenticated too.
//
// Random nonces are safe for about 2^32 seals per key (the GCM bound);
// rotate to a new key long before that. Seal does not keep or modify
// plaintext; clearing it is the caller's.
func (k *Keyring) Seal(plaintext, aad []byte) (string, error) {
	if len(plaintext) > MaxPlaintextSize {
		return "", fmt.Errorf("secrets: seal: plaintext is %d bytes, more than the %d allowed", len(plaintext), MaxPlaintextSize)
	}
	if k == nil || k.keys == nil {
		return "", errors.New("secrets: seal: the keyring is not initialised; create it with NewKeyring")
	}
	e := k.keys[k.current]
	var buf [128]byte
	sealed := e.aead.Seal(nil, nil, plaintext, fullAAD(buf[:0], k.current, aad))
	head := version + "." + k.current + "."
	out := make([]byte, len(head)+b64.EncodedLen(len(sealed)))
	copy(out, head)
	b64.Encode(out[len(head):], sealed)
	return string(out), nil
}

// fullAAD is what GCM authenticates besides the ciphertext: the version,
// the key id and the caller's aad, unambiguously (key ids hold no NUL).
func fullAAD(dst []byte, keyID string, aad []byte) []byte {
	dst = append(dst, "bichat-secrets/"+version+"\x00"...)
	dst = append(dst, keyID...)
	dst = append(dst, 0)
	return append(dst, aad...)
}

// parse splits a sealed value into its key id and its base64 payload.
func parse(sealed string) (keyID, payload string, err error) {
	if len(sealed) > maxSealedLen {
		return "", "", fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxSealedLen)
	}
	rest, ok := strings.CutPrefix(sealed, version+".")
	if !ok {
		return "", "", fmt.Errorf("%w: does not start with %q", ErrMalformed, version+".")
	}
	// Key ids may hold dots, base64url never does: the payload follows
	// the last dot.
	dot := strings.LastIndexByte(rest, '.')
	if dot < 0 {
		return "", "", fmt.Errorf("%w: no key id", ErrMalformed)
	}
	keyID, payload = rest[:dot], rest[dot+1:]
	if !validKeyID(keyID) {
		return "", "", fmt.Errorf("%w: bad key id", ErrMalformed)
	}
	if len(payload) < b64.EncodedLen(NonceSize+tagSize) {
		return "", "", fmt.Errorf("%w: too short", ErrMalformed)
	}
	// The decoder skips '\r' and '\n': allow the alphabet only, so that
	// exactly one string opens to a given value.
	for i := 0; i < len(payload); i++ {
		c := payload[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return "", "", fmt.Errorf("%w: bad base64", ErrMalformed)
		}
	}
	return keyID, payload, nil
}

// KeyID returns the id of the key sealed was sealed under, without
// decrypting it. It checks the format only, not authenticity.
func KeyID(sealed string) (string, error) {
	id, _, err := parse(sealed)
	if err != nil {
		return "", fmt.Errorf("secrets: key id: %w", err)
	}
	return id, nil
}

// Open authenticates and decrypts sealed, which Seal made with the same
// aad under a key the keyring holds. Errors match ErrMalformed,
// ErrUnknownKey or ErrDecrypt and never contain the plaintext, the key or
// the sealed value. The plaintext is a new slice the caller owns: clear
// it (clear(b)) when done with it.
func (k *Keyring) Open(sealed string, aad []byte) ([]byte, error) {
	b, err := k.open(sealed, aad)
	if err != nil {
		return nil, fmt.Errorf("secrets: open: %w", err)
	}
	return b, nil
}

func (k *Keyring) open(sealed string, aad []byte) ([]byte, error) {
	id, payload, err := parse(sealed)
	if err != nil {
		return nil, err
	}
	if k == nil || k.keys == nil {
		return nil, errors.New("the keyring is not initialised; create it with NewKeyring")
	}
	e, ok := k.keys[id]
	if !ok {
		return nil, fmt.Errorf("key %q: %w", id, ErrUnknownKey)
	}
	raw, err := b64.DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: bad base64", ErrMalformed)
	}
	var buf [128]byte
	plain, err := e.aead.Open(nil, nil, raw, fullAAD(buf[:0], id, aad))
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", id, ErrDecrypt)
	}
	return plain, nil
}

// Rotate returns sealed re-sealed under the current key, and true, when
// it was sealed under another key; a value already under the current key
// comes back unchanged, with false, after a format check only (it is not
// decrypted). The plaintext exists only inside Rotate and is cleared
// before it returns. Errors are those of Open.
func (k *Keyring) Rotate(sealed string, aad []byte) (string, bool, error) {
	id, _, err := parse(sealed)
	if err != nil {
		return "", false, fmt.Errorf("secrets: rotate: %w", err)
	}
	if id == k.current {
		return sealed, false, nil
	}
	plain, err := k.open(sealed, aad)
	if err != nil {
		return "", false, fmt.Errorf("secrets: rotate: %w", err)
	}
	defer clear(plain)
	out, err := k.Seal(plain, aad)
	if err != nil {
		return "", false, fmt.Errorf("secrets: rotate: %w", err)
	}
	return out, true, nil
}
