package chart_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/fsartifacts"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/chart"
	"github.com/bichat-go/bichat/tools/export/fonts"
)

type fixture struct {
	tool    agents.Tool
	results *tools.MemoryResults
	charts  *chart.MemoryCharts
	store   *fsartifacts.Store
	ctx     context.Context
}

func newFixture(t testing.TB, cfg chart.Config) *fixture {
	t.Helper()
	store, err := fsartifacts.Open(t.TempDir(), fsartifacts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := &fixture{results: tools.NewMemoryResults(0), charts: chart.NewMemoryCharts(0), store: store}
	cfg.Results, cfg.Charts, cfg.Store = f.results, f.charts, store
	if cfg.Width == 0 {
		cfg.Width, cfg.Height = 400, 250
	}
	f.tool, err = chart.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.ctx = agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "acme", SessionID: "s1", RunID: "run1"})
	return f
}

// sales is a query result as query_database stores it: times, int64,
// float64 and strings.
func sales() tools.Table {
	t := tools.Table{Name: "result_1", Datasets: []string{"sales"},
		Columns: []tools.Column{{Name: "month", Type: "date"}, {Name: "region", Type: "text"},
			{Name: "revenue", Type: "numeric"}, {Name: "orders", Type: "int8"}}}
	for m := range 6 {
		for i, region := range []string{"EU", "US", "APAC"} {
			t.Rows = append(t.Rows, []any{time.Date(2024, time.Month(m+1), 1, 0, 0, 0, 0, time.UTC), region,
				float64(100*(i+1)) + float64(m)*10.5, int64(10 * (m + i + 1))})
		}
	}
	return t
}

func (f *fixture) call(t *testing.T, args any) (agents.Result, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return f.tool.Call(f.ctx, b)
}

type specShape struct {
	Schema   string                     `json:"$schema"`
	Title    string                     `json:"title"`
	Mark     struct{ Type string }      `json:"mark"`
	Data     struct{ Values []any }     `json:"data"`
	Encoding map[string]json.RawMessage `json:"encoding"`
}

