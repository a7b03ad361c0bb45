package secrets

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
)

// Config is the connection settings of a data source: what Vault seals.
//
// Printing a Config never shows a secret: String, GoString (%#v), %v,
// MarshalJSON and LogValue (log/slog) give the DSN with its password
// replaced by "xxxxx" and list only the keys of Extra, whose values may be
// secrets too. Vault seals the real values through an internal encoding;
// MarshalJSON is for logs and API responses only, and JSON read back from
// it does not hold the secrets any more.
type Config struct {
	// DSN is the connection string: a postgres:// URL or key=value string
	// for PostgreSQL, a file path or file: URI for SQLite.
	DSN string `json:"dsn"`
	// Extra holds further settings the host's adapter needs (a TLS client
	// key, a role to SET, ...). Values are sealed like the DSN and never
	// printed.
	Extra map[string]string `json:"extra,omitempty"`
}

// redactedMark replaces secret values in printed configs.
const redactedMark = "xxxxx"

// configWire is the sealed encoding of a Config: the real values.
type configWire struct {
	DSN   string            `json:"dsn"`
	Extra map[string]string `json:"extra,omitempty"`
}

// check validates a config before it is sealed.
func (c Config) check() error {
	if strings.TrimSpace(c.DSN) == "" {
		return errors.New("config: DSN is required")
	}
	for k := range c.Extra {
		if k == "" {
			return errors.New("config: Extra has an empty key")
		}
	}
	return nil
}

// Redacted returns the DSN with passwords replaced by "xxxxx": the user
// part of a URL, password (and other secret-looking) parameters of a URL
// query or a key=value string. A DSN it cannot take apart safely comes
// back as "[redacted DSN]" as a whole.
func (c Config) Redacted() string { return RedactDSN(c.DSN) }

// String shows the redacted DSN and the keys of Extra.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("secrets.Config{DSN: ")
	b.WriteString(c.Redacted())
	if len(c.Extra) > 0 {
		b.WriteString(", Extra: [")
		for i, k := range c.extraKeys() {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(k)
			b.WriteString("=" + redactedMark)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.String()
}

// GoString is String, so %#v hides the secrets too.
func (c Config) GoString() string { return c.String() }

// Format makes every verb (%v, %+v, %s, %q, %x, ...) print String, so no
// verb reaches the fields.
func (c Config) Format(f fmt.State, verb rune) {
	s := c.String()
	if verb == 'q' {
		s = fmt.Sprintf("%q", s)
	}
	_, _ = f.Write([]byte(s))
}

// MarshalJSON writes the redacted form: {"dsn": "<redacted DSN>",
// "extra": {"key": "xxxxx"}}.
func (c Config) MarshalJSON() ([]byte, error) {
	w := configWire{DSN: c.Redacted()}
	if len(c.Extra) > 0 {
		w.Extra = make(map[string]string, len(c.Extra))
		for k := range c.Extra {
			w.Extra[k] = redactedMark
		}
	}
	return json.Marshal(w)
}

// LogValue implements slog.LogValuer with the redacted form.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("dsn", c.Redacted())}
	if len(c.Extra) > 0 {
		attrs = append(attrs, slog.Any("extra_keys", c.extraKeys()))
	}
	return slog.GroupValue(attrs...)
}

func (c Config) extraKeys() []string {
	keys := make([]string, 0, len(c.Extra))
	for k := range c.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// unparsable is what RedactDSN prints for a DSN it cannot take apart.
const unparsable = "[redacted DSN]"

// RedactDSN returns dsn with its secrets replaced by "xxxxx": the
// password of a URL's user part, and the values of query parameters or
// key=value pairs whose name contains "pass", "secret", "token" or "key"
// (password, sslpassword, sslkey, ...). A DSN it cannot parse comes back
// as "[redacted DSN]" as a whole, so a password can never slip through
// a syntax the function does not know.
func RedactDSN(dsn string) string {
	switch {
	case dsn == "":
		return ""
	case strings.Contains(dsn, "://"):
		return redactURL(dsn)
	case strings.HasPrefix(dsn, "file:"):
		// SQLite URI: no user part; parameters after '?'.
		path, query, ok := strings.Cut(dsn, "?")
		if !ok {
			return dsn
		}
		q, err := redactQuery(query)
		if err != nil {
			return unparsable
		}
		return path + "?" + q
	case strings.Contains(dsn, "="):
		return redactKeyValue(dsn)
	case strings.ContainsAny(dsn, "@:") && !strings.HasPrefix(dsn, "/") && !strings.HasPrefix(dsn, "."):
		// Something like user:pass@host without a scheme.
		return unparsable
	default:
		// A plain file path (SQLite).
		return dsn
	}
}

func redactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Opaque != "" {
		return unparsable
	}
	// An '@' outside the user part means the URL did not split where a
	// driver would (an unescaped '/' or '?' in the password, say): a
	// piece of the password could sit in the path.
	if (u.User == nil && strings.Contains(dsn, "@")) || strings.Contains(u.Path, "@") || strings.Contains(u.RawQuery, "@") {
		return unparsable
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), redactedMark)
		}
	}
	if u.RawQuery != "" {
		q, err := redactQuery(u.RawQuery)
		if err != nil {
			return unparsable
		}
		u.RawQuery = q
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

func secretKey(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "pass") || strings.Contains(k, "secret") || strings.Contains(k, "token") || strings.Contains(k, "key")
}

func redactQuery(raw string) (string, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "", err
	}
	for k, vs := range q {
		if secretKey(k) {
			for i := range vs {
				vs[i] = redactedMark
			}
		}
	}
	return q.Encode(), nil
}

// redactKeyValue redacts a libpq key=value string: keys, '=', and values
// either bare or in single quotes with backslash escapes.
func redactKeyValue(dsn string) string {
	var out strings.Builder
	s := dsn
	for {
		s = strings.TrimLeft(s, " \t\n\r")
		if s == "" {
			return strings.TrimSuffix(out.String(), " ")
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return unparsable
		}
		key := strings.TrimSpace(s[:eq])
		if key == "" || strings.ContainsAny(key, " \t'\\") {
			return unparsable
		}
		s = strings.TrimLeft(s[eq+1:], " \t")
		var val string
		if strings.HasPrefix(s, "'") {
			end := -1
			for i := 1; i < len(s); i++ {
				if s[i] == '\\' {
					i++
					continue
				}
				if s[i] == '\'' {
					end = i
					break
				}
			}
			if end < 0 {
				return unparsable
			}
			val, s = s[:end+1], s[end+1:]
		} else {
			end := strings.IndexAny(s, " \t\n\r")
			if end < 0 {
				end = len(s)
			}
			val, s = s[:end], s[end:]
			if strings.ContainsAny(val, `'\`) {
				return unparsable
			}
		}
		if secretKey(key) {
			val = redactedMark
		}
		out.WriteString(key + "=" + val + " ")
	}
}
