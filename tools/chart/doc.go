// Package chart provides draw_chart, the tool that turns a query result
// (or rows the model gives inline) into a chart.
//
// Each call validates the chart against its data — the mark is one of
// bar, line, area, point and arc; x, y and series must be columns; y must
// be numeric; field types are inferred (quantitative, temporal, nominal,
// ordinal) — and produces two renderings of the same chart:
//
//   - a Vega-Lite v5 specification with the data inline, for web front
//     ends; it is the Payload the host receives (a [Chart]) and is saved as
//     an artifact of media type domain.MediaTypeVegaLite;
//   - a PNG drawn in Go with gonum.org/v1/plot, for reports and for hosts
//     without a JavaScript renderer, saved as a chart artifact.
//
// The model gets a one-paragraph summary with the chart's name. Charts
// are kept per session in a [Charts] store (MemoryCharts), so export_pdf
// (package tools/export) can embed them by name.
//
// A chart that does not fit its data is an error that goes back to the
// model with every problem listed, so it can repair the call. After
// Config.MaxRepairs failed repairs in one run (default 3) the tool gives up
// with an error matching ErrGaveUp that tells the model to stop trying, and
// refuses further calls in that run.
//
// [Data] is the "result name or inline rows" input shared with
// export_excel and export_pdf.
package chart
