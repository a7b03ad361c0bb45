package domaintest

// This file is the conformance suite for domain.ArtifactStore
// implementations: content addressing (the hash is the SHA-256 of the
// bytes, a repeated Put is the same entry), tenant isolation (another
// tenant's hash is not found, deleting it there changes nothing here),
// media types (kept, sniffed when absent, rejected when malformed), the
// size limit (ErrTooLarge, nothing stored), errors for malformed input,
// cancellation, and concurrent writers of the same content.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/domain"
)

// ArtifactStoreSizeLimit is the maxSize the suite asks for when it tests the limit.
const ArtifactStoreSizeLimit = 1024

// RunArtifactStoreTests runs the suite. newStore must return an empty store, not shared with
// other calls, whose Put rejects content over maxSize bytes; the suite
// passes 0 when it does not care about the limit (use the store's
// default then). Subtests run in parallel.
func RunArtifactStoreTests(t *testing.T, newStore func(t *testing.T, maxSize int64) domain.ArtifactStore) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s domain.ArtifactStore)
		max  int64
	}{
		{"RoundTrip", storeRoundTrip, 0},
		{"SameContentSameEntry", storeSameContent, 0},
		{"TenantIsolation", storeTenantIsolation, 0},
		{"Delete", storeDeleteContent, 0},
		{"MediaTypes", storeMediaTypes, 0},
		{"SizeLimit", storeSizeLimit, ArtifactStoreSizeLimit},
		{"InvalidInput", storeInvalidInput, 0},
		{"Cancelled", storeCancelled, 0},
		{"ConcurrentPuts", storeConcurrentPuts, 0},
		{"EmptyContent", storeEmptyContent, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t, tc.max))
		})
	}
}

func storePut(t *testing.T, s domain.ArtifactStore, tenant string, meta domain.Artifact, b []byte) domain.Artifact {
	t.Helper()
	a, err := s.Put(t.Context(), tenant, meta, bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Put(%s): %v", tenant, err)
	}
	return a
}

func storeRead(t *testing.T, s domain.ArtifactStore, tenant, sum string) ([]byte, domain.Artifact) {
	t.Helper()
	rc, a, err := s.Get(t.Context(), tenant, sum)
	if err != nil {
		t.Fatalf("Get(%s, %s): %v", tenant, sum, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read content: %v", err)
	}
	return b, a
}

func storeRoundTrip(t *testing.T, s domain.ArtifactStore) {
	content := []byte("month,revenue\n2024-01,10\n")
	meta := domain.Artifact{Kind: domain.ArtifactTable, Name: "sales.csv", MediaType: "text/csv",
		Metadata: map[string]string{"rows": "1"}}
	a := storePut(t, s, "acme", meta, content)
	want := domain.ContentHash(content)
	if a.SHA256 != want || a.Size != int64(len(content)) || a.TenantID != "acme" {
		t.Errorf("Put = %+v; want sha %s size %d tenant acme", a, want, len(content))
	}
	if a.Kind != meta.Kind || a.Name != meta.Name || a.MediaType != "text/csv" || a.Metadata["rows"] != "1" {
		t.Errorf("Put lost the caller's metadata: %+v", a)
	}
	if a.URI != domain.ArtifactURI(want) || a.CreatedAt.IsZero() {
		t.Errorf("Put URI %q created %v", a.URI, a.CreatedAt)
	}
	if h, ok := domain.ArtifactSHA256FromURI(a.URI); !ok || h != want {
		t.Errorf("URI %q does not resolve to the hash", a.URI)
	}
	got, ga := storeRead(t, s, "acme", want)
	if !bytes.Equal(got, content) {
		t.Errorf("Get content = %q, want %q", got, content)
	}
	if ga.SHA256 != want || ga.Size != a.Size || ga.MediaType != "text/csv" || ga.TenantID != "acme" || ga.URI != a.URI {
		t.Errorf("Get artifact = %+v", ga)
	}
	st, err := s.Stat(t.Context(), "acme", want)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if st.SHA256 != want || st.Size != a.Size || st.MediaType != "text/csv" {
		t.Errorf("Stat = %+v", st)
	}
	// A hash that was never stored.
	other := domain.ContentHash([]byte("other"))
	if _, err := s.Stat(t.Context(), "acme", other); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Stat of unknown hash: %v, want ErrNotFound", err)
	}
	if _, _, err := s.Get(t.Context(), "acme", other); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Get of unknown hash: %v, want ErrNotFound", err)
	}
}

