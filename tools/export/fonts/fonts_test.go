package fonts_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/tools/export/fonts"
)

// systemFonts returns the fonts found on this machine, skipping (failing
// under BICHAT_REQUIRE_INTEGRATION=1) without DejaVu Sans and a CJK font.
func systemFonts(t *testing.T) ([]fonts.File, []string) {
	t.Helper()
	var dirs []string
	if d := os.Getenv("BICHAT_TEST_FONT_DIR"); d != "" {
		dirs = []string{d}
	}
	found := fonts.Find(dirs)
	if len(found) < 2 {
		msg := "need DejaVu Sans and a CJK TrueType font (Debian: fonts-dejavu-core, fonts-droid-fallback); run .ci/setup.d/30-documents.sh"
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return found, dirs
}

func TestFindAndCover(t *testing.T) {
	t.Parallel()
	found, dirs := systemFonts(t)
	if filepath.Base(found[0].Regular) != "DejaVuSans.ttf" || filepath.Base(found[0].Bold) != "DejaVuSans-Bold.ttf" {
		t.Errorf("primary font = %+v, want DejaVu Sans with its bold face", found[0])
	}
	set, err := fonts.Load(nil, dirs)
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range map[rune]int{'Z': 0, 'ü': 0, 'Ł': 0, 'ź': 0, 'Ж': 0, '東': 1, '京': 1, 'タ': 1} {
		if got := set.FaceFor(r); got != want {
			t.Errorf("FaceFor(%q) = %d, want %d", r, got, want)
		}
	}
	if m := set.Missing("Zürich Łódź 東京"); len(m) != 0 {
		t.Errorf("Missing = %q", m)
	}
	if m := fonts.MissingIn(set.Faces[0], "Zürich 東京 東"); !slices.Equal(m, []rune{'東', '京'}) {
		t.Errorf("MissingIn(DejaVu) = %q", m)
	}
	// A private-use character no font has.
	if m := set.Missing("a\ue000b"); !slices.Equal(m, []rune{'\ue000'}) {
		t.Errorf("Missing(private use) = %q", m)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := fonts.Load(nil, []string{dir})
	if !errors.Is(err, fonts.ErrNotFound) || !strings.Contains(err.Error(), "fonts-dejavu-core") || !strings.Contains(err.Error(), dir) {
		t.Errorf("Load from an empty dir: %v", err)
	}
	for name, content := range map[string]string{"a.otf": "OTTO....", "b.ttc": "ttcf....", "c.ttf": "<html>", "d.ttf": ""} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		if _, err := fonts.Load([]fonts.File{{Regular: p}}, nil); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Load(%s): %v", name, err)
		}
	}
	if _, err := fonts.Load([]fonts.File{{Regular: filepath.Join(dir, "none.ttf")}}, nil); err == nil {
		t.Error("Load of a missing file succeeded")
	}
	// Find skips unreadable and missing directories.
	if got := fonts.Find([]string{filepath.Join(dir, "missing"), dir}); len(got) != 0 {
		t.Errorf("Find = %v", got)
	}
}
