package sqlite

import (
	"fmt"
	"strings"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// CheckStatement applies the single-SELECT rule without a database: sql
// must hold exactly one statement (a trailing semicolon and comments are
// fine) that starts with SELECT, WITH, VALUES or a parenthesis. It returns
// the statement without the semicolon. The engine-level checks (a
// read-only connection, query_only, and an authorizer that allows only
// reads and ordinary functions) run when the statement is prepared.
func CheckStatement(sql string) (string, error) {
	toks, err := tokens(sql)
	if err != nil {
		return "", err
	}
	if len(toks) == 0 {
		return "", sqldb.Rejected("the statement is empty", "send one SELECT statement")
	}
	end := len(sql)
	for i, t := range toks {
		if t.text == ";" {
			if i != len(toks)-1 {
				return "", sqldb.Rejected("several statements were sent; only one is allowed", "send a single SELECT statement")
			}
			end = t.pos
		}
	}
	first := strings.ToUpper(toks[0].text)
	switch first {
	case "SELECT", "WITH", "VALUES", "(":
	default:
		return "", sqldb.Rejected(fmt.Sprintf("%s statements are not allowed", first), "only read-only SELECT statements (including WITH and VALUES) can run")
	}
	for _, t := range toks {
		if t.kind != tokWord {
			continue
		}
		switch w := strings.ToUpper(t.text); w {
		case "ATTACH", "DETACH", "PRAGMA", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER",
			"VACUUM", "REINDEX", "ANALYZE", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE":
			return "", sqldb.Rejected(fmt.Sprintf("%s is not allowed", w), "only read-only SELECT statements can run")
		}
	}
	return strings.TrimSpace(sql[:end]), nil
}

type tokKind uint8

const (
	tokWord tokKind = iota + 1
	tokString
	tokIdent
	tokPunct
)

type token struct {
	kind tokKind
	text string
	pos  int
}

// tokens splits sql into words, literals, quoted identifiers and
// punctuation, skipping whitespace and comments.
func tokens(sql string) ([]token, error) {
	var out []token
	i := 0
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				i = len(sql) // SQLite ends an unterminated comment at the end
			} else {
				i += j + 4
			}
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			j := i + 1
			for {
				if j >= len(sql) {
					return nil, &sqldb.Error{Kind: sqldb.KindSyntax, Message: "unterminated quoted string or identifier", Hint: "close every quote"}
				}
				if sql[j] == closer {
					if closer != ']' && j+1 < len(sql) && sql[j+1] == closer {
						j += 2
						continue
					}
					break
				}
				j++
			}
			k := tokIdent
			if c == '\'' {
				k = tokString
			}
			out = append(out, token{kind: k, text: sql[i : j+1], pos: i})
			i = j + 1
		case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= 0x80:
			j := i
			for j < len(sql) && (sql[j] == '_' || sql[j] == '$' || sql[j] >= 'A' && sql[j] <= 'Z' || sql[j] >= 'a' && sql[j] <= 'z' || sql[j] >= '0' && sql[j] <= '9' || sql[j] >= 0x80) {
				j++
			}
			out = append(out, token{kind: tokWord, text: sql[i:j], pos: i})
			i = j
		default:
			out = append(out, token{kind: tokPunct, text: sql[i : i+1], pos: i})
			i++
		}
	}
	return out, nil
}
