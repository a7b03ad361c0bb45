// Package kb is what the agent knows besides the data itself: the dataset
// catalog (hybrid BM25 + vector search over dataset definitions, join
// hints), knowledge-base documents (kb/docs), and recipes — questions
// answered before, with the SQL that worked (kb/recipes).
//
// Every call is scoped: a Scope names a tenant and an ontology (semantic
// model), and nothing from another scope is ever returned.
//
// # Catalog
//
// Catalog is the interface; MemoryCatalog the embedded default and
// kb/neo4j the Neo4j adapter; kb/kbtest is the conformance suite both
// pass. Bootstrap builds a catalog from introspected datasets
// (domain.Dataset, as the SQL adapters' Introspect returns them).
//
// Search is hybrid: BM25 (Bleve, scorch in memory) over names,
// descriptions and fields with an analyzer that splits identifiers
// (snake_case, camelCase, dotted names), lower-cases, drops English stop
// words and stems (Porter); compound identifiers made of words the scope
// uses elsewhere ("countrylanguage") are indexed with their parts too.
// It is fused with cosine similarity over the dataset embeddings by
// reciprocal-rank fusion (FuseRRF), with two more rankings of the
// candidates: a lighter one by how much of their own name the question
// contains, and one by the IDF-weighted share of the question's terms
// their definition covers (no length normalisation, so wide tables are
// not buried), counting part of what their best related dataset adds.
// Sort requests ("ordered by", "in descending order") are dropped from
// the question first (QuestionText). Either side can be switched off
// (SearchMode). A search that matches nothing returns the catalog's
// first datasets marked Fallback.
//
// Besides names, descriptions and fields, the text index holds each
// dataset's synonyms and its fields' (domain.Dataset.Synonyms,
// domain.Field.Synonyms; CatalogOptions.SynonymBoost) and the database
// and schema it lives in (CatalogOptions.LocationBoost); Name stays the
// identity. The question's words are expanded offline with their
// synonyms from a small built-in business thesaurus (Thesaurus: revenue
// ~ sales ~ turnover, customer ~ client ~ buyer, ...) and the host's own
// groups (CatalogOptions.Synonyms), at a lower weight than the words
// themselves (CatalogOptions.ExpansionWeight). For the paraphrases no
// business thesaurus lists (freight ~ shipment, lighter ~ weight,
// produced ~ production), a general lexicon can be added at a lower
// weight still (CatalogOptions.Lexicon, LexiconWeight): LoadWordNet reads
// WordNet 3.0 from disk (Debian's wordnet-base; nothing is bundled). On
// the pooled Spider benchmark it lifts recall@10 from 0.943 to 0.956 and
// costs about 10% on Discover's median latency and 18 MB.
//
// Discover is the per-question discovery step: search, join-hint
// expansion (datasets related to the strongest hits gain a share of their
// scores, so a bridge table between two hits moves up), and the join
// hints among the result. The host's hints for a question (business
// definitions, evidence: DiscoverOptions.Hints) are a separate search
// with a weight of their own, never glued onto the question; the hits
// they bring are marked DatasetHit.Hint.
//
// # Values
//
// A value index finds a question that names a value rather than a
// column ("customers in Lyon", "the ENT segment", "Ada Lovelace"): the
// sampled values of each field (domain.Field.Values, at most
// CatalogOptions.MaxValuesPerField per field, never a Sensitive field's)
// are matched case- and accent-insensitively (FoldValue), multi-word
// values as whole phrases. The datasets holding them form one more
// ranking in the fusion (CatalogOptions.ValueWeight), and every hit
// reports the values it holds in DatasetHit.MatchedValues, so the
// context can show the model "city = 'Lyon' is in crm.customers.city".
//
// # Deterministic rankings
//
// The same datasets and the same question give the same ranked list,
// scores included, on every call and after a rebuild (even one that puts
// the datasets in another order). Every step is ordered with ties broken
// by name: BM25 hits are ranked by their score at float32 precision
// (Bleve numbers documents in the order a batch's concurrent analysis
// finishes, breaks its own ties by that number and sums term scores in
// an order that depends on it), the embedder and the coverage ranking
// sum in a fixed order (never map order), and fusion and expansion sort
// by score then name. Asking for fewer hits returns a prefix of a longer
// list: Search ranks max(CatalogOptions.Candidates, k) candidates per
// side (DefaultCandidates), Discover considers a pool of
// DefaultDiscoverPool hits whatever its K, so Discover with K = 5 is the
// first five of Discover with K = 10. kbtest.CheckRankings checks all of
// this for any Catalog.
//
// # Embeddings
//
// HashEmbedder is the offline default Embedder: feature hashing of
// stemmed words, word pairs and character n-grams, IDF-weighted (Fit),
// L2-normalised; no model, no download, deterministic. Any Embedder works
// (providers/openai has an OpenAI-compatible one). A definition is
// re-embedded when it changes; an embedder failure never fails a write:
// the catalog publishes EmbeddingFailed on its hooks.Bus, searches with
// BM25 alone, and Backfill embeds the missing vectors later.
//
// # Persistence
//
// MemoryCatalog.Save writes the definitions, vectors and Bleve indexes to
// a directory; LoadCatalog opens them again without re-indexing.
//
// # Descriptions for cryptic schemas
//
// Describer, Cryptic, Propose and Apply optionally propose descriptions
// for cryptic tables and columns (cst_cd, amt1): proposals are cached by
// schema fingerprint (DescriptionCache), reviewed by the host, and Apply
// never overwrites the host's own descriptions. tools/catalog.ModelDescriber
// asks the configured model, once per cryptic dataset.
package kb
