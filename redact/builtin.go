package redact

import "regexp"

// builtin is one built-in pattern. A match always starts at an occurrence
// of one of anchors (or, with start, at the position start derives from
// it): the text is scanned once for the anchors, and expr is only tried,
// anchored, where one occurs. With word set the match must not follow a
// letter or digit. valid, when set, rejects matches that are ordinary
// text after all.
type builtin struct {
	name    string
	expr    string
	anchors []anchor
	start   func(s string, p int) int
	// pre, when set, is a cheap test of the text at the match start that
	// must hold for expr to be tried (common words such as "token" and
	// "bearer" are anchors: most of their occurrences are prose).
	pre   func(s string, x int) bool
	word  bool
	valid func(secret, sep string, quoted bool) bool
}

func exact(s string) anchor { return anchor{s: s} }
func fold(s string) anchor  { return anchor{s: s, fold: true} }

// builtins are the patterns every Redactor has unless Options.NoBuiltins.
// Key formats follow the vendors' published shapes (and the gitleaks rules
// derived from them); each is bounded so that prose ("sk-learn",
// "skeleton", "task-123") does not match.
var builtins = []builtin{
	{
		// OpenAI: legacy sk-<48 alnum>, and sk-proj-, sk-svcacct-,
		// sk-admin- keys (long, with - and _). Random bodies always mix
		// digits and capitals; slugs such as sk-learn-... do not.
		name:    "openai-api-key",
		expr:    `sk-[A-Za-z0-9_-]{32,}`,
		anchors: []anchor{exact("sk-")},
		word:    true,
		valid:   func(s, _ string, _ bool) bool { return hasDigit(s) && hasUpper(s) },
	},
	{
		// Anthropic: sk-ant-api03-..., sk-ant-admin01-..., any sk-ant-.
		name:    "anthropic-api-key",
		expr:    `sk-ant-[A-Za-z0-9_-]{16,}`,
		anchors: []anchor{exact("sk-")},
		word:    true,
		valid:   func(s, _ string, _ bool) bool { return hasDigit(s[7:]) || hasUpper(s[7:]) },
	},
	{
		// Google API keys: AIza followed by 35 characters.
		name:    "google-api-key",
		expr:    `AIza[0-9A-Za-z_-]{35,}`,
		anchors: []anchor{exact("AIza")},
		word:    true,
	},
	{
		// Google OAuth 2.0 access tokens.
		name:    "google-oauth-token",
		expr:    `ya29\.[0-9A-Za-z_-]{16,}`,
		anchors: []anchor{exact("ya29.")},
		word:    true,
	},
	{
		// JSON Web Tokens: base64url header and payload (both JSON
		// objects, hence eyJ) and an optional signature.
		name:    "jwt",
		expr:    `eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`,
		anchors: []anchor{exact("eyJ")},
		word:    true,
	},
	{
		// AWS access key ids (long-term AKIA, temporary ASIA).
		name:    "aws-access-key-id",
		expr:    `(?:AKIA|ASIA)[A-Z0-9]{16}\b`,
		anchors: []anchor{exact("AKIA"), exact("ASIA")},
		word:    true,
	},
	{
		// "Bearer <token>": the word stays, the token goes.
		name:    "bearer-token",
		expr:    `(?i)bearer\s+(?P<secret>[a-z0-9._~+/=-]{8,})`,
		anchors: []anchor{fold("bearer")},
		pre:     bearerPre,
		word:    true,
		valid:   func(s, _ string, _ bool) bool { return tokenish(s) },
	},
	{
		// Authorization and Proxy-Authorization headers, any scheme
		// (Basic credentials are as secret as Bearer tokens): the header
		// name and scheme stay.
		name:    "authorization-header",
		expr:    `(?i)(?:proxy-)?authorization["']?\s*[:=]\s*\[?["']?(?:[a-z][a-z0-9-]*\s+)?(?P<secret>[a-z0-9._~+/=:-]{8,})`,
		anchors: []anchor{fold("proxy-authorization"), fold("authorization")},
		pre:     assignmentPre,
		word:    true,
		valid:   func(s, _ string, _ bool) bool { return tokenish(s) },
	},
	{
		// Passwords in URLs and DSNs: scheme://user:password@host keeps
		// the user and scrubs the password (postgres://, mysql://,
		// redis://, amqp://, https://...).
		name:    "url-password",
		expr:    `[A-Za-z][A-Za-z0-9+.-]*://[^\s:@/?#"'<>\\]*:(?P<secret>[^\s/?#"'<>\\]+)@`,
		anchors: []anchor{exact("://")},
		start:   schemeStart,
		pre:     userinfoPre,
	},
	{
		// Go MySQL driver DSNs: user:password@tcp(host)/db.
		name:    "mysql-dsn-password",
		expr:    `[^\s:@/"'=()]+:(?P<secret>[^\s@"']+)@(?:tcp|unix)\(`,
		anchors: []anchor{exact("@tcp("), exact("@unix(")},
		start:   userStart,
	},
	{
		// Assignments of secret-named keys: api_key=..., apikey: ...,
		// "password": "...", secret=..., client_secret, access_token,
		// AWS_SECRET_ACCESS_KEY=..., and libpq key=value DSNs
		// (password='it\'s' quoting with backslash escapes). Values in
		// quotes are scrubbed whole; a bare value after ":" only when it
		// looks like a credential (a word with a digit, symbol or inner
		// capital), since "Note the secret: it works" is prose.
		name: "secret-assignment",
		expr: `(?i)(?:api[_-]?key|access[_-]?key|private[_-]?key|secret|(?:access|refresh|auth|id|session)?[_-]?token|password|passwd|pwd|credentials?)(?:[_-][a-z0-9]+)*["']?\s*(?P<sep>:=|=>|=|:)\s*` +
			`(?:'(?P<secret>(?:[^'\\\n]|\\.)*)'|"(?P<secret>(?:[^"\\\n]|\\.)*)"|(?P<secret>[^\s'"&;,]+))`,
		anchors: []anchor{fold("api"), fold("access"), fold("private"), fold("secret"), fold("refresh"), fold("auth"),
			fold("session"), fold("token"), fold("passw"), fold("pwd"), fold("credential")},
		pre:   assignmentPre,
		word:  true,
		valid: assignmentValue,
	},
}

