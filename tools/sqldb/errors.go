package sqldb

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Kind classifies a query error so the agent can repair its SQL.
type Kind string

// Error kinds.
const (
	// KindRejected: the statement was refused before it reached the
	// database (not one read-only SELECT, a denied function, a relation
	// outside the allowlist).
	KindRejected Kind = "rejected"
	// KindSyntax: the database could not parse the statement.
	KindSyntax Kind = "syntax"
	// KindUndefinedTable: a relation does not exist.
	KindUndefinedTable Kind = "undefined_table"
	// KindUndefinedColumn: a column does not exist.
	KindUndefinedColumn Kind = "undefined_column"
	// KindTypeMismatch: wrong types for an operator or function, an
	// unknown function, or a value that does not convert.
	KindTypeMismatch Kind = "type_mismatch"
	// KindTimeout: the statement ran past Limits.Timeout and was cancelled.
	KindTimeout Kind = "timeout"
	// KindPermission: the database user may not read something.
	KindPermission Kind = "permission"
	// KindReadOnly: the statement tried to write.
	KindReadOnly Kind = "read_only"
	// KindOther: anything else (connection failures, division by zero...).
	KindOther Kind = "other"
)

// Sentinel errors; every *Error matches the one of its kind with errors.Is.
var (
	ErrRejected          = errors.New("sqldb: statement rejected")
	ErrTimeout           = errors.New("sqldb: statement timed out")
	ErrReadOnlyViolation = errors.New("sqldb: read-only violation")
)

// Error is a classified query error. Its message is safe to show to the
// model and to users: it never contains the connection string or a
// password.
type Error struct {
	Kind Kind
	// Code is the database's code (SQLSTATE for PostgreSQL), if any.
	Code string
	// Message is the database's (or the validator's) message.
	Message string
	// Hint is a short instruction for the model to repair the statement.
	Hint string
	// Position is the 1-based character (not byte) offset in the
	// statement the database or the validator's parser pointed at; 0 when
	// unknown.
	Position int
	// Excerpt, when set, is the line of the statement holding Position
	// (at most about 60 characters of it, "..." where cut), prefixed with
	// its line number, and below it a caret under the character Position
	// names, as psql shows it:
	//
	//	LINE 1: SELECT * FORM sales.orders
	//	                 ^
	//
	// Error appends it on its own lines. Set it with Locate.
	Excerpt string
}

// Locate sets e.Excerpt from statement (the text Position counts in) and
// returns e. It does nothing when Position is 0 or beyond the statement.
func (e *Error) Locate(statement string) *Error {
	if e.Position > 0 {
		e.Excerpt = ExcerptAt(statement, e.Position)
	}
	return e
}

// excerptRadius is how many characters ExcerptAt keeps on each side of
// the position.
const excerptRadius = 30

// ExcerptAt returns "LINE n: " and the line of statement holding the
// 1-based character position, cut to about 30 characters on each side
// ("..." marks a cut), a newline, and a caret under that character. A
// position one past the end (the parser's "at end of input") puts the
// caret after the last character. It returns "" when position is out of
// range.
func ExcerptAt(statement string, position int) string {
	runes := []rune(statement)
	if position < 1 || position > len(runes)+1 {
		return ""
	}
	at := position - 1
	// The line around at, and its number.
	start, line := 0, 1
	for i := 0; i < at; i++ {
		if runes[i] == '\n' {
			start, line = i+1, line+1
		}
	}
	end := at
	for end < len(runes) && runes[end] != '\n' && runes[end] != '\r' {
		end++
	}
	prefix, suffix := "", ""
	if at-start > excerptRadius {
		start = at - excerptRadius
		prefix = "..."
	}
	if end-at > excerptRadius+1 {
		end = at + excerptRadius + 1
		suffix = "..."
	}
	text := make([]rune, 0, end-start)
	for _, r := range runes[start:end] {
		if r == '\t' {
			r = ' '
		}
		text = append(text, r)
	}
	head := fmt.Sprintf("LINE %d: %s", line, prefix)
	return head + string(text) + suffix + "\n" + strings.Repeat(" ", utf8.RuneCountInString(head)+at-start) + "^"
}

// Error renders "kind [code]: message (at character N). hint", followed
// by the Excerpt on its own lines when there is one.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Kind))
	if e.Code != "" {
		b.WriteString(" [" + e.Code + "]")
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	if e.Position > 0 {
		fmt.Fprintf(&b, " (at character %d)", e.Position)
	}
	if e.Hint != "" {
		b.WriteString(". ")
		b.WriteString(e.Hint)
	}
	if e.Excerpt != "" {
		b.WriteByte('\n')
		b.WriteString(e.Excerpt)
	}
	return b.String()
}

// Is matches ErrRejected, ErrTimeout and ErrReadOnlyViolation by kind.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrRejected:
		return e.Kind == KindRejected
	case ErrTimeout:
		return e.Kind == KindTimeout
	case ErrReadOnlyViolation:
		return e.Kind == KindReadOnly
	}
	return false
}

