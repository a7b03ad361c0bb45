package export

import (
	"regexp"
	"strings"
)

// block is a paragraph, a list item or a heading of light markdown.
type block struct {
	kind   blockKind
	marker string // "•" or "3." for list items
	text   string
}

type blockKind int

const (
	blockPara blockKind = iota
	blockItem
	blockHeading
)

var (
	bulletRE   = regexp.MustCompile(`^\s{0,3}[-*+•]\s+(.*)$`)
	numberedRE = regexp.MustCompile(`^\s{0,3}(\d{1,3})[.)]\s+(.*)$`)
	headingRE  = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
)

// parseMarkdown reads the light markdown export_pdf accepts: paragraphs
// separated by blank lines (single line breaks join), "- " / "* " bullet
// items, "1. " numbered items, "#" headings, **bold** inline.
func parseMarkdown(s string) []block {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	var out []block
	var cur *block
	flush := func() {
		if cur != nil && strings.TrimSpace(cur.text) != "" {
			cur.text = strings.TrimSpace(cur.text)
			out = append(out, *cur)
		}
		cur = nil
	}
	for _, line := range strings.Split(s, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			flush()
		case headingRE.MatchString(line):
			flush()
			out = append(out, block{kind: blockHeading, text: headingRE.FindStringSubmatch(line)[1]})
		case bulletRE.MatchString(line) && !strings.HasPrefix(trimmed, "**"):
			flush()
			cur = &block{kind: blockItem, marker: "•", text: bulletRE.FindStringSubmatch(line)[1]}
		case numberedRE.MatchString(line):
			flush()
			m := numberedRE.FindStringSubmatch(line)
			cur = &block{kind: blockItem, marker: m[1] + ".", text: m[2]}
		case cur != nil:
			cur.text += " " + trimmed
		default:
			cur = &block{kind: blockPara, text: trimmed}
		}
	}
	flush()
	return out
}

// inline splits text at ** (or __) markers into plain and bold spans and
// drops `code` backticks.
func inline(text string) []span {
	text = strings.ReplaceAll(text, "`", "")
	text = strings.ReplaceAll(text, "__", "**")
	parts := strings.Split(text, "**")
	if len(parts)%2 == 0 { // an unmatched marker is literal text
		parts[len(parts)-2] += "**" + parts[len(parts)-1]
		parts = parts[:len(parts)-1]
	}
	var out []span
	for i, p := range parts {
		if p != "" {
			out = append(out, span{text: p, bold: i%2 == 1})
		}
	}
	return out
}

// plainText is the text of light markdown without markers, for the glyph
// check.
func plainText(s string) string {
	var b strings.Builder
	for _, bl := range parseMarkdown(s) {
		b.WriteString(bl.marker)
		for _, sp := range inline(bl.text) {
			b.WriteString(sp.text)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