// assignmentPre reports whether the name at s[x:] is followed by an
// assignment (":", "=", ":=", "=>"), after an optional quote and spaces.
func assignmentPre(s string, x int) bool {
	i := x
	for i < len(s) && (isAlnum(s[i]) || s[i] == '_' || s[i] == '-') {
		i++
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i < len(s) && (s[i] == ':' || s[i] == '=')
}

// bearerPre reports whether "bearer" at s[x:] is followed by white space
// and a token of at least 8 bytes.
func bearerPre(s string, x int) bool {
	i := x + len("bearer")
	if i >= len(s) || !isSpace(s[i]) {
		return false
	}
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	n := 0
	for i < len(s) && n < 8 && !isSpace(s[i]) {
		i++
		n++
	}
	return n == 8
}

// userinfoPre reports whether the URL at s[x:] has an "@" before its path
// or the end of the word.
func userinfoPre(s string, x int) bool {
	i := x
	for i < len(s) && s[i] != ':' {
		i++
	}
	for i += 3; i < len(s); i++ {
		switch s[i] {
		case '@':
			return true
		case '/', '?', '#', '"', '\'', '<', '>', '\\', ' ', '\t', '\n', '\r':
			return false
		}
	}
	return false
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// schemeStart returns the start of the URL scheme ending at s[p:] ("://"),
// or -1.
func schemeStart(s string, p int) int {
	x := p
	for x > 0 && p-x < 32 {
		c := s[x-1]
		if !isAlnum(c) && c != '+' && c != '.' && c != '-' {
			break
		}
		x--
	}
	if x == p || !isLetter(s[x]) {
		return -1
	}
	return x
}

// userStart returns the start of the user:password run ending at s[p:]
// ("@tcp("), or -1.
func userStart(s string, p int) int {
	x := p
	for x > 0 && p-x < 512 {
		switch s[x-1] {
		case ' ', '\t', '\n', '\r', '"', '\'', '=', '(', ')', '/':
			return startOr(x, p)
		}
		x--
	}
	return startOr(x, p)
}

func startOr(x, p int) int {
	if x == p {
		return -1
	}
	return x
}

func isLetter(c byte) bool { c |= 0x20; return 'a' <= c && c <= 'z' }
func isAlnum(c byte) bool  { return isLetter(c) || '0' <= c && c <= '9' }

// secretKeys matches JSON object keys whose string values JSON scrubs
// whole (password, apiKey, client_secret, access_token, ...).
var secretKeys = regexp.MustCompile(`(?i)^[a-z0-9_.-]*?(?:api[_-]?key|access[_-]?key|private[_-]?key|secret|token|password|passwd|pwd|credentials?)(?:[_-][a-z0-9]+)*$`)

// assignmentValue accepts the value of a secret-named key: anything
// quoted or after "=", a credential-looking word after ":".
func assignmentValue(s, sep string, quoted bool) bool {
	if quoted || sep != ":" {
		return true
	}
	return len(s) >= 6 && hasLetter(s) && (hasDigit(s) || hasSymbol(s) || hasUpper(s[1:]))
}

// tokenish reports whether s looks like a credential rather than a word:
// at least 8 bytes with a digit, a symbol or an inner capital, or a run of
// 20 or more letters.
func tokenish(s string) bool {
	if len(s) >= 20 {
		return true
	}
	return len(s) >= 8 && (hasDigit(s) || hasSymbol(s) || hasUpper(s[1:]))
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if '0' <= s[i] && s[i] <= '9' {
			return true
		}
	}
	return false
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

func hasLetter(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; 'a' <= c && c <= 'z' {
			return true
		}
	}
	return false
}

// hasSymbol reports whether s has a byte that is neither a letter nor a
// digit.
func hasSymbol(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9') && !('a' <= c|0x20 && c|0x20 <= 'z') {
			return true
		}
	}
	return false
}
