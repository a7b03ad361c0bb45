package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/xuri/excelize/v2"
)

// TestRun runs the quickstart offline and checks the lines a reader of the
// README is promised, and the files it saves.
func TestRun(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	dir := t.TempDir()
	if err := run(t.Context(), &out, options{offline: true, saveDir: dir, metrics: true}); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		`(?m)^== discovery: .*\borders\b`,
		`(?m)^== discovery: .*\bregions\b`,
		`(?m)^tool done query_database \(ok\), 1 artifact\(s\)$`,
		`(?m)^tool done draw_chart \(ok\), 2 artifact\(s\)$`,
		`(?m)^tool done export_excel \(ok\), 1 artifact\(s\)$`,
		`(?m)^finished  end_turn, [1-9]\d* tokens$`,
		`(?m)^user +complete +Which region had the highest revenue in 2025\? Chart it and give me a spreadsheet\.$`,
		`(?m)^assistant +complete +I'll sum 2025 revenue of completed orders per region\. \*\*\w+\*\* had the highest revenue in 2025: €[\d.]+ from \d+ completed orders\.`,
		`(?m)^ +datasets customers, order_items, orders, regions$`,
		`(?m)^chart +chart_1\.png +\d+ bytes  image/png$`,
		`(?m)^file +Revenue_by_region_2025\.xlsx +\d+ bytes`,
		`(?m)^table +result_1\.csv +\d+ bytes  text/csv$`,
		// -metrics: the Prometheus series of the run and its cost.
		`(?m)^bichat_runs_total\{reason=end_turn,result=finished\} +1$`,
		`(?m)^bichat_tool_calls_total\{outcome=ok,tool=query_database\} +1$`,
		`(?m)^bichat_model_requests_total\{model=scripted-analyst,outcome=ok,provider=scripted\} +3$`,
		`(?m)^bichat_sql_statements_total\{outcome=ok,tool=query_database\} +1$`,
		`(?m)^bichat_model_cost_usd_total\{model=scripted-analyst,provider=scripted\} +0\.0\d+$`,
		`(?m)^answer +\$0\.0\d{5}  \(\d+ tokens in, \d+ out\)$`,
		`(?m)^session +\$0\.0\d{5}$`,
		`(?m)^acme today \$0\.0\d{5}$`,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("output lacks a line matching %s\noutput:\n%s", want, got)
		}
	}
	img, err := os.ReadFile(filepath.Join(dir, "chart_1.png"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(img)); err != nil || cfg.Width == 0 {
		t.Errorf("chart PNG: %v %+v", err, cfg)
	}
	wb, err := excelize.OpenFile(filepath.Join(dir, "Revenue_by_region_2025.xlsx"))
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	rows, err := wb.GetRows("Revenue")
	if err != nil || len(rows) != 6 || rows[0][0] != "region" {
		t.Errorf("workbook rows = %v, %v; want a header and 5 regions", rows, err)
	}
}
