package postgres_test

import (
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/domaintest"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/jackc/pgx/v5"
)

func TestDataSources(t *testing.T) {
	testPool(t)
	domaintest.RunDataSourceTests(t, func(t *testing.T) domain.DataSourceRepository {
		return newStore(t, postgres.Options{})
	})
}

// TestDataSourceRowIsOpaque reads the table directly: what the store
// writes is exactly the sealed text it was given, in the columns the
// migration declares.
func TestDataSourceRowIsOpaque(t *testing.T) {
	t.Parallel()
	s := newStore(t, postgres.Options{})
	ctx := t.Context()
	ds := &domain.DataSource{ID: domain.NewID(), TenantID: "acme", Name: "warehouse", Dialect: domain.DataSourcePostgres,
		SealedConfig: "v1.k1.c2VhbGVk", KeyID: "k1"}
	if err := s.CreateDataSource(ctx, ds); err != nil {
		t.Fatal(err)
	}
	var sealed, keyID, dialect string
	err := testPool(t).QueryRow(ctx, "SELECT sealed_config, key_id, dialect FROM "+pgx.Identifier{s.Schema(), "datasources"}.Sanitize()+
		" WHERE tenant_id = $1 AND id = $2", "acme", ds.ID).Scan(&sealed, &keyID, &dialect)
	if err != nil {
		t.Fatal(err)
	}
	if sealed != ds.SealedConfig || keyID != "k1" || dialect != "postgres" {
		t.Errorf("stored row = (%q, %q, %q), want the values given", sealed, keyID, dialect)
	}
	// The dialect column refuses what the domain refuses, even from SQL.
	_, err = testPool(t).Exec(ctx, "UPDATE "+pgx.Identifier{s.Schema(), "datasources"}.Sanitize()+" SET dialect = 'mysql'")
	if err == nil || !strings.Contains(err.Error(), "check") {
		t.Errorf("setting an unknown dialect in SQL: %v, want a check violation", err)
	}
}
