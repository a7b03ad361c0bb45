package export

import (
	"reflect"
	"testing"
)

func TestParseMarkdown(t *testing.T) {
	t.Parallel()
	got := parseMarkdown("# Overview\nFirst line\njoined here.\r\n\n- one\n  continued\n* two\n3) three\n\n**Bold** start\n\n\n")
	want := []block{
		{kind: blockHeading, text: "Overview"},
		{kind: blockPara, text: "First line joined here."},
		{kind: blockItem, marker: "•", text: "one continued"},
		{kind: blockItem, marker: "•", text: "two"},
		{kind: blockItem, marker: "3.", text: "three"},
		{kind: blockPara, text: "**Bold** start"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseMarkdown =\n%+v\nwant\n%+v", got, want)
	}
}

func TestInline(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]span{
		"plain":               {{text: "plain"}},
		"a **b** c":           {{text: "a "}, {text: "b", bold: true}, {text: " c"}},
		"__b__ and `code`":    {{text: "b", bold: true}, {text: " and code"}},
		"unmatched ** marker": {{text: "unmatched ** marker"}},
		"**x** y **z":         {{text: "x", bold: true}, {text: " y **z"}},
		"**Zürich** **東京**":   {{text: "Zürich", bold: true}, {text: " "}, {text: "東京", bold: true}},
	} {
		if got := inline(in); !reflect.DeepEqual(got, want) {
			t.Errorf("inline(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestTokenize(t *testing.T) {
	t.Parallel()
	got := tokenize([]span{{text: "Hi 東京 ok"}, {text: "go", bold: true}})
	want := []token{{text: "Hi"}, {text: "東", space: true}, {text: "京"}, {text: "ok", space: true}, {text: "go", bold: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tokenize = %+v, want %+v", got, want)
	}
}

func TestFileName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Sales report: Q1/2024": "Sales_report_Q1_2024.xlsx",
		"  ../../etc/passwd ":   "etc_passwd.xlsx",
		"東京 レポート":               "東京_レポート.xlsx",
		"***":                   "export.xlsx",
	} {
		if got := fileName(in, ".xlsx", "export"); got != want {
			t.Errorf("fileName(%q) = %q, want %q", in, got, want)
		}
	}
}
