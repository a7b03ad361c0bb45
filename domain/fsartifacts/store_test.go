package fsartifacts_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/domaintest"
	"github.com/bichat-go/bichat/domain/fsartifacts"
)

func open(t *testing.T, dir string, max int64) *fsartifacts.Store {
	t.Helper()
	s, err := fsartifacts.Open(dir, fsartifacts.Options{MaxSize: max})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	domaintest.RunArtifactStoreTests(t, func(t *testing.T, max int64) domain.ArtifactStore {
		return open(t, t.TempDir(), max)
	})
}

// TestNoTempFilesLeft: failed, oversized and successful puts leave no
// temporary file behind; only content and media type files remain.
func TestNoTempFilesLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, 100)
	ctx := t.Context()
	if _, err := s.Put(ctx, "acme", domain.Artifact{}, strings.NewReader("ok")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "acme", domain.Artifact{}, bytes.NewReader(make([]byte, 101))); !errors.Is(err, domain.ErrTooLarge) {
		t.Fatalf("oversized put: %v", err)
	}
	if _, err := s.Put(ctx, "acme", domain.Artifact{}, iotestErr{}); err == nil {
		t.Fatal("failing reader: no error")
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	sum := domain.ContentHash([]byte("ok"))
	want := []string{"t_acme/" + sum[:2] + "/" + sum, "t_acme/" + sum[:2] + "/" + sum + ".type"}
	if strings.Join(files, ",") != strings.Join(want, ",") {
		t.Errorf("files = %v, want %v", files, want)
	}
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("boom") }

// TestSymlinkOutsideRoot: a link planted in the store pointing outside it
// is not followed, so a stored hash cannot be made to serve /etc/passwd.
func TestSymlinkOutsideRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := domain.ContentHash([]byte("secret"))
	if err := os.MkdirAll(filepath.Join(dir, "t_acme", sum[:2]), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "t_acme", sum[:2], sum)); err != nil {
		t.Fatal(err)
	}
	// A tenant directory that is itself a link out of the root.
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "t_evil")); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir, 0)
	if _, _, err := s.Get(t.Context(), "acme", sum); err == nil {
		t.Error("Get followed a symlink out of the store")
	}
	if _, err := s.Put(t.Context(), "evil", domain.Artifact{}, strings.NewReader("x")); err == nil {
		t.Error("Put wrote through a symlinked tenant directory")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(outside), "tmp")); err == nil {
		t.Error("Put created a folder outside the store")
	}
}

// TestTenantDirectories: ids that are not plain names are hashed, so no id
// can name a path.
func TestTenantDirectories(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, 0)
	for _, tenant := range []string{"../../etc", "a/b", "..", "C:x"} {
		if _, err := s.Put(t.Context(), tenant, domain.Artifact{}, strings.NewReader(tenant)); err != nil {
			t.Fatalf("Put(%q): %v", tenant, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Fatalf("%d tenant folders, want 4", len(entries))
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "h_") || len(e.Name()) != 66 {
			t.Errorf("tenant folder %q is not a hashed name", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "etc")); err == nil {
		t.Error("a tenant id wrote outside the store")
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	if _, err := fsartifacts.Open("", fsartifacts.Options{}); err == nil {
		t.Error("Open(\"\") succeeded")
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := fsartifacts.Open(file, fsartifacts.Options{}); err == nil {
		t.Error("Open(a file) succeeded")
	}
	s := open(t, t.TempDir(), 0)
	if s.MaxSize() != fsartifacts.DefaultMaxSize {
		t.Errorf("MaxSize = %d", s.MaxSize())
	}
}
