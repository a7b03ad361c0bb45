package chart

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"golang.org/x/image/font/opentype"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/bichat-go/bichat/tools/export/fonts"
)

// tableau10 is Vega-Lite's default categorical scheme, so the PNG and
// the spec color series alike.
var tableau10 = []color.RGBA{
	{0x4c, 0x78, 0xa8, 0xff}, {0xf5, 0x85, 0x18, 0xff}, {0xe4, 0x57, 0x56, 0xff},
	{0x72, 0xb7, 0xb2, 0xff}, {0x54, 0xa2, 0x4b, 0xff}, {0xee, 0xca, 0x3b, 0xff},
	{0xb2, 0x79, 0xa2, 0xff}, {0xff, 0x9d, 0xa6, 0xff}, {0x9d, 0x75, 0x5d, 0xff},
	{0xba, 0xb0, 0xac, 0xff},
}

func seriesColor(i int) color.RGBA {
	c := tableau10[i%len(tableau10)]
	if i >= len(tableau10) { // second round: darker
		c.R, c.G, c.B = c.R/4*3, c.G/4*3, c.B/4*3
	}
	return c
}

const dpi = 96

// liberationSans is the font gonum/plot embeds, which draws Latin,
// Greek and Cyrillic text.
var liberationSans = sync.OnceValue(func() *fonts.Face {
	f, err := opentype.Parse(liberationsansregular.TTF)
	if err != nil {
		panic("chart: embedded Liberation Sans does not parse: " + err.Error())
	}
	return &fonts.Face{Name: "LiberationSans-Regular.ttf", Font: f}
})

// texts returns every text the chart shows, for the font choice.
func (p *plan) texts() []string {
	out := []string{p.title, p.col(p.x), p.col(p.y)}
	out = append(out, p.seriesVals...)
	if p.xt == Nominal || p.xt == Ordinal || p.mark == "bar" || p.mark == "arc" {
		out = append(out, distinct(p.table.Rows, p.x)...)
	}
	if p.yt != Quantitative {
		out = append(out, distinct(p.table.Rows, p.y)...)
	}
	return out
}

// styleText sets every text of the plot in Liberation Sans; with
// fallback faces, characters Liberation Sans lacks are drawn with the
// first fallback face that has them.
func styleText(plt *plot.Plot, fallback []*fonts.Face) {
	fnt := font.Font{Typeface: "Liberation", Variant: "Sans"}
	var h text.Handler = plt.TextHandler
	if len(fallback) > 0 {
		coll := font.Collection{}
		if base, ok := plt.TextHandler.(text.Plain); ok && base.Fonts != nil {
			coll = append(coll, font.Face{Font: fnt, Face: liberationSans().Font})
		}
		fh := &fallbackText{primary: fnt, faces: fallback}
		for i, f := range fallback {
			fh.names = append(fh.names, font.Font{Typeface: font.Typeface(fmt.Sprintf("bichat-fallback-%d", i))})
			coll = append(coll, font.Face{Font: fh.names[i], Face: f.Font})
		}
		fh.cache = font.NewCache(coll)
		h = fh
	}
	for _, st := range []*text.Style{&plt.Title.TextStyle, &plt.X.Label.TextStyle, &plt.Y.Label.TextStyle,
		&plt.X.Tick.Label, &plt.Y.Tick.Label, &plt.Legend.TextStyle} {
		st.Font = font.From(fnt, st.Font.Size)
		st.Handler = h
	}
	plt.TextHandler = h
}

// fallbackText is a plain-text handler that draws each character with the
// primary font when it has it and otherwise with the first fallback face
// that does.
type fallbackText struct {
	primary font.Font
	faces   []*fonts.Face
	names   []font.Font
	cache   *font.Cache
}

type textRun struct {
	text string
	face int // -1: primary
}

func (h *fallbackText) runs(s string) []textRun {
	var out []textRun
	cur, start := -2, 0
	for i, r := range s {
		fi := -1
		if !liberationSans().Covers(r) {
			for j, f := range h.faces {
				if f.Covers(r) {
					fi = j
					break
				}
			}
		}
		if fi != cur {
			if cur != -2 && i > start {
				out = append(out, textRun{s[start:i], cur})
			}
			cur, start = fi, i
		}
	}
	if start < len(s) {
		out = append(out, textRun{s[start:], cur})
	}
	return out
}

func (h *fallbackText) face(i int, fnt font.Font) font.Face {
	if i < 0 {
		return h.cache.Lookup(fnt, fnt.Size)
	}
	return h.cache.Lookup(font.From(h.names[i], fnt.Size), fnt.Size)
}