func encType(t *testing.T, s specShape, channel string) (field, typ string) {
	t.Helper()
	var e struct{ Field, Type string }
	raw, ok := s.Encoding[channel]
	if !ok {
		t.Fatalf("spec has no %s encoding: %v", channel, s.Encoding)
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	return e.Field, e.Type
}

func TestMarks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mark, x, y, series string
		channels           map[string]string // channel -> want type
	}{
		{"bar", "region", "revenue", "", map[string]string{"x": "nominal", "y": "quantitative"}},
		{"bar", "month", "revenue", "region", map[string]string{"x": "ordinal", "y": "quantitative", "color": "nominal", "xOffset": "nominal"}},
		{"bar", "orders", "revenue", "", map[string]string{"x": "ordinal", "y": "quantitative"}},
		{"line", "month", "revenue", "region", map[string]string{"x": "temporal", "y": "quantitative", "color": "nominal"}},
		{"line", "region", "revenue", "", map[string]string{"x": "nominal", "y": "quantitative"}},
		{"area", "month", "orders", "region", map[string]string{"x": "temporal", "y": "quantitative", "color": "nominal"}},
		{"point", "orders", "revenue", "region", map[string]string{"x": "quantitative", "y": "quantitative", "color": "nominal"}},
		{"point", "orders", "region", "", map[string]string{"x": "quantitative", "y": "nominal"}},
		{"arc", "region", "revenue", "", map[string]string{"theta": "quantitative", "color": "nominal"}},
	} {
		t.Run(tc.mark+"_"+tc.x+"_"+tc.series, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, chart.Config{})
			f.results.Put(f.ctx, sales())
			args := map[string]any{"type": tc.mark, "data": map[string]any{"ref": "result_1"}, "x": tc.x, "y": tc.y, "title": "Sales"}
			if tc.series != "" {
				args["series"] = tc.series
			}
			res, err := f.call(t, args)
			if err != nil {
				t.Fatalf("draw_chart: %v", err)
			}
			c := res.Payload.(chart.Chart)
			var s specShape
			if err := json.Unmarshal(c.Spec, &s); err != nil {
				t.Fatalf("spec is not JSON: %v", err)
			}
			if s.Schema != "https://vega.github.io/schema/vega-lite/v5.json" || s.Mark.Type != tc.mark || s.Title != "Sales" {
				t.Errorf("spec header: %+v", s)
			}
			if len(s.Data.Values) != 18 {
				t.Errorf("spec has %d values, want 18", len(s.Data.Values))
			}
			for ch, want := range tc.channels {
				if _, got := encType(t, s, ch); got != want {
					t.Errorf("encoding %s type = %q, want %q", ch, got, want)
				}
			}
			if tc.mark == "bar" && tc.x == "month" && !strings.Contains(string(s.Encoding["x"]), `"timeUnit":"yearmonthdate"`) {
				t.Errorf("bars over dates: x = %s, want ordinal bands with a date time unit", s.Encoding["x"])
			}
			if len(s.Encoding) != len(tc.channels) {
				t.Errorf("encoding channels %v, want %v", s.Encoding, tc.channels)
			}
			// The PNG decodes and has the configured size.
			img, err := png.Decode(bytes.NewReader(c.PNG))
			if err != nil {
				t.Fatalf("PNG does not decode: %v", err)
			}
			if b := img.Bounds(); b.Dx() != 400 || b.Dy() != 250 {
				t.Errorf("PNG is %dx%d, want 400x250", b.Dx(), b.Dy())
			}
			if colors := distinctColors(t, c.PNG); colors < 3 {
				t.Errorf("PNG has %d colors; nothing was drawn", colors)
			}
			// Both artifacts are in the store, tenant-scoped, byte for byte.
			if len(res.Artifacts) != 2 {
				t.Fatalf("artifacts = %+v", res.Artifacts)
			}
			for i, want := range [][]byte{c.PNG, c.Spec} {
				a := res.Artifacts[i]
				rc, stored, err := f.store.Get(f.ctx, "acme", a.SHA256)
				if err != nil {
					t.Fatalf("artifact %s not in the store: %v", a.Name, err)
				}
				got, _ := io.ReadAll(rc)
				rc.Close()
				if !bytes.Equal(got, want) || a.Kind != domain.ArtifactChart || stored.MediaType != a.MediaType {
					t.Errorf("artifact %+v: %d bytes stored, want %d", a, len(got), len(want))
				}
			}
			if res.Artifacts[0].MediaType != domain.MediaTypePNG || res.Artifacts[1].MediaType != domain.MediaTypeVegaLite {
				t.Errorf("media types %s, %s", res.Artifacts[0].MediaType, res.Artifacts[1].MediaType)
			}
			if c.Image.SHA256 != res.Artifacts[0].SHA256 {
				t.Errorf("payload image %+v", c.Image)
			}
			if !strings.Contains(res.Summary, `"chart_1"`) || !strings.Contains(res.Summary, "18 rows") || strings.Contains(res.Summary, "APAC") {
				t.Errorf("summary = %q; want the name and shape, no data values", res.Summary)
			}
			if len(res.Datasets) != 1 || res.Datasets[0] != "sales" {
				t.Errorf("datasets = %v", res.Datasets)
			}
		})
	}
}

// distinctColors counts the colors of a PNG (up to 100).
func distinctColors(t *testing.T, b []byte) int {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[4]uint32]bool{}
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y += 2 {
		for x := bd.Min.X; x < bd.Max.X; x += 2 {
			r, g, b, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, b, a}] = true
			if len(seen) >= 100 {
				return len(seen)
			}
		}
	}
	return len(seen)
}

