package redact

import (
	"bytes"
	"encoding/json"
	"unsafe"
)

// JSON returns raw with the secrets in its strings replaced, keeping it
// valid JSON with the same structure and key order: every string value
// (and object key) is scrubbed as text after unescaping, and, with the
// built-in patterns, the string value of a secret-named key ("password",
// "apiKey", "client_secret", "access_token", ...) is replaced whole. raw
// itself is returned when nothing changed, and is never modified. Input
// that is not valid JSON is scrubbed as text (see Bytes) and stays
// invalid.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	if r == nil || len(raw) == 0 {
		return raw
	}
	if !json.Valid(raw) {
		return r.Bytes(raw)
	}
	var out []byte // nil until the first change
	prev := 0      // raw[prev:] is not yet copied to out
	var key string // the last object key, while its value is pending
	afterColon := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case ':':
			afterColon = true
			continue
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
		default:
			// Any other token starts a value (or is punctuation):
			// a pending key's value is not a string.
			if c != ',' {
				afterColon = false
			}
			continue
		}
		end, escaped := stringEnd(raw, i)
		lit := raw[i : end+1]
		s := decodeString(lit[1:len(lit)-1], escaped)
		isKey := nextNonSpace(raw, end+1) == ':'
		var ns string
		switch {
		case !isKey && afterColon && r.keys != nil && s != "" && s != r.repl && r.keys.MatchString(key):
			ns = r.repl
		default:
			ns = r.String(s)
		}
		if isKey {
			key = s
		}
		afterColon = false
		if ns != s {
			if out == nil {
				out = make([]byte, 0, len(raw)+len(r.repl))
			}
			out = append(out, raw[prev:i]...)
			out = appendString(out, ns)
			prev = end + 1
		}
		i = end
	}
	if out == nil {
		return raw
	}
	return append(out, raw[prev:]...)
}

// stringEnd returns the index of the closing quote of the JSON string
// opening at raw[i] (raw is valid JSON), and whether it has escapes.
func stringEnd(raw []byte, i int) (end int, escaped bool) {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return len(raw) - 1, escaped
}

// decodeString returns the text of a JSON string's contents.
func decodeString(body []byte, escaped bool) string {
	if !escaped {
		if len(body) == 0 {
			return ""
		}
		// Only read while raw is; String returns it unchanged or a copy.
		return unsafe.String(&body[0], len(body))
	}
	var s string
	quoted := make([]byte, 0, len(body)+2)
	quoted = append(append(append(quoted, '"'), body...), '"')
	if err := json.Unmarshal(quoted, &s); err != nil {
		return string(body)
	}
	return s
}

func nextNonSpace(raw []byte, i int) byte {
	for ; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return raw[i]
		}
	}
	return 0
}

// appendString appends s as a JSON string, without HTML escaping.
func appendString(dst []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}
