package fsartifacts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// DefaultMaxSize is the size limit of one artifact when Options.MaxSize is 0.
const DefaultMaxSize = 64 << 20

// Options configures Open.
type Options struct {
	// MaxSize bounds the content of one Put in bytes; 0 means
	// DefaultMaxSize, a negative value means no limit.
	MaxSize int64
	// Now returns the time stamped on new content; nil means time.Now.
	Now func() time.Time
}

// Store is the filesystem domain.ArtifactStore. Every file access goes
// through an os.Root opened on the store's directory, so no tenant id,
// hash or planted symbolic link can reach outside it.
//
// Layout: <root>/<tenant>/<hash[:2]>/<hash> holds the content and
// <hash>.type its media type; <root>/<tenant>/tmp holds writes in
// progress, which are renamed into place when complete. <tenant> is "t_"
// plus the tenant id when that is made of letters, digits, '-' and '_'
// (at most 64 bytes), and "h_" plus the SHA-256 of the id otherwise.
type Store struct {
	root    *os.Root
	maxSize int64
	now     func() time.Time
}

var _ domain.ArtifactStore = (*Store)(nil)

// Open opens (creating it when missing) the store in directory dir.
// Close releases it.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("fsartifacts: open: empty directory")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("fsartifacts: open: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("fsartifacts: open: %w", err)
	}
	s := &Store{root: root, maxSize: opts.MaxSize, now: opts.Now}
	if s.maxSize == 0 {
		s.maxSize = DefaultMaxSize
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Close releases the directory handle. Calls after Close fail.
func (s *Store) Close() error { return s.root.Close() }

// MaxSize returns the size limit of one artifact in bytes (negative: none).
func (s *Store) MaxSize() int64 { return s.maxSize }

var plainTenant = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func tenantDir(tenantID string) (string, error) {
	if !domain.ValidName(tenantID) {
		return "", domain.Invalid("tenant_id", "must be 1 to 128 printable ASCII characters without spaces")
	}
	if plainTenant.MatchString(tenantID) {
		return "t_" + tenantID, nil
	}
	sum := sha256.Sum256([]byte(tenantID))
	return "h_" + hex.EncodeToString(sum[:]), nil
}

func contentPath(tdir, sum string) string { return path.Join(tdir, sum[:2], sum) }

func checkHash(sum string) error {
	if !domain.ValidSHA256(sum) {
		return domain.Invalid("sha256", "must be 64 lowercase hex digits")
	}
	return nil
}

// Put implements domain.ArtifactStore.
func (s *Store) Put(ctx context.Context, tenantID string, meta domain.Artifact, content io.Reader) (domain.Artifact, error) {
	mediaType, err := domain.CheckArtifactPut(ctx, tenantID, meta, content)
	if err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: put: %w", err)
	}
	tdir, err := tenantDir(tenantID)
	if err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: put: %w", err)
	}
	tmpDir := path.Join(tdir, "tmp")
	if err := s.root.MkdirAll(tmpDir, 0o750); err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: put: %w", err)
	}
	tmpName, f, err := s.createTemp(tmpDir)
	if err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: put: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			s.root.Remove(tmpName)
		}
	}()

	h := sha256.New()
	var sniff sniffBuffer
	src := io.Reader(domain.ContextReader(ctx, content))
	if s.maxSize >= 0 {
		src = io.LimitReader(src, s.maxSize+1)
	}
	n, err := io.Copy(io.MultiWriter(f, h, &sniff), src)
	if err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: put: read content: %w", err)
	}
	if s.maxSize >= 0 && n > s.maxSize {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: put: content is over the %s limit per artifact: %w", humanSize(s.maxSize), domain.ErrTooLarge)
	}
	if err := f.Sync(); err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: put: %w", err)
	}
	if err := f.Close(); err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: put: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if mediaType == "" {
		mediaType, _ = domain.CheckMediaType(http.DetectContentType(sniff.b))
	}
	final := contentPath(tdir, sum)
	if err := s.root.MkdirAll(path.Dir(final), 0o750); err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: put: %w", err)
	}
	// The media type goes first, so content that is visible always has one.
	if _, err := s.root.Stat(final + ".type"); errors.Is(err, fs.ErrNotExist) {
		if err := s.writeAtomic(tmpDir, final+".type", []byte(mediaType)); err != nil {
			return domain.Artifact{}, fmt.Errorf("fsartifacts: put: %w", err)
		}
	} else if err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: put: %w", err)
	}
	if err := s.root.Rename(tmpName, final); err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: put: %w", err)
	}
	committed = true
	now := s.now().UTC()
	_ = s.root.Chtimes(final, now, now)
	a := meta
	a.TenantID = tenantID
	a.SHA256 = sum
	a.Size = n
	a.MediaType = mediaType
	a.URI = domain.ArtifactURI(sum)
	a.CreatedAt = now
	if meta.Metadata != nil {
		a.Metadata = make(map[string]string, len(meta.Metadata))
		for k, v := range meta.Metadata {
			a.Metadata[k] = v
		}
	}
	return a, nil
}

