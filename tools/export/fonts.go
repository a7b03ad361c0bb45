package export

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bichat-go/bichat/tools/export/fonts"
)

// FontFile is a TrueType font export_pdf may embed. fpdf embeds TrueType
// outlines only: .ttf files, not OpenType/CFF (.otf) or collections (.ttc).
type FontFile = fonts.File

// errMissingGlyphs is matched by the error for characters no font has.
var errMissingGlyphs = errors.New("characters no available font can draw")

func missingError(set *fonts.Set, rs []rune) error {
	var q []string
	for _, r := range rs {
		q = append(q, fmt.Sprintf("%q (U+%04X)", string(r), r))
	}
	var names []string
	for _, f := range set.Faces {
		names = append(names, f.Name)
	}
	return fmt.Errorf("%w: %s; fonts available: %s. Remove or transliterate these characters, or ask the administrator to install a TrueType font that has them (e.g. Droid Sans Fallback, Debian package fonts-droid-fallback, for Chinese, Japanese and Korean)",
		errMissingGlyphs, strings.Join(q, ", "), strings.Join(names, ", "))
}
