package sandbox

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// MediaTypes maps the extensions of the files a job may produce to their
// media types. Files with other extensions are skipped.
var mediaTypes = map[string]string{
	".png":  "image/png",
	".svg":  "image/svg+xml",
	".csv":  "text/csv",
	".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".json": "application/json",
}

// MediaType returns the media type of a produced file name and whether
// the extension is one a job may return (png, svg, csv, xlsx, json).
func MediaType(name string) (string, bool) {
	t, ok := mediaTypes[strings.ToLower(path.Ext(name))]
	return t, ok
}

// Extensions lists the extensions of returnable files, sorted (".csv", ...).
func Extensions() []string {
	out := make([]string, 0, len(mediaTypes))
	for e := range mediaTypes {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

// Candidate is a file found in a job's working directory by an adapter,
// before the output policy is applied.
type Candidate struct {
	Name string // relative to the working directory, slash-separated
	// Regular is false for symlinks, devices, fifos and anything but a
	// plain file; Kind then says what it is.
	Regular bool
	Kind    string
	Size    int64
	Data    []byte // nil when not read (too large, not regular)
}

// CollectFiles applies the output policy shared by every adapter to the
// files found in a working directory: inputs, hidden files and
// directories ending in "/" are ignored; only regular files with a
// returnable extension (see MediaType) no larger than l.FileBytes are kept,
// at most l.Files of them in name order; the rest are listed in Skipped
// with the reason. l must have its defaults applied.
func CollectFiles(cands []Candidate, l Limits) ([]OutputFile, []Skipped) {
	sort.Slice(cands, func(i, j int) bool { return cands[i].Name < cands[j].Name })
	var files []OutputFile
	var skipped []Skipped
	for _, c := range cands {
		name := c.Name
		if name == "" || name == InputDir || strings.HasPrefix(name, InputDir+"/") || strings.HasSuffix(name, "/") {
			continue
		}
		if hidden(name) {
			continue
		}
		mt, ok := MediaType(name)
		switch {
		case !c.Regular:
			kind := c.Kind
			if kind == "" {
				kind = "not a regular file"
			}
			skipped = append(skipped, Skipped{name, kind + ": only regular files are returned"})
		case !ok:
			skipped = append(skipped, Skipped{name, fmt.Sprintf("extension not returned (allowed: %s)", strings.Join(Extensions(), ", "))})
		case c.Size > l.FileBytes || int64(len(c.Data)) > l.FileBytes:
			skipped = append(skipped, Skipped{name, fmt.Sprintf("larger than the %d-byte file limit", l.FileBytes)})
		case len(files) >= l.Files:
			skipped = append(skipped, Skipped{name, fmt.Sprintf("more than %d files", l.Files)})
		case int64(len(c.Data)) != c.Size:
			skipped = append(skipped, Skipped{name, "changed while being read"})
		default:
			files = append(files, OutputFile{Name: name, MediaType: mt, Size: c.Size, Data: c.Data})
		}
	}
	return files, skipped
}

func hidden(name string) bool {
	for _, p := range strings.Split(name, "/") {
		if strings.HasPrefix(p, ".") {
			return true
		}
	}
	return false
}

// CapText keeps the first max bytes of b (cut at a UTF-8 boundary) and,
// when total is larger than what is kept, appends a note saying how much
// was discarded. Adapters use it for stdout and stderr.
func CapText(b []byte, total int64, max int) string {
	if len(b) > max {
		b = b[:max]
	}
	// Do not cut a multi-byte character in half.
	for i := 0; i < 3 && total > int64(len(b)) && len(b) > 0; i++ {
		if r, n := utf8.DecodeLastRune(b); r != utf8.RuneError || n != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	s := string(b)
	if total > int64(len(b)) {
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		s += fmt.Sprintf("[output truncated: %d of %d bytes shown]\n", len(b), total)
	}
	return s
}
