package recipes

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

// Store is a recipe store: [Memory] keeps recipes in the process, and
// package kb/recipes/postgres keeps them in PostgreSQL with the same
// behaviour (package kb/recipes/recipestest holds the tests both pass).
// Code that saves or recalls recipes should depend on Store.
type Store interface {
	// SaveRecipe stores a recipe the host approved; saving the same
	// question (ignoring case, spaces and punctuation) on the same schema
	// again updates it (SQL replaced, success count incremented, verified
	// if n.Verified; a save without Verified keeps an earlier mark).
	SaveRecipe(ctx context.Context, scope kb.Scope, n NewRecipe) (Recipe, error)
	// Recall returns the best Query.K recipes of scope (see Rank) and
	// counts them as used.
	Recall(ctx context.Context, scope kb.Scope, q Query) ([]Match, error)
	// RecordSuccess counts another successful use and marks it used.
	RecordSuccess(ctx context.Context, scope kb.Scope, id string) (Recipe, error)
	// SetVerified marks a recipe of scope verified (or clears the mark)
	// without counting a use; another scope's id yields
	// domain.ErrNotFound.
	SetVerified(ctx context.Context, scope kb.Scope, id string, verified bool) (Recipe, error)
	// Get returns a recipe of scope without counting a use; another
	// scope's id yields domain.ErrNotFound.
	Get(ctx context.Context, scope kb.Scope, id string) (Recipe, error)
	// Delete removes a recipe of scope, or yields domain.ErrNotFound.
	Delete(ctx context.Context, scope kb.Scope, id string) error
	// List returns the recipes of scope, most recently used first.
	List(ctx context.Context, scope kb.Scope) ([]Recipe, error)
	// Restore loads recipes as List returned them, keeping ids, counts,
	// times and embeddings.
	Restore(ctx context.Context, scope kb.Scope, rs []Recipe) error
}

var _ Store = (*Memory)(nil)

// Validate reports a *domain.ValidationError naming every problem of n
// (question, statements, datasets and their limits), as SaveRecipe does.
func (n NewRecipe) Validate() error { return n.validate() }

// DatasetNames returns the names of n's datasets, trimmed and sorted, as
// Recipe.Datasets holds them.
func (n NewRecipe) DatasetNames() []string {
	names := make([]string, len(n.Datasets))
	for i, d := range n.Datasets {
		names[i] = strings.TrimSpace(d.Name)
	}
	slices.Sort(names)
	return names
}

// QuestionKey is the form of a question under which a store recognises a
// re-save of the same question: its lower-case words (letters and
// digits) joined by single spaces.
func QuestionKey(question string) string { return strings.Join(words(question), " ") }

// Normalize validates q and fills its defaults: a negative K or
// VerifiedMinSimilarity yields a *domain.ValidationError naming them; K 0
// becomes DefaultK and VerifiedMinSimilarity 0 becomes
// DefaultVerifiedMinSimilarity.
func (q Query) Normalize() (Query, error) {
	ve := &domain.ValidationError{}
	if q.K < 0 {
		ve.Add("query.k", "must not be negative")
	}
	if q.VerifiedMinSimilarity < 0 || math.IsNaN(q.VerifiedMinSimilarity) {
		ve.Add("query.verified_min_similarity", "must not be negative (0 means the default, above 1 turns the verified preference off)")
	}
	if err := ve.Err(); err != nil {
		return q, err
	}
	if q.K == 0 {
		q.K = DefaultK
	}
	if q.VerifiedMinSimilarity == 0 {
		q.VerifiedMinSimilarity = DefaultVerifiedMinSimilarity
	}
	return q, nil
}

// Embed returns the vector of text from e, or nil when e is nil or fails
// (recipes then fall back to word matching). Stores embed questions with
// it on save and on recall.
func Embed(ctx context.Context, e kb.Embedder, text string) []float32 {
	if e == nil {
		return nil
	}
	vs, err := e.Embed(ctx, []string{text})
	if err != nil || len(vs) != 1 || len(vs[0]) == 0 {
		return nil
	}
	return vs[0]
}

// Ranked is one recipe chosen by Rank. Recipe points into the slice Rank
// was given.
type Ranked struct {
	Recipe      *Recipe
	Similarity  float64
	SchemaMatch bool
	// VerifiedFirst reports that the recipe is verified and similar
	// enough to the question (Query.VerifiedMinSimilarity) to rank before
	// the unverified recipes of its schema-match group.
	VerifiedFirst bool
}

