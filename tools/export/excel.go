package export

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/chart"
)

// ExcelInput is the arguments of export_excel.
type ExcelInput struct {
	Title  string       `json:"title" jsonschema:"description=Workbook title; also names the file."`
	Sheets []SheetInput `json:"sheets" jsonschema:"minItems=1,description=One sheet per table."`
}

// SheetInput is one sheet of export_excel.
type SheetInput struct {
	Name string     `json:"name,omitempty" jsonschema:"description=Sheet name (at most 31 characters; []:*?/\\ are replaced). Default: the result name."`
	Data chart.Data `json:"data" jsonschema:"description=The table: ref to an earlier result\\, or columns and rows inline."`
}

// SheetInfo describes one written sheet.
type SheetInfo struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	Rows    int    `json:"rows"`
	Columns int    `json:"columns"`
	// SourceRows is the row count of the table; more than Rows when the
	// sheet was capped.
	SourceRows int `json:"source_rows"`
}

// ExcelConfig configures export_excel.
type ExcelConfig struct {
	// Results resolves data refs; nil allows inline data only.
	Results tools.Results
	// Store receives the workbook; required.
	Store domain.ArtifactStore
	// MaxRows caps the data rows of one sheet; 0 means 100,000 (Excel's
	// own limit is 1,048,575).
	MaxRows int
	// MaxSheets caps the sheets of one workbook; 0 means 20.
	MaxSheets int
}

// Sheet is a table to write as one worksheet.
type Sheet struct {
	// Name is the wanted sheet name; WriteWorkbook sanitises it.
	Name  string
	Table tools.Table
}

// WorkbookOptions configures WriteWorkbook.
type WorkbookOptions struct {
	// Title is stored in the document properties.
	Title string
	// MaxRows caps the data rows per sheet; 0 means 100,000.
	MaxRows int
}

const excelMaxRows = 1_048_575

// WriteWorkbook writes the sheets as an .xlsx workbook: one worksheet per
// table with typed cells (numbers stay numbers, times become dates with
// a yyyy-mm-dd or yyyy-mm-dd hh:mm:ss format, booleans stay booleans), a
// bold header row that stays frozen, an auto filter over the data, and
// column widths from the content. Sheet names are made valid for Excel
// (at most 31 characters, none of []:*?/\, unique). A sheet over MaxRows
// rows is cut, with a note below the data. It returns what was written
// and notes about renames and caps.
func WriteWorkbook(sheets []Sheet, opts WorkbookOptions) ([]byte, []SheetInfo, []string, error) {
	if len(sheets) == 0 {
		return nil, nil, nil, errors.New("no sheets")
	}
	maxRows := opts.MaxRows
	if maxRows <= 0 {
		maxRows = 100_000
	}
	maxRows = min(maxRows, excelMaxRows-3)
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetDocProps(&excelize.DocProperties{Title: opts.Title, Creator: "bichat"}); err != nil {
		return nil, nil, nil, err
	}
	st, err := newStyles(f)
	if err != nil {
		return nil, nil, nil, err
	}
	var notes []string
	infos := make([]SheetInfo, len(sheets))
	used := map[string]bool{}
	for i, s := range sheets {
		want := s.Name
		if strings.TrimSpace(want) == "" {
			want = s.Table.Name
		}
		name := sheetName(want, i, used)
		if name != strings.TrimSpace(want) && strings.TrimSpace(want) != "" {
			notes = append(notes, fmt.Sprintf("sheet name %q became %q", want, name))
		}
		if i == 0 {
			if err := f.SetSheetName("Sheet1", name); err != nil {
				return nil, nil, nil, fmt.Errorf("sheet %q: %w", name, err)
			}
		} else if _, err := f.NewSheet(name); err != nil {
			return nil, nil, nil, fmt.Errorf("sheet %q: %w", name, err)
		}
		info, note, err := writeSheet(f, name, s.Table, maxRows, st)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("sheet %q: %w", name, err)
		}
		infos[i] = info
		notes = append(notes, note...)
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		return nil, nil, nil, err
	}
	return buf.Bytes(), infos, notes, nil
}

type styles struct{ header, date, dateTime, note int }

func newStyles(f *excelize.File) (styles, error) {
	var s styles
	var err error
	if s.header, err = f.NewStyle(&excelize.Style{
		Font:   &excelize.Font{Bold: true},
		Fill:   excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"DDE5F0"}},
		Border: []excelize.Border{{Type: "bottom", Color: "7F8FA6", Style: 1}},
	}); err != nil {
		return s, err
	}
	dateFmt, dateTimeFmt := "yyyy-mm-dd", "yyyy-mm-dd hh:mm:ss"
	if s.date, err = f.NewStyle(&excelize.Style{CustomNumFmt: &dateFmt}); err != nil {
		return s, err
	}
	if s.dateTime, err = f.NewStyle(&excelize.Style{CustomNumFmt: &dateTimeFmt}); err != nil {
		return s, err
	}
	s.note, err = f.NewStyle(&excelize.Style{Font: &excelize.Font{Italic: true, Color: "595959"}})
	return s, err
}