// Rejected returns a KindRejected error with a repair hint.
func Rejected(message, hint string) *Error {
	return &Error{Kind: KindRejected, Message: message, Hint: hint}
}

// KindOf returns the kind of err, KindOther when it is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindOther
}

var (
	quotedName = regexp.MustCompile(`"([^"]+)"`)
	// SQLite: "no such column: x", "no such table: main.x".
	sqliteNoSuch = regexp.MustCompile(`no such (table|column|function): ([^\s]+)`)
)

// ClassifySQLState maps a PostgreSQL SQLSTATE and message to a kind and a
// repair hint.
func ClassifySQLState(code, message string) (Kind, string) {
	name := ""
	if m := quotedName.FindStringSubmatch(message); m != nil {
		name = m[1]
	}
	switch {
	case code == "42P01": // undefined_table
		return KindUndefinedTable, fmt.Sprintf("relation %s does not exist; call describe_table or list the datasets and use a schema-qualified name from them", orThat(name))
	case code == "42703": // undefined_column
		return KindUndefinedColumn, fmt.Sprintf("column %s does not exist; call describe_table on the dataset to see its columns", orThat(name))
	case code == "42883": // undefined_function
		return KindTypeMismatch, "no function or operator matches these argument types; check the argument types and add explicit casts"
	case code == "42804" || code == "42846" || code == "22P02" || code == "22007" || code == "22008" || code == "42725" || code == "42P18":
		return KindTypeMismatch, "a value or expression has the wrong type; compare the column types in describe_table and cast explicitly"
	case code == "57014": // query_canceled (statement_timeout)
		return KindTimeout, "the query ran past the time limit and was cancelled; filter earlier, aggregate, or add a LIMIT"
	case code == "25006": // read_only_sql_transaction
		return KindReadOnly, "only read-only SELECT statements can run"
	case code == "42501": // insufficient_privilege
		return KindPermission, "the database user may not read this; use only the datasets you were given"
	case strings.HasPrefix(code, "42601") || code == "42P10" || code == "42P02" || code == "42611" || code == "42803" || code == "42P20" || code == "42702" || code == "42712" || code == "42P09":
		switch code {
		case "42803":
			return KindSyntax, "every selected column must be in GROUP BY or inside an aggregate"
		case "42702":
			return KindSyntax, fmt.Sprintf("column %s is ambiguous; qualify it with a table alias", orThat(name))
		}
		return KindSyntax, "fix the SQL syntax near the reported position"
	case strings.HasPrefix(code, "42"):
		return KindSyntax, "fix the statement"
	case strings.HasPrefix(code, "28"):
		return KindPermission, "the database refused the credentials"
	}
	return KindOther, ""
}

// ClassifySQLite maps an SQLite error message to a kind and a repair hint.
func ClassifySQLite(message string) (Kind, string) {
	lower := strings.ToLower(message)
	if m := sqliteNoSuch.FindStringSubmatch(lower); m != nil {
		name := strings.Trim(m[2], `"'`)
		switch m[1] {
		case "table":
			return KindUndefinedTable, fmt.Sprintf("relation %s does not exist; call describe_table or list the datasets", name)
		case "column":
			return KindUndefinedColumn, fmt.Sprintf("column %s does not exist; call describe_table on the dataset to see its columns", name)
		default:
			return KindTypeMismatch, fmt.Sprintf("function %s does not exist in SQLite; use SQLite's built-in functions", name)
		}
	}
	switch {
	case strings.Contains(lower, "syntax error") || strings.Contains(lower, "incomplete input") || strings.Contains(lower, "unrecognized token"):
		return KindSyntax, "fix the SQL syntax; this database is SQLite"
	case strings.Contains(lower, "ambiguous column"):
		return KindSyntax, "a column is ambiguous; qualify it with a table alias"
	case strings.Contains(lower, "wrong number of arguments") || strings.Contains(lower, "datatype mismatch"):
		return KindTypeMismatch, "a function got the wrong arguments or types"
	case strings.Contains(lower, "interrupted") || strings.Contains(lower, "context deadline exceeded"):
		return KindTimeout, "the query ran past the time limit and was cancelled; filter earlier, aggregate, or add a LIMIT"
	case strings.Contains(lower, "readonly") || strings.Contains(lower, "read-only") || strings.Contains(lower, "query_only"):
		return KindReadOnly, "only read-only SELECT statements can run"
	case strings.Contains(lower, "not authorized"):
		return KindPermission, "this is not allowed here"
	}
	return KindOther, ""
}

func orThat(name string) string {
	if name == "" {
		return "named in the error"
	}
	return name
}

// Redact removes every occurrence of each secret (a DSN, a password) from
// s. Adapters pass driver messages through it before returning them.
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 3 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}
