package llmhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"iter"
	"os"
	"strings"
)

// APIKey returns configured, else the value of the first of envs that is
// set. With neither it fails naming where a key can come from, e.g.
// "anthropic: no API key: set Config.APIKey or ANTHROPIC_API_KEY".
func APIKey(provider, field, configured string, envs ...string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	for _, e := range envs {
		if v := os.Getenv(e); v != "" {
			return v, nil
		}
	}
	return "", errors.New(provider + ": no API key: set " + orList(append([]string{field}, envs...)))
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// BaseURL returns configured without trailing slashes, or def when it is
// empty.
func BaseURL(configured, def string) string {
	if base := strings.TrimRight(configured, "/"); base != "" {
		return base
	}
	return def
}

// EncodeJSON encodes a request body: JSON without HTML escaping (so "<"
// in a prompt stays "<") and without a trailing newline.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Fail returns a sequence that yields only err: what Model.Stream returns
// when the request cannot be built.
func Fail[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, err)
	}
}