func (h *fallbackText) width(s string, fnt font.Font) vg.Length {
	var w vg.Length
	for _, r := range h.runs(s) {
		f := h.face(r.face, fnt)
		w += f.Width(r.text)
	}
	return w
}

// Cache implements text.Handler.
func (h *fallbackText) Cache() *font.Cache { return h.cache }

// Extents implements text.Handler.
func (h *fallbackText) Extents(fnt font.Font) font.Extents {
	f := h.cache.Lookup(fnt, fnt.Size)
	return f.Extents()
}

// Lines implements text.Handler.
func (h *fallbackText) Lines(txt string) []string {
	return strings.Split(strings.TrimRight(txt, "\n"), "\n")
}

// Box implements text.Handler.
func (h *fallbackText) Box(txt string, fnt font.Font) (width, height, depth vg.Length) {
	ext := h.Extents(fnt)
	return h.width(txt, fnt), ext.Ascent, ext.Descent
}

// Draw implements text.Handler, as text.Plain does but run by run.
func (h *fallbackText) Draw(c vg.Canvas, txt string, sty text.Style, pt vg.Point) {
	txt = strings.TrimRight(txt, "\n")
	if len(txt) == 0 {
		return
	}
	c.SetColor(sty.Color)
	if sty.Rotation != 0 {
		c.Push()
		c.Rotate(sty.Rotation)
	}
	sin64, cos64 := math.Sincos(sty.Rotation)
	cos, sin := vg.Length(cos64), vg.Length(sin64)
	pt.X, pt.Y = pt.Y*sin+pt.X*cos, pt.Y*cos-pt.X*sin
	lines := h.Lines(txt)
	ht := sty.Height(txt)
	pt.Y += ht*vg.Length(sty.YAlign) - h.Extents(sty.Font).Ascent
	for i, line := range lines {
		x := pt.X + vg.Length(sty.XAlign)*h.width(line, sty.Font)
		y := pt.Y + vg.Length(len(lines)-i)*sty.Font.Size
		for _, r := range h.runs(line) {
			f := h.face(r.face, sty.Font)
			c.FillString(f, vg.Point{X: x, Y: y}, r.text)
			x += f.Width(r.text)
		}
	}
	if sty.Rotation != 0 {
		c.Pop()
	}
}

// render draws p as a PNG of width×height pixels, its text in Liberation
// Sans with the fallback faces for what that lacks.
func (p *plan) render(width, height int, fallback []*fonts.Face) ([]byte, error) {
	plt := plot.New()
	styleText(plt, fallback)
	plt.Title.Text = p.title
	plt.Title.TextStyle.Font.Size = vg.Points(14)
	plt.X.Label.Text = p.col(p.x)
	plt.Y.Label.Text = p.col(p.y)
	plt.Legend.Top = true
	var err error
	switch p.mark {
	case "bar":
		err = p.drawBars(plt)
	case "arc":
		err = p.drawPie(plt)
	default:
		err = p.drawXY(plt)
	}
	if err != nil {
		return nil, err
	}
	if p.mark != "arc" {
		plt.Add(plotter.NewGrid())
		// Headroom above the highest value, so the top bar or point does
		// not touch the title.
		if plt.Y.Max > plt.Y.Min {
			plt.Y.Max += (plt.Y.Max - plt.Y.Min) * 0.05
		}
		if p.s >= 0 {
			// Headroom for the legend, which sits at the top right.
			plt.Y.Max += (plt.Y.Max - plt.Y.Min) * 0.08 * float64(min(len(p.seriesVals), 6))
		}
	}
	w := vg.Length(width) * vg.Inch / dpi
	h := vg.Length(height) * vg.Inch / dpi
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))
	pad := vg.Points(8)
	plt.Legend.XOffs = -pad
	plt.Draw(draw.Crop(draw.New(c), pad, -pad, pad, -pad))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode PNG: %w", err)
	}
	return buf.Bytes(), nil
}

// groups splits the row indexes by series value (one group without series).
func (p *plan) groups() (names []string, rows [][]int) {
	if p.s < 0 {
		all := make([]int, len(p.table.Rows))
		for i := range all {
			all[i] = i
		}
		return []string{""}, [][]int{all}
	}
	idx := make(map[string]int, len(p.seriesVals))
	for i, v := range p.seriesVals {
		idx[v] = i
	}
	rows = make([][]int, len(p.seriesVals))
	for r, row := range p.table.Rows {
		if row[p.s] == nil {
			continue
		}
		i := idx[label(row[p.s])]
		rows[i] = append(rows[i], r)
	}
	return p.seriesVals, rows
}

