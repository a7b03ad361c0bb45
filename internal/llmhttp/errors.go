package llmhttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// APIError is an error answer from a provider: an HTTP error status, or an
// error event inside a stream (StatusCode 0). Its text never contains API
// keys: messages are redacted when the error is built.
type APIError struct {
	// Provider names the provider, e.g. "openai".
	Provider string
	// StatusCode is the HTTP status; 0 for an error reported inside a
	// stream after a 200.
	StatusCode int
	// Type and Code are the provider's error type and code, e.g.
	// "invalid_request_error" / "rate_limit_exceeded",
	// "overloaded_error", "RESOURCE_EXHAUSTED". Either may be empty.
	Type string
	Code string
	// Message is the provider's message, secrets redacted.
	Message string
	// RequestID is the provider's request id (x-request-id, request-id),
	// worth quoting to the provider's support.
	RequestID string
	// RetryAfter is how long the provider asked to wait before retrying
	// (Retry-After, retry-after-ms or a retry delay in the body); 0 when it
	// said nothing.
	RetryAfter time.Duration
	// Transient says the failure is worth retrying (rate limits, overload,
	// server errors) as opposed to permanent (bad request, bad key, quota
	// exhausted). Retryable returns it.
	Transient bool
}

// Error describes the failure: provider, status, type/code, message and
// request id.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	} else {
		b.WriteString(": stream error")
	}
	kind := e.Type
	if e.Code != "" && e.Code != e.Type {
		if kind != "" {
			kind += "/"
		}
		kind += e.Code
	}
	if kind != "" {
		b.WriteString(" (" + kind + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" [request id " + e.RequestID + "]")
	}
	return b.String()
}

// Retryable reports whether retrying (later, or on another model) may
// succeed. agents.Retryable relies on it.
func (e *APIError) Retryable() bool { return e.Transient }

// ErrIncomplete is wrapped in the ConnError a provider returns when a
// stream ended before the protocol's end marker (OpenAI's [DONE],
// Anthropic's message_stop): the answer is partial and must not be taken
// as complete.
var ErrIncomplete = errors.New("the stream ended before the provider's end marker")

// ErrStalled is wrapped in the ConnError returned when no bytes arrived for
// Client.IdleTimeout.
var ErrStalled = errors.New("no data from the provider within the idle timeout")

// ErrAttemptTimeout is wrapped in the ConnError returned when one attempt
// took longer than Client.Timeout.
var ErrAttemptTimeout = errors.New("the request exceeded its timeout")

// ConnError is a failure to exchange bytes with the provider: connection
// refused or reset, EOF before or inside the response, a stalled or timed
// out attempt, a stream cut before its end marker. It is transient unless
// it is a TLS certificate problem.
type ConnError struct {
	Provider string
	// Op is "send request" or "read response".
	Op  string
	Err error
}

// Error returns the provider, the operation and the cause (redacted).
func (e *ConnError) Error() string {
	return e.Provider + ": " + e.Op + ": " + Redact(e.Err.Error())
}

// Unwrap returns the cause.
func (e *ConnError) Unwrap() error { return e.Err }

// Retryable is true except for certificate and TLS configuration errors.
func (e *ConnError) Retryable() bool {
	var (
		ua  x509.UnknownAuthorityError
		hn  x509.HostnameError
		ci  x509.CertificateInvalidError
		rec tls.RecordHeaderError
		ver *tls.CertificateVerificationError
	)
	return !(errors.As(e.Err, &ua) || errors.As(e.Err, &hn) || errors.As(e.Err, &ci) ||
		errors.As(e.Err, &rec) || errors.As(e.Err, &ver))
}

// newConnError wraps err, dropping the URL of a *url.Error (it may carry a
// key in its query).
func newConnError(provider, op string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &ConnError{Provider: provider, Op: op, Err: err}
}

// ReadError classifies an error met while decoding a response body for
// provider: context errors and the provider's own typed errors (*APIError,
// *ConnError) are returned unchanged; io.EOF and io.ErrUnexpectedEOF become
// a ConnError wrapping ErrIncomplete; anything else becomes a ConnError.
// Providers pass every sse.Reader error through it.
func ReadError(provider string, err error) error {
	var (
		ae *APIError
		ce *ConnError
	)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &ae), errors.As(err, &ce):
		return err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &ConnError{Provider: provider, Op: "read response", Err: ErrIncomplete}
	}
	return newConnError(provider, "read response", err)
}

// Patterns of well-known key formats redacted even when the key is not
// known to the client.
var keyPattern = regexp.MustCompile(`\b(sk-[A-Za-z0-9_\-*]{8,}|AIza[0-9A-Za-z_\-]{20,}|(?i:bearer)\s+[A-Za-z0-9._\-~+/=]{8,})`)

// Redacted replaces secrets in text.
const Redacted = "[REDACTED]"

// Redact returns s with every occurrence of the given secrets (empty ones
// and ones shorter than 4 bytes are skipped) and of anything shaped like a
// common API key (sk-..., AIza..., "Bearer ...") replaced by [REDACTED].
// Use it on any provider text that reaches an error, log or event.
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	if keyPattern.MatchString(s) {
		s = keyPattern.ReplaceAllString(s, Redacted)
	}
	return s
}
