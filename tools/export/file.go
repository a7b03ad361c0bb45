package export

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/bichat-go/bichat/domain"
)

// File is the Payload of export_excel and export_pdf: the produced file,
// saved in the artifact store, and what it holds.
type File struct {
	// Artifact is the stored file (Kind, Name, MediaType, SHA256, Size, URI).
	Artifact domain.Artifact `json:"artifact"`
	// Content is the file itself, for hosts that handle it in process.
	Content []byte `json:"-"`
	// Sheets describes a workbook's sheets (export_excel).
	Sheets []SheetInfo `json:"sheets,omitempty"`
	// Pages is the page count of a report (export_pdf).
	Pages int `json:"pages,omitempty"`
	// Notes lists caps and renames the model was told about.
	Notes []string `json:"notes,omitempty"`
}

// fileName turns a title into a download name: letters, digits, '-', '_'
// and '.' kept (any script), other runs become '_', at most 80 runes.
func fileName(title, ext, fallback string) string {
	var b strings.Builder
	n := 0
	under := false
	for _, r := range strings.TrimSpace(title) {
		if n >= 80 {
			break
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '.' {
			b.WriteRune(r)
			under = false
		} else if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		} else {
			continue
		}
		n++
	}
	name := strings.Trim(b.String(), "._")
	if name == "" {
		name = fallback
	}
	return name + ext
}

// thousands formats n with comma separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
