package secrets

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeysEnv is the environment variable hosts conventionally keep their keys
// in, in the format ParseKeys reads: "k2:<base64>,k1:<base64>", current
// key first.
const KeysEnv = "BICHAT_SECRET_KEYS"

// ParseKeys reads a key specification: comma-separated "id:key" entries,
// each key 32 bytes in base64 (standard or URL alphabet, padded or not),
// for example the output of
//
//	echo "k2:$(openssl rand -base64 32),k1:$(openssl rand -base64 32)"
//
// Blanks around entries are ignored. It returns the keys by id and the
// id of the first entry, which by convention is the current key (the one
// new values are sealed under); the others are older keys kept so that
// existing values still open until they are rotated. Errors name the
// entry and key id at fault, never key material.
func ParseKeys(spec string) (keys map[string][]byte, first string, err error) {
	entries := strings.Split(spec, ",")
	keys = make(map[string][]byte, len(entries))
	for i, entry := range entries {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			if strings.TrimSpace(spec) == "" {
				return nil, "", errors.New("secrets: parse keys: the specification is empty; want id:base64key[,id:base64key...]")
			}
			return nil, "", fmt.Errorf("secrets: parse keys: entry %d is empty", i+1)
		}
		id, enc, ok := strings.Cut(entry, ":")
		id, enc = strings.TrimSpace(id), strings.TrimSpace(enc)
		if !ok {
			return nil, "", fmt.Errorf("secrets: parse keys: entry %d has no ':' between key id and key", i+1)
		}
		if err := checkKeyID(id); err != nil {
			return nil, "", fmt.Errorf("secrets: parse keys: entry %d: %w", i+1, err)
		}
		if _, dup := keys[id]; dup {
			return nil, "", fmt.Errorf("secrets: parse keys: entry %d: key id %q appears twice", i+1, id)
		}
		key, ok := decodeKey(enc)
		if !ok {
			return nil, "", fmt.Errorf("secrets: parse keys: key %q is not base64", id)
		}
		if len(key) != KeySize {
			clear(key)
			return nil, "", fmt.Errorf("secrets: parse keys: key %q is %d bytes, want exactly %d (AES-256)", id, len(key), KeySize)
		}
		keys[id] = key
		if i == 0 {
			first = id
		}
	}
	return keys, first, nil
}

func decodeKey(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

// ParseKeyring is ParseKeys and NewKeyring with the first entry as the
// current key. It clears the decoded key bytes before it returns.
func ParseKeyring(spec string) (*Keyring, error) {
	keys, first, err := ParseKeys(spec)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, k := range keys {
			clear(k)
		}
	}()
	return NewKeyring(first, keys)
}

// KeyringFromEnv is ParseKeyring on the environment variable KeysEnv
// (BICHAT_SECRET_KEYS); an unset or empty variable is an error saying so.
func KeyringFromEnv() (*Keyring, error) {
	spec := os.Getenv(KeysEnv)
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("secrets: %s is not set; set it to id:base64key[,id:base64key...] with the current key first", KeysEnv)
	}
	return ParseKeyring(spec)
}
