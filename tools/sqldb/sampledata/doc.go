// Package sampledata generates bichat's deterministic retail sample
// database for tests, examples and the quickstart: regions, customers,
// products, orders and order_items over two years (2024 and 2025), the
// same rows for SQLite and PostgreSQL.
//
// Tables (foreign keys in brackets):
//
//	regions(id, name)                                        5 rows
//	customers(id, name, email, region_id [regions], signed_up_at)   200 rows
//	products(id, name, category, unit_price)                 40 rows
//	orders(id, customer_id [customers], ordered_at, status)  3000 rows
//	order_items(order_id [orders], line, product_id [products], quantity, unit_price)
//
// The rows depend only on the seed (DefaultSeed unless Options.Seed is
// set), so tests can assert exact figures.
package sampledata
