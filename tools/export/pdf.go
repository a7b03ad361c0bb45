package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"codeberg.org/go-pdf/fpdf"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/chart"
	"github.com/bichat-go/bichat/tools/export/fonts"
)

// Report is a document for PDFRenderer.Render.
type Report struct {
	Title    string
	Sections []ReportSection
	// Generated is printed under the title; zero means now.
	Generated time.Time
}

// ReportSection is one section: a heading, light markdown text, a chart
// image and a table, each optional, drawn in that order.
type ReportSection struct {
	Heading string
	// Text is light markdown: paragraphs separated by blank lines,
	// "- " bullet and "1. " numbered items, "#" sub-headings, **bold**.
	Text string
	// Chart is a PNG image, drawn across the page width.
	Chart []byte
	// Table is drawn with a repeated header on every page it spans.
	Table *tools.Table
}

// PDFOptions configures a PDFRenderer.
type PDFOptions struct {
	// Fonts are the TrueType fonts to embed, in order of preference: each
	// character is drawn with the first font that has it. Empty means
	// search FontDirs for DejaVu Sans (or Liberation Sans, FreeSans, Noto
	// Sans, Arial) and add fallback fonts for CJK (Droid Sans Fallback,
	// IPA Gothic, Nanum Gothic, Arial Unicode) when found.
	Fonts []FontFile
	// FontDirs are searched (recursively) when Fonts is empty; empty means
	// DefaultFontDirs().
	FontDirs []string
	// MaxTableRows caps the rows of one table; 0 means 1,000.
	MaxTableRows int
}

// PDFRenderer renders reports as PDF. It finds and loads the fonts once
// (a failed search is retried on the next call, so installing a font
// helps without a restart) and is safe for concurrent use.
type PDFRenderer struct {
	opts PDFOptions

	mu    sync.Mutex
	fonts *fonts.Set
}

// NewPDFRenderer returns a renderer; fonts are loaded on first use.
func NewPDFRenderer(opts PDFOptions) *PDFRenderer {
	if opts.MaxTableRows <= 0 {
		opts.MaxTableRows = 1000
	}
	return &PDFRenderer{opts: opts}
}

func (r *PDFRenderer) loadFonts() (*fonts.Set, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fonts != nil {
		return r.fonts, nil
	}
	set, err := fonts.Load(r.opts.Fonts, r.opts.FontDirs)
	if err != nil {
		return nil, err
	}
	r.fonts = set
	return set, nil
}

// ErrNoFont matches the errors for a missing font: none found at all, or
// none that has some character of the report.
var ErrNoFont = errors.New("no usable font")

// PDFInfo describes a rendered report.
type PDFInfo struct {
	Pages int
	// Notes lists caps applied (tables cut to MaxTableRows).
	Notes []string
}