func storeSameContent(t *testing.T, s domain.ArtifactStore) {
	content := []byte("same bytes")
	a := storePut(t, s, "acme", domain.Artifact{MediaType: "text/plain"}, content)
	b := storePut(t, s, "acme", domain.Artifact{MediaType: "text/markdown"}, content)
	if a.SHA256 != b.SHA256 || a.URI != b.URI {
		t.Errorf("same content, different entries: %s / %s", a.SHA256, b.SHA256)
	}
	st, err := s.Stat(t.Context(), "acme", a.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(st.MediaType, "text/plain") {
		t.Errorf("media type after a second Put = %q, want the first (text/plain)", st.MediaType)
	}
	got, _ := storeRead(t, s, "acme", a.SHA256)
	if !bytes.Equal(got, content) {
		t.Errorf("content after a second Put = %q", got)
	}
}

func storeTenantIsolation(t *testing.T, s domain.ArtifactStore) {
	secret := []byte("acme's quarterly numbers")
	a := storePut(t, s, "acme", domain.Artifact{MediaType: "text/plain"}, secret)
	ctx := t.Context()
	// Another tenant knowing the hash gets nothing.
	if _, err := s.Stat(ctx, "globex", a.SHA256); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Stat from another tenant: %v, want ErrNotFound", err)
	}
	if rc, _, err := s.Get(ctx, "globex", a.SHA256); !errors.Is(err, domain.ErrNotFound) {
		if rc != nil {
			rc.Close()
		}
		t.Errorf("Get from another tenant: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "globex", a.SHA256); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Delete from another tenant: %v, want ErrNotFound", err)
	}
	// Tenant ids that a path-based store could confuse.
	for _, tenant := range []string{"../acme", "acme/..", "t_acme", "ACME", "acme.", "./acme"} {
		if _, err := s.Stat(ctx, tenant, a.SHA256); err == nil {
			t.Errorf("tenant %q reads acme's content", tenant)
		}
	}
	// The same bytes in the other tenant are its own entry: deleting
	// them there leaves acme's.
	storePut(t, s, "globex", domain.Artifact{MediaType: "text/plain"}, secret)
	if err := s.Delete(ctx, "globex", a.SHA256); err != nil {
		t.Fatalf("Delete in globex: %v", err)
	}
	if got, _ := storeRead(t, s, "acme", a.SHA256); !bytes.Equal(got, secret) {
		t.Errorf("acme's content after globex deleted its copy = %q", got)
	}
}

func storeDeleteContent(t *testing.T, s domain.ArtifactStore) {
	a := storePut(t, s, "acme", domain.Artifact{}, []byte("to be deleted"))
	keep := storePut(t, s, "acme", domain.Artifact{}, []byte("to be kept"))
	if err := s.Delete(t.Context(), "acme", a.SHA256); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Stat(t.Context(), "acme", a.SHA256); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Stat after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(t.Context(), "acme", a.SHA256); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
	if got, _ := storeRead(t, s, "acme", keep.SHA256); string(got) != "to be kept" {
		t.Errorf("other content after Delete = %q", got)
	}
	// Content can be stored again after a delete.
	again := storePut(t, s, "acme", domain.Artifact{MediaType: "text/plain"}, []byte("to be deleted"))
	if got, _ := storeRead(t, s, "acme", again.SHA256); string(got) != "to be deleted" {
		t.Errorf("content storePut again after Delete = %q", got)
	}
}

var storePngHeader = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00")

func storeMediaTypes(t *testing.T, s domain.ArtifactStore) {
	a := storePut(t, s, "acme", domain.Artifact{}, storePngHeader)
	if a.MediaType != domain.MediaTypePNG {
		t.Errorf("sniffed media type = %q, want %s", a.MediaType, domain.MediaTypePNG)
	}
	if st, err := s.Stat(t.Context(), "acme", a.SHA256); err != nil || st.MediaType != domain.MediaTypePNG {
		t.Errorf("Stat media type = %q, %v", st.MediaType, err)
	}
	x := storePut(t, s, "acme", domain.Artifact{MediaType: domain.MediaTypeXLSX}, []byte("PK\x03\x04 not really a workbook"))
	if st, _ := s.Stat(t.Context(), "acme", x.SHA256); st.MediaType != domain.MediaTypeXLSX {
		t.Errorf("declared media type = %q, want %s", st.MediaType, domain.MediaTypeXLSX)
	}
	for _, bad := range []string{"png", "image/png; charset", "not a type/", "/"} {
		_, err := s.Put(t.Context(), "acme", domain.Artifact{MediaType: bad}, strings.NewReader("x"))
		if !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Put with media type %q: %v, want ErrInvalid", bad, err)
		}
	}
}

