package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/jackc/pgx/v5"
)

// Defaults of the ArtifactStore.
const (
	// DefaultArtifactMaxSize is the size limit of one artifact when the
	// store is made with maxSize 0: 64 MiB, as in domain/memory.
	DefaultArtifactMaxSize = 64 << 20
	// ChunkSize is the size of the bytea rows content is split into.
	ChunkSize = 256 << 10
)

// ArtifactStore is the PostgreSQL domain.ArtifactStore: content lives in
// the store's schema, one artifact_content row per distinct content of a
// tenant and its bytes in artifact_chunks rows of ChunkSize. Make it with
// Store.ArtifactStore. It is safe for concurrent use.
//
// Content is shared by the artifacts of a tenant with the same bytes and
// freed with the last of them: Store's DeleteArtifact and DeleteSession
// delete, in their own transaction, the content no remaining artifact
// row (ArtifactRepository) of the tenant refers to by SHA256.
type ArtifactStore struct {
	s       *Store
	maxSize int64
}

var _ domain.ArtifactStore = (*ArtifactStore)(nil)

// ArtifactStore returns the store's artifact content store. maxSize
// bounds one artifact in bytes: 0 means DefaultArtifactMaxSize, negative
// means no limit.
func (s *Store) ArtifactStore(maxSize int64) *ArtifactStore {
	if maxSize == 0 {
		maxSize = DefaultArtifactMaxSize
	}
	return &ArtifactStore{s: s, maxSize: maxSize}
}

// Put implements domain.ArtifactStore. It streams content in one
// transaction, chunk by chunk under a staging key, and renames the chunks
// to the content's hash at the end, so a reader sees the whole content or
// none and memory use stays at one chunk. Content already stored in the
// tenant is not written again (the first Put's media type is kept);
// concurrent Puts of the same content both succeed with one copy stored.
func (a *ArtifactStore) Put(ctx context.Context, tenantID string, meta domain.Artifact, content io.Reader) (domain.Artifact, error) {
	const op = "put artifact"
	mediaType, err := domain.CheckArtifactPut(ctx, tenantID, meta, content)
	if err != nil {
		return domain.Artifact{}, wrap(op, err)
	}
	s := a.s
	src := domain.ContextReader(ctx, content)
	if a.maxSize >= 0 {
		src = io.LimitReader(src, a.maxSize+1)
	}
	var out domain.Artifact
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		staging := "staging:" + domain.NewID()
		h := sha256.New()
		buf := make([]byte, ChunkSize)
		var size int64
		var chunks int32
		var head []byte
		for {
			n, rerr := io.ReadFull(src, buf)
			if n > 0 {
				size += int64(n)
				if a.maxSize >= 0 && size > a.maxSize {
					return fmt.Errorf("content is over the %d-byte limit per artifact: %w", a.maxSize, domain.ErrTooLarge)
				}
				h.Write(buf[:n])
				if head == nil {
					head = append([]byte(nil), buf[:min(n, 512)]...)
				}
				if _, err := tx.Exec(ctx, s.sql(`INSERT INTO {S}.artifact_chunks (tenant_id, sha256, idx, data)
					VALUES ($1, $2, $3, $4)`), tenantID, staging, chunks, buf[:n]); err != nil {
					return fmt.Errorf("write chunk %d: %w", chunks, err)
				}
				chunks++
			}
			if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
				break
			}
			if rerr != nil {
				return fmt.Errorf("read content: %w", rerr)
			}
		}
		hash := hex.EncodeToString(h.Sum(nil))
		if mediaType == "" {
			mediaType, _ = domain.CheckMediaType(http.DetectContentType(head))
		}
		created := now()
		// Inserting the content row first claims the hash: a concurrent
		// Put of the same bytes waits here and then finds it taken.
		tag, err := tx.Exec(ctx, s.sql(`INSERT INTO {S}.artifact_content (tenant_id, sha256, size, media_type, chunks, created_at)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, sha256) DO NOTHING`),
			tenantID, hash, size, mediaType, chunks, created)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			// Already stored: drop the staged chunks, report the stored entry.
			if _, err := tx.Exec(ctx, s.sql(`DELETE FROM {S}.artifact_chunks WHERE tenant_id = $1 AND sha256 = $2`),
				tenantID, staging); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, s.sql(`SELECT media_type, created_at FROM {S}.artifact_content
				WHERE tenant_id = $1 AND sha256 = $2`), tenantID, hash).Scan(&mediaType, &created); err != nil {
				return err
			}
		} else if _, err := tx.Exec(ctx, s.sql(`UPDATE {S}.artifact_chunks SET sha256 = $3
			WHERE tenant_id = $1 AND sha256 = $2`), tenantID, staging, hash); err != nil {
			return err
		}
		out = meta
		out.TenantID, out.SHA256, out.Size, out.MediaType, out.URI, out.CreatedAt =
			tenantID, hash, size, mediaType, domain.ArtifactURI(hash), created
		out.Metadata = maps.Clone(meta.Metadata)
		return nil
	})
	if err != nil {
		return domain.Artifact{}, wrap(op, err)
	}
	return out, nil
}

