package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// DefaultArtifactMaxSize is the size limit of one artifact in an
// ArtifactStore whose MaxSize is 0.
const DefaultArtifactMaxSize = 64 << 20

// ArtifactStore is the in-memory domain.ArtifactStore: content lives in
// the process and is lost when it exits. It is the default of the service
// when no store is configured; use domain/fsartifacts to keep files.
type ArtifactStore struct {
	// MaxSize bounds one artifact in bytes: 0 means
	// DefaultArtifactMaxSize, negative means no limit.
	MaxSize int64
	// Now stamps CreatedAt (default time.Now).
	Now func() time.Time

	mu      sync.RWMutex
	content map[string]map[string]storedContent // tenant → sha → content
}

type storedContent struct {
	data      []byte
	mediaType string
	created   time.Time
}

// NewArtifactStore returns an empty store with the given size limit (see
// ArtifactStore.MaxSize).
func NewArtifactStore(maxSize int64) *ArtifactStore { return &ArtifactStore{MaxSize: maxSize} }

var _ domain.ArtifactStore = (*ArtifactStore)(nil)

func (s *ArtifactStore) limit() int64 {
	if s.MaxSize == 0 {
		return DefaultArtifactMaxSize
	}
	return s.MaxSize
}

func (s *ArtifactStore) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func checkTenant(tenantID string) error {
	if !domain.ValidName(tenantID) {
		return domain.Invalid("tenant_id", "must be 1 to 128 printable ASCII characters without spaces")
	}
	return nil
}

// Put implements domain.ArtifactStore.
func (s *ArtifactStore) Put(ctx context.Context, tenantID string, meta domain.Artifact, content io.Reader) (domain.Artifact, error) {
	mediaType, err := domain.CheckArtifactPut(ctx, tenantID, meta, content)
	if err != nil {
		return domain.Artifact{}, fmt.Errorf("memory: put artifact: %w", err)
	}
	src := domain.ContextReader(ctx, content)
	max := s.limit()
	if max >= 0 {
		src = io.LimitReader(src, max+1)
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, src)
	if err != nil {
		return domain.Artifact{}, fmt.Errorf("memory: put artifact: read content: %w", err)
	}
	if max >= 0 && n > max {
		return domain.Artifact{}, fmt.Errorf("memory: put artifact: content is over the %d-byte limit per artifact: %w", max, domain.ErrTooLarge)
	}
	data := buf.Bytes()
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	if mediaType == "" {
		mediaType, _ = domain.CheckMediaType(http.DetectContentType(data))
	}
	s.mu.Lock()
	if s.content == nil {
		s.content = make(map[string]map[string]storedContent)
	}
	t := s.content[tenantID]
	if t == nil {
		t = make(map[string]storedContent)
		s.content[tenantID] = t
	}
	c, exists := t[hash]
	if !exists {
		c = storedContent{data: bytes.Clone(data), mediaType: mediaType, created: s.now().UTC()}
		t[hash] = c
	}
	s.mu.Unlock()
	a := meta
	a.TenantID, a.SHA256, a.Size, a.MediaType, a.URI, a.CreatedAt = tenantID, hash, n, mediaType, domain.ArtifactURI(hash), c.created
	a.Metadata = maps.Clone(meta.Metadata)
	return a, nil
}

func (s *ArtifactStore) lookup(op, tenantID, sum string) (storedContent, error) {
	if err := checkTenant(tenantID); err != nil {
		return storedContent{}, fmt.Errorf("memory: %s artifact: %w", op, err)
	}
	if !domain.ValidSHA256(sum) {
		return storedContent{}, fmt.Errorf("memory: %s artifact: %w", op, domain.Invalid("sha256", "must be 64 lowercase hex digits"))
	}
	s.mu.RLock()
	c, ok := s.content[tenantID][sum]
	s.mu.RUnlock()
	if !ok {
		return storedContent{}, fmt.Errorf("memory: %s artifact %s: %w", op, sum, domain.ErrNotFound)
	}
	return c, nil
}

func describe(tenantID, sum string, c storedContent) domain.Artifact {
	return domain.Artifact{TenantID: tenantID, SHA256: sum, Size: int64(len(c.data)), MediaType: c.mediaType,
		URI: domain.ArtifactURI(sum), CreatedAt: c.created}
}

// Get implements domain.ArtifactStore.
func (s *ArtifactStore) Get(ctx context.Context, tenantID, sum string) (io.ReadCloser, domain.Artifact, error) {
	if err := ctx.Err(); err != nil {
		return nil, domain.Artifact{}, err
	}
	c, err := s.lookup("get", tenantID, sum)
	if err != nil {
		return nil, domain.Artifact{}, err
	}
	return io.NopCloser(bytes.NewReader(c.data)), describe(tenantID, sum, c), nil
}

// Stat implements domain.ArtifactStore.
func (s *ArtifactStore) Stat(ctx context.Context, tenantID, sum string) (domain.Artifact, error) {
	if err := ctx.Err(); err != nil {
		return domain.Artifact{}, err
	}
	c, err := s.lookup("stat", tenantID, sum)
	if err != nil {
		return domain.Artifact{}, err
	}
	return describe(tenantID, sum, c), nil
}

// Delete implements domain.ArtifactStore.
func (s *ArtifactStore) Delete(ctx context.Context, tenantID, sum string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := s.lookup("delete", tenantID, sum); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.content[tenantID], sum)
	s.mu.Unlock()
	return nil
}
