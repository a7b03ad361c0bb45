package memory_test

import (
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/domaintest"
	"github.com/bichat-go/bichat/domain/memory"
)

func TestArtifactStoreConformance(t *testing.T) {
	domaintest.RunArtifactStoreTests(t, func(t *testing.T, maxSize int64) domain.ArtifactStore {
		return memory.NewArtifactStore(maxSize)
	})
}
