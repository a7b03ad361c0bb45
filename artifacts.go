package bichat

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/bichat-go/bichat/domain"
)

// ArtifactStore returns the store that keeps artifact content. Give the
// same store to the tools that produce files (draw_chart, export_excel,
// export_pdf, run_python) so the service can serve what they made.
func (s *Service) ArtifactStore() domain.ArtifactStore { return s.cfg.ArtifactStore }

// ArtifactContent opens the content of an artifact of one of the
// principal's messages. The caller must close the reader. The returned
// Artifact is the stored metadata (name, media type, size, hash), enough
// for a download response: Content-Type from MediaType and
// Content-Disposition from Name.
//
// Errors: domain.ErrForbidden without read permission, domain.ErrInvalid
// for a malformed id, domain.ErrNotFound when the artifact does not exist,
// belongs to another tenant or user, or its content is no longer stored.
func (s *Service) ArtifactContent(ctx context.Context, p domain.Principal, artifactID string) (io.ReadCloser, domain.Artifact, error) {
	if err := authorize(p, domain.PermRead); err != nil {
		return nil, domain.Artifact{}, err
	}
	if err := checkID("artifact_id", artifactID); err != nil {
		return nil, domain.Artifact{}, err
	}
	a, err := s.repos.Artifacts.GetArtifact(ctx, p.TenantID, artifactID)
	if err != nil {
		return nil, domain.Artifact{}, lookupErr("load artifact", "artifact", err)
	}
	if _, err := s.ownedSession(ctx, p, a.SessionID); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			err = notFound("artifact")
		}
		return nil, domain.Artifact{}, err
	}
	if a.SHA256 == "" {
		return nil, domain.Artifact{}, fmt.Errorf("bichat: artifact %s has no stored content: %w", artifactID, domain.ErrNotFound)
	}
	rc, _, err := s.cfg.ArtifactStore.Get(ctx, p.TenantID, a.SHA256)
	if err != nil {
		return nil, domain.Artifact{}, fmt.Errorf("bichat: artifact %s content: %w", artifactID, err)
	}
	return rc, *a, nil
}
