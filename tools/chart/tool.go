package chart

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/export/fonts"
)

// Input is the arguments of draw_chart.
type Input struct {
	Type   string `json:"type" jsonschema:"enum=bar,enum=line,enum=area,enum=point,enum=arc,description=Mark: bar (categories)\\, line or area (trends over x)\\, point (scatter)\\, arc (pie: x gives the slices\\, y their sizes)."`
	Data   Data   `json:"data" jsonschema:"description=The data: ref to an earlier result\\, or columns and rows inline."`
	X      string `json:"x" jsonschema:"description=Column for the x axis (categories\\, dates or numbers); the slices of an arc chart."`
	Y      string `json:"y" jsonschema:"description=Numeric column for the y axis; the slice sizes of an arc chart."`
	Series string `json:"series,omitempty" jsonschema:"description=Optional column that splits the data into colored series (one line or bar group per value)."`
	Title  string `json:"title,omitempty" jsonschema:"description=Chart title."`
	Name   string `json:"name,omitempty" jsonschema:"description=Optional name for the chart (letters\\, digits\\, _ and -)\\, used to embed it in export_pdf; default chart_N."`
}

// Config configures draw_chart.
type Config struct {
	// Results resolves data refs (the session's earlier query results).
	// Nil allows inline data only.
	Results tools.Results
	// Charts keeps the charts so export_pdf can embed them; required.
	// Give export_pdf the same value.
	Charts Charts
	// Store receives the PNG and the Vega-Lite spec; required.
	Store domain.ArtifactStore
	// Width and Height of the PNG in pixels; 0 means 960×540.
	Width, Height int
	// MaxRows bounds the rows of one chart; 0 means 5,000.
	MaxRows int
	// MaxRepairs is how many failed attempts the model may repair in one
	// run before draw_chart gives up for the rest of the run; 0 means 3.
	// The failure after the last repair is final.
	MaxRepairs int
	// Fonts and FontDirs choose the TrueType fonts for chart text that the
	// built-in Liberation Sans cannot draw (Chinese, Japanese, Korean...):
	// Fonts in order of preference, or when empty the fonts found in
	// FontDirs (empty: the system font folders, see package
	// tools/export/fonts). Without such a font those characters are left
	// out of the PNG; the Vega-Lite spec keeps them.
	Fonts    []fonts.File
	FontDirs []string
}

// ErrGaveUp matches the error draw_chart returns once a run has used up
// its repairs.
var ErrGaveUp = errors.New("draw_chart gave up")

// Name is the tool name.
const Name = "draw_chart"

const description = "Draw a chart from an earlier result (data.ref) or inline rows. " +
	"The user sees an interactive chart and a PNG image; you get a short summary and the chart's name, " +
	"which export_pdf can embed. Aggregate in SQL first: at most a few thousand rows, about 100 bars, 20 series."

// New returns the draw_chart tool.
func New(cfg Config) (agents.Tool, error) {
	if cfg.Charts == nil {
		return nil, errors.New("chart: Config.Charts is required (export_pdf embeds charts from it)")
	}
	if cfg.Store == nil {
		return nil, errors.New("chart: Config.Store is required (the PNG is saved there)")
	}
	if cfg.Width <= 0 {
		cfg.Width = 960
	}
	if cfg.Height <= 0 {
		cfg.Height = 540
	}
	if cfg.MaxRows <= 0 {
		cfg.MaxRows = 5000
	}
	if cfg.MaxRepairs <= 0 {
		cfg.MaxRepairs = 3
	}
	if cfg.Width > 4000 || cfg.Height > 4000 {
		return nil, fmt.Errorf("chart: %d×%d pixels is larger than 4000×4000", cfg.Width, cfg.Height)
	}
	d := &drawer{cfg: cfg, failures: make(map[string]*runFailures)}
	return agents.NewTool(Name, description, d.call, agents.WithTimeout(30*time.Second), agents.WithParallel())
}

type drawer struct {
	cfg Config

	fontMu sync.Mutex
	fonts  *fonts.Set

	mu       sync.Mutex
	failures map[string]*runFailures
}

type runFailures struct {
	n    int
	last time.Time
}