func storeSizeLimit(t *testing.T, s domain.ArtifactStore) {
	ok := bytes.Repeat([]byte("a"), ArtifactStoreSizeLimit)
	if _, err := s.Put(t.Context(), "acme", domain.Artifact{}, bytes.NewReader(ok)); err != nil {
		t.Fatalf("Put of exactly the limit: %v", err)
	}
	big := bytes.Repeat([]byte("b"), ArtifactStoreSizeLimit+1)
	_, err := s.Put(t.Context(), "acme", domain.Artifact{}, bytes.NewReader(big))
	if !errors.Is(err, domain.ErrTooLarge) {
		t.Fatalf("Put over the limit: %v, want ErrTooLarge", err)
	}
	if !strings.Contains(err.Error(), "limit") {
		t.Errorf("error %q does not name the limit", err)
	}
	if _, err := s.Stat(t.Context(), "acme", domain.ContentHash(big)); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("content over the limit was stored: %v", err)
	}
}

func storeInvalidInput(t *testing.T, s domain.ArtifactStore) {
	ctx := t.Context()
	sum := domain.ContentHash([]byte("x"))
	for _, tenant := range []string{"", "has space", strings.Repeat("a", 129), "caf\u00e9"} {
		if _, err := s.Put(ctx, tenant, domain.Artifact{}, strings.NewReader("x")); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Put with tenant %q: %v, want ErrInvalid", tenant, err)
		}
		if _, err := s.Stat(ctx, tenant, sum); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Stat with tenant %q: %v, want ErrInvalid", tenant, err)
		}
	}
	for _, h := range []string{"", "abc", strings.ToUpper(sum), "../" + sum[3:], sum + "0", strings.Repeat("g", 64)} {
		if _, err := s.Stat(ctx, "acme", h); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Stat with hash %q: %v, want ErrInvalid", h, err)
		}
		if _, _, err := s.Get(ctx, "acme", h); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Get with hash %q: %v, want ErrInvalid", h, err)
		}
		if err := s.Delete(ctx, "acme", h); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Delete with hash %q: %v, want ErrInvalid", h, err)
		}
	}
}

// storeFailingReader returns some bytes and then an error.
type storeFailingReader struct{ n int }

func (f *storeFailingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("connection reset")
	}
	n := min(f.n, len(p))
	for i := range n {
		p[i] = 'z'
	}
	f.n -= n
	return n, nil
}

func storeCancelled(t *testing.T, s domain.ArtifactStore) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Put(ctx, "acme", domain.Artifact{}, strings.NewReader("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a storeCancelled context: %v", err)
	}
	if _, err := s.Stat(ctx, "acme", domain.ContentHash([]byte("x"))); !errors.Is(err, context.Canceled) {
		t.Errorf("Stat with a storeCancelled context: %v", err)
	}
	// A reader that fails half-way stores nothing.
	if _, err := s.Put(t.Context(), "acme", domain.Artifact{}, &storeFailingReader{n: 100}); err == nil {
		t.Error("Put from a failing reader succeeded")
	}
	if _, err := s.Stat(t.Context(), "acme", domain.ContentHash(bytes.Repeat([]byte("z"), 100))); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("partial content was stored: %v", err)
	}
}

func storeConcurrentPuts(t *testing.T, s domain.ArtifactStore) {
	content := bytes.Repeat([]byte("concurrent "), 10000)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			a, err := s.Put(t.Context(), "acme", domain.Artifact{MediaType: "text/plain"}, bytes.NewReader(content))
			if err == nil && a.SHA256 != domain.ContentHash(content) {
				err = fmt.Errorf("hash %s", a.SHA256)
			}
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := s.Put(t.Context(), "acme", domain.Artifact{}, strings.NewReader(fmt.Sprintf("distinct %d", i)))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Put: %v", err)
		}
	}
	if got, _ := storeRead(t, s, "acme", domain.ContentHash(content)); !bytes.Equal(got, content) {
		t.Errorf("content after concurrent puts has %d bytes, want %d", len(got), len(content))
	}
}

func storeEmptyContent(t *testing.T, s domain.ArtifactStore) {
	a := storePut(t, s, "acme", domain.Artifact{MediaType: "text/plain"}, nil)
	if a.Size != 0 || a.SHA256 != domain.ContentHash(nil) {
		t.Errorf("empty Put = %+v", a)
	}
	if got, _ := storeRead(t, s, "acme", a.SHA256); len(got) != 0 {
		t.Errorf("empty content storeRead back as %q", got)
	}
}