// categories returns the distinct x labels: sorted for ordinal and
// temporal axes, in data order for nominal ones.
func (p *plan) categories() []string {
	if p.xt == Nominal {
		return distinct(p.table.Rows, p.x)
	}
	type kv struct {
		key float64
		lab string
	}
	seen := map[string]bool{}
	var vals []kv
	for _, row := range p.table.Rows {
		v := row[p.x]
		if v == nil || seen[label(v)] {
			continue
		}
		seen[label(v)] = true
		k, _ := xValue(v)
		vals = append(vals, kv{k, label(v)})
	}
	slices.SortStableFunc(vals, func(a, b kv) int { return cmp.Compare(a.key, b.key) })
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = v.lab
	}
	return out
}

// xValue places a quantitative or temporal value on a continuous axis.
func xValue(v any) (float64, bool) {
	if t, ok := v.(time.Time); ok {
		return float64(t.UnixNano()) / 1e9, true
	}
	return Number(v)
}

func (p *plan) drawBars(plt *plot.Plot) error {
	cats := p.categories()
	pos := make(map[string]int, len(cats))
	for i, c := range cats {
		pos[c] = i
	}
	names, groups := p.groups()
	n := len(names)
	// Room per category in points, shared by the series' bars.
	barWidth := vg.Points(math.Max(2, math.Min(40, 500/float64(len(cats)*n))))
	for gi, rows := range groups {
		vals := make(plotter.Values, len(cats))
		for _, r := range rows {
			row := p.table.Rows[r]
			if row[p.x] == nil {
				continue
			}
			if v, ok := Number(row[p.y]); ok {
				vals[pos[label(row[p.x])]] += v // duplicates stack, as in Vega-Lite
			}
		}
		bars, err := plotter.NewBarChart(vals, barWidth)
		if err != nil {
			return fmt.Errorf("draw bars: %w", err)
		}
		bars.LineStyle.Width = 0
		bars.Color = seriesColor(gi)
		bars.Offset = barWidth * (vg.Length(gi) - vg.Length(n-1)/2)
		plt.Add(bars)
		if p.s >= 0 {
			plt.Legend.Add(names[gi], bars)
		}
	}
	plt.NominalX(thin(cats, 30)...)
	// Half a category of room on each side, so the outer bars are whole.
	plt.X.Min, plt.X.Max = -0.5, float64(len(cats))-0.5
	if len(cats) > 8 {
		plt.X.Tick.Label.Rotation = math.Pi / 4
		plt.X.Tick.Label.XAlign = draw.XRight
		plt.X.Tick.Label.YAlign = draw.YCenter
	}
	return nil
}

// thin blanks labels so that at most max are shown.
func thin(labels []string, max int) []string {
	if len(labels) <= max {
		return labels
	}
	step := (len(labels) + max - 1) / max
	out := make([]string, len(labels))
	for i := range labels {
		if i%step == 0 {
			out[i] = labels[i]
		}
	}
	return out
}

func (p *plan) drawXY(plt *plot.Plot) error {
	names, groups := p.groups()
	var cats map[string]int
	if p.xt == Nominal || p.xt == Ordinal {
		labels := p.categories()
		cats = make(map[string]int, len(labels))
		for i, c := range labels {
			cats[c] = i
		}
		plt.NominalX(thin(labels, 30)...)
	}
	var ycats map[string]int
	if p.yt != Quantitative { // point charts may put categories on y
		labels := distinct(p.table.Rows, p.y)
		ycats = make(map[string]int, len(labels))
		for i, c := range labels {
			ycats[c] = i
		}
		plt.NominalY(labels...)
	}
	for gi, rows := range groups {
		xys := make(plotter.XYs, 0, len(rows))
		for _, r := range rows {
			row := p.table.Rows[r]
			if row[p.x] == nil || row[p.y] == nil {
				continue
			}
			var x, y float64
			var ok bool
			if cats != nil {
				x, ok = float64(cats[label(row[p.x])]), true
			} else {
				x, ok = xValue(row[p.x])
			}
			if !ok {
				continue
			}
			if ycats != nil {
				y = float64(ycats[label(row[p.y])])
			} else if y, ok = Number(row[p.y]); !ok {
				continue
			}
			xys = append(xys, plotter.XY{X: x, Y: y})
		}
		if p.mark != "point" {
			slices.SortStableFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		}
		col := seriesColor(gi)
		var th plot.Thumbnailer
		switch p.mark {
		case "point":
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return fmt.Errorf("draw points: %w", err)
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Shape = draw.CircleGlyph{}
			sc.GlyphStyle.Radius = vg.Points(3)
			plt.Add(sc)
			th = sc
		default:
			ln, err := plotter.NewLine(xys)
			if err != nil {
				return fmt.Errorf("draw line: %w", err)
			}
			ln.LineStyle.Color = col
			ln.LineStyle.Width = vg.Points(2)
			if p.mark == "area" {
				ln.FillColor = color.NRGBA{R: col.R, G: col.G, B: col.B, A: 0x59}
			}
			plt.Add(ln)
			th = ln
		}
		if p.s >= 0 {
			plt.Legend.Add(names[gi], th)
		}
	}
	if p.xt == Temporal {
		plt.X.Tick.Marker = p.timeTicks()
	}
	if p.mark == "area" && p.yt == Quantitative {
		plt.Y.Min = math.Min(0, plt.Y.Min)
	}
	return nil
}

