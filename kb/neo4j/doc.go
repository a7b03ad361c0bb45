// Package neo4j stores the dataset catalog (kb.Catalog) in Neo4j.
//
// Each dataset is a (:Dataset) node keyed by (tenant, ontology, name) —
// the scope is a property of every node and a filter of every query —
// holding its YAML, its JSON definition, its database, schema and
// synonyms, pre-analysed search texts and its embedding; its columns are
// (:Field) nodes linked by HAS_FIELD (with their synonyms, sampled
// values and the sensitive flag), its sampled values are (:Value) nodes
// linked by HAS_VALUE, and join paths are JOINS relationships carrying
// the column lists, the description, the cardinality, whether the join
// was inferred and the inference's confidence. Datasets, List, Search and
// Relationships return every field as it was Put, with one exception:
// the Values of a Sensitive field are dropped before anything is sent to
// Neo4j (definition, YAML, field node and value index alike).
//
// The schema is created idempotently on first use: the uniqueness
// constraint, the full-text index dataset_search, the range indexes
// value_first and value_key over (tenant, ontology, first word / key) of
// the :Value nodes, and the vector index dataset_embedding (cosine,
// dimensions from the embedder). The vector index keeps the dimensions
// it was created with: after switching to an embedder of other
// dimensions, drop dataset_embedding and run Backfill per scope.
// Upgrading from a version with the full-text index dataset_text: drop
// it (DROP INDEX dataset_text) and Put the datasets again, which fills
// the new search properties and the value index.
//
// # Search
//
// Search follows kb.MemoryCatalog. Sort requests are dropped from the
// question (kb.QuestionText). The full-text side searches four
// properties, each with its boost: the name (3), the text — description,
// field names and descriptions — (1), the synonyms of the dataset and its
// fields (Options.SynonymBoost) and the database and schema
// (Options.LocationBoost). The question's terms are expanded with their
// synonyms from kb.Thesaurus and Options.Synonyms at
// Options.ExpansionWeight times the boost, then with their words in
// Options.Lexicon (kb.LoadWordNet) at Options.LexiconWeight
// (kb.SearchOptions.NoExpansion switches both off for a call). The query is at most 1024 clauses
// (Lucene's limit): an overlong question loses expansion terms first.
//
// The value index finds a question that names a value ("customers in
// Lyon"): the values of each field (at most Options.MaxValuesPerField,
// never a Sensitive field's, folded with kb.FoldValue) are looked up by
// the question's words, a multi-word value matching only as a whole
// phrase, case and accents ignored. In Hybrid mode the datasets holding
// them are a third ranking weighted by Options.ValueWeight
// (kb.SearchOptions.NoValues leaves it out for a call); in every mode
// each hit reports them in kb.DatasetHit.MatchedValues exactly as the
// memory catalog does.
//
// The rankings (full-text, vector, values) are fused by reciprocal-rank
// fusion. The memory catalog's two further rankings (name coverage and
// term coverage) are not computed here: they need every candidate's
// analysed definition in the process, which this adapter does not keep.
// kb.DiscoverOptions.Hints work unchanged: Discover searches them as a
// second query through any Catalog.
//
// The full-text and vector indexes span every scope, so each query asks
// for candidates×4 entries (capped by Options.MaxOversample) and keeps
// the scope's: with many scopes sharing one database a scope's hits can
// be crowded out, so give large tenants their own database (FromDriver's
// database). The value lookups are exact, per scope, and never crowded
// out. Equal index scores are ordered by dataset name (the indexes return
// ties in storage order) and the candidate count does not grow with k
// below Options.Candidates, so rankings are deterministic and a search
// for fewer hits is a prefix of one for more. Ties at the oversample cut
// are the index's choice; a larger MaxOversample makes them rarer.
//
// All Cypher is constant and parameterised; reads run in read
// transactions. The package talks to the driver through three small
// interfaces (Sessions, Session, Tx): FromDriver adapts the real
// neo4j-go-driver, and tests use a fake.
package neo4j
