package domain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
)

func TestArtifactURI(t *testing.T) {
	t.Parallel()
	sum := domain.ContentHash([]byte("chart"))
	uri := domain.ArtifactURI(sum)
	if uri != "artifact:sha256:"+sum {
		t.Errorf("ArtifactURI = %q", uri)
	}
	if got, ok := domain.ArtifactSHA256FromURI(uri); !ok || got != sum {
		t.Errorf("ArtifactSHA256FromURI(%q) = %q, %v", uri, got, ok)
	}
	for _, bad := range []string{"", sum, "artifact:sha256:" + strings.ToUpper(sum), "artifact:sha256:../x", "file:///etc/passwd"} {
		if _, ok := domain.ArtifactSHA256FromURI(bad); ok {
			t.Errorf("ArtifactSHA256FromURI(%q) accepted", bad)
		}
	}
}

func TestValidSHA256(t *testing.T) {
	t.Parallel()
	if !domain.ValidSHA256(domain.ContentHash(nil)) {
		t.Error("ContentHash output rejected")
	}
	for _, bad := range []string{"", "00", strings.Repeat("0", 63), strings.Repeat("0", 65), strings.Repeat("G", 64), strings.Repeat("A", 64)} {
		if domain.ValidSHA256(bad) {
			t.Errorf("ValidSHA256(%q) = true", bad)
		}
	}
}

func TestCheckMediaType(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"image/png":                   "image/png",
		"Text/CSV; Charset=utf-8":     "text/csv; charset=utf-8",
		domain.MediaTypeXLSX:          domain.MediaTypeXLSX,
		domain.MediaTypeVegaLite:      domain.MediaTypeVegaLite,
		"application/pdf ; a=\"b c\"": "application/pdf; a=\"b c\"",
	} {
		got, err := domain.CheckMediaType(in)
		if err != nil || got != want {
			t.Errorf("CheckMediaType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "png", "/", "a b/c"} {
		_, err := domain.CheckMediaType(bad)
		if !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("CheckMediaType(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
