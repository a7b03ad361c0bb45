// Package spidertest loads Spider's development set (tables.json and
// dev.json from ../shared/datasets/spider-dev, never copied into the
// repository) for the schema-retrieval and join-inference benchmarks of
// kb and tools/sqldb: every database's tables as domain.Datasets named
// "db.table", Spider's
// natural-language names, the declared foreign keys, and each question
// with the tables its gold SQL reads.
//
// Tests call Load, which skips (or, with BICHAT_REQUIRE_INTEGRATION=1,
// fails) when the data set is absent.
package spidertest