// Render lays out rep on A4 pages: the title and date, then each section;
// tables paginate with their header repeated and long cells wrapped (up
// to three lines, then cut with "…"); every page has "Page n of N" at the
// bottom. Text is Unicode throughout; a character that no font can draw
// is an error matching ErrNoFont that names it.
func (r *PDFRenderer) Render(rep Report) ([]byte, PDFInfo, error) {
	set, err := r.loadFonts()
	if err != nil {
		return nil, PDFInfo{}, fmt.Errorf("%w: %w", ErrNoFont, err)
	}
	if rep.Generated.IsZero() {
		rep.Generated = time.Now()
	}
	maxRows := r.opts.MaxTableRows
	tables := make([][]cellRow, len(rep.Sections))
	texts := []string{rep.Title, "Page 0123456789 of", "…"}
	for i, s := range rep.Sections {
		texts = append(texts, s.Heading, plainText(s.Text))
		if s.Table != nil {
			tables[i] = formatTable(s.Table, maxRows)
			for _, row := range tables[i] {
				texts = append(texts, row...)
			}
		}
	}
	if miss := set.Missing(texts...); len(miss) > 0 {
		if len(miss) == 1 && miss[0] == '…' {
			// The ellipsis has an ASCII fallback.
		} else {
			return nil, PDFInfo{}, fmt.Errorf("%w: %w", ErrNoFont, missingError(set, miss))
		}
	}

	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetMargins(15, 15, 15)
	pdf.SetAutoPageBreak(false, 15)
	pdf.SetCreationDate(rep.Generated)
	pdf.SetModificationDate(rep.Generated)
	pdf.SetTitle(rep.Title, true)
	pdf.SetCreator("bichat", true)
	pdf.AliasNbPages("{nb}")
	pw, ph := pdf.GetPageSize()
	d := &doc{pdf: pdf, fonts: set, reg: map[string]bool{}, left: 15, right: pw - 15, top: 15, bottom: ph - 18}
	pdf.SetFooterFunc(func() {
		pdf.SetTextColor(110, 110, 110)
		s := fmt.Sprintf("Page %d of {nb}", pdf.PageNo())
		w := d.textWidth(fmt.Sprintf("Page %d of %d", pdf.PageNo(), pdf.PageNo()), false, 8)
		d.text((pw-w)/2, ph-10, s, false, 8)
		pdf.SetTextColor(0, 0, 0)
	})
	d.newPage()

	// Title and date.
	d.paragraph([]span{{text: rep.Title, bold: true}}, 18, 0, "")
	pdf.SetTextColor(110, 110, 110)
	d.y += 1
	d.paragraph([]span{{text: "Generated " + rep.Generated.Format("2006-01-02 15:04")}}, 9, 0, "")
	pdf.SetTextColor(0, 0, 0)
	d.y += 4
	pdf.SetDrawColor(200, 200, 200)
	pdf.Line(d.left, d.y, d.right, d.y)
	d.y += 5

	var info PDFInfo
	for i, s := range rep.Sections {
		if s.Heading != "" {
			d.ensure(25) // no heading alone at the bottom of a page
			d.paragraph([]span{{text: s.Heading, bold: true}}, 13, 0, "")
			d.y += 2
		}
		for _, b := range parseMarkdown(s.Text) {
			switch b.kind {
			case blockHeading:
				d.y += 1
				d.paragraph([]span{{text: b.text, bold: true}}, 11, 0, "")
			case blockItem:
				d.paragraph(inline(b.text), 10, 6, b.marker)
				d.y += 0.8
			default:
				d.paragraph(inline(b.text), 10, 0, "")
				d.y += 2.5
			}
		}
		if len(s.Chart) > 0 {
			if err := d.image(fmt.Sprintf("chart%d", i), s.Chart); err != nil {
				return nil, PDFInfo{}, fmt.Errorf("section %d chart: %w", i+1, err)
			}
		}
		if s.Table != nil {
			if note := d.table(s.Table, tables[i], maxRows); note != "" {
				info.Notes = append(info.Notes, fmt.Sprintf("section %d: %s", i+1, note))
			}
		}
		d.y += 5
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		return nil, PDFInfo{}, fmt.Errorf("write PDF: %w", err)
	}
	info.Pages = pdf.PageNo()
	return buf.Bytes(), info, nil
}

// image draws a PNG across the page width (smaller when it would be
// taller than a page).
func (d *doc) image(name string, b []byte) error {
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not a PNG image: %w", err)
	}
	w := d.width()
	h := w * float64(cfg.Height) / float64(cfg.Width)
	if maxH := (d.bottom - d.top) * 0.6; h > maxH {
		w, h = w*maxH/h, maxH
	}
	d.ensure(h)
	opts := fpdf.ImageOptions{ImageType: "PNG"}
	d.pdf.RegisterImageOptionsReader(name, opts, bytes.NewReader(b))
	d.pdf.ImageOptions(name, d.left+(d.width()-w)/2, d.y, w, h, false, opts, 0, "")
	if err := d.pdf.Error(); err != nil {
		return err
	}
	d.y += h + 4
	return nil
}

// cellRow is a table row as text; row 0 is the header.
type cellRow = []string

