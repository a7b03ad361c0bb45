package domain

import (
	"errors"
	"strings"
)

// Sentinel errors. Repositories and the service wrap them with %w, so callers
// test with errors.Is.
var (
	// ErrNotFound reports that the entity does not exist or is not visible to
	// the caller (another tenant's or another owner's ids are not found).
	ErrNotFound = errors.New("not found")
	// ErrForbidden reports that the principal lacks the permission needed.
	ErrForbidden = errors.New("forbidden")
	// ErrConflict reports a lost race or a state that does not allow the
	// operation: a message already claimed, a duplicate id, a stale sequence.
	ErrConflict = errors.New("conflict")
	// ErrInvalid reports bad input. The concrete error is a *ValidationError
	// naming the fields.
	ErrInvalid = errors.New("invalid input")
)

// FieldError names one invalid input field and why it is invalid.
type FieldError struct {
	// Field is the input name, e.g. "title" or "list.page_size".
	Field string `json:"field"`
	// Reason is a short, user-presentable explanation.
	Reason string `json:"reason"`
}

// ValidationError is the error returned for invalid input. It matches
// ErrInvalid with errors.Is and lists every offending field.
type ValidationError struct {
	Fields []FieldError `json:"fields"`
}

// Invalid returns a *ValidationError for a single field.
func Invalid(field, reason string) error {
	return &ValidationError{Fields: []FieldError{{Field: field, Reason: reason}}}
}

// Error lists the fields as "invalid input: field: reason; field: reason".
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid input")
	for i, f := range e.Fields {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(f.Field)
		b.WriteString(": ")
		b.WriteString(f.Reason)
	}
	return b.String()
}

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Add appends a field error.
func (e *ValidationError) Add(field, reason string) {
	e.Fields = append(e.Fields, FieldError{Field: field, Reason: reason})
}

// Err returns e when it holds at least one field error and nil otherwise,
// so validators can collect and return in one line.
func (e *ValidationError) Err() error {
	if e == nil || len(e.Fields) == 0 {
		return nil
	}
	return e
}

// FieldErrors returns the field errors carried by err, or nil when err is
// not a validation error.
func FieldErrors(err error) []FieldError {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Fields
	}
	return nil
}
