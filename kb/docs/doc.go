// Package docs is the knowledge-base document index: policies, metric
// definitions and runbooks the agent searches to ground its answers (the
// kb_search tool in package tools/knowledge).
//
// An [Index] keeps one Bleve index per [kb.Scope], so a search can only
// ever see documents of its own tenant and ontology. Documents are scored
// with BM25 over title (boosted), content and tags, with English
// stemming; rare query words (likely typos) also match words one edit
// away; each hit carries highlighted snippets ([Snippet], with byte spans
// a host can render safely, or [Snippet.Mark] for Markdown). Rankings
// are deterministic: scores are compared at float32 precision and equal
// scores are ordered by document id, so two indexes of the same documents
// (added in any order or batches) return the same hits in the same
// order, and a smaller Limit returns a prefix of a larger one.
//
// Indexes live in memory by default, or on disk under [Options.Dir]
// (reopened by the next Index on the same directory). [Index.Rebuild]
// replaces a scope's documents from a [Source] atomically: [FileSource]
// reads Markdown and text under a directory opened with os.Root (links
// and ".." cannot leave it), [SQLSource] reads a table or a query.
//
// For large corpora prefer the on-disk index and call [Index.Compact]
// after a bulk load: BenchmarkKBSearch measures 100,000 documents.
package docs
