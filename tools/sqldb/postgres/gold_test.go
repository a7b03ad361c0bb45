package postgres

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// loadScript loads a third-party SQL script into schema once: the schema
// is kept between test runs and reloaded only when it does not hold tables
// tables. psql meta-commands and database-level statements are dropped.
func loadScript(t *testing.T, schema, file string, tables int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(sqldb.Redact(err.Error(), testDSN(t)))
	}
	defer conn.Close(ctx)
	// One loader at a time, across test processes.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", schema); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == tables {
		return
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	script := regexp.MustCompile(`(?mi)^(\\.*|DROP DATABASE.*|CREATE DATABASE.*)$`).ReplaceAllString(string(b), "")
	for _, s := range []string{
		"DROP SCHEMA IF EXISTS " + schema + " CASCADE",
		"CREATE SCHEMA " + schema,
		"SET search_path TO " + schema,
		script, // simple protocol: the whole script at once
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("load %s into %s: %v", filepath.Base(file), schema, err)
		}
	}
}

type gold struct {
	sql  string
	want string // fmt.Sprint of the first row
	rows int    // expected row count; 0 means any
}

func runGold(t *testing.T, schema string, golds []gold) {
	t.Helper()
	db, err := New(admin(t), Options{Policy: Policy{SearchPath: []string{schema}}, AllowPrivilegedRole: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range golds {
		res, err := db.Query(context.Background(), g.sql, sqldb.Limits{})
		if err != nil {
			t.Errorf("gold query failed: %v\n%s", err, g.sql)
			continue
		}
		if len(res.Rows) == 0 {
			t.Errorf("no rows: %s", g.sql)
			continue
		}
		if got := fmt.Sprint(res.Rows[0]); g.want != "" && got != g.want {
			t.Errorf("%s\n got %s\nwant %s", g.sql, got, g.want)
		}
		if g.rows > 0 && len(res.Rows) != g.rows {
			t.Errorf("%s: %d rows, want %d", g.sql, len(res.Rows), g.rows)
		}
	}
}

// Gold SELECTs over Chinook (loaded from ../shared/datasets) run through
// the validator and the read-only path and return the known figures.
func TestGoldChinook(t *testing.T) {
	t.Parallel()
	file := filepath.Join(datasetsDir(t, "chinook"), "Chinook_PostgreSql.sql")
	testDSN(t)
	loadScript(t, "gold_chinook", file, 11)
	runGold(t, "gold_chinook", []gold{
		{sql: "SELECT count(*) FROM track", want: "[3503]"},
		{sql: "SELECT g.name, count(*) FROM track t JOIN genre g ON g.genre_id = t.genre_id GROUP BY g.name ORDER BY 2 DESC, 1 LIMIT 3", want: "[Rock 1297]", rows: 3},
		{sql: "SELECT sum(total)::text FROM invoice", want: "[2328.60]"},
		{sql: "SELECT billing_country, sum(total)::text FROM invoice GROUP BY 1 ORDER BY sum(total) DESC LIMIT 1", want: "[USA 523.06]"},
		{sql: `WITH per_customer AS (
			SELECT c.country, c.first_name || ' ' || c.last_name AS customer, sum(i.total) AS spent
			FROM customer c JOIN invoice i ON i.customer_id = c.customer_id GROUP BY 1, 2)
			SELECT country, customer, spent::text FROM (
			  SELECT *, rank() OVER (PARTITION BY country ORDER BY spent DESC) AS r FROM per_customer) x
			WHERE r = 1 ORDER BY spent DESC, customer LIMIT 1`, want: "[Czech Republic Helena Holý 49.62]"},
		{sql: `WITH RECURSIVE chain AS (
			SELECT employee_id, reports_to, 0 AS depth FROM employee WHERE reports_to IS NULL
			UNION ALL SELECT e.employee_id, e.reports_to, c.depth + 1 FROM employee e JOIN chain c ON e.reports_to = c.employee_id)
			SELECT max(depth), count(*) FROM chain`, want: "[2 8]"},
		{sql: "SELECT a.title, count(*) FROM album a JOIN track t USING (album_id) GROUP BY a.album_id, a.title ORDER BY 2 DESC, 1 LIMIT 1", want: "[Greatest Hits 57]"},
		{sql: "SELECT date_part('year', invoice_date)::int, count(*) FROM invoice GROUP BY 1 ORDER BY 1", rows: 5},
		{sql: "SELECT m.name FROM media_type m WHERE NOT EXISTS (SELECT 1 FROM track t WHERE t.media_type_id = m.media_type_id) UNION ALL SELECT 'none'", want: "[none]"},
	})
}

// Gold SELECTs over Northwind.
func TestGoldNorthwind(t *testing.T) {
	t.Parallel()
	file := filepath.Join(datasetsDir(t, "northwind"), "northwind.sql")
	testDSN(t)
	loadScript(t, "gold_northwind", file, 14)
	runGold(t, "gold_northwind", []gold{
		{sql: "SELECT count(*) FROM customers", want: "[91]"},
		{sql: "SELECT count(*), count(DISTINCT customer_id) FROM orders", want: "[830 89]"},
		{sql: "SELECT date_part('year', order_date)::int AS y, count(*) FROM orders GROUP BY 1 ORDER BY 1", want: "[1996 152]", rows: 3},
		{sql: `SELECT p.product_name, round(sum(od.unit_price * od.quantity * (1 - od.discount))::numeric, 2)::text
			FROM order_details od JOIN products p ON p.product_id = od.product_id
			GROUP BY p.product_name ORDER BY sum(od.unit_price * od.quantity * (1 - od.discount)) DESC LIMIT 1`, want: "[Côte de Blaye 141396.74]"},
		{sql: `SELECT c.category_name, count(*) FROM products p JOIN categories c USING (category_id)
			GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1`, want: "[Confections 13]"},
		{sql: `SELECT e.first_name || ' ' || e.last_name, count(o.order_id) FROM employees e LEFT JOIN orders o USING (employee_id)
			GROUP BY e.employee_id, 1 ORDER BY 2 DESC LIMIT 1`, want: "[Margaret Peacock 156]"},
		{sql: `SELECT ship_country, count(*) FILTER (WHERE shipped_date > required_date) AS late
			FROM orders GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1`},
		{sql: "SELECT s.company_name FROM suppliers s WHERE s.supplier_id IN (SELECT supplier_id FROM products WHERE discontinued = 1) ORDER BY 1 LIMIT 1"},
	})
}
