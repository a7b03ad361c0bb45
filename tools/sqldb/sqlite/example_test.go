package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

func Example() {
	dir, _ := os.MkdirTemp("", "sqlite-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "retail.db")
	ctx := context.Background()
	if err := sampledata.CreateSQLite(ctx, path); err != nil {
		panic(err)
	}

	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		panic(err)
	}
	defer db.Close()

	res, err := db.Query(ctx, `SELECT strftime('%Y', o.ordered_at) AS year, count(DISTINCT o.id) AS orders,
		round(sum(i.quantity * i.unit_price), 2) AS revenue
		FROM orders o JOIN order_items i ON i.order_id = o.id
		WHERE o.status = 'completed' GROUP BY 1 ORDER BY 1`, sqldb.Limits{MaxRows: 10})
	if err != nil {
		panic(err)
	}
	fmt.Print(sqldb.Markdown(res.Columns, res.Rows))

	_, err = db.Query(ctx, "DELETE FROM orders", sqldb.Limits{})
	fmt.Println(err)
	// Output:
	// | year | orders | revenue |
	// | --- | --- | --- |
	// | 2024 | 580 | 490144.57 |
	// | 2025 | 1784 | 1485889.19 |
	// rejected: DELETE statements are not allowed. only read-only SELECT statements (including WITH and VALUES) can run
}