func formatTable(t *tools.Table, maxRows int) []cellRow {
	n := min(len(t.Rows), maxRows)
	out := make([]cellRow, 0, n+1)
	head := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		head[i] = c.Name
	}
	out = append(out, head)
	for _, row := range t.Rows[:n] {
		cells := make([]string, len(t.Columns))
		for c := range t.Columns {
			if c < len(row) {
				cells[c] = pdfCell(row[c])
			}
		}
		out = append(out, cells)
	}
	return out
}

func pdfCell(v any) string {
	switch x := v.(type) {
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			return x.Format("2006-01-02")
		}
		return x.Format("2006-01-02 15:04:05")
	case float64:
		if s := strconv.FormatFloat(x, 'f', -1, 64); len(s) <= 16 {
			return s
		}
		return strconv.FormatFloat(x, 'g', 10, 64)
	case string:
		// Table cells are one paragraph.
		return strings.Join(strings.Fields(x), " ")
	}
	return tools.FormatCell(v)
}

const (
	cellSize   = 8.0 // pt
	cellPadX   = 1.5 // mm
	cellPadY   = 1.0
	cellLines  = 3
	minColW    = 12.0
	maxNatColW = 70.0
)

// table draws t (already formatted as rows) and returns a note when the
// rows were capped.
func (d *doc) table(t *tools.Table, rows []cellRow, maxRows int) string {
	ncol := len(t.Columns)
	numeric := make([]bool, ncol)
	for c := range t.Columns {
		numeric[c] = chart.InferType(t, c) == chart.Quantitative
	}
	widths := d.columnWidths(rows)
	lh := cellSize * ptToMM * 1.3

	layout := func(row cellRow, bold bool) ([][]string, float64) {
		lines := make([][]string, ncol)
		maxN := 1
		for c, s := range row {
			w := widths[c] - 2*cellPadX
			wrapped := d.wrap(tokenize([]span{{text: s, bold: bold}}), w, cellSize)
			ls := make([]string, 0, min(len(wrapped), cellLines))
			for i, l := range wrapped {
				if i == cellLines {
					break
				}
				ls = append(ls, lineText(l))
			}
			if len(wrapped) > cellLines {
				ls[cellLines-1] = d.ellipsize(ls[cellLines-1]+" "+lineText(wrapped[cellLines]), bold, cellSize, w)
			}
			lines[c] = ls
			maxN = max(maxN, len(ls))
		}
		return lines, float64(maxN)*lh + 2*cellPadY
	}
	draw := func(lines [][]string, h float64, bold bool, fill bool) {
		x := d.left
		if fill {
			d.pdf.Rect(d.left, d.y, d.width(), h, "F")
		}
		for c, ls := range lines {
			for i, s := range ls {
				base := d.y + cellPadY + float64(i)*lh + cellSize*ptToMM
				tx := x + cellPadX
				if numeric[c] {
					tx = x + widths[c] - cellPadX - d.textWidth(s, bold, cellSize)
				}
				d.text(tx, base, s, bold, cellSize)
			}
			x += widths[c]
		}
		d.y += h
	}
	headLines, headH := layout(rows[0], true)
	header := func() {
		d.pdf.SetFillColor(221, 229, 240)
		draw(headLines, headH, true, true)
		d.pdf.SetDrawColor(127, 143, 166)
		d.pdf.Line(d.left, d.y, d.left+d.width(), d.y)
	}
	first := true
	for r, row := range rows[1:] {
		lines, h := layout(row, false)
		if first {
			d.ensure(headH + h)
			header()
			first = false
		} else if d.y+h > d.bottom {
			d.newPage()
			header()
		}
		d.pdf.SetFillColor(245, 247, 250)
		draw(lines, h, false, r%2 == 1)
	}
	if first { // no rows: the header alone
		d.ensure(headH)
		header()
	}
	var notes []string
	if len(t.Rows) > maxRows {
		notes = append(notes, fmt.Sprintf("Showing the first %s of %s rows.", thousands(maxRows), thousands(len(t.Rows))))
	}
	if t.Truncated {
		notes = append(notes, "The query result was truncated by its row limit; the source has more rows.")
	}
	if len(notes) > 0 {
		d.y += 1.5
		d.pdf.SetTextColor(110, 110, 110)
		d.paragraph([]span{{text: strings.Join(notes, " ")}}, 8, 0, "")
		d.pdf.SetTextColor(0, 0, 0)
	}
	if len(t.Rows) > maxRows {
		return fmt.Sprintf("table shows the first %s of %s rows", thousands(maxRows), thousands(len(t.Rows)))
	}
	return ""
}

