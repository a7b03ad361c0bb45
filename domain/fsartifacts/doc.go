// Package fsartifacts is the filesystem domain.ArtifactStore: artifact
// content (chart images, workbooks, reports) kept in a directory,
// addressed by SHA-256 within each tenant.
//
// All access goes through an os.Root opened on the directory, so neither
// a tenant id nor a hash nor a symbolic link planted in the directory can
// reach a file outside it. Writes go to a temporary file in the tenant's
// tmp folder, are synced and renamed into place, so readers never see
// partial content and a failed or cancelled Put leaves nothing behind.
// Content over Options.MaxSize is rejected with an error matching
// domain.ErrTooLarge.
//
// domaintest.RunArtifactStoreTests is the conformance suite for any
// domain.ArtifactStore; this package runs it.
package fsartifacts
