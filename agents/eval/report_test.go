package eval

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func sampleReport(t *testing.T) *Report {
	t.Helper()
	rep, err := Run(t.Context(), retailSet(), Config{Target: retailScript().target, DB: sampleDB})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestWriteHTMLIsWellFormedAndSelfContained(t *testing.T) {
	t.Parallel()
	rep := sampleReport(t)
	// Text that must be escaped.
	rep.Set = `retail <script>alert("x")</script>`
	rep.Results[3].Reason = `values differ: "<b>&</b>"`
	rep.Results[0].Tags = append(rep.Results[0].Tags, "<img src=https://evil.example/x.png>")
	rep.total()
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	dec := xml.NewDecoder(strings.NewReader(page))
	dec.Strict = true
	var depth, rects, rows int
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("HTML is not well-formed: %v\n%s", err, page)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			switch e.Name.Local {
			case "script", "img", "link", "iframe", "object":
				t.Errorf("page has a <%s> element", e.Name.Local)
			case "rect":
				rects++
			case "tr":
				rows++
			}
			for _, a := range e.Attr {
				if (a.Name.Local == "src" || a.Name.Local == "href") && regexp.MustCompile(`(?i)^\s*(https?:)?//`).MatchString(a.Value) {
					t.Errorf("external reference %s=%q", a.Name.Local, a.Value)
				}
			}
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 {
		t.Errorf("unbalanced elements: depth %d", depth)
	}
	if rects != 2*(1+len(rep.Tags)) {
		t.Errorf("chart has %d rects, want 2 per bar for %d bars", rects, 1+len(rep.Tags))
	}
	if rows != 1+len(rep.Results) {
		t.Errorf("table has %d rows, want %d", rows, 1+len(rep.Results))
	}
	for _, want := range []string{"Execution accuracy <strong>40.0%</strong> (2/5)", "mean retrieval recall <strong>60.0%</strong>",
		"&lt;script&gt;", "&lt;b&gt;&amp;&lt;/b&gt;", "fail: no SQL answer", `width="128"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "<b>&") {
		t.Error("unescaped text in the page")
	}
}

func TestWriteMarkdown(t *testing.T) {
	t.Parallel()
	rep := sampleReport(t)
	rep.Results[3].Reason = "a | pipe\nand a newline"
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"# Evaluation: retail\n",
		"Execution accuracy **40.0%** (2/5), mean retrieval recall **60.0%**.",
		"| **all** | 5 | 2 | 40.0% | 60.0% | 6 | 11 | 1100 | 110 | 0.0110 |",
		"| tag easy | 2 | 1 | 50.0% |",
		"| per-region | join | pass | 100.0% | 3 | 4 | 400/40 | 0.0040 |",
		`| completed | filter | **fail**: a \| pipe and a newline |`,
		"| silent |  | **fail**: no SQL answer | 0.0% | 0 | 1 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	t.Parallel()
	rep := sampleReport(t)
	path := filepath.Join(t.TempDir(), "report.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Totals != rep.Totals || len(back.Results) != len(rep.Results) || *back.Results[2].Recall != 1 ||
		back.Results[2].Repairs != 2 || back.Results[4].Reason != "no SQL answer" {
		t.Errorf("round trip: %+v", back.Totals)
	}
	if _, err := ReadReport(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("ReadReport of a missing file succeeded")
	}
}

func TestCompareReports(t *testing.T) {
	t.Parallel()
	old := sampleReport(t)
	// The new run fixes "completed" and breaks "regions"; "silent" is
	// dropped from the set and "extra" added.
	sc := retailScript()
	sc.runs["completed"] = []step{{sql: "SELECT count(*) FROM orders WHERE status = 'completed'"}}
	sc.runs["regions"] = []step{{sql: "SELECT count(*) FROM customers"}}
	set := retailSet()
	set.Questions = slices.DeleteFunc(set.Questions, func(q Question) bool { return q.ID == "silent" })
	set.Questions = append(set.Questions, Question{ID: "extra", Question: "Q", SQL: "SELECT 1"})
	sc.runs["extra"] = []step{{sql: "SELECT 1"}}
	cur, err := Run(t.Context(), set, Config{Target: sc.target, DB: sampleDB})
	if err != nil {
		t.Fatal(err)
	}
	d := CompareReports(old, cur)
	if !slices.Equal(d.Improved, []string{"completed"}) || !slices.Equal(d.Regressed, []string{"regions"}) ||
		!slices.Equal(d.Unchanged, []string{"categories", "per-region"}) || !slices.Equal(d.Added, []string{"extra"}) ||
		!slices.Equal(d.Removed, []string{"silent"}) {
		t.Fatalf("diff %+v", d)
	}
	var b bytes.Buffer
	if err := d.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"Execution accuracy 40.0% (2/5) → 60.0% (3/5).", "## Improved (1)\n\n- completed\n",
		"## Regressed (1)\n\n- regions: values differ", "## Unchanged (2)", "## Added (1)\n\n- extra", "## Removed (1)\n\n- silent"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
}
