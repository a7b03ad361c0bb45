package fonts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/image/font/sfnt"
)

// File is a TrueType font on disk.
type File struct {
	// Regular is the path of the regular face.
	Regular string
	// Bold is the path of the bold face; empty means the regular face
	// serves for bold text too.
	Bold string
}

// Fonts searched for, by file name, in order of preference.
var (
	primary = []File{
		{Regular: "DejaVuSans.ttf", Bold: "DejaVuSans-Bold.ttf"},
		{Regular: "LiberationSans-Regular.ttf", Bold: "LiberationSans-Bold.ttf"},
		{Regular: "FreeSans.ttf", Bold: "FreeSansBold.ttf"},
		{Regular: "NotoSans-Regular.ttf", Bold: "NotoSans-Bold.ttf"},
		{Regular: "Arial.ttf", Bold: "Arial Bold.ttf"},
		{Regular: "arial.ttf", Bold: "arialbd.ttf"},
	}
	fallback = []File{
		{Regular: "DroidSansFallbackFull.ttf"},
		{Regular: "DroidSansFallback.ttf"},
		{Regular: "NotoSansSC-Regular.ttf", Bold: "NotoSansSC-Bold.ttf"},
		{Regular: "ipagp.ttf"},
		{Regular: "ipag.ttf"},
		{Regular: "NanumGothic.ttf", Bold: "NanumGothicBold.ttf"},
		{Regular: "Arial Unicode.ttf"},
	}
)

// DefaultDirs returns the system and user font directories of Linux,
// macOS and Windows that exist on this machine's OS.
func DefaultDirs() []string {
	dirs := []string{"/usr/share/fonts", "/usr/local/share/fonts"}
	home, herr := os.UserHomeDir()
	if herr == nil {
		dirs = append(dirs, filepath.Join(home, ".local", "share", "fonts"), filepath.Join(home, ".fonts"))
	}
	switch runtime.GOOS {
	case "darwin":
		dirs = append(dirs, "/Library/Fonts", "/System/Library/Fonts", "/System/Library/Fonts/Supplemental")
		if herr == nil {
			dirs = append(dirs, filepath.Join(home, "Library", "Fonts"))
		}
	case "windows":
		if windir := os.Getenv("WINDIR"); windir != "" {
			dirs = append(dirs, filepath.Join(windir, "Fonts"))
		}
	}
	return dirs
}

// Find searches dirs (recursively; DefaultDirs() when empty) and returns
// the first primary font found followed by every fallback font found.
func Find(dirs []string) []File {
	if len(dirs) == 0 {
		dirs = DefaultDirs()
	}
	paths := map[string]string{} // file name -> first path found
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if d != nil && d.IsDir() && p != dir {
					return fs.SkipDir
				}
				return nil
			}
			if !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".ttf") {
				if _, ok := paths[d.Name()]; !ok {
					paths[d.Name()] = p
				}
			}
			return nil
		})
	}
	var out []File
	for _, f := range primary {
		if p, ok := paths[f.Regular]; ok {
			out = append(out, File{Regular: p, Bold: paths[f.Bold]})
			break
		}
	}
	for _, f := range fallback {
		if p, ok := paths[f.Regular]; ok {
			out = append(out, File{Regular: p, Bold: paths[f.Bold]})
		}
	}
	return out
}

// Face is a loaded font.
type Face struct {
	// Name is the file name of the regular face.
	Name string
	// Regular and Bold are the font files' bytes (Bold may be Regular).
	Regular, Bold []byte
	// Font is the parsed regular face.
	Font *sfnt.Font
}

var buffers = sync.Pool{New: func() any { return new(sfnt.Buffer) }}

// Covers reports whether the face has a glyph for r.
func (f *Face) Covers(r rune) bool {
	buf := buffers.Get().(*sfnt.Buffer)
	i, err := f.Font.GlyphIndex(buf, r)
	buffers.Put(buf)
	return err == nil && i != 0
}

// Set is faces in order of preference. It is safe for concurrent use.
type Set struct {
	Faces []*Face
}

// ErrNotFound matches Load's error when no font was found.
var ErrNotFound = errors.New("no TrueType font found")

// Load reads files, or when files is empty the fonts Find finds in dirs.
func Load(files []File, dirs []string) (*Set, error) {
	if len(files) == 0 {
		files = Find(dirs)
		if len(files) == 0 {
			if len(dirs) == 0 {
				dirs = DefaultDirs()
			}
			return nil, fmt.Errorf("%w in %s: install DejaVu Sans (Debian: fonts-dejavu-core) and, for Chinese, Japanese and Korean, Droid Sans Fallback (fonts-droid-fallback), or configure the fonts to use", ErrNotFound, strings.Join(dirs, ", "))
		}
	}
	set := &Set{}
	for _, ff := range files {
		reg, err := ReadTTF(ff.Regular)
		if err != nil {
			return nil, err
		}
		bold := reg
		if ff.Bold != "" {
			if b, err := ReadTTF(ff.Bold); err == nil {
				bold = b
			}
		}
		parsed, err := sfnt.Parse(reg)
		if err != nil {
			return nil, fmt.Errorf("font %s: %w", ff.Regular, err)
		}
		set.Faces = append(set.Faces, &Face{Name: filepath.Base(ff.Regular), Regular: reg, Bold: bold, Font: parsed})
	}
	return set, nil
}

// ReadTTF reads a font file and checks that it has TrueType outlines.
func ReadTTF(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("font: %w", err)
	}
	switch {
	case bytes.HasPrefix(b, []byte("OTTO")):
		return nil, fmt.Errorf("font %s has OpenType/CFF outlines; TrueType (.ttf) is needed", path)
	case bytes.HasPrefix(b, []byte("ttcf")):
		return nil, fmt.Errorf("font %s is a font collection (.ttc); a single TrueType font (.ttf) is needed", path)
	case bytes.HasPrefix(b, []byte{0, 1, 0, 0}), bytes.HasPrefix(b, []byte("true")):
		return b, nil
	}
	return nil, fmt.Errorf("font %s is not a TrueType font", path)
}

// FaceFor returns the index of the first face that has r, or -1.
func (s *Set) FaceFor(r rune) int {
	for i, f := range s.Faces {
		if f.Covers(r) {
			return i
		}
	}
	return -1
}

// Missing returns the characters of texts that no face has (spaces and
// control characters aside), in order of appearance, at most 10.
func (s *Set) Missing(texts ...string) []rune {
	return missing(s.FaceFor, texts)
}

// MissingIn returns the characters of texts that face f lacks, like
// Set.Missing.
func MissingIn(f *Face, texts ...string) []rune {
	return missing(func(r rune) int {
		if f.Covers(r) {
			return 0
		}
		return -1
	}, texts)
}

func missing(faceFor func(rune) int, texts []string) []rune {
	seen := map[rune]bool{}
	var out []rune
	for _, t := range texts {
		for _, r := range t {
			if seen[r] || unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u200b' || r == '\ufeff' {
				continue
			}
			seen[r] = true
			if faceFor(r) < 0 {
				out = append(out, r)
				if len(out) == 10 {
					return out
				}
			}
		}
	}
	return out
}
