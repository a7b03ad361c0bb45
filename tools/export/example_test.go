package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/xuri/excelize/v2"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain/fsartifacts"
	"github.com/bichat-go/bichat/tools/chart"
	"github.com/bichat-go/bichat/tools/export"
)

func ExampleNewExcel() {
	dir, _ := os.MkdirTemp("", "exports")
	defer os.RemoveAll(dir)
	store, err := fsartifacts.Open(dir, fsartifacts.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	tool, err := export.NewExcel(export.ExcelConfig{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	ctx := agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "acme", SessionID: "s1"})
	res, err := tool.Call(ctx, json.RawMessage(`{"title": "Revenue 2024", "sheets": [{"name": "By month",
		"data": {"columns": ["month", "revenue"], "rows": [["2024-01-01", 120.5], ["2024-02-01", 98]]}}]}`))
	if err != nil {
		log.Fatal(err)
	}
	file := res.Payload.(export.File)
	fmt.Println(file.Artifact.Name, file.Artifact.Kind, file.Sheets[0].Name, file.Sheets[0].Rows)

	x, _ := excelize.OpenReader(bytes.NewReader(file.Content))
	defer x.Close()
	month, _ := x.GetCellValue("By month", "A2")
	revenue, _ := x.GetCellValue("By month", "B2")
	fmt.Println(month, revenue)
	// Output:
	// Revenue_2024.xlsx file By month 2
	// 2024-01-01 120.5
}

// ExampleNewPDF wires draw_chart and export_pdf to the same chart store,
// so a report can embed a chart by name. (No output: the fonts depend on
// the machine.)
func ExampleNewPDF() {
	dir, _ := os.MkdirTemp("", "reports")
	defer os.RemoveAll(dir)
	store, err := fsartifacts.Open(dir, fsartifacts.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	charts := chart.NewMemoryCharts(0)
	draw, _ := chart.New(chart.Config{Charts: charts, Store: store})
	pdf, _ := export.NewPDF(export.PDFConfig{Charts: charts, Store: store})

	ctx := agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "acme", SessionID: "s1"})
	if _, err := draw.Call(ctx, json.RawMessage(`{"type": "bar", "x": "city", "y": "visitors", "name": "visitors",
		"data": {"columns": ["city", "visitors"], "rows": [["Zürich", 120], ["Łódź", 98], ["東京", 310]]}}`)); err != nil {
		log.Fatal(err)
	}
	res, err := pdf.Call(ctx, json.RawMessage(`{"title": "Visitors", "sections": [
		{"heading": "Summary", "text": "**東京** had the most visitors.", "chart": "visitors"}]}`))
	if err != nil {
		fmt.Println(err) // e.g. no font on this machine can draw 東
		return
	}
	fmt.Println(res.Summary)
}
