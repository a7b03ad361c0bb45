// Package export provides export_excel and export_pdf, the tools that
// turn query results into files people download.
//
// export_excel {title, sheets[{name, data}]} writes an .xlsx workbook
// with github.com/xuri/excelize/v2: one sheet per table, typed cells
// (numbers stay numbers, times become dates with a date format, booleans
// stay booleans), a bold header row that stays frozen, an auto filter,
// column widths from the content, sheet names made valid for Excel, and a
// row cap with a note in the sheet. WriteWorkbook is the same writer for
// hosts.
//
// export_pdf {title, sections[{heading, text, chart, table}]} writes an A4
// report with codeberg.org/go-pdf/fpdf: a title line, sections with light
// markdown text (paragraphs, **bold**, bullet and numbered lists), charts
// drawn earlier with draw_chart (by name, from the same chart.Charts),
// tables that paginate with their header repeated and long cells wrapped
// or cut, and "Page n of N" on every page. Text is Unicode: each
// character is drawn with the first TrueType font that has it — DejaVu
// Sans for Latin, Greek and Cyrillic, Droid Sans Fallback for Chinese,
// Japanese and Korean when installed (see package fonts), or the fonts
// the host configures — and a character no font has is a clear error
// (ErrNoFont), never a mangled document. PDFRenderer is the same renderer
// for hosts.
//
// Both tools take their data like draw_chart (chart.Data: the name of an
// earlier result, or columns and rows inline), save the file in the
// domain.ArtifactStore under the caller's tenant, and return two tracks: a
// short summary for the model (file name, size, sheets or pages, caps
// applied) and, for the host, a File payload and the artifact.
package export
