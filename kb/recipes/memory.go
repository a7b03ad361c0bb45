package recipes

import (
	"container/list"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

// Recipe is a question the agent answered well, with the SQL that
// answered it, kept so the agent can reuse it for similar questions on
// the same schema.
type Recipe struct {
	ID string `json:"id"`
	// Fingerprint is the schema fingerprint (see Fingerprint) of the
	// datasets the SQL used, as they were when the recipe was saved.
	Fingerprint string `json:"fingerprint"`
	Question    string `json:"question"`
	// Embedding is the question's vector from the Memory's embedder; nil
	// when there was none or it failed (the recipe is then matched by
	// words).
	Embedding []float32 `json:"embedding,omitempty"`
	// Datasets are the names of the datasets involved, sorted.
	Datasets []string `json:"datasets"`
	// SQL holds the statements the tool calls ran to answer the
	// question, in order.
	SQL []string `json:"sql"`
	// SuccessCount counts the approvals: 1 when saved, plus one per later
	// save of the same question on the same schema and per RecordSuccess.
	SuccessCount int `json:"success_count"`
	// Verified marks a recipe the host checked (a verified query). Among
	// the recipes relevant to a question (see Query.VerifiedMinSimilarity)
	// verified ones rank first, within the same schema-match group (see
	// Rank). It is set by saving with NewRecipe.Verified or by SetVerified;
	// a later save without the mark keeps it.
	Verified   bool      `json:"verified,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
}

func (r *Recipe) clone() Recipe {
	c := *r
	c.Embedding = slices.Clone(r.Embedding)
	c.Datasets = slices.Clone(r.Datasets)
	c.SQL = slices.Clone(r.SQL)
	return c
}

// NewRecipe is what the host approves: the question, the SQL that
// answered it, and the current definitions of the datasets it used.
type NewRecipe struct {
	Question string
	SQL      []string
	Datasets []domain.Dataset
	// Verified marks the recipe as a verified query (see Recipe.Verified).
	// Saving an existing recipe with Verified true marks it verified;
	// with false it keeps the mark it had (unmark with SetVerified).
	Verified bool
}

// Limits on a NewRecipe.
const (
	MaxQuestionLength = 4000
	MaxStatements     = 20
	MaxStatementBytes = 100_000
)

func (n NewRecipe) validate() error {
	ve := &domain.ValidationError{}
	q := strings.TrimSpace(n.Question)
	switch {
	case q == "":
		ve.Add("recipe.question", "is required")
	case utf8.RuneCountInString(q) > MaxQuestionLength:
		ve.Add("recipe.question", fmt.Sprintf("is longer than %d characters", MaxQuestionLength))
	}
	switch {
	case len(n.SQL) == 0:
		ve.Add("recipe.sql", "needs at least one statement")
	case len(n.SQL) > MaxStatements:
		ve.Add("recipe.sql", fmt.Sprintf("has %d statements; the limit is %d", len(n.SQL), MaxStatements))
	}
	for i, s := range n.SQL {
		if strings.TrimSpace(s) == "" {
			ve.Add(fmt.Sprintf("recipe.sql[%d]", i), "is empty")
		} else if len(s) > MaxStatementBytes {
			ve.Add(fmt.Sprintf("recipe.sql[%d]", i), fmt.Sprintf("is longer than %d bytes", MaxStatementBytes))
		}
	}
	if len(n.Datasets) == 0 {
		ve.Add("recipe.datasets", "needs at least one dataset")
	}
	seen := map[string]bool{}
	for i, d := range n.Datasets {
		name := strings.TrimSpace(d.Name)
		switch {
		case name == "":
			ve.Add(fmt.Sprintf("recipe.datasets[%d].name", i), "is required")
		case seen[name]:
			ve.Add(fmt.Sprintf("recipe.datasets[%d].name", i), fmt.Sprintf("duplicate dataset %q", name))
		}
		seen[name] = true
	}
	return ve.Err()
}

// DefaultCapacity is the number of recipes a Memory keeps per scope when
// Options.Capacity is zero.
const DefaultCapacity = 500

// DefaultK is the number of matches Recall returns when Query.K is zero.
const DefaultK = 3

// Options configures a Memory.
type Options struct {
	// Capacity is the most recipes kept per scope; saving one more evicts
	// the least recently used. 0 means DefaultCapacity.
	Capacity int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Memory is the in-memory recipe store, bounded per scope with
// least-recently-used eviction. It is safe for concurrent use.
type Memory struct {
	embedder kb.Embedder
	capacity int
	now      func() time.Time

	mu     sync.Mutex
	scopes map[kb.Scope]*scopeRecipes
}

type scopeRecipes struct {
	lru   *list.List // of *Recipe, most recently used at the front
	byID  map[string]*list.Element
	byKey map[string]*list.Element // fingerprint + "\x00" + normalised question
}

// New returns an empty Memory that embeds questions with e. A nil e, or
// one that fails, leaves recipes without embeddings; they are then
// matched by the words they share with the question.
func New(e kb.Embedder, opts Options) *Memory {
	if opts.Capacity <= 0 {
		opts.Capacity = DefaultCapacity
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Memory{embedder: e, capacity: opts.Capacity, now: opts.Now, scopes: map[kb.Scope]*scopeRecipes{}}
}

func recipeKey(fingerprint, question string) string {
	return fingerprint + "\x00" + QuestionKey(question)
}

// SaveRecipe stores a recipe the host approved (the user marked the
// answer good, or approved the save_recipe tool). Saving the same question
// (ignoring case, spaces and punctuation) on the same schema again
// updates the existing recipe: its SQL is replaced, its success count
// incremented, and it becomes verified when n.Verified is set (a save
// without Verified never clears an earlier mark; SetVerified does). It
// returns the stored recipe, or a *domain.ValidationError.
func (m *Memory) SaveRecipe(ctx context.Context, scope kb.Scope, n NewRecipe) (Recipe, error) {
	if err := scope.Validate(); err != nil {
		return Recipe{}, err
	}
	if err := n.validate(); err != nil {
		return Recipe{}, err
	}
	if err := ctx.Err(); err != nil {
		return Recipe{}, err
	}
	question := strings.TrimSpace(n.Question)
	fp := Fingerprint(n.Datasets)
	names := n.DatasetNames()
	vec := Embed(ctx, m.embedder, question)

	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scope(scope)
	now := m.now()
	key := recipeKey(fp, question)
	if el, ok := s.byKey[key]; ok {
		r := el.Value.(*Recipe)
		r.SQL = slices.Clone(n.SQL)
		r.SuccessCount++
		r.LastUsedAt = now
		r.Verified = r.Verified || n.Verified
		if vec != nil {
			r.Embedding = vec
		}
		s.lru.MoveToFront(el)
		return r.clone(), nil
	}
	r := &Recipe{
		ID: domain.NewID(), Fingerprint: fp, Question: question, Embedding: vec,
		Datasets: names, SQL: slices.Clone(n.SQL), SuccessCount: 1, Verified: n.Verified, CreatedAt: now, LastUsedAt: now,
	}
	el := s.lru.PushFront(r)
	s.byID[r.ID] = el
	s.byKey[key] = el
	for s.lru.Len() > m.capacity {
		s.remove(s.lru.Back())
	}
	return r.clone(), nil
}

func (s *scopeRecipes) remove(el *list.Element) {
	r := el.Value.(*Recipe)
	s.lru.Remove(el)
	delete(s.byID, r.ID)
	delete(s.byKey, recipeKey(r.Fingerprint, r.Question))
}

// scope returns the scope's recipes, creating them; m.mu must be held.
func (m *Memory) scope(scope kb.Scope) *scopeRecipes {
	s := m.scopes[scope]
	if s == nil {
		s = &scopeRecipes{lru: list.New(), byID: map[string]*list.Element{}, byKey: map[string]*list.Element{}}
		m.scopes[scope] = s
	}
	return s
}

// Query asks Recall for recipes.
type Query struct {
	// Question is the user's new question.
	Question string
	// Datasets are the current definitions of the datasets in view (the
	// discovery step's hits). A recipe whose datasets are all among them,
	// with the fingerprint it was saved with, is a schema match.
	Datasets []domain.Dataset
	// K is the number of matches; 0 means DefaultK.
	K int
	// MinSimilarity drops matches less similar than this (0 to 1).
	MinSimilarity float64
	// RequireSchemaMatch drops recipes whose schema changed or whose
	// datasets are not all in Datasets.
	RequireSchemaMatch bool
	// VerifiedMinSimilarity is how similar a verified recipe must be to
	// the question (and at least MinSimilarity) to rank before the
	// unverified recipes of its schema-match group; a less similar one
	// ranks like any other recipe, so an unrelated verified recipe is
	// never pushed ahead. 0 means DefaultVerifiedMinSimilarity; above 1
	// turns the preference off; negative is invalid.
	VerifiedMinSimilarity float64
}

// DefaultVerifiedMinSimilarity is Query.VerifiedMinSimilarity when it is
// zero. With an embedder, reworded questions score about 0.45 to 0.8 and
// unrelated ones below 0.25; with word overlap (no embedder) the same
// bar asks for about a third of the words in common.
const DefaultVerifiedMinSimilarity = 0.35

// Match is one recalled recipe.
type Match struct {
	Recipe Recipe `json:"recipe"`
	// Similarity of the question to the recipe's question, 0 to 1:
	// cosine of the embeddings, or the share of common words when either
	// has no embedding.
	Similarity float64 `json:"similarity"`
	// SchemaMatch reports that the recipe's datasets are in view and
	// unchanged since it was saved, so its SQL should still run.
	SchemaMatch bool `json:"schema_match"`
}

// Recall returns the best K recipes of scope for q (see Rank): schema
// matches first; within each group, verified recipes similar enough to
// the question (Query.VerifiedMinSimilarity) first; then by similarity
// (ties: more successes, then more recently used, then by question text,
// fingerprint and id, so equal recipes always come back in the same
// order). The
// returned recipes count as used: they move to the front of the
// eviction order and their LastUsedAt is updated.
func (m *Memory) Recall(ctx context.Context, scope kb.Scope, q Query) ([]Match, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	empty := m.scopes[scope] == nil || m.scopes[scope].lru.Len() == 0
	m.mu.Unlock()
	if empty {
		return []Match{}, nil
	}
	vec := Embed(ctx, m.embedder, q.Question)

	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scopes[scope]
	if s == nil {
		return []Match{}, nil
	}
	rs := make([]*Recipe, 0, s.lru.Len())
	for el := s.lru.Front(); el != nil; el = el.Next() {
		rs = append(rs, el.Value.(*Recipe))
	}
	ranked := Rank(q, vec, rs)
	now := m.now()
	out := make([]Match, len(ranked))
	for i, c := range ranked {
		c.Recipe.LastUsedAt = now
		s.lru.MoveToFront(s.byID[c.Recipe.ID])
		out[i] = Match{Recipe: c.Recipe.clone(), Similarity: c.Similarity, SchemaMatch: c.SchemaMatch}
	}
	return out, nil
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// RecordSuccess counts another successful use of the recipe (the agent
// reused it and the user was satisfied) and marks it used.
func (m *Memory) RecordSuccess(ctx context.Context, scope kb.Scope, id string) (Recipe, error) {
	return m.update(ctx, scope, id, func(s *scopeRecipes, el *list.Element) {
		r := el.Value.(*Recipe)
		r.SuccessCount++
		r.LastUsedAt = m.now()
		s.lru.MoveToFront(el)
	})
}

// SetVerified marks the recipe with this id in scope as verified, or
// clears the mark, and returns it; an id not in scope (also another
// scope's) yields an error matching domain.ErrNotFound. It does not count
// as a use: LastUsedAt, the success count and the eviction order stay.
func (m *Memory) SetVerified(ctx context.Context, scope kb.Scope, id string, verified bool) (Recipe, error) {
	return m.update(ctx, scope, id, func(_ *scopeRecipes, el *list.Element) {
		el.Value.(*Recipe).Verified = verified
	})
}

// Get returns the recipe with this id in scope, or an error matching
// domain.ErrNotFound (also for another scope's recipes). Get does not
// count as a use.
func (m *Memory) Get(ctx context.Context, scope kb.Scope, id string) (Recipe, error) {
	return m.update(ctx, scope, id, func(*scopeRecipes, *list.Element) {})
}

// Delete removes the recipe with this id from scope, or returns an error
// matching domain.ErrNotFound.
func (m *Memory) Delete(ctx context.Context, scope kb.Scope, id string) error {
	_, err := m.update(ctx, scope, id, func(s *scopeRecipes, el *list.Element) { s.remove(el) })
	return err
}

func (m *Memory) update(ctx context.Context, scope kb.Scope, id string, fn func(*scopeRecipes, *list.Element)) (Recipe, error) {
	if err := scope.Validate(); err != nil {
		return Recipe{}, err
	}
	if err := ctx.Err(); err != nil {
		return Recipe{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.scopes[scope]; s != nil {
		if el, ok := s.byID[id]; ok {
			r := el.Value.(*Recipe).clone()
			fn(s, el)
			if after, ok := el.Value.(*Recipe); ok && s.byID[id] != nil {
				r = after.clone()
			}
			return r, nil
		}
	}
	return Recipe{}, fmt.Errorf("recipes: recipe %q: %w", id, domain.ErrNotFound)
}

// List returns the recipes of scope, most recently used first.
func (m *Memory) List(ctx context.Context, scope kb.Scope) ([]Recipe, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Recipe{}
	if s := m.scopes[scope]; s != nil {
		for el := s.lru.Front(); el != nil; el = el.Next() {
			out = append(out, el.Value.(*Recipe).clone())
		}
	}
	return out, nil
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// words returns the lower-case words of s (letters and digits), in order.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// overlap is the Jaccard similarity of two word lists as sets.
func overlap(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	sa := map[string]bool{}
	for _, w := range a {
		sa[w] = true
	}
	sb := map[string]bool{}
	inter := 0
	for _, w := range b {
		if !sb[w] {
			sb[w] = true
			if sa[w] {
				inter++
			}
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

// Restore loads recipes into scope, as List returned them (for a host
// that keeps recipes in its own storage across restarts), keeping their
// ids, counts, times and embeddings. A restored recipe replaces one with
// the same id, or with the same question and fingerprint. The scope's
// eviction order becomes most recently used first by LastUsedAt, and the
// least recently used beyond the capacity are dropped. It returns a
// *domain.ValidationError, restoring nothing, when a recipe lacks an id,
// a fingerprint, a question, SQL or datasets.
func (m *Memory) Restore(ctx context.Context, scope kb.Scope, rs []Recipe) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	if err := ValidateRestore(rs); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scope(scope)
	for _, r := range rs {
		c := r.clone()
		slices.Sort(c.Datasets)
		if el, ok := s.byID[c.ID]; ok {
			s.remove(el)
		}
		if el, ok := s.byKey[recipeKey(c.Fingerprint, c.Question)]; ok {
			s.remove(el)
		}
		el := s.lru.PushBack(&c)
		s.byID[c.ID] = el
		s.byKey[recipeKey(c.Fingerprint, c.Question)] = el
	}
	all := make([]*list.Element, 0, s.lru.Len())
	for el := s.lru.Front(); el != nil; el = el.Next() {
		all = append(all, el)
	}
	slices.SortStableFunc(all, func(a, b *list.Element) int {
		return -a.Value.(*Recipe).LastUsedAt.Compare(b.Value.(*Recipe).LastUsedAt)
	})
	for _, el := range all {
		s.lru.MoveToBack(el)
	}
	for s.lru.Len() > m.capacity {
		s.remove(s.lru.Back())
	}
	return nil
}