// Rank is Recall's ranking, shared by every Store: of rs, keep the
// recipes that pass q's filters (RequireSchemaMatch, MinSimilarity) and
// return the best q.K of them (K 0 means DefaultK, VerifiedMinSimilarity
// 0 DefaultVerifiedMinSimilarity): schema matches first; then verified
// recipes whose similarity reaches VerifiedMinSimilarity (and
// MinSimilarity); then by similarity (cosine of questionVec, the
// embedding of q.Question, with the recipe's embedding when both exist
// with the same length, otherwise the word overlap of the questions),
// then more successes, more recent use, and question text, fingerprint
// and id, so equal recipes always come back in the same order whatever
// the order of rs.
//
// The schema rule comes before the verified one: a verified recipe whose
// schema changed since it was saved (or whose datasets are not all in
// q.Datasets) ranks after every schema match, like any stale recipe, and
// RequireSchemaMatch drops it; among the stale recipes, relevant verified
// ones still come first. A verified recipe not similar enough to the
// question gets no preference at all.
func Rank(q Query, questionVec []float32, rs []*Recipe) []Ranked {
	k := q.K
	if k <= 0 {
		k = DefaultK
	}
	verifiedMin := q.VerifiedMinSimilarity
	if verifiedMin == 0 {
		verifiedMin = DefaultVerifiedMinSimilarity
	}
	verifiedMin = max(verifiedMin, q.MinSimilarity)
	qWords := words(q.Question)
	current := map[string]domain.Dataset{}
	for _, d := range q.Datasets {
		current[strings.TrimSpace(d.Name)] = d
	}
	fpCache := map[string]string{}
	schemaMatch := func(r *Recipe) bool {
		key := strings.Join(r.Datasets, "\x00")
		fp, ok := fpCache[key]
		if !ok {
			defs := make([]domain.Dataset, 0, len(r.Datasets))
			for _, n := range r.Datasets {
				d, found := current[n]
				if !found {
					fpCache[key] = ""
					return false
				}
				defs = append(defs, d)
			}
			fp = Fingerprint(defs)
			fpCache[key] = fp
		}
		return fp != "" && fp == r.Fingerprint
	}
	var cands []Ranked
	for _, r := range rs {
		c := Ranked{Recipe: r, SchemaMatch: schemaMatch(r)}
		if q.RequireSchemaMatch && !c.SchemaMatch {
			continue
		}
		if questionVec != nil && len(r.Embedding) == len(questionVec) {
			c.Similarity = max(0, cosine(questionVec, r.Embedding))
		} else {
			c.Similarity = overlap(qWords, words(r.Question))
		}
		if c.Similarity < q.MinSimilarity {
			continue
		}
		c.VerifiedFirst = r.Verified && c.Similarity >= verifiedMin
		cands = append(cands, c)
	}
	slices.SortFunc(cands, func(a, b Ranked) int {
		ra, rb := a.Recipe, b.Recipe
		return cmp.Or(
			-cmpBool(a.SchemaMatch, b.SchemaMatch),
			-cmpBool(a.VerifiedFirst, b.VerifiedFirst),
			-cmp.Compare(a.Similarity, b.Similarity),
			-cmp.Compare(ra.SuccessCount, rb.SuccessCount),
			-ra.LastUsedAt.Compare(rb.LastUsedAt),
			// Then by content, so that two stores holding the same
			// recipes (under other random ids) rank them alike.
			cmp.Compare(ra.Question, rb.Question),
			cmp.Compare(ra.Fingerprint, rb.Fingerprint),
			cmp.Compare(ra.ID, rb.ID),
		)
	})
	return cands[:min(len(cands), k)]
}

// ValidateRestore reports a *domain.ValidationError when a recipe passed
// to Restore lacks an id, a fingerprint (a lower-case hex SHA-256), a
// question, SQL or datasets.
func ValidateRestore(rs []Recipe) error {
	ve := &domain.ValidationError{}
	for i, r := range rs {
		switch {
		case r.ID == "":
			ve.Add(fmt.Sprintf("recipes[%d].id", i), "is required")
		case len(r.Fingerprint) != 64 || strings.Trim(r.Fingerprint, "0123456789abcdef") != "":
			ve.Add(fmt.Sprintf("recipes[%d].fingerprint", i), "must be a lower-case hex SHA-256")
		case strings.TrimSpace(r.Question) == "":
			ve.Add(fmt.Sprintf("recipes[%d].question", i), "is required")
		case len(r.SQL) == 0 || len(r.Datasets) == 0:
			ve.Add(fmt.Sprintf("recipes[%d]", i), "needs SQL and datasets")
		}
	}
	return ve.Err()
}
