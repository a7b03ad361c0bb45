// Package redact scrubs secrets (API keys, tokens, passwords) from the text
// bichat sends to models, publishes as events, logs, records in the audit
// chain and returns in errors. One [Redactor] serves all of these:
//
//	r, err := redact.New(redact.Options{
//		Secrets:  []string{os.Getenv("OPENAI_API_KEY"), dbPassword},
//		Patterns: []*regexp.Regexp{regexp.MustCompile(`acct-(?P<secret>\d{8})`)},
//	})
//	if err != nil { ... }
//	cfg.Redact = r.Func()                             // agents.Config, hooks.Options
//	logger := slog.New(r.Handler(slog.NewJSONHandler(os.Stderr, nil)))
//
// Each secret is replaced by "[REDACTED]" (Options.Replacement). The
// built-in patterns ([Default], or New without NoBuiltins) recognise:
//
//   - OpenAI API keys: sk-<48 alphanumerics> and the sk-proj-, sk-svcacct-
//     and sk-admin- forms;
//   - Anthropic API keys: sk-ant-api03-..., sk-ant-admin01-..., any
//     sk-ant-<16 or more>;
//   - Google API keys (AIza + 35 characters) and OAuth access tokens
//     (ya29.);
//   - JSON Web Tokens (eyJ....eyJ....signature);
//   - AWS access key ids (AKIA/ASIA + 16);
//   - bearer tokens ("Bearer <token>") and Authorization /
//     Proxy-Authorization header values of any scheme (the word Bearer,
//     the header name and the scheme are kept);
//   - passwords in URLs and DSNs (postgres://user:PASS@host, mysql://,
//     redis://, any scheme://user:pass@; Go MySQL DSNs user:pass@tcp(...)):
//     the user is kept;
//   - assignments to secret-named keys: password=..., libpq
//     password='...' (quotes and backslash escapes), api_key=...,
//     "apiKey": "...", secret: ..., client_secret, access_token,
//     AWS_SECRET_ACCESS_KEY=... After ":" a bare value is scrubbed only
//     when it looks like a credential (6+ bytes with a digit, symbol or
//     inner capital): "the secret: it works" is prose.
//
// Patterns are bounded to avoid false positives on ordinary text:
// "sk-learn", "skeleton", "task-123", UUIDs, git SHAs, URLs without a
// password and the word "password" are left alone. Literal Options.Secrets
// shorter than [MinSecretLen] (6) bytes are ignored: they would mangle
// ordinary text.
//
// Redaction is idempotent (scrubbing scrubbed text changes nothing) and
// cheap on clean text: a one-pass scan for anchor strings ("sk-", "AIza",
// "bearer", "://", "passw", "eyJ", "AKIA", ...) decides which patterns
// run at all, and [Redactor.String] returns its argument without
// allocating when nothing matches.
//
// Secrets that a pattern cannot recognise (a password in free prose, a
// key split across two strings) are not caught: pass the host's own
// credentials as Options.Secrets so that at least those are always
// scrubbed, and use [Redactor.Contains] in tests to check that what a
// component emits is clean.
package redact
