// Package neo4j stores the dataset catalog (kb.Catalog) in Neo4j.
//
// Each dataset is a (:Dataset) node keyed by (tenant, ontology, name) —
// the scope is a property of every node and a filter of every query —
// holding its YAML, its JSON definition, pre-analysed search text and its
// embedding; its columns are (:Field) nodes linked by HAS_FIELD, and join
// paths are JOINS relationships carrying the column lists. The schema
// (uniqueness constraint, the full-text index dataset_text and the vector
// index dataset_embedding, cosine, dimensions from the embedder) is
// created idempotently on first use. The vector index keeps the
// dimensions it was created with: after switching to an embedder of other
// dimensions, drop dataset_embedding and run Backfill per scope.
//
// Search fuses the full-text and vector index results by reciprocal-rank
// fusion, as kb.MemoryCatalog does. Both indexes span every scope, so each
// query asks for candidates×4 entries (capped) and keeps the scope's:
// with many scopes sharing one database a scope's hits can be crowded out,
// so give large tenants their own database (FromDriver's database).
// Equal index scores are ordered by dataset name (the indexes return ties
// in storage order) and the candidate count does not grow with k below
// Options.Candidates, so rankings are deterministic and a search for
// fewer hits is a prefix of one for more. Ties at the oversample cut are
// the index's choice; a larger MaxOversample makes them rarer.
//
// All Cypher is constant and parameterised; reads run in read
// transactions. The package talks to the driver through three small
// interfaces (Sessions, Session, Tx): FromDriver adapts the real
// neo4j-go-driver, and tests use a fake.
package neo4j
