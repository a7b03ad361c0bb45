package export_test

import (
	"bytes"
	"testing"

	"codeberg.org/go-pdf/fpdf"

	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/export"
)

// BenchmarkExportExcel is one export_excel call with a 10,000-row,
// 7-column table (numbers, dates, timestamps, text, booleans, nulls).
func BenchmarkExportExcel(b *testing.B) {
	f := newFixture(b)
	f.results.Put(f.ctx, cities(10000))
	tool, err := export.NewExcel(export.ExcelConfig{Results: f.results, Store: f.store})
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"title": "Cities", "sheets": []map[string]any{{"name": "Cities", "data": map[string]any{"ref": "result_1"}}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := call(b, f.ctx, tool, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExportExcelBaseline writes the same table as CSV, the
// cheapest file a host could offer instead.
func BenchmarkExportExcelBaseline(b *testing.B) {
	t := cities(10000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := t.CSV(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExportPDF is one export_pdf call: a 500-row table (about 11
// pages) and a chart, with DejaVu Sans and Droid Sans Fallback embedded.
func BenchmarkExportPDF(b *testing.B) {
	f := newFixture(b)
	f.results.Put(f.ctx, cities(500))
	chartName := drawChart(b, f)
	tool := newPDF(b, f, fontOptions(b))
	args := map[string]any{"title": "Visitors in Zürich, Łódź and 東京", "sections": []map[string]any{
		{"heading": "Summary", "text": "Visitors grew **strongly**.\n\n- Zürich led\n- Łódź followed", "chart": chartName},
		{"heading": "Details", "table": map[string]any{"ref": "result_1"}},
	}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := call(b, f.ctx, tool, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExportPDFBaseline lays out the same 500 rows with fpdf's
// built-in Helvetica and plain cells: no Unicode fonts, wrapping, or
// chart — the floor under BenchmarkExportPDF.
func BenchmarkExportPDFBaseline(b *testing.B) {
	t := cities(500)
	b.ReportAllocs()
	for b.Loop() {
		pdf := fpdf.New("P", "mm", "A4", "")
		pdf.SetFont("Helvetica", "", 8)
		pdf.AddPage()
		tr := pdf.UnicodeTranslatorFromDescriptor("")
		for _, row := range t.Rows {
			for _, v := range row {
				pdf.CellFormat(25, 5, tr(tools.FormatCell(v)), "", 0, "L", false, 0, "")
			}
			pdf.Ln(5)
		}
		var buf bytes.Buffer
		if err := pdf.Output(&buf); err != nil {
			b.Fatal(err)
		}
	}
}
