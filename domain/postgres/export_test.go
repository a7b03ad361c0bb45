package postgres

// MigrateTo exposes migrateTo to the tests: it applies the migrations up
// to version target.
var MigrateTo = migrateTo
