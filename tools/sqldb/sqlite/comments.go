package sqlite

import (
	"strings"
)

// ddlToken is one lexical piece of a CREATE TABLE statement: a word or
// quoted identifier or literal ('w'), a comment ('c'), or one of ( ) ,.
type ddlToken struct {
	kind byte
	text string
	line int
}

// lexDDL splits a CREATE TABLE statement into tokens, keeping comments
// (their text trimmed) and the line each token starts on.
func lexDDL(sql string) []ddlToken {
	var out []ddlToken
	line := 0
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				end = len(sql) - i
			}
			out = append(out, ddlToken{'c', strings.TrimSpace(sql[i+2 : i+end]), line})
			i += end
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			body := ""
			if end < 0 {
				body, end = sql[i+2:], len(sql)-i
			} else {
				body, end = sql[i+2:i+2+end], end+4
			}
			out = append(out, ddlToken{'c', strings.Join(strings.Fields(body), " "), line})
			line += strings.Count(sql[i:i+end], "\n")
			i += end
		case c == '(' || c == ')' || c == ',':
			out = append(out, ddlToken{c, string(c), line})
			i++
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			j := i + 1
			for j < len(sql) {
				if sql[j] == closer {
					if closer != ']' && j+1 < len(sql) && sql[j+1] == closer { // doubled quote
						j += 2
						continue
					}
					break
				}
				j++
			}
			end := min(j+1, len(sql))
			out = append(out, ddlToken{'w', sql[i:end], line})
			line += strings.Count(sql[i:end], "\n")
			i = end
		default:
			j := i
			for j < len(sql) && !strings.ContainsRune(" \t\r\n(),'\"`[", rune(sql[j])) &&
				!(sql[j] == '-' && j+1 < len(sql) && sql[j+1] == '-') && !(sql[j] == '/' && j+1 < len(sql) && sql[j+1] == '*') {
				j++
			}
			if j == i { // a lone character the cases above did not take
				j++
			}
			out = append(out, ddlToken{'w', sql[i:j], line})
			i = j
		}
	}
	return out
}

// unquoteIdent removes SQLite's identifier quotes ("x", `x`, [x]).
func unquoteIdent(s string) string {
	if len(s) >= 2 {
		switch s[0] {
		case '"', '`':
			q := s[:1]
			if strings.HasSuffix(s, q) {
				return strings.ReplaceAll(s[1:len(s)-1], q+q, q)
			}
		case '[':
			if strings.HasSuffix(s, "]") {
				return s[1 : len(s)-1]
			}
		}
	}
	return s
}

// ddlComments reads descriptions from the comments of a CREATE TABLE
// statement, as SQLite keeps it in sqlite_schema: a comment on the line of
// the opening parenthesis (or before it) describes the table; a comment
// at the end of a column's line describes that column, and comments on
// lines of their own describe the column that follows them. Comments of
// table constraints (PRIMARY KEY (...), FOREIGN KEY ...) are dropped.
func ddlComments(sql string) (table string, columns map[string]string) {
	type segment struct {
		name  string
		isCol bool
		desc  []string
	}
	var (
		segs                   []segment
		tableDesc, pending     []string
		depth                  int
		seg                    = -1
		openLine               = -1
		startNew               bool
		lastTextLine, lastText = -1, -1
	)
	for _, t := range lexDDL(sql) {
		switch t.kind {
		case '(':
			depth++
			if depth == 1 && openLine < 0 {
				openLine, startNew = t.line, true
				continue
			}
		case ')':
			depth--
		case ',':
			if depth == 1 {
				startNew = true
			}
		case 'w':
			if depth == 1 && startNew && openLine >= 0 {
				kw := strings.ToUpper(t.text)
				isCol := kw != "CONSTRAINT" && kw != "PRIMARY" && kw != "UNIQUE" && kw != "CHECK" && kw != "FOREIGN"
				segs = append(segs, segment{name: unquoteIdent(t.text), isCol: isCol, desc: pending})
				pending, seg, startNew = nil, len(segs)-1, false
			}
		case 'c':
			switch {
			case t.text == "":
			case openLine < 0 || (depth >= 1 && seg < 0 && t.line == openLine):
				tableDesc = append(tableDesc, t.text)
			case depth >= 1 && lastTextLine == t.line && lastText >= 0:
				segs[lastText].desc = append(segs[lastText].desc, t.text)
			case depth >= 1:
				pending = append(pending, t.text)
			}
			continue
		}
		if depth >= 1 || t.kind == ')' {
			lastTextLine, lastText = t.line, seg
		}
	}
	columns = map[string]string{}
	for _, s := range segs {
		if s.isCol && len(s.desc) > 0 {
			columns[strings.ToLower(s.name)] = strings.Join(s.desc, " ")
		}
	}
	return strings.Join(tableDesc, " "), columns
}
