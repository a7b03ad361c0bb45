package domain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
)

// ArtifactStore keeps the content of artifacts (chart images, workbooks,
// reports), addressed by the SHA-256 of the bytes within a tenant. The
// ArtifactRepository keeps the metadata; the store keeps the bytes.
//
// Content is tenant-scoped: the same bytes stored by two tenants are two
// entries, and one tenant's hash is not found in another tenant, so
// knowing a hash never grants access. Implementations must write
// atomically (a reader sees all of the content or none), enforce a size
// limit with an error matching ErrTooLarge, and be safe for concurrent
// use. Package domain/fsartifacts is the filesystem implementation;
// domaintest.RunArtifactStoreTests holds the conformance tests every
// implementation must pass.
type ArtifactStore interface {
	// Put reads content to EOF and stores it for tenantID. From meta it
	// keeps Kind, Name, MediaType and Metadata; it sets TenantID, SHA256,
	// Size, URI (see ArtifactURI) and CreatedAt, and sniffs MediaType from
	// the content when meta has none. Putting content that is already
	// stored succeeds; Stat and Get then report the media type of the
	// first Put. Errors: ErrInvalid
	// for a bad tenant id or media type, ErrTooLarge when the content
	// exceeds the store's limit (nothing is stored then).
	Put(ctx context.Context, tenantID string, meta Artifact, content io.Reader) (Artifact, error)
	// Get opens the content with the given hex SHA-256 in tenantID. The
	// caller must close the reader. The Artifact carries TenantID, SHA256,
	// Size, MediaType, URI and CreatedAt. Errors: ErrNotFound when the
	// tenant has no such content, ErrInvalid for a malformed hash.
	Get(ctx context.Context, tenantID, sha256 string) (io.ReadCloser, Artifact, error)
	// Stat is Get without the content.
	Stat(ctx context.Context, tenantID, sha256 string) (Artifact, error)
	// Delete removes the content from tenantID; ErrNotFound when absent.
	// Content is shared by every artifact of the tenant with the same
	// bytes, so delete it only when no artifact refers to it any more.
	Delete(ctx context.Context, tenantID, sha256 string) error
}

// ErrTooLarge reports content or input over a configured size limit. The
// concrete error names the limit.
var ErrTooLarge = errors.New("too large")

// Media types of the files bichat produces.
const (
	MediaTypePNG      = "image/png"
	MediaTypePDF      = "application/pdf"
	MediaTypeXLSX     = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	MediaTypeCSV      = "text/csv"
	MediaTypeJSON     = "application/json"
	MediaTypeVegaLite = "application/vnd.vegalite.v5+json"
	MediaTypeBinary   = "application/octet-stream"
)

// ArtifactURIPrefix starts every URI an ArtifactStore assigns.
const ArtifactURIPrefix = "artifact:sha256:"

// ArtifactURI returns the store-independent URI of content with the given
// hex SHA-256: "artifact:sha256:<hex>". The tenant is the artifact's
// TenantID; resolve the URI with ArtifactStore.Get in that tenant.
func ArtifactURI(sha256 string) string { return ArtifactURIPrefix + sha256 }

// ArtifactSHA256FromURI returns the hash of an ArtifactURI, and false when
// uri is not one.
func ArtifactSHA256FromURI(uri string) (string, bool) {
	h, ok := strings.CutPrefix(uri, ArtifactURIPrefix)
	if !ok || !ValidSHA256(h) {
		return "", false
	}
	return h, true
}

// ValidSHA256 reports whether s is a hex SHA-256 as ContentHash returns it:
// 64 lowercase hex digits.
func ValidSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// CheckMediaType returns the canonical form of a media type ("image/png",
// parameters kept) or an ErrInvalid error naming the problem. Stores call
// it on Put.
func CheckMediaType(mt string) (string, error) {
	base, params, err := mime.ParseMediaType(mt)
	if err != nil || !strings.Contains(base, "/") {
		return "", Invalid("media_type", fmt.Sprintf("%q is not a media type like image/png", mt))
	}
	return mime.FormatMediaType(base, params), nil
}

// CheckArtifactPut validates the arguments of ArtifactStore.Put the way
// every implementation must, and returns the canonical media type (empty
// when meta has none, for the store to sniff): a valid tenant id, a
// well-formed media type, non-nil content and a live context.
func CheckArtifactPut(ctx context.Context, tenantID string, meta Artifact, content io.Reader) (string, error) {
	if !ValidName(tenantID) {
		return "", Invalid("tenant_id", "must be 1 to 128 printable ASCII characters without spaces")
	}
	mediaType := meta.MediaType
	if mediaType != "" {
		var err error
		if mediaType, err = CheckMediaType(mediaType); err != nil {
			return "", err
		}
	}
	if content == nil {
		return "", Invalid("content", "is nil")
	}
	return mediaType, ctx.Err()
}

// ContextReader returns a reader that fails once ctx is done, so a long
// Put stops on cancellation.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
