package postgres_test

import (
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/domaintest"
	"github.com/bichat-go/bichat/domain/postgres"
)

// suiteOptions keeps the result limits small so the suite is fast; the
// store is configured with the same values.
var suiteOptions = domaintest.Options{ResultsKeep: 3, ResultBytes: 4096}

func suiteStoreOptions() postgres.Options {
	return postgres.Options{ResultsPerSession: suiteOptions.ResultsKeep, MaxResultBytes: suiteOptions.ResultBytes}
}

func TestRepositories(t *testing.T) {
	testPool(t)
	domaintest.RunRepositoryTests(t, func(t *testing.T) domain.Repositories {
		return newStore(t, suiteStoreOptions()).Repositories()
	}, suiteOptions)
}

func TestArtifactStore(t *testing.T) {
	testPool(t)
	domaintest.RunArtifactStoreTests(t, func(t *testing.T, maxSize int64) domain.ArtifactStore {
		return newStore(t, postgres.Options{}).ArtifactStore(maxSize)
	})
}
