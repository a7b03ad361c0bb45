package sqldb_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// Infer the joins of the retail sample as if it declared no foreign keys:
// candidates come from names and types, each confirmed by a bounded
// value-overlap query on the database.
func ExampleInferJoins() {
	dir, _ := os.MkdirTemp("", "bichat-infer")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "retail.db")
	ctx := context.Background()
	if err := sampledata.CreateSQLite(ctx, path); err != nil {
		fmt.Println(err)
		return
	}
	db, err := sqlite.Open(path, sqlite.Options{SampleValues: sqldb.SampleValues{SensitiveColumns: []string{"email"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	datasets, err := db.Introspect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range datasets {
		datasets[i].Relationships = nil // pretend there are no foreign keys
	}
	joins, err := sqldb.InferJoins(ctx, db, datasets, sqldb.InferOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range joins {
		fmt.Printf("%s -> %s on %s (%s, confidence %.2f)\n", j.From, j.To, j.JoinCondition(), j.Cardinality, j.Confidence)
	}
	// Introspect also sampled the values of low-cardinality text columns.
	regions := datasets[len(datasets)-1]
	name, _ := regions.Field("name")
	fmt.Println(regions.Name, name.Values)
	// Output:
	// customers -> regions on region_id = id (many_to_one, confidence 1.00)
	// order_items -> orders on order_id = id (many_to_one, confidence 1.00)
	// order_items -> products on product_id = id (many_to_one, confidence 1.00)
	// orders -> customers on customer_id = id (many_to_one, confidence 1.00)
	// regions [Central East North South West]
}

// The candidates InferJoins would probe, from names and types alone (no
// database): a reviewer sees them before any query runs.
func ExampleJoinCandidates() {
	datasets := []domain.Dataset{
		{Name: "customers", Fields: []domain.Field{{Name: "id", Type: "integer", PrimaryKey: true}, {Name: "name", Type: "text"}}},
		{Name: "orders", Fields: []domain.Field{{Name: "id", Type: "integer", PrimaryKey: true},
			{Name: "customer_id", Type: "integer"}, {Name: "total", Type: "numeric"}}},
	}
	for _, j := range sqldb.JoinCandidates(datasets) {
		fmt.Printf("%s -> %s on %s (%s, name score %.2f)\n", j.From, j.To, j.JoinCondition(), j.Cardinality, j.Confidence)
	}
	// Output:
	// orders -> customers on customer_id = id (many_to_one, name score 1.00)
}
