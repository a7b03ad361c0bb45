package semantic

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// expr is a model expression split into SQL text and column references,
// so it can be rendered with the columns qualified by a table alias.
type expr struct {
	parts   []exprPart
	columns []string // distinct, in order of appearance
}

type exprPart struct {
	text   string
	column bool
}

// keywords are the words of an expression that are not column names.
var keywords = map[string]bool{
	"and": true, "or": true, "not": true, "null": true, "is": true, "in": true, "like": true, "ilike": true,
	"between": true, "case": true, "when": true, "then": true, "else": true, "end": true, "true": true,
	"false": true, "cast": true, "as": true, "distinct": true, "escape": true, "collate": true, "glob": true,
}

// parseExpr splits src. Bare and double-quoted identifiers are columns;
// words followed by "(" are functions; SQL keywords, and type names after
// "::" or inside CAST(... AS type), are kept as written. Statement
// separators, comments, qualified names (a.b) and parameters are refused.
func parseExpr(src string) (*expr, error) {
	x := &expr{}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			x.parts = append(x.parts, exprPart{text: lit.String()})
			lit.Reset()
		}
	}
	addCol := func(name string) {
		flush()
		x.parts = append(x.parts, exprPart{text: name, column: true})
		if !slices.Contains(x.columns, name) {
			x.columns = append(x.columns, name)
		}
	}
	prevWord := "" // the last keyword or word seen, lower case
	afterCast := false
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\'':
			j := i + 1
			for {
				k := strings.IndexByte(src[j:], '\'')
				if k < 0 {
					return nil, errors.New("unterminated string literal")
				}
				j += k + 1
				if j < len(src) && src[j] == '\'' {
					j++
					continue
				}
				break
			}
			lit.WriteString(src[i:j])
			i = j
			prevWord = ""
		case c == '"':
			j := i + 1
			var name strings.Builder
			for {
				if j >= len(src) {
					return nil, errors.New("unterminated quoted identifier")
				}
				if src[j] == '"' {
					if j+1 < len(src) && src[j+1] == '"' {
						name.WriteByte('"')
						j += 2
						continue
					}
					break
				}
				name.WriteByte(src[j])
				j++
			}
			if name.Len() == 0 {
				return nil, errors.New("empty quoted identifier")
			}
			if j+1 < len(src) && src[j+1] == '.' {
				return nil, fmt.Errorf("qualified name %s.…: refer to the entity's columns by bare name", src[i:j+1])
			}
			addCol(name.String())
			i = j + 1
			prevWord = ""
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			word := src[i:j]
			lower := strings.ToLower(word)
			k := j
			for k < len(src) && (src[k] == ' ' || src[k] == '\t' || src[k] == '\n' || src[k] == '\r') {
				k++
			}
			switch {
			case k < len(src) && src[k] == '.' && !(k+1 < len(src) && isDigit(src[k+1])):
				return nil, fmt.Errorf("qualified name %s.…: refer to the entity's columns by bare name", word)
			case k < len(src) && src[k] == '(':
				if lower == "cast" {
					afterCast = true
				}
				lit.WriteString(word)
			case keywords[lower]:
				lit.WriteString(word)
			case strings.HasSuffix(strings.TrimRight(lit.String(), " \t\n\r"), "::"):
				lit.WriteString(word) // a type name
			case prevWord == "as" && afterCast:
				lit.WriteString(word) // CAST(x AS type)
				afterCast = false
			default:
				addCol(word)
			}
			i = j
			prevWord = lower
		case isDigit(c):
			j := i + 1
			for j < len(src) && (isIdentPart(src[j]) || src[j] == '.') {
				j++
			}
			lit.WriteString(src[i:j])
			i = j
			prevWord = ""
		case c == ';':
			return nil, errors.New("a semicolon is not allowed")
		case c == '?' || c == '$' || c == ':' && !(i+1 < len(src) && src[i+1] == ':') && !(i > 0 && src[i-1] == ':'):
			return nil, fmt.Errorf("parameter marker %q is not allowed", c)
		case c == '-' && i+1 < len(src) && src[i+1] == '-', c == '/' && i+1 < len(src) && src[i+1] == '*':
			return nil, errors.New("comments are not allowed")
		case c == '[' || c == '`' || c == '\\' || c == 0:
			return nil, fmt.Errorf("character %q is not allowed", c)
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	if strings.Count(src, "(") != strings.Count(src, ")") {
		return nil, errors.New("unbalanced parentheses")
	}
	return x, nil
}

func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) }
func isDigit(c byte) bool      { return '0' <= c && c <= '9' }

// render writes the expression with every column qualified by alias.
func (x *expr) render(b *strings.Builder, alias string) {
	for _, p := range x.parts {
		if p.column {
			b.WriteString(alias + "." + sqlQuoteIdent(p.text))
		} else {
			b.WriteString(p.text)
		}
	}
}

// single reports the column when the expression is just one column.
func (x *expr) single() (string, bool) {
	var col string
	for _, p := range x.parts {
		switch {
		case p.column && col == "":
			col = p.text
		case p.column || strings.TrimSpace(p.text) != "":
			return "", false
		}
	}
	return col, col != ""
}

func sqlQuoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