func (s *Store) createTemp(dir string) (string, *os.File, error) {
	for range 10 {
		var b [12]byte
		rand.Read(b[:])
		name := path.Join(dir, hex.EncodeToString(b[:])+".part")
		f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, errors.New("cannot create a temporary file")
}

func (s *Store) writeAtomic(tmpDir, name string, b []byte) error {
	tmp, f, err := s.createTemp(tmpDir)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		s.root.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		s.root.Remove(tmp)
		return err
	}
	if err := s.root.Rename(tmp, name); err != nil {
		s.root.Remove(tmp)
		return err
	}
	return nil
}

// Get implements domain.ArtifactStore.
func (s *Store) Get(ctx context.Context, tenantID, sum string) (io.ReadCloser, domain.Artifact, error) {
	tdir, err := s.check(ctx, tenantID, sum)
	if err != nil {
		return nil, domain.Artifact{}, fmt.Errorf("fsartifacts: get: %w", err)
	}
	f, err := s.root.Open(contentPath(tdir, sum))
	if err != nil {
		return nil, domain.Artifact{}, fmt.Errorf("fsartifacts: get: %w", notFound(err, sum))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, domain.Artifact{}, fmt.Errorf("fsartifacts: get: %w", err)
	}
	a, err := s.describe(tenantID, tdir, sum, fi)
	if err != nil {
		f.Close()
		return nil, domain.Artifact{}, fmt.Errorf("fsartifacts: get: %w", err)
	}
	return f, a, nil
}

// Stat implements domain.ArtifactStore.
func (s *Store) Stat(ctx context.Context, tenantID, sum string) (domain.Artifact, error) {
	tdir, err := s.check(ctx, tenantID, sum)
	if err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: stat: %w", err)
	}
	fi, err := s.root.Stat(contentPath(tdir, sum))
	if err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: stat: %w", notFound(err, sum))
	}
	a, err := s.describe(tenantID, tdir, sum, fi)
	if err != nil {
		return domain.Artifact{}, fmt.Errorf("fsartifacts: stat: %w", err)
	}
	return a, nil
}

// Delete implements domain.ArtifactStore.
func (s *Store) Delete(ctx context.Context, tenantID, sum string) error {
	tdir, err := s.check(ctx, tenantID, sum)
	if err != nil {
		return fmt.Errorf("fsartifacts: delete: %w", err)
	}
	p := contentPath(tdir, sum)
	if err := s.root.Remove(p); err != nil {
		return fmt.Errorf("fsartifacts: delete: %w", notFound(err, sum))
	}
	if err := s.root.Remove(p + ".type"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fsartifacts: delete: %w", err)
	}
	return nil
}

func (s *Store) check(ctx context.Context, tenantID, sum string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	tdir, err := tenantDir(tenantID)
	if err != nil {
		return "", err
	}
	return tdir, checkHash(sum)
}

func (s *Store) describe(tenantID, tdir, sum string, fi fs.FileInfo) (domain.Artifact, error) {
	if !fi.Mode().IsRegular() {
		return domain.Artifact{}, fmt.Errorf("content %s is not a regular file", sum)
	}
	mt := domain.MediaTypeBinary
	if b, err := s.root.ReadFile(contentPath(tdir, sum) + ".type"); err == nil {
		if c, err := domain.CheckMediaType(strings.TrimSpace(string(b))); err == nil {
			mt = c
		}
	}
	return domain.Artifact{
		TenantID:  tenantID,
		SHA256:    sum,
		Size:      fi.Size(),
		MediaType: mt,
		URI:       domain.ArtifactURI(sum),
		CreatedAt: fi.ModTime().UTC(),
	}, nil
}

func notFound(err error, sum string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no content %s in this tenant: %w", sum, domain.ErrNotFound)
	}
	return err
}

// sniffBuffer keeps the first 512 bytes written, what
// http.DetectContentType looks at.
type sniffBuffer struct{ b []byte }

func (s *sniffBuffer) Write(p []byte) (int, error) {
	if room := 512 - len(s.b); room > 0 {
		s.b = append(s.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
