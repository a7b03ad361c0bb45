package chart_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"
	"time"

	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/chart"
)

func linePoints(n int) tools.Table {
	t := tools.Table{Name: "result_1", Columns: []tools.Column{{Name: "ts"}, {Name: "value"}}}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		t.Rows = append(t.Rows, []any{start.Add(time.Duration(i) * time.Hour), 100 + 20*math.Sin(float64(i)/30)})
	}
	return t
}

// BenchmarkDrawChart is one draw_chart call for a 1,000-point line chart
// over time: validation, the Vega-Lite spec, the 960×540 PNG and saving
// both artifacts.
func BenchmarkDrawChart(b *testing.B) {
	f := newFixture(b, chart.Config{Width: 960, Height: 540})
	f.results.Put(f.ctx, linePoints(1000))
	args, _ := json.Marshal(map[string]any{"type": "line", "x": "ts", "y": "value", "title": "Load", "data": map[string]any{"ref": "result_1"}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.tool.Call(f.ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDrawChartBaseline is the floor under BenchmarkDrawChart: PNG
// encoding of a 960×540 image with a drawn line, without plotting.
func BenchmarkDrawChartBaseline(b *testing.B) {
	img := image.NewRGBA(image.Rect(0, 0, 960, 540))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	for x := range 960 {
		img.Set(x, 270+int(100*math.Sin(float64(x)/30)), color.RGBA{0x4c, 0x78, 0xa8, 0xff})
	}
	b.ReportAllocs()
	for b.Loop() {
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			b.Fatal(err)
		}
	}
}