// columnWidths gives each column its natural width (widest of header and
// a sample of cells), shrunk proportionally to the page width when the
// sum is wider; no column gets less than minColW unless the page cannot
// hold them all.
func (d *doc) columnWidths(rows []cellRow) []float64 {
	ncol := len(rows[0])
	nat := make([]float64, ncol)
	for r, row := range rows {
		if r > 200 {
			break
		}
		for c, s := range row {
			w := d.textWidth(s, r == 0, cellSize) + 2*cellPadX + 0.5
			nat[c] = math.Max(nat[c], math.Min(w, maxNatColW))
		}
	}
	total := 0.0
	for c := range nat {
		nat[c] = math.Max(nat[c], minColW)
		total += nat[c]
	}
	avail := d.width()
	if total <= avail {
		// Spread the spare room so the table spans the page.
		for c := range nat {
			nat[c] += (avail - total) / float64(ncol)
		}
		return nat
	}
	if float64(ncol)*minColW >= avail {
		for c := range nat {
			nat[c] = avail / float64(ncol)
		}
		return nat
	}
	// Shrink only the room above the minimum.
	over := total - avail
	room := total - float64(ncol)*minColW
	for c := range nat {
		nat[c] -= (nat[c] - minColW) * over / room
	}
	return nat
}

// PDFInput is the arguments of export_pdf.
type PDFInput struct {
	Title    string         `json:"title" jsonschema:"description=Report title\\, printed at the top; also names the file."`
	Sections []SectionInput `json:"sections" jsonschema:"minItems=1,description=The report's sections\\, in order."`
}

// SectionInput is one section of export_pdf.
type SectionInput struct {
	Heading string      `json:"heading,omitempty" jsonschema:"description=Section heading."`
	Text    string      `json:"text,omitempty" jsonschema:"description=Light markdown: paragraphs separated by blank lines\\, '- ' bullet items\\, '1. ' numbered items\\, **bold**."`
	Chart   string      `json:"chart,omitempty" jsonschema:"description=Name of a chart drawn earlier with draw_chart (e.g. chart_1)."`
	Table   *chart.Data `json:"table,omitempty" jsonschema:"description=A table: ref to an earlier result\\, or columns and rows inline."`
}

// PDFConfig configures export_pdf.
type PDFConfig struct {
	// Results resolves table refs; nil allows inline tables only.
	Results tools.Results
	// Charts resolves chart names; give draw_chart's Charts. Nil means
	// reports cannot embed charts.
	Charts chart.Charts
	// Store receives the PDF; required.
	Store domain.ArtifactStore
	// PDFOptions chooses fonts and caps table rows.
	PDFOptions
	// MaxSections caps the sections of one report; 0 means 50.
	MaxSections int
	// Now stamps the report; nil means time.Now.
	Now func() time.Time
}

// PDFToolName is the name of the export_pdf tool.
const PDFToolName = "export_pdf"

