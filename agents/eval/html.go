package eval

import (
	"fmt"
	"html/template"
	"io"
	"strings"
)

// bar is one bar of the report's chart.
type bar struct {
	Label       string
	Value       string
	Y, W, TextX int
	Fail        bool
}

type htmlData struct {
	R        *Report
	Title    string
	Accuracy string
	Recall   string
	Bars     []bar
	Height   int
	Rows     []htmlRow
}

type htmlRow struct {
	Result
	Status  string
	Recall  string
	Latency string
	Cost    string
}

const chartWidth = 320 // pixels of a 100% bar

var htmlTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
td.n{text-align:right}
tr.fail td.status{color:#b00020;font-weight:bold}
tr.ok td.status{color:#1b5e20}
code{font-size:.85em;white-space:pre-wrap}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>Execution accuracy <strong>{{.Accuracy}}</strong> ({{.R.Totals.Passed}}/{{.R.Totals.Questions}}){{if .Recall}}, mean retrieval recall <strong>{{.Recall}}</strong>{{end}}.
Tool calls {{.R.Totals.ToolCalls}}, turns {{.R.Totals.Turns}}, tokens {{.R.Totals.TokensIn}} in / {{.R.Totals.TokensOut}} out, repairs {{.R.Totals.Repairs}}.</p>
{{if .R.Pending}}<p>Not evaluated (interrupted): {{range $i, $p := .R.Pending}}{{if $i}}, {{end}}{{$p}}{{end}}.</p>{{end}}
<h2>Accuracy</h2>
<svg width="620" height="{{.Height}}" role="img" aria-label="Execution accuracy overall and per tag">
{{range .Bars}}<text x="150" y="{{.Y}}" dy="14" text-anchor="end" font-size="13">{{.Label}}</text>
<rect x="160" y="{{.Y}}" width="320" height="18" fill="#eee"></rect>
<rect x="160" y="{{.Y}}" width="{{.W}}" height="18" fill="{{if .Fail}}#e57373{{else}}#4caf50{{end}}"></rect>
<text x="{{.TextX}}" y="{{.Y}}" dy="14" font-size="13">{{.Value}}</text>
{{end}}</svg>
<h2>Questions</h2>
<table>
<tr><th>Question</th><th>Tags</th><th>Result</th><th>Recall</th><th>Tool calls</th><th>Turns</th><th>Tokens in/out</th><th>Cost (USD)</th><th>Latency</th><th>Repairs</th><th>Final SQL</th></tr>
{{range .Rows}}<tr class="{{if .OK}}ok{{else}}fail{{end}}"><td>{{.ID}}</td><td>{{range $i, $t := .Tags}}{{if $i}}, {{end}}{{$t}}{{end}}</td><td class="status">{{.Status}}</td><td class="n">{{.Recall}}</td><td class="n">{{.ToolCalls}}</td><td class="n">{{.Turns}}</td><td class="n">{{.TokensIn}}/{{.TokensOut}}</td><td class="n">{{.Cost}}</td><td class="n">{{.Latency}}</td><td class="n">{{.Repairs}}</td><td><code>{{.FinalSQL}}</code></td></tr>
{{end}}</table>
</body>
</html>
`))

// WriteHTML writes the report as one self-contained HTML page (no
// scripts, style sheets or images to fetch): totals, an inline SVG bar
// chart of the execution accuracy overall and per tag, and a table of the
// questions. Every text is escaped.
func (r *Report) WriteHTML(w io.Writer) error {
	d := htmlData{R: r, Title: "Evaluation", Accuracy: pct(r.Totals.Accuracy)}
	if r.Set != "" {
		d.Title += ": " + r.Set
	}
	if r.Totals.RecallQuestions > 0 {
		d.Recall = pct(r.Totals.MeanRecall)
	}
	add := func(label string, t Totals) {
		y := 10 + 26*len(d.Bars)
		w := int(t.Accuracy*chartWidth + 0.5)
		d.Bars = append(d.Bars, bar{Label: label, Value: fmt.Sprintf("%s (%d/%d)", pct(t.Accuracy), t.Passed, t.Questions),
			Y: y, W: w, TextX: 160 + chartWidth + 8, Fail: t.Accuracy < 0.5})
	}
	add("all", r.Totals)
	for _, tg := range r.Tags {
		add(tg.Tag, tg.Totals)
	}
	d.Height = 20 + 26*len(d.Bars)
	for _, x := range r.Results {
		row := htmlRow{Result: x, Status: "pass", Recall: recallText(x.Recall), Latency: x.Latency().String(),
			Cost: fmt.Sprintf("%.4f", x.CostUSD)}
		if !x.OK {
			row.Status = "fail: " + x.Reason
		}
		d.Rows = append(d.Rows, row)
	}
	var b strings.Builder
	if err := htmlTmpl.Execute(&b, d); err != nil {
		return fmt.Errorf("eval: html report: %w", err)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
