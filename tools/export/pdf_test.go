package export_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/chart"
	"github.com/bichat-go/bichat/tools/export"
	"github.com/bichat-go/bichat/tools/export/fonts"
)

// pdftotext extracts the text of a PDF with poppler's pdftotext, skipping
// the test when it is missing (failing under BICHAT_REQUIRE_INTEGRATION=1).
func pdftotext(t *testing.T, pdf []byte) string {
	t.Helper()
	bin, err := exec.LookPath("pdftotext")
	if err != nil {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("pdftotext (poppler-utils) is required: run .ci/setup.d/30-documents.sh")
		}
		t.Skip("pdftotext (poppler-utils) is not installed; run .ci/setup.d/30-documents.sh")
	}
	path := filepath.Join(t.TempDir(), "report.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-layout", "-enc", "UTF-8", path, "-").CombinedOutput()
	if err != nil {
		t.Fatalf("pdftotext: %v: %s", err, out)
	}
	return string(out)
}

// fontOptions finds the fonts the tests need: DejaVu Sans and a CJK
// fallback (fonts-dejavu-core, fonts-droid-fallback), skipping without
// them unless BICHAT_REQUIRE_INTEGRATION=1.
func fontOptions(t testing.TB) export.PDFOptions {
	t.Helper()
	var dirs []string
	if d := os.Getenv("BICHAT_TEST_FONT_DIR"); d != "" {
		dirs = []string{d}
	}
	found := fonts.Find(dirs)
	if len(found) < 2 {
		msg := fmt.Sprintf("need DejaVu Sans and a CJK TrueType font (Debian: fonts-dejavu-core, fonts-droid-fallback), found %v; run .ci/setup.d/30-documents.sh", found)
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return export.PDFOptions{FontDirs: dirs}
}

func newPDF(t testing.TB, f *fixture, opts export.PDFOptions) agents.Tool {
	t.Helper()
	tool, err := export.NewPDF(export.PDFConfig{Results: f.results, Charts: f.charts, Store: f.store, PDFOptions: opts,
		Now: func() time.Time { return time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func drawChart(t testing.TB, f *fixture) string {
	t.Helper()
	tool, err := chart.New(chart.Config{Results: f.results, Charts: f.charts, Store: f.store, Width: 640, Height: 360})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, f.ctx, tool, map[string]any{"type": "bar", "x": "city", "y": "visitors", "title": "Visitors",
		"data": map[string]any{"ref": "result_1"}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Payload.(chart.Chart).Name
}

// TestPDFContent: the PDF's text, as pdftotext reads it, holds the title,
// the markdown text, every table value and the Unicode strings; the table
// spans pages with its header repeated and every page is numbered.
func TestPDFContent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	src := cities(120)
	f.results.Put(f.ctx, src)
	chartName := drawChart(t, f)
	tool := newPDF(t, f, fontOptions(t))
	res, err := call(t, f.ctx, tool, map[string]any{"title": "Visitors in Zürich, Łódź and 東京", "sections": []map[string]any{
		{"heading": "Summary", "text": "Visitors grew **strongly** in Q1.\n\n- Zürich led\n- Łódź followed\n\n1. first\n2. second", "chart": chartName},
		{"heading": "Details", "table": map[string]any{"ref": "result_1"}},
		{"heading": "Inline", "table": map[string]any{"columns": []string{"key", "long"},
			"rows": [][]any{{"k1", strings.Repeat("wrapped words ", 40) + "TAILMARK"}, {"k2", "東京タワー"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	file := res.Payload.(export.File)
	if !bytes.HasPrefix(file.Content, []byte("%PDF-")) {
		t.Fatal("not a PDF")
	}
	a := res.Artifacts[0]
	if a.Kind != domain.ArtifactReport || a.MediaType != domain.MediaTypePDF || a.Name != "Visitors_in_Zürich_Łódź_and_東京.pdf" {
		t.Errorf("artifact = %+v", a)
	}
	text := pdftotext(t, file.Content)
	for _, w := range []string{"Visitors in Zürich, Łódź and 東京", "Summary", "strongly", "Zürich led", "Łódź followed", "東京タワー", "Details", "Inline", "first", "second"} {
		if !strings.Contains(text, w) {
			t.Errorf("PDF text lacks %q", w)
		}
	}
	// Every table value, as shown.
	flat := strings.Join(strings.Fields(text), " ")
	for _, row := range src.Rows {
		for _, v := range row {
			s := tools.FormatCell(v)
			switch x := v.(type) {
			case time.Time:
				s = x.Format("2006-01-02")
				if x.Hour() != 0 {
					s = x.Format("2006-01-02 15:04:05")
				}
			}
			if !strings.Contains(flat, s) {
				t.Fatalf("PDF text lacks the table value %q", s)
			}
		}
	}
	// The long cell is cut after three lines.
	if strings.Contains(text, "TAILMARK") || !strings.Contains(text, "…") {
		t.Error("long cell was not cut with an ellipsis")
	}
	// Pages: numbered "Page n of N"; the header repeats on each page of the table.
	pages := strings.Split(text, "\f")
	if pages[len(pages)-1] == "" {
		pages = pages[:len(pages)-1]
	}
	if len(pages) < 3 || len(pages) != file.Pages {
		t.Fatalf("%d pages in the text, %d reported; want a multi-page table", len(pages), file.Pages)
	}
	headerRE := regexp.MustCompile(`city\s+day\s+visitors\s+revenue\s+updated_at\s+active\s+note`)
	headers := 0
	for i, p := range pages {
		if want := fmt.Sprintf("Page %d of %d", i+1, len(pages)); !strings.Contains(p, want) {
			t.Errorf("page %d lacks %q", i+1, want)
		}
		if headerRE.MatchString(p) {
			headers++
		}
	}
	if headers < 2 {
		t.Errorf("table header appears on %d pages, want it repeated on every page of the table", headers)
	}
	if !strings.Contains(res.Summary, "2 tables and 1 chart") || strings.Contains(res.Summary, "Zürich led") {
		t.Errorf("summary = %q", res.Summary)
	}
	// The chart image is embedded.
	if !bytes.Contains(file.Content, []byte("/Subtype /Image")) {
		t.Error("no image in the PDF")
	}
}

func TestPDFErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tool := newPDF(t, f, fontOptions(t))
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"title": "", "sections": []map[string]any{{"text": "x"}}}, "title is empty"},
		{map[string]any{"title": "x", "sections": []map[string]any{{}}}, "sections[0] is empty"},
		{map[string]any{"title": "x", "sections": []map[string]any{{"chart": "chart_4"}}}, `sections[0].chart: no chart called "chart_4"`},
		{map[string]any{"title": "x", "sections": []map[string]any{{"table": map[string]any{"ref": "nope"}}}}, `sections[0].table.ref`},
	} {
		_, err := call(t, f.ctx, tool, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestPDFMissingFont: with only a Latin font, CJK text is a clear error
// naming the characters, not a mangled document.
func TestPDFMissingFont(t *testing.T) {
	t.Parallel()
	opts := fontOptions(t)
	found := fonts.Find(opts.FontDirs)
	f := newFixture(t)
	tool := newPDF(t, f, export.PDFOptions{Fonts: found[:1]})
	_, err := call(t, f.ctx, tool, map[string]any{"title": "Sales in 東京", "sections": []map[string]any{{"text": "ok"}}})
	if !errors.Is(err, export.ErrNoFont) || !strings.Contains(err.Error(), `"東" (U+6771)`) || !strings.Contains(err.Error(), "fonts-droid-fallback") {
		t.Errorf("error = %v", err)
	}
	// Latin-only text works with the one font.
	if _, err := call(t, f.ctx, tool, map[string]any{"title": "Sales in Zürich", "sections": []map[string]any{{"text": "ok"}}}); err != nil {
		t.Errorf("Latin text with DejaVu only: %v", err)
	}
	// No font at all.
	empty := newPDF(t, f, export.PDFOptions{FontDirs: []string{t.TempDir()}})
	_, err = call(t, f.ctx, empty, map[string]any{"title": "x", "sections": []map[string]any{{"text": "ok"}}})
	if !errors.Is(err, export.ErrNoFont) || !strings.Contains(err.Error(), "no TrueType font found") {
		t.Errorf("error without fonts = %v", err)
	}
	// OpenType/CFF and collections are refused with the reason.
	otf := filepath.Join(t.TempDir(), "x.otf")
	os.WriteFile(otf, []byte("OTTO\x00\x00\x00\x00"), 0o600)
	bad := newPDF(t, f, export.PDFOptions{Fonts: []export.FontFile{{Regular: otf}}})
	_, err = call(t, f.ctx, bad, map[string]any{"title": "x", "sections": []map[string]any{{"text": "ok"}}})
	if err == nil || !strings.Contains(err.Error(), "TrueType (.ttf) is needed") {
		t.Errorf("error for an OTF font = %v", err)
	}
}
