package export

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"codeberg.org/go-pdf/fpdf"

	"github.com/bichat-go/bichat/tools/export/fonts"
)

// doc is a PDF being laid out: a cursor on the page and a text engine
// that draws each character with the first font that has it.
type doc struct {
	pdf   *fpdf.Fpdf
	fonts *fonts.Set
	reg   map[string]bool

	left, right, top, bottom float64
	y                        float64

	cur struct {
		family, style string
		size          float64
	}
}

const ptToMM = 25.4 / 72

func (d *doc) width() float64 { return d.right - d.left }

// use selects face i in the given style and size, registering it with
// fpdf on first use (so unused fallback fonts cost nothing).
func (d *doc) use(i int, bold bool, size float64) {
	f := d.fonts.Faces[i]
	family := fmt.Sprintf("f%d", i)
	style := ""
	if bold {
		style = "B"
	}
	key := family + style
	if !d.reg[key] {
		data := f.Regular
		if bold {
			data = f.Bold
		}
		d.pdf.AddUTF8FontFromBytes(family, style, data)
		d.reg[key] = true
	}
	if d.cur.family != family || d.cur.style != style || d.cur.size != size {
		d.pdf.SetFont(family, style, size)
		d.cur.family, d.cur.style, d.cur.size = family, style, size
	}
}

// run is text drawn with one face.
type run struct {
	text string
	face int
}

// runs splits s by face: each character goes to the first face that has
// it (spaces stay with the run they are in).
func (d *doc) runs(s string) []run {
	var out []run
	cur := -1
	start := 0
	for i, r := range s {
		fi := cur
		if cur < 0 || !(unicode.IsSpace(r) || d.fonts.Faces[cur].Covers(r)) {
			fi = d.fonts.FaceFor(r)
			if fi < 0 {
				fi = 0 // checked before layout; draw the .notdef box
			}
		}
		if fi != cur {
			if cur >= 0 && i > start {
				out = append(out, run{s[start:i], cur})
			}
			cur, start = fi, i
		}
	}
	if cur >= 0 && start < len(s) {
		out = append(out, run{s[start:], cur})
	}
	return out
}

// textWidth measures s in mm.
func (d *doc) textWidth(s string, bold bool, size float64) float64 {
	w := 0.0
	for _, r := range d.runs(s) {
		d.use(r.face, bold, size)
		w += d.pdf.GetStringWidth(r.text)
	}
	return w
}

// text draws s with its baseline at y, starting at x; it returns the
// width drawn.
func (d *doc) text(x, y float64, s string, bold bool, size float64) float64 {
	start := x
	for _, r := range d.runs(s) {
		d.use(r.face, bold, size)
		d.pdf.Text(x, y, r.text)
		x += d.pdf.GetStringWidth(r.text)
	}
	return x - start
}

// span is inline text with a style.
type span struct {
	text string
	bold bool
}

// token is a unit of line breaking: a word, or a single wide (CJK)
// character, which may break anywhere.
type token struct {
	text  string
	bold  bool
	space bool // a space precedes it
	w     float64
}

func isWide(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) ||
		unicode.Is(unicode.Hangul, r) || r >= 0x3000 && r <= 0x303f || r >= 0xff00 && r <= 0xffef
}

func tokenize(spans []span) []token {
	var out []token
	space := false
	for _, sp := range spans {
		var word strings.Builder
		flush := func() {
			if word.Len() > 0 {
				out = append(out, token{text: word.String(), bold: sp.bold, space: space})
				word.Reset()
				space = false
			}
		}
		for _, r := range sp.text {
			switch {
			case unicode.IsSpace(r):
				flush()
				space = true
			case isWide(r):
				flush()
				out = append(out, token{text: string(r), bold: sp.bold, space: space})
				space = false
			default:
				word.WriteRune(r)
			}
		}
		flush()
	}
	return out
}

// wrap breaks tokens into lines no wider than width; a token wider than
// a line is split between characters.
func (d *doc) wrap(tokens []token, width, size float64) [][]token {
	var lines [][]token
	var line []token
	lw := 0.0
	spaceW := d.textWidth(" ", false, size)
	for _, t := range tokens {
		t.w = d.textWidth(t.text, t.bold, size)
		for t.w > width && utf8.RuneCountInString(t.text) > 1 {
			// Split the long token at the last character that fits on a
			// line of its own (after flushing the current line).
			if len(line) > 0 {
				lines = append(lines, line)
				line, lw = nil, 0
			}
			cut := d.fit(t.text, t.bold, size, width)
			head := token{text: t.text[:cut], bold: t.bold, space: t.space}
			head.w = d.textWidth(head.text, head.bold, size)
			lines = append(lines, []token{head})
			t.text, t.space = t.text[cut:], false
			t.w = d.textWidth(t.text, t.bold, size)
		}
		add := t.w
		if len(line) > 0 && t.space {
			add += spaceW
		}
		if len(line) > 0 && lw+add > width {
			lines = append(lines, line)
			line, lw = nil, 0
			add = t.w
		}
		line = append(line, t)
		lw += add
	}
	if len(line) > 0 {
		lines = append(lines, line)
	}
	return lines
}

// fit returns the byte length of the longest prefix of s (at least one
// character) that fits in width.
func (d *doc) fit(s string, bold bool, size, width float64) int {
	w := 0.0
	for i, r := range s {
		cw := d.textWidth(string(r), bold, size)
		if w+cw > width && i > 0 {
			return i
		}
		w += cw
	}
	return len(s)
}

// drawLine draws one wrapped line at baseline y from x.
func (d *doc) drawLine(x, y float64, line []token, size float64) {
	spaceW := d.textWidth(" ", false, size)
	for i, t := range line {
		if i > 0 && t.space {
			x += spaceW
		}
		x += d.text(x, y, t.text, t.bold, size)
	}
}

func lineText(line []token) string {
	var b strings.Builder
	for i, t := range line {
		if i > 0 && t.space {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}

// ellipsize cuts s so that s+"…" fits width.
func (d *doc) ellipsize(s string, bold bool, size, width float64) string {
	ell := "…"
	if d.fonts.FaceFor('…') < 0 {
		ell = "..."
	}
	ew := d.textWidth(ell, bold, size)
	if width <= ew {
		return ell
	}
	cut := d.fit(s, bold, size, width-ew)
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace) + ell
}

// newPage starts a page and puts the cursor at its top.
func (d *doc) newPage() {
	d.pdf.AddPage()
	d.y = d.top
}

// ensure starts a new page unless h mm fit below the cursor.
func (d *doc) ensure(h float64) {
	if d.y+h > d.bottom && d.y > d.top {
		d.newPage()
	}
}

// paragraph wraps and draws spans, prefix (a bullet) hanging in the
// indent; it returns the height used.
func (d *doc) paragraph(spans []span, size, indent float64, prefix string) {
	lh := size * ptToMM * 1.35
	lines := d.wrap(tokenize(spans), d.width()-indent, size)
	for i, line := range lines {
		d.ensure(lh)
		base := d.y + size*ptToMM
		if i == 0 && prefix != "" {
			d.text(d.left+indent-d.textWidth(prefix+" ", false, size), base, prefix, false, size)
		}
		d.drawLine(d.left+indent, base, line, size)
		d.y += lh
	}
}