// timeTicks labels a time axis: at the data's own times when there are
// few of them (monthly data gets one tick per month), otherwise at evenly
// spaced times formatted for the span.
func (p *plan) timeTicks() plot.Ticker {
	lo, hi := math.Inf(1), math.Inf(-1)
	seen := map[float64]bool{}
	var xs []float64
	for _, row := range p.table.Rows {
		if v, ok := xValue(row[p.x]); ok {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
			if !seen[v] {
				seen[v] = true
				xs = append(xs, v)
			}
		}
	}
	if len(xs) <= 12 {
		slices.Sort(xs)
		ticks := make(plot.ConstantTicks, len(xs))
		for i, x := range xs {
			ticks[i] = plot.Tick{Value: x, Label: label(time.Unix(0, int64(x*1e9)).UTC())}
		}
		return ticks
	}
	format := "15:04"
	switch span := hi - lo; {
	case span > 3*365*86400:
		format = "2006"
	case span > 60*86400:
		format = "2006-01"
	case span > 2*86400:
		format = "Jan 02"
	}
	return plot.TimeTicks{Format: format, Time: func(t float64) time.Time {
		return time.Unix(0, int64(t*1e9)).UTC()
	}}
}

// pie draws the slices of an arc chart.
type pie struct {
	values []float64
	colors []color.Color
}

func (pc *pie) Plot(c draw.Canvas, _ *plot.Plot) {
	var total float64
	for _, v := range pc.values {
		total += v
	}
	if total <= 0 {
		return
	}
	center := c.Center()
	r := min(c.Max.X-c.Min.X, c.Max.Y-c.Min.Y) / 2 * 0.9
	start := math.Pi / 2
	for i, v := range pc.values {
		if v <= 0 {
			continue
		}
		sweep := -2 * math.Pi * v / total
		var path vg.Path
		path.Move(center)
		path.Line(vg.Point{X: center.X + r*vg.Length(math.Cos(start)), Y: center.Y + r*vg.Length(math.Sin(start))})
		path.Arc(center, r, start, sweep)
		path.Close()
		c.SetColor(pc.colors[i])
		c.Fill(path)
		c.SetLineStyle(draw.LineStyle{Color: color.White, Width: vg.Points(1)})
		c.Stroke(path)
		start += sweep
	}
}

// DataRange gives the pie a unit square; the axes are hidden.
func (pc *pie) DataRange() (xmin, xmax, ymin, ymax float64) { return -1, 1, -1, 1 }

type swatch color.RGBA

func (s swatch) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(color.RGBA(s), c.ClipPolygonXY(pts))
}

func (p *plan) drawPie(plt *plot.Plot) error {
	cats := distinct(p.table.Rows, p.x)
	pos := make(map[string]int, len(cats))
	for i, c := range cats {
		pos[c] = i
	}
	pc := &pie{values: make([]float64, len(cats)), colors: make([]color.Color, len(cats))}
	for _, row := range p.table.Rows {
		if row[p.x] == nil {
			continue
		}
		if v, ok := Number(row[p.y]); ok {
			pc.values[pos[label(row[p.x])]] += v
		}
	}
	for i := range cats {
		pc.colors[i] = seriesColor(i)
		plt.Legend.Add(cats[i], swatch(seriesColor(i)))
	}
	plt.Legend.Left = false
	plt.HideAxes()
	plt.X.Label.Text, plt.Y.Label.Text = "", ""
	plt.Add(pc)
	return nil
}
