package sampledata

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Row counts of the generated tables (order_items varies with the seed:
// 1 to 4 lines per order).
const (
	Regions   = 5
	Customers = 200
	Products  = 40
	Orders    = 3000
)

// DefaultSeed is the seed used when Options.Seed is zero.
const DefaultSeed = 20240101

// Start and End bound the order dates: [Start, End).
var (
	Start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	End   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Options tune the generated SQL.
type Options struct {
	// Schema qualifies the tables in PostgreSQL (created if missing);
	// empty means the search path's first schema. SQLite ignores it.
	Schema string
	// Seed changes the rows; 0 means DefaultSeed.
	Seed uint64
}

// Data holds the generated rows, column by column as SQL literals.
type Data struct {
	Regions, Customers, Products, Orders, OrderItems [][]any
}

var (
	regionNames = []string{"North", "South", "East", "West", "Central"}
	firstNames  = []string{"Ada", "Ben", "Chloe", "Dan", "Eva", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kira", "Leo", "Mia", "Noah", "Olga", "Paul", "Quinn", "Rosa", "Sam", "Tara"}
	lastNames   = []string{"Smith", "Garcia", "Müller", "Rossi", "Dubois", "Kowalski", "Novak", "Silva", "Jensen", "Okafor"}
	categories  = []string{"Electronics", "Home", "Garden", "Toys", "Books"}
	productKind = map[string][]string{
		"Electronics": {"Headphones", "Speaker", "Charger", "Keyboard", "Mouse", "Monitor", "Webcam", "Router"},
		"Home":        {"Lamp", "Kettle", "Blanket", "Vase", "Clock", "Mirror", "Rug", "Shelf"},
		"Garden":      {"Hose", "Shovel", "Planter", "Gloves", "Seeds", "Rake", "Sprinkler", "Lantern"},
		"Toys":        {"Puzzle", "Robot", "Kite", "Blocks", "Doll", "Drone", "Train", "Ball"},
		"Books":       {"Atlas", "Cookbook", "Novel", "Guide", "Journal", "Comic", "Poems", "Almanac"},
	}
	statuses = []string{"completed", "completed", "completed", "completed", "completed", "completed", "completed", "completed", "cancelled", "returned"}
)

// Generate returns the rows for seed (0 means DefaultSeed).
func Generate(seed uint64) *Data {
	if seed == 0 {
		seed = DefaultSeed
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	d := &Data{}
	for i, n := range regionNames {
		d.Regions = append(d.Regions, []any{int64(i + 1), n})
	}
	for i := range Customers {
		fn := firstNames[r.IntN(len(firstNames))]
		ln := lastNames[r.IntN(len(lastNames))]
		email := strings.ToLower(fn) + "." + strconv.Itoa(i+1) + "@example.com"
		signed := Start.AddDate(-1, 0, 0).Add(time.Duration(r.Int64N(int64(2 * 365 * 24 * time.Hour)))).Truncate(time.Second)
		d.Customers = append(d.Customers, []any{int64(i + 1), fn + " " + ln, email, int64(1 + r.IntN(Regions)), signed})
	}
	prices := make([]float64, Products)
	for i := range Products {
		cat := categories[i%len(categories)]
		kinds := productKind[cat]
		name := kinds[(i/len(categories))%len(kinds)]
		price := float64(500+r.IntN(19500)) / 100 // 5.00 .. 199.99
		prices[i] = price
		d.Products = append(d.Products, []any{int64(i + 1), name, cat, price})
	}
	span := End.Sub(Start)
	for i := range Orders {
		// Later dates are more likely (the business grows): the max of
		// two uniform draws skews toward the end of the period.
		a, b := r.Int64N(int64(span)), r.Int64N(int64(span))
		at := Start.Add(time.Duration(max(a, b))).Truncate(time.Second)
		id := int64(i + 1)
		d.Orders = append(d.Orders, []any{id, int64(1 + r.IntN(Customers)), at, statuses[r.IntN(len(statuses))]})
		lines := 1 + r.IntN(4)
		for l := range lines {
			p := r.IntN(Products)
			d.OrderItems = append(d.OrderItems, []any{id, int64(l + 1), int64(p + 1), int64(1 + r.IntN(5)), prices[p]})
		}
	}
	// Sort orders by date so ids follow time, as in a real shop.
	sortByTime(d)
	return d
}

func sortByTime(d *Data) {
	// Orders were generated in random date order; renumber by date while
	// keeping each order's items with it.
	idx := make([]int, len(d.Orders))
	for i := range idx {
		idx[i] = i
	}
	at := func(i int) time.Time { return d.Orders[i][2].(time.Time) }
	slices.SortStableFunc(idx, func(a, b int) int { return at(a).Compare(at(b)) })
	newID := make(map[int64]int64, len(idx))
	orders := make([][]any, len(idx))
	for n, old := range idx {
		row := append([]any(nil), d.Orders[old]...)
		newID[row[0].(int64)] = int64(n + 1)
		row[0] = int64(n + 1)
		orders[n] = row
	}
	d.Orders = orders
	byOrder := make(map[int64][][]any)
	for _, it := range d.OrderItems {
		nid := newID[it[0].(int64)]
		row := append([]any(nil), it...)
		row[0] = nid
		byOrder[nid] = append(byOrder[nid], row)
	}
	items := make([][]any, 0, len(d.OrderItems))
	for id := int64(1); id <= int64(len(orders)); id++ {
		items = append(items, byOrder[id]...)
	}
	d.OrderItems = items
}

// Statements returns the SQL that creates and fills the sample tables in
// dialect ("postgres" or "sqlite"): DDL with primary and foreign keys,
// comments (PostgreSQL), multi-row INSERTs, and ANALYZE. Existing sample
// tables are dropped first.
func Statements(dialect string, opts Options) ([]string, error) {
	pg := dialect == "postgres"
	if !pg && dialect != "sqlite" {
		return nil, fmt.Errorf("sampledata: unknown dialect %q (want postgres or sqlite)", dialect)
	}
	q := func(t string) string {
		if pg && opts.Schema != "" {
			return `"` + opts.Schema + `".` + t
		}
		return t
	}
	ts, money := "TIMESTAMP", "REAL"
	if pg {
		ts, money = "timestamp", "numeric(10,2)"
	}
	var s []string
	if pg && opts.Schema != "" {
		s = append(s, `CREATE SCHEMA IF NOT EXISTS "`+opts.Schema+`"`)
	}
	for _, t := range []string{"order_items", "orders", "products", "customers", "regions"} {
		s = append(s, "DROP TABLE IF EXISTS "+q(t))
	}
	s = append(s,
		"CREATE TABLE "+q("regions")+" (id integer PRIMARY KEY, name text NOT NULL)",
		"CREATE TABLE "+q("customers")+" (id integer PRIMARY KEY, name text NOT NULL, email text NOT NULL, region_id integer NOT NULL REFERENCES "+q("regions")+"(id), signed_up_at "+ts+" NOT NULL)",
		"CREATE TABLE "+q("products")+" (id integer PRIMARY KEY, name text NOT NULL, category text NOT NULL, unit_price "+money+" NOT NULL)",
		"CREATE TABLE "+q("orders")+" (id integer PRIMARY KEY, customer_id integer NOT NULL REFERENCES "+q("customers")+"(id), ordered_at "+ts+" NOT NULL, status text NOT NULL)",
		"CREATE TABLE "+q("order_items")+" (order_id integer NOT NULL REFERENCES "+q("orders")+"(id), line integer NOT NULL, product_id integer NOT NULL REFERENCES "+q("products")+"(id), quantity integer NOT NULL, unit_price "+money+" NOT NULL, PRIMARY KEY (order_id, line))",
	)
	if pg {
		s = append(s,
			"COMMENT ON TABLE "+q("regions")+" IS 'Sales regions.'",
			"COMMENT ON TABLE "+q("customers")+" IS 'One row per customer.'",
			"COMMENT ON TABLE "+q("products")+" IS 'The product catalogue with list prices.'",
			"COMMENT ON TABLE "+q("orders")+" IS 'One row per order; status is completed, cancelled or returned.'",
			"COMMENT ON TABLE "+q("order_items")+" IS 'Order lines: quantity times unit_price is the line revenue.'",
			"COMMENT ON COLUMN "+q("orders")+".ordered_at IS 'When the order was placed (UTC).'",
			"COMMENT ON COLUMN "+q("order_items")+".unit_price IS 'Price paid per unit, in EUR.'",
		)
	}
	d := Generate(opts.Seed)
	s = append(s, inserts(q("regions"), d.Regions)...)
	s = append(s, inserts(q("customers"), d.Customers)...)
	s = append(s, inserts(q("products"), d.Products)...)
	s = append(s, inserts(q("orders"), d.Orders)...)
	s = append(s, inserts(q("order_items"), d.OrderItems)...)
	for _, t := range []string{"regions", "customers", "products", "orders", "order_items"} {
		s = append(s, "ANALYZE "+q(t))
	}
	return s, nil
}

func inserts(table string, rows [][]any) []string {
	const per = 500
	var out []string
	for i := 0; i < len(rows); i += per {
		var b strings.Builder
		b.WriteString("INSERT INTO " + table + " VALUES ")
		for j, row := range rows[i:min(i+per, len(rows))] {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			for k, v := range row {
				if k > 0 {
					b.WriteString(", ")
				}
				b.WriteString(literal(v))
			}
			b.WriteByte(')')
		}
		out = append(out, b.String())
	}
	return out
}

func literal(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', 2, 64)
	case time.Time:
		return "'" + x.Format("2006-01-02 15:04:05") + "'"
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	}
	panic(fmt.Sprintf("sampledata: literal of %T", v))
}

// Execer runs one statement; *sql.DB, *sql.Conn and *sql.Tx satisfy it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// LoadSQLite creates and fills the sample tables in an SQLite database
// opened for writing.
func LoadSQLite(ctx context.Context, db Execer) error {
	return Load(ctx, "sqlite", Options{}, func(ctx context.Context, stmt string) error {
		_, err := db.ExecContext(ctx, stmt)
		return err
	})
}

// Load runs Statements(dialect, opts) through exec, in order. For
// PostgreSQL pass e.g. func(ctx, s) error { _, err := pool.Exec(ctx, s); return err }.
func Load(ctx context.Context, dialect string, opts Options, exec func(ctx context.Context, stmt string) error) error {
	stmts, err := Statements(dialect, opts)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if err := exec(ctx, s); err != nil {
			head := s
			if len(head) > 60 {
				head = head[:60] + "..."
			}
			return fmt.Errorf("sampledata: %s: %w", head, err)
		}
	}
	return nil
}

// CreateSQLite writes the sample database to a new SQLite file at path
// (an existing file's sample tables are replaced).
func CreateSQLite(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=foreign_keys(1)&_pragma=journal_mode(wal)")
	if err != nil {
		return fmt.Errorf("sampledata: open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := LoadSQLite(ctx, db); err != nil {
		return err
	}
	return db.Close()
}