// failed records a failed attempt of run and returns the error for the
// model: the reason and how many repairs are left, or the final failure.
func (d *drawer) failed(runID string, reason error) error {
	if runID == "" {
		return reason
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if len(d.failures) > 1024 {
		for id, f := range d.failures {
			if now.Sub(f.last) > 10*time.Minute {
				delete(d.failures, id)
			}
		}
	}
	f := d.failures[runID]
	if f == nil {
		f = &runFailures{}
		d.failures[runID] = f
	}
	f.n++
	f.last = now
	if left := d.cfg.MaxRepairs + 1 - f.n; left > 0 {
		return fmt.Errorf("%w (fix it and call draw_chart again; %d of %d repairs left)", reason, left, d.cfg.MaxRepairs)
	}
	return fmt.Errorf("%w: %d attempts failed in this run (last problem: %v); stop calling draw_chart and answer without a chart, e.g. with a short table or in words", ErrGaveUp, f.n, reason)
}

// gaveUp reports the final error when run has used up its repairs.
func (d *drawer) gaveUp(runID string) error {
	if runID == "" {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if f := d.failures[runID]; f != nil && f.n > d.cfg.MaxRepairs {
		return fmt.Errorf("%w: draw_chart already failed %d times in this run; stop calling it and answer without a chart", ErrGaveUp, f.n)
	}
	return nil
}

// fontSet loads the system fonts when texts need more than Liberation
// Sans; a failed load is retried next time.
func (d *drawer) fontSet(texts []string) *fonts.Set {
	if len(fonts.MissingIn(liberationSans(), texts...)) == 0 {
		return nil
	}
	d.fontMu.Lock()
	defer d.fontMu.Unlock()
	if d.fonts == nil {
		d.fonts, _ = fonts.Load(d.cfg.Fonts, d.cfg.FontDirs)
	}
	return d.fonts
}

func (d *drawer) succeeded(runID string) {
	d.mu.Lock()
	delete(d.failures, runID)
	d.mu.Unlock()
}

func (d *drawer) call(ctx context.Context, in Input) (agents.Result, error) {
	info, _ := agents.CallInfoFromContext(ctx)
	if err := d.gaveUp(info.RunID); err != nil {
		return agents.Result{}, err
	}
	if info.TenantID == "" {
		return agents.Result{}, errors.New("draw_chart: the call has no tenant (call it inside a run, or with agents.WithCallInfo)")
	}
	if in.Name != "" && !validChartName(in.Name) {
		return agents.Result{}, d.failed(info.RunID, fmt.Errorf("invalid chart: name %q must be letters, digits, '_' or '-' (at most 64)", in.Name))
	}
	t, err := in.Data.Table(ctx, d.cfg.Results, "data")
	if err != nil {
		if ctx.Err() != nil {
			return agents.Result{}, err
		}
		return agents.Result{}, d.failed(info.RunID, fmt.Errorf("invalid chart: %w", err))
	}
	p, err := validate(in, t, d.cfg.MaxRows)
	if err != nil {
		return agents.Result{}, d.failed(info.RunID, err)
	}
	spec, err := p.spec()
	if err != nil {
		return agents.Result{}, fmt.Errorf("draw_chart: %w", err)
	}
	var fallback []*fonts.Face
	if set := d.fontSet(p.texts()); set != nil {
		fallback = set.Faces
	}
	png, err := p.render(d.cfg.Width, d.cfg.Height, fallback)
	if err != nil {
		return agents.Result{}, fmt.Errorf("draw_chart: render: %w", err)
	}
	c := Chart{Name: in.Name, Title: p.title, Type: p.mark, Spec: spec, PNG: png, Width: d.cfg.Width, Height: d.cfg.Height}
	name, err := d.cfg.Charts.Put(ctx, c)
	if err != nil {
		return agents.Result{}, fmt.Errorf("draw_chart: keep chart: %w", err)
	}
	c.Name = name
	meta := map[string]string{"chart": name, "type": p.mark, "x": p.col(p.x), "y": p.col(p.y)}
	img, err := tools.SaveArtifact(ctx, d.cfg.Store, domain.Artifact{Kind: domain.ArtifactChart, Name: name + ".png",
		MediaType: domain.MediaTypePNG, Metadata: meta}, png)
	if err != nil {
		return agents.Result{}, fmt.Errorf("draw_chart: save image: %w", err)
	}
	vl, err := tools.SaveArtifact(ctx, d.cfg.Store, domain.Artifact{Kind: domain.ArtifactChart, Name: name + ".vl.json",
		MediaType: domain.MediaTypeVegaLite, Metadata: meta}, spec)
	if err != nil {
		return agents.Result{}, fmt.Errorf("draw_chart: save spec: %w", err)
	}
	c.Image = img
	// Keep the stored form, with the image artifact, for export_pdf.
	if _, err := d.cfg.Charts.Put(ctx, c); err != nil {
		return agents.Result{}, fmt.Errorf("draw_chart: keep chart: %w", err)
	}
	d.succeeded(info.RunID)
	return agents.Result{
		Summary:   p.summary(name, t, len(png), d.cfg.Width, d.cfg.Height),
		Payload:   c,
		Artifacts: []domain.Artifact{img, vl},
		Datasets:  t.Datasets,
	}, nil
}

func (p *plan) summary(name string, t tools.Table, pngSize, w, h int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Drew %s chart %q", article(p.mark), name)
	if p.title != "" {
		fmt.Fprintf(&b, " titled %q", p.title)
	}
	fmt.Fprintf(&b, " from %s (%d rows): x=%s (%s), y=%s (%s)", t.Name, len(t.Rows), p.col(p.x), p.xt, p.col(p.y), p.yt)
	if p.s >= 0 {
		fmt.Fprintf(&b, ", series=%s (%d groups)", p.col(p.s), len(p.seriesVals))
	}
	if t.Truncated {
		b.WriteString("; note: the result was truncated, so the chart shows only the rows fetched")
	}
	fmt.Fprintf(&b, ". The user sees it; a %d×%d PNG (%s) and a Vega-Lite spec were attached. To put it in a PDF report, give chart %q to export_pdf.", w, h, tools.FormatSize(pngSize), name)
	return b.String()
}

func article(mark string) string {
	if mark == "arc" || mark == "area" {
		return "an " + mark
	}
	return "a " + mark
}
