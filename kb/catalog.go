package kb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
)

// Catalog stores dataset definitions per Scope and finds the few that
// answer a question. Every method validates the scope first (a
// *domain.ValidationError otherwise) and only ever reads or writes that
// scope: a dataset of another tenant or ontology is never returned, and a
// name unknown in the scope behaves as absent.
//
// MemoryCatalog (this package) is the embedded default; kb/neo4j stores
// the catalog in Neo4j. kb/kbtest holds the conformance suite every
// implementation passes.
type Catalog interface {
	// Search returns up to k datasets ranked for query, best first, with
	// their scores. When nothing matches it falls back to the first k
	// datasets of List (hits marked Fallback). k <= 0 means 10.
	Search(ctx context.Context, scope Scope, query string, k int) ([]DatasetHit, error)
	// Datasets returns the named datasets in the order asked; names the
	// scope does not hold are left out (compare the lengths).
	Datasets(ctx context.Context, scope Scope, names ...string) ([]domain.Dataset, error)
	// Relationships returns the join hints touching any of names, in both
	// directions: those defined on a named dataset and those other
	// datasets define towards it. Only relationships whose two ends both
	// exist in the scope are returned, each once, sorted.
	Relationships(ctx context.Context, scope Scope, names ...string) ([]domain.Relationship, error)
	// List returns every dataset of the scope, sorted by name.
	List(ctx context.Context, scope Scope) ([]domain.Dataset, error)
	// Put adds or replaces datasets (by name). Each is validated; an
	// invalid one fails the call and nothing is stored. A dataset whose
	// definition changed is re-embedded; a failed embedding never fails
	// Put (the dataset is stored without a vector, an EmbeddingFailed
	// event is published, and Backfill fills it in later).
	Put(ctx context.Context, scope Scope, datasets ...domain.Dataset) error
	// Delete removes the named datasets; unknown names are ignored.
	Delete(ctx context.Context, scope Scope, names ...string) error
	// Backfill embeds every dataset of the scope that has no vector (or
	// one from another embedder) and returns how many it embedded.
	Backfill(ctx context.Context, scope Scope) (int, error)
}

// DatasetHit is one search result.
type DatasetHit struct {
	Dataset domain.Dataset `json:"dataset"`
	// YAML is the definition the agent reads (Dataset.YAML()).
	YAML string `json:"yaml"`
	// Score is the fused score (higher is better); comparable only within
	// one result list.
	Score float64 `json:"score"`
	// BM25 and Vector are the text score and the cosine similarity behind
	// Score; 0 when that side did not rank the dataset.
	BM25   float64 `json:"bm25,omitempty"`
	Vector float64 `json:"vector,omitempty"`
	// Fallback marks a hit returned because nothing matched.
	Fallback bool `json:"fallback,omitempty"`
	// Via names the strong hit whose relationship pulled this dataset in
	// (join-hint expansion, see Discover); empty for a direct hit.
	Via string `json:"via,omitempty"`
	// MatchedValues are the column values of the dataset the question
	// mentions (Field.Values, matched case- and accent-insensitively),
	// in the order the question mentions them: what the context shows
	// the model ("city = 'Lyon' is in customers.city").
	MatchedValues []ValueMatch `json:"matched_values,omitempty"`
	// Hint marks a hit the host's hints (DiscoverOptions.Hints) ranked:
	// its Score includes their share.
	Hint bool `json:"hint,omitempty"`
}

// SearchMode selects the sides of hybrid search.
type SearchMode int

const (
	// Hybrid fuses BM25 and vector rankings (the default).
	Hybrid SearchMode = iota
	// BM25Only ranks by text only.
	BM25Only
	// VectorOnly ranks by embedding similarity only.
	VectorOnly
)

// String names the mode.
func (m SearchMode) String() string {
	switch m {
	case Hybrid:
		return "hybrid"
	case BM25Only:
		return "bm25"
	case VectorOnly:
		return "vector"
	}
	return fmt.Sprintf("SearchMode(%d)", int(m))
}

// KindEmbeddingFailed is the hooks.Kind of EmbeddingFailed.
const KindEmbeddingFailed hooks.Kind = "kb.embedding_failed"

// EmbeddingFailed is published on the catalog's bus when the embedder
// fails: while storing datasets (they are stored without vectors; run
// Backfill) or while embedding a query (that search ran on BM25 alone).
type EmbeddingFailed struct {
	hooks.Meta
	Scope Scope `json:"scope"`
	// Datasets names the datasets left without vectors; empty for a query.
	Datasets []string `json:"datasets,omitempty"`
	// Query is true when a search query could not be embedded.
	Query bool `json:"query,omitempty"`
	// Error is the embedder's error message.
	Error string `json:"error"`
}

// Kind returns KindEmbeddingFailed.
func (*EmbeddingFailed) Kind() hooks.Kind { return KindEmbeddingFailed }

// Scrub scrubs the embedder's error message for a redacting bus
// (hooks.Options.Redact).
func (e *EmbeddingFailed) Scrub(f func(string) string) { e.Error = f(e.Error) }

// EmbeddingText is the text a catalog embeds for a dataset: its name and
// source, description and synonyms, each field's name, description and
// synonyms. Identifiers are kept as written; the embedder splits them.
func EmbeddingText(d domain.Dataset) string {
	var b strings.Builder
	b.WriteString(d.Name)
	if d.Source != "" && d.Source != d.Name {
		b.WriteString(" " + d.Source)
	}
	if d.Description != "" {
		b.WriteString(". " + d.Description)
	}
	if len(d.Synonyms) > 0 {
		b.WriteString(". " + strings.Join(d.Synonyms, ", "))
	}
	b.WriteString("\n")
	for _, f := range d.Fields {
		b.WriteString(f.Name)
		if f.Description != "" {
			b.WriteString(" " + f.Description)
		}
		if len(f.Synonyms) > 0 {
			b.WriteString(" " + strings.Join(f.Synonyms, ", "))
		}
		b.WriteString("; ")
	}
	return b.String()
}

// ErrNoEmbedder is returned by Backfill on a catalog without an embedder.
var ErrNoEmbedder = errors.New("kb: catalog has no embedder")

// validateDatasets checks each dataset and rejects duplicate names.
func validateDatasets(ds []domain.Dataset) error {
	seen := make(map[string]bool, len(ds))
	for i, d := range ds {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("dataset %d (%q): %w", i, d.Name, err)
		}
		if seen[d.Name] {
			return domain.Invalid(fmt.Sprintf("datasets[%d].name", i), fmt.Sprintf("duplicate dataset %q", d.Name))
		}
		seen[d.Name] = true
	}
	return nil
}

// relKey identifies a relationship for de-duplication.
func relKey(r domain.Relationship) string {
	return r.From + "\x00" + strings.Join(r.FromColumns, ",") + "\x00" + r.To + "\x00" + strings.Join(r.ToColumns, ",")
}

// normalizeRelationship fills an empty From with the owning dataset name.
func normalizeRelationship(owner string, r domain.Relationship) domain.Relationship {
	if r.From == "" {
		r.From = owner
	}
	return r
}

// SortRelationships orders relationships by From, To, then columns.
func SortRelationships(rs []domain.Relationship) {
	sort.Slice(rs, func(i, j int) bool { return relKey(rs[i]) < relKey(rs[j]) })
}
