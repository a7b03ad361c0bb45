package sqldb

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestClassifySQLState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code, msg string
		kind      Kind
		hint      string
	}{
		{"42601", `syntax error at or near "FORM"`, KindSyntax, "syntax"},
		{"42P01", `relation "ordrs" does not exist`, KindUndefinedTable, "relation ordrs does not exist; call describe_table"},
		{"42703", `column "revenu" does not exist`, KindUndefinedColumn, "column revenu does not exist; call describe_table"},
		{"42883", "operator does not exist: text + integer", KindTypeMismatch, "casts"},
		{"42804", "argument of WHERE must be type boolean", KindTypeMismatch, "cast"},
		{"22P02", `invalid input syntax for type integer: "x"`, KindTypeMismatch, "type"},
		{"57014", "canceling statement due to statement timeout", KindTimeout, "LIMIT"},
		{"25006", "cannot execute INSERT in a read-only transaction", KindReadOnly, "read-only"},
		{"42501", "permission denied for table secrets", KindPermission, "may not read"},
		{"42803", `column "x" must appear in the GROUP BY clause`, KindSyntax, "GROUP BY"},
		{"42702", `column reference "id" is ambiguous`, KindSyntax, "id is ambiguous"},
		{"22012", "division by zero", KindOther, ""},
	} {
		kind, hint := ClassifySQLState(tc.code, tc.msg)
		if kind != tc.kind || !strings.Contains(hint, tc.hint) {
			t.Errorf("%s %s: %s %q", tc.code, tc.msg, kind, hint)
		}
	}
}

func TestClassifySQLite(t *testing.T) {
	t.Parallel()
	for msg, kind := range map[string]Kind{
		"SQL logic error: no such column: revenu (1)":    KindUndefinedColumn,
		"SQL logic error: no such table: main.ordrs (1)": KindUndefinedTable,
		"SQL logic error: no such function: median (1)":  KindTypeMismatch,
		`SQL logic error: near "FORM": syntax error (1)`: KindSyntax,
		"interrupted (9)":                                        KindTimeout,
		"attempt to write a readonly database (8)":               KindReadOnly,
		"SQL logic error: ambiguous column name: id (1)":         KindSyntax,
		"SQL logic error: wrong number of arguments to function": KindTypeMismatch,
		"disk I/O error":                                         KindOther,
	} {
		if got, _ := ClassifySQLite(msg); got != kind {
			t.Errorf("%s: %s, want %s", msg, got, kind)
		}
	}
}

func TestErrorMatchesSentinels(t *testing.T) {
	t.Parallel()
	err := error(&Error{Kind: KindTimeout, Code: "57014", Message: "canceling statement", Hint: "add a LIMIT", Position: 3})
	if !errors.Is(err, ErrTimeout) || errors.Is(err, ErrRejected) || KindOf(err) != KindTimeout {
		t.Error("sentinels")
	}
	if got := err.Error(); got != "timeout [57014]: canceling statement (at character 3). add a LIMIT" {
		t.Errorf("message %q", got)
	}
	if KindOf(errors.New("x")) != KindOther || !errors.Is(Rejected("no", "why"), ErrRejected) {
		t.Error("KindOf / Rejected")
	}
	if got := Redact("failed for postgres://u:pw123@h/db with pw123", "postgres://u:pw123@h/db", "pw123", ""); strings.Contains(got, "pw123") {
		t.Errorf("redact %q", got)
	}
}

func TestCell(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   any
		max  int
		want any
		cut  bool
	}{
		{int32(7), 0, int64(7), false},
		{float32(1.5), 0, 1.5, false},
		{"héllo", 2, "h", true},
		{[]byte{1, 2, 3}, 2, []byte{1, 2}, true},
		{[16]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}, 0, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", false},
		{map[string]any{"k": 1}, 0, `{"k":1}`, false},
		{at, 0, at, false},
		{nil, 0, nil, false},
	} {
		got, cut, _ := Cell(tc.in, tc.max)
		if b, ok := got.([]byte); ok {
			if string(b) != string(tc.want.([]byte)) || cut != tc.cut {
				t.Errorf("%v: %v %v", tc.in, got, cut)
			}
			continue
		}
		if got != tc.want || cut != tc.cut {
			t.Errorf("%v: %#v %v", tc.in, got, cut)
		}
	}
	if QuoteQualified(`sales.or"ders`) != `"sales"."or""ders"` || QuoteQualified("t") != `"t"` {
		t.Error("quoting")
	}
}

func TestExcerptAt(t *testing.T) {
	t.Parallel()
	long := "SELECT region, sum(amount) AS total, count(*) AS n, avg(amount) FROM sales.orders WHER status = 'paid' GROUP BY region"
	for _, tc := range []struct {
		name, sql string
		pos       int
		want      string
	}{
		{"short", "SELECT * FORM t", 10, "LINE 1: SELECT * FORM t\n                 ^"},
		{"first char", "SELEC 1", 1, "LINE 1: SELEC 1\n        ^"},
		{"end of input", "SELECT 1 +", 11, "LINE 1: SELECT 1 +\n                  ^"},
		{"multi-byte runes count as characters", "SELECT 'é' FORM t", 12, "LINE 1: SELECT 'é' FORM t\n                   ^"},
		{"other line", "SELECT a\nFROM t\nWHER x = 1", 17, "LINE 3: WHER x = 1\n        ^"},
		{"tabs become spaces", "SELECT\t*\tFORM t", 10, "LINE 1: SELECT * FORM t\n                 ^"},
		{"long line cut both sides", long, strings.Index(long, "WHER") + 1,
			"LINE 1: ...avg(amount) FROM sales.orders WHER status = 'paid' GROUP BY r...\n" + strings.Repeat(" ", 8+3+30) + "^"},
		{"zero", "SELECT 1", 0, ""},
		{"beyond", "SELECT 1", 10, ""},
	} {
		if got := ExcerptAt(tc.sql, tc.pos); got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
	e := (&Error{Kind: KindSyntax, Message: `syntax error at or near "FORM"`, Position: 10, Hint: "fix the SQL syntax"}).Locate("SELECT * FORM t")
	if got := e.Error(); got != "syntax: syntax error at or near \"FORM\" (at character 10). fix the SQL syntax\nLINE 1: SELECT * FORM t\n                 ^" {
		t.Errorf("Error() with excerpt: %q", got)
	}
	if e := (&Error{Kind: KindSyntax}).Locate("SELECT 1"); e.Excerpt != "" {
		t.Errorf("excerpt without a position: %q", e.Excerpt)
	}
}
