package bichat

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// Errors of the HTTP layer, for HTTPStatus and WriteError. They are
// matched with errors.Is, so wrap them with %w to add detail.
var (
	// ErrUnauthenticated means the request carries no acceptable
	// credentials (HandlerOptions.Authenticate failed): 401.
	ErrUnauthenticated = errors.New("authentication required")
	// ErrUnsupportedMediaType means a request body is not JSON: 415.
	ErrUnsupportedMediaType = errors.New("unsupported media type")
	// ErrTooManyRequests means the caller is over a rate limit: 429. Return
	// it (or a *RateLimitError) from HandlerOptions.Allow.
	ErrTooManyRequests = errors.New("too many requests")
)

// RateLimitError is an ErrTooManyRequests that says when to retry:
// WriteError sets the Retry-After header from RetryAfter (whole seconds,
// at least 1). The Service returns one for a request a quota refuses
// (Config.Quota), with the limiter's *quota.ExceededError as Err.
type RateLimitError struct {
	RetryAfter time.Duration
	// Err, when set, is the refusal (it says which limit); errors.Is and
	// errors.As see through to it.
	Err error
}

// Error says that the caller is over a rate limit, and which one when Err
// says so.
func (e *RateLimitError) Error() string {
	msg := "too many requests: retry in " + e.RetryAfter.Round(time.Second).String()
	if e.Err != nil {
		msg += " (" + strings.TrimPrefix(e.Err.Error(), "quota: ") + ")"
	}
	return msg
}

// Is reports whether target is ErrTooManyRequests.
func (e *RateLimitError) Is(target error) bool { return target == ErrTooManyRequests }

// Unwrap returns Err.
func (e *RateLimitError) Unwrap() error { return e.Err }

// ErrorBody is the JSON body of every error response of the handler:
// {"error":{"code":"not_found","message":"session: not found"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes an error. Code is stable and meant for programs
// (see HTTPStatus for the list); Message is meant for people and never
// carries internal detail (a 500 always says "internal error"); Fields
// names each invalid input of a 400.
type ErrorDetail struct {
	Code    string              `json:"code"`
	Message string              `json:"message"`
	Fields  []domain.FieldError `json:"fields,omitempty"`
}

// HTTPStatus maps an error of the Service or of the handler to an HTTP
// status, by the sentinel it matches (errors.Is):
//
//	domain.ErrInvalid                400 invalid
//	ErrUnauthenticated               401 unauthenticated
//	domain.ErrForbidden              403 forbidden
//	agents.ErrTokenRefused           403 token_refused
//	domain.ErrNotFound               404 not_found
//	domain.ErrConflict               409 conflict
//	domain.ErrTooLarge               413 too_large (also *http.MaxBytesError)
//	ErrUnsupportedMediaType          415 unsupported_media_type
//	ErrTooManyRequests               429 rate_limited
//	errors.ErrUnsupported            501 unsupported
//	context.DeadlineExceeded         504 timeout
//	anything else                    500 internal
//
// A nil error is 200.
func HTTPStatus(err error) int {
	s, _ := classify(err)
	return s
}

// ErrorCode returns the stable code HTTPStatus documents for err
// ("not_found", "conflict", ...); "" for nil.
func ErrorCode(err error) string {
	_, c := classify(err)
	return c
}

func classify(err error) (int, string) {
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return http.StatusOK, ""
	case errors.Is(err, domain.ErrInvalid):
		return http.StatusBadRequest, "invalid"
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized, "unauthenticated"
	case errors.Is(err, agents.ErrTokenRefused):
		return http.StatusForbidden, "token_refused"
	case errors.Is(err, domain.ErrForbidden):
		return http.StatusForbidden, "forbidden"
	case errors.Is(err, domain.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, ErrExpired):
		return http.StatusConflict, "expired"
	case errors.Is(err, domain.ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, domain.ErrTooLarge), errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, ErrUnsupportedMediaType):
		return http.StatusUnsupportedMediaType, "unsupported_media_type"
	case errors.Is(err, ErrTooManyRequests):
		return http.StatusTooManyRequests, "rate_limited"
	case errors.Is(err, ErrClosed):
		return http.StatusServiceUnavailable, "unavailable"
	case errors.Is(err, errors.ErrUnsupported):
		return http.StatusNotImplemented, "unsupported"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "timeout"
	}
	return http.StatusInternalServerError, "internal"
}

// ErrorResponse returns the status and body WriteError sends for err.
// Messages of 4xx errors are the error's text without the "bichat: "
// prefixes (the Service words them for end users and makes a hidden
// entity's error identical to a missing one's); 5xx messages are fixed
// and never carry internal detail.
func ErrorResponse(err error) (int, ErrorBody) {
	status, code := classify(err)
	d := ErrorDetail{Code: code}
	var mbe *http.MaxBytesError
	switch {
	case status >= 500:
		d.Message = publicServerMessage(status)
	case code == "invalid":
		d.Fields = domain.FieldErrors(err)
		d.Message = cleanMessage(err.Error())
		if len(d.Fields) > 0 {
			// The fields say it all, without any wrapping context.
			d.Message = (&domain.ValidationError{Fields: d.Fields}).Error()
		}
	case code == "too_large" && errors.As(err, &mbe):
		d.Message = "request body too large: the limit is " + strconv.FormatInt(mbe.Limit, 10) + " bytes"
	case code == "token_refused":
		d.Message = tokenMessage(err)
	case code == "unauthenticated":
		d.Message = ErrUnauthenticated.Error()
	default:
		d.Message = cleanMessage(err.Error())
	}
	if d.Fields == nil && code == "invalid" {
		d.Fields = []domain.FieldError{}
	}
	return status, ErrorBody{Error: d}
}

func publicServerMessage(status int) string {
	switch status {
	case http.StatusNotImplemented:
		return "not supported by this server"
	case http.StatusGatewayTimeout:
		return "the server took too long to answer"
	case http.StatusServiceUnavailable:
		return "the server is shutting down; try again"
	}
	return "internal error"
}

func tokenMessage(err error) string {
	switch {
	case errors.Is(err, agents.ErrTokenExpired):
		return "the confirmation token has expired"
	case errors.Is(err, agents.ErrTokenReplayed):
		return "the confirmation token was already used"
	case errors.Is(err, agents.ErrTokenMismatch):
		return "the confirmation token was not issued for this user, tool or arguments"
	}
	return "the confirmation token was refused"
}

// cleanMessage drops the "bichat: " operation prefixes of a service
// error, keeping its user-facing wording.
func cleanMessage(s string) string {
	for {
		t := strings.TrimPrefix(s, "bichat: ")
		if t == s {
			return s
		}
		s = t
	}
}

// WriteError writes err as a JSON error response (see ErrorResponse and
// HTTPStatus). A 5xx error is logged with logger (nil: slog.Default())
// with the request's method and path; its text never reaches the client.
// A *RateLimitError sets Retry-After.
func WriteError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	status, body := ErrorResponse(err)
	if status >= 500 {
		if logger == nil {
			logger = slog.Default()
		}
		attrs := []any{"status", status, "error", err}
		if r != nil {
			attrs = append(attrs, "method", r.Method, "path", r.URL.Path)
		}
		logger.Error("bichat: http request failed", attrs...)
	}
	var rl *RateLimitError
	if errors.As(err, &rl) {
		secs := max(int64((rl.RetryAfter+time.Second-1)/time.Second), 1)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	writeJSON(w, status, body)
}

// writeJSON writes v with status. Encoding errors of the handler's own
// types cannot happen; a failed write means the client left.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
