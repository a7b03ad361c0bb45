// Package kb is what the agent knows besides the data itself: the dataset
// catalog (hybrid BM25 + vector search over dataset definitions, join
// hints), knowledge-base documents, and recipes (questions answered before,
// with the SQL that worked).
//
// Every call is scoped: a Scope names a tenant and an ontology (semantic
// model), and nothing from another scope is ever returned.
package kb
