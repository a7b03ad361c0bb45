package memory_test

import (
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/domaintest"
	"github.com/bichat-go/bichat/domain/memory"
)

func TestDataSources(t *testing.T) {
	t.Parallel()
	domaintest.RunDataSourceTests(t, func(t *testing.T) domain.DataSourceRepository {
		return memory.NewDataSources()
	})
}