func (a *ArtifactStore) check(op, tenantID, sum string) error {
	if !domain.ValidName(tenantID) {
		return wrap(op, domain.Invalid("tenant_id", "must be 1 to 128 printable ASCII characters without spaces"))
	}
	if !domain.ValidSHA256(sum) {
		return wrap(op, domain.Invalid("sha256", "must be 64 lowercase hex digits"))
	}
	return nil
}

// Stat implements domain.ArtifactStore.
func (a *ArtifactStore) Stat(ctx context.Context, tenantID, sum string) (domain.Artifact, error) {
	const op = "stat artifact"
	if err := ctx.Err(); err != nil {
		return domain.Artifact{}, wrap(op, err)
	}
	if err := a.check(op, tenantID, sum); err != nil {
		return domain.Artifact{}, err
	}
	art, _, err := a.stat(ctx, tenantID, sum)
	if err != nil {
		return domain.Artifact{}, fmt.Errorf("postgres: %s %s: %w", op, sum, err)
	}
	return art, nil
}

func (a *ArtifactStore) stat(ctx context.Context, tenantID, sum string) (domain.Artifact, int32, error) {
	art := domain.Artifact{TenantID: tenantID, SHA256: sum, URI: domain.ArtifactURI(sum)}
	var chunks int32
	err := a.s.pool.QueryRow(ctx, a.s.sql(`SELECT size, media_type, chunks, created_at FROM {S}.artifact_content
		WHERE tenant_id = $1 AND sha256 = $2`), tenantID, sum).Scan(&art.Size, &art.MediaType, &chunks, &art.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return art, 0, domain.ErrNotFound
	}
	return art, chunks, err
}

// Get implements domain.ArtifactStore. The reader fetches one chunk per
// query as it is read, so memory use stays at one chunk; it fails if the
// content is deleted while being read.
func (a *ArtifactStore) Get(ctx context.Context, tenantID, sum string) (io.ReadCloser, domain.Artifact, error) {
	const op = "get artifact"
	if err := ctx.Err(); err != nil {
		return nil, domain.Artifact{}, wrap(op, err)
	}
	if err := a.check(op, tenantID, sum); err != nil {
		return nil, domain.Artifact{}, err
	}
	art, chunks, err := a.stat(ctx, tenantID, sum)
	if err != nil {
		return nil, domain.Artifact{}, fmt.Errorf("postgres: %s %s: %w", op, sum, err)
	}
	return &chunkReader{ctx: ctx, a: a, tenant: tenantID, sum: sum, chunks: chunks}, art, nil
}

// Delete implements domain.ArtifactStore: it removes the content whether
// or not artifacts still refer to it.
func (a *ArtifactStore) Delete(ctx context.Context, tenantID, sum string) error {
	const op = "delete artifact"
	if err := ctx.Err(); err != nil {
		return wrap(op, err)
	}
	if err := a.check(op, tenantID, sum); err != nil {
		return err
	}
	s := a.s
	var n int64
	err := s.pool.QueryRow(ctx, s.sql(`WITH gone AS (
			DELETE FROM {S}.artifact_content WHERE tenant_id = $1 AND sha256 = $2 RETURNING sha256),
		chunks AS (DELETE FROM {S}.artifact_chunks WHERE tenant_id = $1 AND sha256 IN (SELECT sha256 FROM gone))
		SELECT count(*) FROM gone`), tenantID, sum).Scan(&n)
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", op, sum, err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: %s %s: %w", op, sum, domain.ErrNotFound)
	}
	return nil
}

// chunkReader reads content chunk by chunk.
type chunkReader struct {
	ctx         context.Context
	a           *ArtifactStore
	tenant, sum string
	chunks      int32
	next        int32
	buf         []byte
	closed      bool
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, errors.New("postgres: read artifact: reader is closed")
	}
	for len(r.buf) == 0 {
		if r.next >= r.chunks {
			return 0, io.EOF
		}
		ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
		err := r.a.s.pool.QueryRow(ctx, r.a.s.sql(`SELECT data FROM {S}.artifact_chunks
			WHERE tenant_id = $1 AND sha256 = $2 AND idx = $3`), r.tenant, r.sum, r.next).Scan(&r.buf)
		cancel()
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("postgres: read artifact %s: chunk %d: %w (deleted while being read)", r.sum, r.next, domain.ErrNotFound)
		}
		if err != nil {
			return 0, fmt.Errorf("postgres: read artifact %s: chunk %d: %w", r.sum, r.next, err)
		}
		r.next++
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *chunkReader) Close() error {
	r.closed = true
	r.buf = nil
	return nil
}