func TestInlineRowsDatesAndEscapes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chart.Config{})
	res, err := f.call(t, map[string]any{"type": "line", "x": "day", "y": "sales.total",
		"data": map[string]any{"columns": []string{"day", "sales.total"},
			"rows": [][]any{{"2024-01-02", 3}, {"2024-01-01", 1.5}, {"2024-01-03", nil}}}})
	if err != nil {
		t.Fatal(err)
	}
	var s specShape
	json.Unmarshal(res.Payload.(chart.Chart).Spec, &s)
	if _, typ := encType(t, s, "x"); typ != "temporal" {
		t.Errorf("ISO date strings inferred as %s, want temporal", typ)
	}
	if field, _ := encType(t, s, "y"); field != `sales\.total` {
		t.Errorf("y field = %q, want the dot escaped", field)
	}
	if v := s.Data.Values[0].(map[string]any); v["day"] != "2024-01-02T00:00:00Z" || v["sales.total"] != 3.0 {
		t.Errorf("first value = %v", v)
	}
	if !strings.Contains(res.Summary, "from inline (3 rows)") {
		t.Errorf("summary = %q", res.Summary)
	}
}

func TestInvalidCharts(t *testing.T) {
	t.Parallel()
	many := make([][]any, 101)
	for i := range many {
		many[i] = []any{fmt.Sprint("c", i), i}
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		want []string
	}{
		{"unknown columns", map[string]any{"type": "bar", "x": "regoin", "y": "revenue", "data": map[string]any{"ref": "result_1"}},
			[]string{`x field "regoin" is not a column of result_1`, `"month", "region", "revenue", "orders"`}},
		{"text on y", map[string]any{"type": "line", "x": "month", "y": "region", "data": map[string]any{"ref": "result_1"}},
			[]string{`y field "region" is text (e.g. "EU")`, "needs numbers on y"}},
		{"unknown result", map[string]any{"type": "bar", "x": "a", "y": "b", "data": map[string]any{"ref": "result_9"}},
			[]string{`no result called "result_9"`, "result_1"}},
		{"ref and rows", map[string]any{"type": "bar", "x": "a", "y": "b", "data": map[string]any{"ref": "result_1", "columns": []string{"a"}, "rows": [][]any{{1}}}},
			[]string{"either ref", "not both"}},
		{"no data", map[string]any{"type": "bar", "x": "a", "y": "b", "data": map[string]any{}},
			[]string{"no data"}},
		{"ragged rows", map[string]any{"type": "bar", "x": "a", "y": "b", "data": map[string]any{"columns": []string{"a", "b"}, "rows": [][]any{{"x", 1}, {"y"}}}},
			[]string{"data.rows[1] has 1 values for 2 columns"}},
		{"object cell", map[string]any{"type": "bar", "x": "a", "y": "b", "data": map[string]any{"columns": []string{"a", "b"}, "rows": [][]any{{"x", map[string]any{"v": 1}}}}},
			[]string{`data.rows[0][1] (column "b") is an object`}},
		{"duplicate columns", map[string]any{"type": "bar", "x": "a", "y": "b", "data": map[string]any{"columns": []string{"a", "a"}, "rows": [][]any{{"x", 1}}}},
			[]string{`column "a" appears twice`}},
		{"empty", map[string]any{"type": "bar", "x": "a", "y": "b", "data": map[string]any{"columns": []string{"a", "b"}, "rows": [][]any{}}},
			[]string{"no rows"}},
		{"x is y", map[string]any{"type": "bar", "x": "revenue", "y": "revenue", "data": map[string]any{"ref": "result_1"}},
			[]string{"x and y are the same column"}},
		{"pie with series", map[string]any{"type": "arc", "x": "region", "y": "revenue", "series": "month", "data": map[string]any{"ref": "result_1"}},
			[]string{"no series"}},
		{"negative slice", map[string]any{"type": "arc", "x": "a", "y": "b", "data": map[string]any{"columns": []string{"a", "b"}, "rows": [][]any{{"x", 1}, {"y", -2}}}},
			[]string{"negative value"}},
		{"too many bars", map[string]any{"type": "bar", "x": "a", "y": "b", "data": map[string]any{"columns": []string{"a", "b"}, "rows": many}},
			[]string{"101 distinct values", "top categories"}},
		{"too many rows", map[string]any{"type": "point", "x": "a", "y": "b", "data": map[string]any{"columns": []string{"a", "b"}, "rows": append(many, many...)}},
			[]string{"202 rows, more than the 200", "aggregate"}},
		{"bad name", map[string]any{"type": "bar", "x": "region", "y": "revenue", "name": "../x", "data": map[string]any{"ref": "result_1"}},
			[]string{`name "../x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, chart.Config{MaxRows: 200})
			f.results.Put(f.ctx, sales())
			_, err := f.call(t, tc.args)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), "3 of 3 repairs left") {
				t.Errorf("error %q does not invite a repair", err)
			}
		})
	}
}

// TestRepairBudget: the model may repair a failed chart three times in a
// run; the fourth failure is final and later calls in the run are
// refused, while other runs are unaffected and a success resets the count.
func TestRepairBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chart.Config{})
	f.results.Put(f.ctx, sales())
	bad := map[string]any{"type": "bar", "x": "nope", "y": "revenue", "data": map[string]any{"ref": "result_1"}}
	good := map[string]any{"type": "bar", "x": "region", "y": "revenue", "data": map[string]any{"ref": "result_1"}}
	for i, left := range []int{3, 2, 1} {
		_, err := f.call(t, bad)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d of 3 repairs left", left)) || errors.Is(err, chart.ErrGaveUp) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	_, err := f.call(t, bad)
	if !errors.Is(err, chart.ErrGaveUp) || !strings.Contains(err.Error(), "stop calling draw_chart") || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("fourth failure: %v; want the final error with the last reason", err)
	}
	if _, err := f.call(t, good); !errors.Is(err, chart.ErrGaveUp) {
		t.Fatalf("call after giving up: %v, want ErrGaveUp", err)
	}

	// Another run of the same session starts with a full budget; a
	// success resets it.
	f.ctx = agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "acme", SessionID: "s1", RunID: "run2"})
	for range 3 {
		if _, err := f.call(t, bad); errors.Is(err, chart.ErrGaveUp) {
			t.Fatalf("run2 gave up early: %v", err)
		}
	}
	if _, err := f.call(t, good); err != nil {
		t.Fatalf("valid chart in run2: %v", err)
	}
	if _, err := f.call(t, bad); err == nil || !strings.Contains(err.Error(), "3 of 3 repairs left") {
		t.Fatalf("after a success the budget should be full again: %v", err)
	}
}

// TestRepairLoopThroughExecutor: a model that keeps sending invalid
// charts gets each reason back as the tool result, then the final failure.
func TestRepairLoopThroughExecutor(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chart.Config{})
	f.results.Put(agents.WithCallInfo(t.Context(), agents.CallInfo{TenantID: "acme", SessionID: "s1"}), sales())
	model := newScripted(5, map[string]any{"type": "line", "x": "month", "y": "region", "data": map[string]any{"ref": "result_1"}})
	ex, err := agents.NewExecutor(agents.Config{Model: model, Tools: []agents.Tool{f.tool}, MaxToolCalls: 10})
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for ev, err := range ex.Run(t.Context(), agents.Input{TenantID: "acme", SessionID: "s1", Message: agents.UserMessage("chart it")}) {
		if err != nil {
			t.Fatal(err)
		}
		if fin, ok := ev.(*agents.ToolCallFinished); ok {
			results = append(results, fin.Error)
		}
	}
	if len(results) != 5 {
		t.Fatalf("%d tool results, want 5: %q", len(results), results)
	}
	for i, r := range results[:3] {
		if !strings.Contains(r, `y field "region" is text`) || !strings.Contains(r, "repairs left") {
			t.Errorf("result %d = %q", i, r)
		}
	}
	if !strings.Contains(results[3], "stop calling draw_chart") || !strings.Contains(results[4], "stop calling") {
		t.Errorf("final results = %q", results[3:])
	}
}

func TestChartsPerSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chart.Config{})
	args := map[string]any{"type": "bar", "x": "a", "y": "b", "name": "mix", "data": map[string]any{"columns": []string{"a", "b"}, "rows": [][]any{{"x", 1}}}}
	if _, err := f.call(t, args); err != nil {
		t.Fatal(err)
	}
	if c, err := f.charts.Get(f.ctx, "mix"); err != nil || len(c.PNG) == 0 || c.Image.SHA256 == "" {
		t.Fatalf("chart mix = %+v, %v", c, err)
	}
	other := agents.WithCallInfo(t.Context(), agents.CallInfo{TenantID: "globex", SessionID: "s1"})
	if _, err := f.charts.Get(other, "mix"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("another tenant's session sees the chart: %v", err)
	}
	_, err := f.charts.Get(f.ctx, "nope")
	if !errors.Is(err, domain.ErrNotFound) || !strings.Contains(err.Error(), "[mix]") {
		t.Errorf("missing chart error = %v", err)
	}
	// The store keeps the last Keep charts.
	m := chart.NewMemoryCharts(2)
	for range 3 {
		m.Put(f.ctx, chart.Chart{})
	}
	if _, err := m.Get(f.ctx, "chart_1"); err == nil {
		t.Error("oldest chart was not evicted")
	}
	if _, err := m.Get(f.ctx, "chart_3"); err != nil {
		t.Error(err)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	store, _ := fsartifacts.Open(t.TempDir(), fsartifacts.Options{})
	defer store.Close()
	if _, err := chart.New(chart.Config{Store: store}); err == nil {
		t.Error("New without Charts succeeded")
	}
	if _, err := chart.New(chart.Config{Charts: chart.NewMemoryCharts(0)}); err == nil {
		t.Error("New without Store succeeded")
	}
	tool, err := chart.New(chart.Config{Charts: chart.NewMemoryCharts(0), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	spec := tool.Spec()
	if spec.Name != "draw_chart" || spec.Permission != agents.PermRead {
		t.Errorf("spec = %+v", spec)
	}
	for _, w := range []string{`"enum":["bar","line","area","point","arc"]`, `"ref"`, `"series"`, `arc (pie: x gives the slices, y their sizes).`} {
		if !strings.Contains(string(spec.Schema), w) {
			t.Errorf("schema lacks %s: %s", w, spec.Schema)
		}
	}
	// Without a tenant in the context the chart cannot be saved.
	_, err = tool.Call(t.Context(), json.RawMessage(`{"type":"bar","x":"a","y":"b","data":{"columns":["a","b"],"rows":[["x",1]]}}`))
	if err == nil || !strings.Contains(err.Error(), "tenant") {
		t.Errorf("call without call info: %v", err)
	}
}

// darkPixels counts the non-white pixels in the top band of a PNG, where
// the title is.
func darkPixels(t *testing.T, b []byte, band int) int {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for y := 0; y < band; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r+g+b < 3*0xc000 {
				n++
			}
		}
	}
	return n
}

// TestCJKTitle: characters Liberation Sans lacks are drawn with a system
// fallback font (Droid Sans Fallback here) instead of being dropped.
func TestCJKTitle(t *testing.T) {
	t.Parallel()
	var dirs []string
	if d := os.Getenv("BICHAT_TEST_FONT_DIR"); d != "" {
		dirs = []string{d}
	}
	if len(fonts.Find(dirs)) < 2 {
		msg := "need a CJK TrueType font (Debian: fonts-droid-fallback); run .ci/setup.d/30-documents.sh"
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	args := map[string]any{"type": "bar", "x": "city", "y": "n", "title": "東京東京東京東京",
		"data": map[string]any{"columns": []string{"city", "n"}, "rows": [][]any{{"東京", 3}, {"Zürich", 2}}}}
	with := newFixture(t, chart.Config{FontDirs: dirs})
	res, err := with.call(t, args)
	if err != nil {
		t.Fatal(err)
	}
	without := newFixture(t, chart.Config{FontDirs: []string{t.TempDir()}})
	res2, err := without.call(t, args)
	if err != nil {
		t.Fatal(err)
	}
	a, b := darkPixels(t, res.Payload.(chart.Chart).PNG, 30), darkPixels(t, res2.Payload.(chart.Chart).PNG, 30)
	if a < 100 || b > 10 {
		t.Errorf("title band: %d dark pixels with a CJK font, %d without; want the title drawn only with the font", a, b)
	}
}