// NewPDF returns the export_pdf tool.
func NewPDF(cfg PDFConfig) (agents.Tool, error) {
	if cfg.Store == nil {
		return nil, errors.New("export: PDFConfig.Store is required (the report is saved there)")
	}
	if cfg.MaxSections <= 0 {
		cfg.MaxSections = 50
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := NewPDFRenderer(cfg.PDFOptions)
	return agents.NewTool(PDFToolName,
		"Write a PDF report the user can download: a title and sections, each with a heading, light markdown text, "+
			"a chart drawn earlier with draw_chart (by name) and a table (an earlier result or inline rows). "+
			"You get a short summary; the user gets the file.",
		func(ctx context.Context, in PDFInput) (agents.Result, error) { return pdfCall(ctx, cfg, r, in) },
		agents.WithTimeout(2*time.Minute), agents.WithParallel())
}

func pdfCall(ctx context.Context, cfg PDFConfig, r *PDFRenderer, in PDFInput) (agents.Result, error) {
	info, _ := agents.CallInfoFromContext(ctx)
	if info.TenantID == "" {
		return agents.Result{}, errors.New("export_pdf: the call has no tenant (call it inside a run, or with agents.WithCallInfo)")
	}
	if strings.TrimSpace(in.Title) == "" {
		return agents.Result{}, errors.New("export_pdf: title is empty; give the report a short title")
	}
	if len(in.Sections) == 0 {
		return agents.Result{}, errors.New("export_pdf: sections is empty; give at least one section")
	}
	if len(in.Sections) > cfg.MaxSections {
		return agents.Result{}, fmt.Errorf("export_pdf: %d sections is more than the %d allowed", len(in.Sections), cfg.MaxSections)
	}
	rep := Report{Title: strings.TrimSpace(in.Title), Generated: cfg.Now(), Sections: make([]ReportSection, len(in.Sections))}
	var datasets []string
	tablesN, chartsN := 0, 0
	for i, s := range in.Sections {
		sec := ReportSection{Heading: strings.TrimSpace(s.Heading), Text: s.Text}
		if sec.Heading == "" && strings.TrimSpace(s.Text) == "" && s.Chart == "" && s.Table == nil {
			return agents.Result{}, fmt.Errorf("export_pdf: sections[%d] is empty; give a heading, text, chart or table", i)
		}
		if s.Table != nil {
			t, err := s.Table.Table(ctx, cfg.Results, fmt.Sprintf("sections[%d].table", i))
			if err != nil {
				return agents.Result{}, fmt.Errorf("export_pdf: %w", err)
			}
			sec.Table = &t
			datasets = appendNew(datasets, t.Datasets...)
			tablesN++
		}
		if s.Chart != "" {
			if cfg.Charts == nil {
				return agents.Result{}, fmt.Errorf("export_pdf: sections[%d].chart: this host keeps no charts; leave chart out", i)
			}
			c, err := cfg.Charts.Get(ctx, s.Chart)
			if err != nil {
				return agents.Result{}, fmt.Errorf("export_pdf: sections[%d].chart: %w", i, err)
			}
			sec.Chart = c.PNG
			chartsN++
		}
		rep.Sections[i] = sec
	}
	content, pinfo, err := r.Render(rep)
	if err != nil {
		return agents.Result{}, fmt.Errorf("export_pdf: %w", err)
	}
	name := fileName(in.Title, ".pdf", "report")
	a, err := tools.SaveArtifact(ctx, cfg.Store, domain.Artifact{Kind: domain.ArtifactReport, Name: name, MediaType: domain.MediaTypePDF,
		Metadata: map[string]string{"title": rep.Title, "pages": strconv.Itoa(pinfo.Pages)}}, content)
	if err != nil {
		return agents.Result{}, fmt.Errorf("export_pdf: save report: %w", err)
	}
	summary := fmt.Sprintf("Exported PDF report %q (%s, %d page%s) with %d section%s, %d table%s and %d chart%s. The user can download it.",
		name, tools.FormatSize(len(content)), pinfo.Pages, plural(pinfo.Pages), len(rep.Sections), plural(len(rep.Sections)),
		tablesN, plural(tablesN), chartsN, plural(chartsN))
	if len(pinfo.Notes) > 0 {
		summary += " Notes: " + strings.Join(pinfo.Notes, "; ") + "."
	}
	return agents.Result{
		Summary:   summary,
		Payload:   File{Artifact: a, Content: content, Pages: pinfo.Pages, Notes: pinfo.Notes},
		Artifacts: []domain.Artifact{a},
		Datasets:  datasets,
	}, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
