package eval

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseSetYAML(t *testing.T) {
	t.Parallel()
	const doc = `
name: retail
questions:
  - id: regions
    question: How many regions are there?
    sql: SELECT count(*) FROM regions
    tags: [easy]
  - id: per-region
    question: Customers per region?
    sql: |
      SELECT r.name, count(*) FROM customers c JOIN regions r ON r.id = c.region_id GROUP BY r.name
    hints: ["customers belong to one region"]
    datasets: [customers, regions]
`
	s, err := ParseSet(strings.NewReader(doc), FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "retail" || len(s.Questions) != 2 {
		t.Fatalf("set %+v", s)
	}
	q := s.Questions[1]
	if q.ID != "per-region" || !slices.Equal(q.Hints, []string{"customers belong to one region"}) ||
		!slices.Equal(q.Datasets, []string{"customers", "regions"}) || !strings.HasPrefix(q.SQL, "SELECT r.name") {
		t.Errorf("question %+v", q)
	}
	// A bare list is a set too.
	s, err = ParseSet(strings.NewReader("- {id: a, question: Q?, sql: SELECT 1}\n"), FormatYAML)
	if err != nil || len(s.Questions) != 1 || s.Questions[0].SQL != "SELECT 1" {
		t.Fatalf("list: %+v, %v", s, err)
	}
}

func TestParseSetJSONL(t *testing.T) {
	t.Parallel()
	const doc = `# retail questions
{"id":"a","question":"How many regions?","sql":"SELECT count(*) FROM regions","tags":["easy"]}

{"id":"b","question":"How many products?","sql":"SELECT count(*) FROM products","hints":["catalogue"]}
`
	s, err := ParseSet(strings.NewReader(doc), FormatJSONL)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Questions) != 2 || s.Questions[1].Hints[0] != "catalogue" || s.Questions[0].Tags[0] != "easy" {
		t.Fatalf("set %+v", s)
	}
}

func TestParseSetErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		f    Format
		doc  string
		want string
	}{
		{"jsonl syntax names the line", FormatJSONL, "{\"id\":\"a\",\"question\":\"Q\",\"sql\":\"SELECT 1\"}\n\n{\"id\": \n", "line 3"},
		{"jsonl unknown field", FormatJSONL, `{"id":"a","question":"Q","sql":"SELECT 1","hint":["x"]}`, `line 1: json: unknown field "hint"`},
		{"jsonl missing sql", FormatJSONL, "\n" + `{"id":"a","question":"Q"}`, `line 2: question a: "sql" (the verified query) is missing`},
		{"jsonl two values", FormatJSONL, `{"id":"a","question":"Q","sql":"SELECT 1"} {}`, "line 1: more than one JSON value"},
		{"duplicate id", FormatJSONL, `{"id":"a","question":"Q","sql":"SELECT 1"}` + "\n" + `{"id":"a","question":"R","sql":"SELECT 2"}`,
			`question 2: id "a" is already used by question 1`},
		{"missing id", FormatYAML, "- {question: Q, sql: SELECT 1}", `question 1: "id" is missing`},
		{"bad id", FormatYAML, "- {id: a b, question: Q, sql: SELECT 1}", `id "a b": only letters`},
		{"missing question", FormatYAML, "- {id: a, sql: SELECT 1}", `question a: "question" is missing`},
		{"yaml unknown field", FormatYAML, "questions:\n  - {id: a, question: Q, sql: SELECT 1, tag: x}", "field tag not found"},
		{"yaml syntax", FormatYAML, "questions: [", "eval:"},
		{"empty", FormatYAML, "", "the question set is empty"},
		{"unknown format", Format("csv"), "", `unknown question set format "csv"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseSet(strings.NewReader(c.doc), c.f)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestLoadSetPicksFormatAndName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "smoke.jsonl")
	if err := os.WriteFile(p, []byte(`{"id":"a","question":"Q","sql":"SELECT 1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSet(p)
	if err != nil || s.Name != "smoke" || len(s.Questions) != 1 {
		t.Fatalf("LoadSet = %+v, %v", s, err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSet(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl: eval: line 1") {
		t.Errorf("LoadSet(bad) error %v, want the file and line", err)
	}
	if _, err := LoadSet(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("LoadSet of a missing file succeeded")
	}
}
