package sqldb

import "strings"

// QuoteIdent quotes one identifier with double quotes, the form both
// PostgreSQL and SQLite accept: QuoteIdent(`a"b`) is `"a""b"`.
func QuoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// QuoteQualified quotes a dataset name such as "sales.orders" part by
// part: "sales"."orders". A name without a dot is quoted whole.
func QuoteQualified(name string) string {
	schema, rel, ok := strings.Cut(name, ".")
	if !ok {
		return QuoteIdent(name)
	}
	return QuoteIdent(schema) + "." + QuoteIdent(rel)
}