// sheetName makes name valid and unique (case-insensitively, as Excel
// compares).
func sheetName(name string, i int, used map[string]bool) string {
	name = strings.Map(func(r rune) rune {
		if strings.ContainsRune(`[]:*?/\`, r) || r < ' ' {
			return '_'
		}
		return r
	}, strings.TrimSpace(name))
	name = strings.Trim(name, "'")
	if strings.EqualFold(name, "History") { // reserved by Excel
		name += "_"
	}
	if name == "" {
		name = "Sheet" + strconv.Itoa(i+1)
	}
	name = cutRunes(name, 31)
	base := name
	for n := 2; used[strings.ToLower(name)]; n++ {
		suffix := fmt.Sprintf(" (%d)", n)
		name = cutRunes(base, 31-len(suffix)) + suffix
	}
	used[strings.ToLower(name)] = true
	return name
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

func writeSheet(f *excelize.File, name string, t tools.Table, maxRows int, st styles) (SheetInfo, []string, error) {
	info := SheetInfo{Name: name, Source: t.Name, Columns: len(t.Columns), SourceRows: len(t.Rows)}
	rows := t.Rows
	var notes []string
	if len(rows) > maxRows {
		rows = rows[:maxRows]
		notes = append(notes, fmt.Sprintf("sheet %q shows the first %s of %s rows", name, thousands(maxRows), thousands(len(t.Rows))))
	}
	info.Rows = len(rows)
	// The filter is set before streaming: afterwards excelize would parse
	// the whole sheet back.
	last, _ := excelize.CoordinatesToCellName(len(t.Columns), len(rows)+1)
	if err := f.AutoFilter(name, "A1:"+last, nil); err != nil {
		return info, nil, err
	}
	sw, err := f.NewStreamWriter(name)
	if err != nil {
		return info, nil, err
	}
	// Per column: the date style when every time is midnight, otherwise
	// date and time; widths from the header and the content.
	dateStyle := make([]int, len(t.Columns))
	width := make([]float64, len(t.Columns))
	for c, col := range t.Columns {
		width[c] = textWidth(col.Name) + 2 // room for the filter button
		allMidnight := true
		for r, row := range rows {
			if tm, ok := row[c].(time.Time); ok && (tm.Hour() != 0 || tm.Minute() != 0 || tm.Second() != 0 || tm.Nanosecond() != 0) {
				allMidnight = false
			}
			if r < 2000 { // widths from a sample keep big sheets fast
				width[c] = max(width[c], textWidth(displayText(row[c])))
			}
		}
		dateStyle[c] = st.date
		if !allMidnight {
			dateStyle[c] = st.dateTime
		}
		if err := sw.SetColWidth(c+1, c+1, math.Min(math.Max(width[c]+1, 8), 60)); err != nil {
			return info, nil, err
		}
	}
	if err := sw.SetPanes(&excelize.Panes{Freeze: true, YSplit: 1, TopLeftCell: "A2", ActivePane: "bottomLeft"}); err != nil {
		return info, nil, err
	}
	header := make([]any, len(t.Columns))
	for c, col := range t.Columns {
		header[c] = excelize.Cell{StyleID: st.header, Value: col.Name}
	}
	if err := sw.SetRow("A1", header); err != nil {
		return info, nil, err
	}
	vals := make([]any, len(t.Columns))
	for r, row := range rows {
		if len(row) != len(t.Columns) {
			return info, nil, fmt.Errorf("row %d has %d values for %d columns", r, len(row), len(t.Columns))
		}
		for c, v := range row {
			vals[c] = cellValue(v, dateStyle[c])
		}
		cell, _ := excelize.CoordinatesToCellName(1, r+2)
		if err := sw.SetRow(cell, vals); err != nil {
			return info, nil, err
		}
	}
	var below []string
	if len(rows) < len(t.Rows) {
		below = append(below, fmt.Sprintf("Showing the first %s of %s rows.", thousands(len(rows)), thousands(len(t.Rows))))
	}
	if t.Truncated {
		below = append(below, "The query result was truncated by the row limit of the query; the source has more rows.")
		notes = append(notes, fmt.Sprintf("sheet %q comes from a truncated result", name))
	}
	for i, n := range below {
		cell, _ := excelize.CoordinatesToCellName(1, len(rows)+3+i)
		if err := sw.SetRow(cell, []any{excelize.Cell{StyleID: st.note, Value: n}}); err != nil {
			return info, nil, err
		}
	}
	if err := sw.Flush(); err != nil {
		return info, nil, err
	}
	return info, notes, nil
}

const maxCellText = 32767 // Excel's limit per cell

func cellValue(v any, dateStyle int) any {
	switch x := v.(type) {
	case nil:
		return nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil
		}
		return float64(x)
	case int64, int, int32, bool:
		return x
	case time.Time:
		if x.Year() < 1900 || x.Year() > 9999 { // outside Excel's dates
			return x.Format(time.RFC3339Nano)
		}
		return excelize.Cell{StyleID: dateStyle, Value: x}
	case []byte:
		return limitText(base64.StdEncoding.EncodeToString(x))
	case string:
		return limitText(x)
	}
	return limitText(tools.FormatCell(v))
}

func limitText(s string) string {
	if utf8.RuneCountInString(s) <= maxCellText {
		return s
	}
	return cutRunes(s, maxCellText-1) + "…"
}

func displayText(v any) string {
	switch x := v.(type) {
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 {
			return "2006-01-02"
		}
		return "2006-01-02 15:04:05"
	case float64:
		return strconv.FormatFloat(x, 'g', 10, 64)
	case string:
		if len(x) > 100 {
			return x[:100]
		}
	}
	return tools.FormatCell(v)
}

// textWidth approximates the width of s in Excel character units: wide
// (CJK) characters count double.
func textWidth(s string) float64 {
	w := 0.0
	for _, r := range s {
		if r >= 0x1100 && (r <= 0x115f || r >= 0x2e80 && r <= 0xa4cf || r >= 0xac00 && r <= 0xd7a3 || r >= 0xf900 && r <= 0xfaff || r >= 0xfe30 && r <= 0xfe4f || r >= 0xff00 && r <= 0xff60 || r >= 0xffe0 && r <= 0xffe6 || r >= 0x20000) {
			w += 2
		} else {
			w++
		}
	}
	return w
}

// ExcelToolName is the name of the export_excel tool.
const ExcelToolName = "export_excel"

// NewExcel returns the export_excel tool.
func NewExcel(cfg ExcelConfig) (agents.Tool, error) {
	if cfg.Store == nil {
		return nil, errors.New("export: ExcelConfig.Store is required (the workbook is saved there)")
	}
	if cfg.MaxRows <= 0 {
		cfg.MaxRows = 100_000
	}
	if cfg.MaxSheets <= 0 {
		cfg.MaxSheets = 20
	}
	return agents.NewTool(ExcelToolName,
		"Export one or more tables (earlier results or inline rows) as an Excel workbook the user can download, one sheet per table. "+
			"Numbers and dates keep their types. You get a short summary; the user gets the file.",
		func(ctx context.Context, in ExcelInput) (agents.Result, error) { return excelCall(ctx, cfg, in) },
		agents.WithTimeout(2*time.Minute), agents.WithParallel())
}

func excelCall(ctx context.Context, cfg ExcelConfig, in ExcelInput) (agents.Result, error) {
	info, _ := agents.CallInfoFromContext(ctx)
	if info.TenantID == "" {
		return agents.Result{}, errors.New("export_excel: the call has no tenant (call it inside a run, or with agents.WithCallInfo)")
	}
	if strings.TrimSpace(in.Title) == "" {
		return agents.Result{}, errors.New("export_excel: title is empty; give the workbook a short title")
	}
	if len(in.Sheets) == 0 {
		return agents.Result{}, errors.New("export_excel: sheets is empty; give at least one table")
	}
	if len(in.Sheets) > cfg.MaxSheets {
		return agents.Result{}, fmt.Errorf("export_excel: %d sheets is more than the %d allowed; combine or drop tables", len(in.Sheets), cfg.MaxSheets)
	}
	sheets := make([]Sheet, len(in.Sheets))
	var datasets []string
	for i, s := range in.Sheets {
		t, err := s.Data.Table(ctx, cfg.Results, fmt.Sprintf("sheets[%d].data", i))
		if err != nil {
			return agents.Result{}, fmt.Errorf("export_excel: %w", err)
		}
		sheets[i] = Sheet{Name: s.Name, Table: t}
		datasets = appendNew(datasets, t.Datasets...)
	}
	content, infos, notes, err := WriteWorkbook(sheets, WorkbookOptions{Title: in.Title, MaxRows: cfg.MaxRows})
	if err != nil {
		return agents.Result{}, fmt.Errorf("export_excel: %w", err)
	}
	name := fileName(in.Title, ".xlsx", "export")
	meta := map[string]string{"title": in.Title, "sheets": strconv.Itoa(len(infos))}
	a, err := tools.SaveArtifact(ctx, cfg.Store, domain.Artifact{Kind: domain.ArtifactFile, Name: name,
		MediaType: domain.MediaTypeXLSX, Metadata: meta}, content)
	if err != nil {
		return agents.Result{}, fmt.Errorf("export_excel: save workbook: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Exported workbook %q (%s) with %d sheet", name, tools.FormatSize(len(content)), len(infos))
	if len(infos) != 1 {
		b.WriteString("s")
	}
	b.WriteString(": ")
	for i, s := range infos {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%q from %s, %s rows × %d columns", s.Name, s.Source, thousands(s.Rows), s.Columns)
	}
	b.WriteString(". The user can download it.")
	if len(notes) > 0 {
		fmt.Fprintf(&b, " Notes: %s.", strings.Join(notes, "; "))
	}
	return agents.Result{
		Summary:   b.String(),
		Payload:   File{Artifact: a, Content: content, Sheets: infos, Notes: notes},
		Artifacts: []domain.Artifact{a},
		Datasets:  datasets,
	}, nil
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		found := false
		for _, l := range list {
			if l == it {
				found = true
				break
			}
		}
		if !found {
			list = append(list, it)
		}
	}
	return list
}
